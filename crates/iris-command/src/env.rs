//! The environment of every command and command hook.
//!
//! A process the model (or a hook) runs never inherits the host's whole environment,
//! because that environment holds secrets (`IRIS_PROVIDER_API_KEYS__*`, cloud tokens,
//! agent sockets) the model could print with `env`. Instead:
//!
//! | mode | what the process gets (later wins) |
//! |---|---|
//! | native | the host's values of [`DEFAULT_ENV_ALLOWLIST`] and of every `LC_*` variable, then `env_passthrough` (host values), then `env` |
//! | docker | the image's own variables, then `docker.environment`, then `env_passthrough` (host values), then `env`; nothing else of the host |
//!
//! A name in `env_passthrough` that is not set on the host is skipped. No variable whose
//! name starts with `IRIS_` (in any case) is ever passed: the allow-list has none, and
//! [`crate::CommandConfig::validate`] refuses such a name in `env`, `env_passthrough` and
//! `docker.environment` (`INVALID_COMMAND_CONFIG`, naming the variable, never its value).
//! The host environment is read once, when the [`crate::CommandService`] is created.
//!
//! ```
//! use iris_command::env::{DEFAULT_ENV_ALLOWLIST, is_reserved_name};
//! assert!(DEFAULT_ENV_ALLOWLIST.contains(&"PATH"));
//! assert!(is_reserved_name("IRIS_PROVIDER_API_KEYS__TAVILY"));
//! assert!(is_reserved_name("iris_python"));
//! assert!(!is_reserved_name("IRISH"));
//! ```

use std::collections::BTreeMap;
use std::ffi::OsString;

use crate::config::{CommandConfig, DockerConfig};

/// Host variables every native command and hook inherits (when set on the host), besides
/// every `LC_*` locale variable: what a shell, a compiler or Python needs to find
/// programs, the home directory, the locale, the terminal type, the time zone and the
/// temporary directory — and nothing that usually holds a credential.
pub const DEFAULT_ENV_ALLOWLIST: [&str; 10] = [
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "TZ", "TMPDIR",
];

/// The prefix of the locale variables ([`DEFAULT_ENV_ALLOWLIST`] passes all of them).
pub const LOCALE_PREFIX: &str = "LC_";

/// The prefix of Iris's own variables, which never reach a command.
pub const RESERVED_PREFIX: &str = "IRIS_";

/// Whether `name` is one of Iris's own variables (`IRIS_*`, compared without case).
pub fn is_reserved_name(name: &str) -> bool {
    name.as_bytes()
        .get(..RESERVED_PREFIX.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(RESERVED_PREFIX.as_bytes()))
}

/// Whether the default allow-list passes `name` natively.
pub fn is_default_allowed(name: &str) -> bool {
    !is_reserved_name(name)
        && (DEFAULT_ENV_ALLOWLIST.contains(&name) || name.starts_with(LOCALE_PREFIX))
}

/// The complete environment of a native command: allow-list, passthrough, then `env`.
/// Host names that are not Unicode are skipped (no allow-listed name is one).
pub(crate) fn native_env(
    config: &CommandConfig,
    host: impl IntoIterator<Item = (OsString, OsString)>,
) -> BTreeMap<OsString, OsString> {
    let host: BTreeMap<String, OsString> = host
        .into_iter()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
        .filter(|(k, _)| !is_reserved_name(k))
        .collect();
    let mut vars: BTreeMap<OsString, OsString> = host
        .iter()
        .filter(|(k, _)| is_default_allowed(k))
        .map(|(k, v)| (OsString::from(k), v.clone()))
        .collect();
    for name in &config.env_passthrough {
        if let Some(value) = host.get(name) {
            vars.insert(OsString::from(name), value.clone());
        }
    }
    for (name, value) in &config.env {
        vars.insert(OsString::from(name), OsString::from(value));
    }
    vars
}

/// The `NAME=value` list of the Docker container: `docker.environment`, passthrough, then
/// `env`. A passthrough value that is not Unicode cannot cross the engine API and is
/// skipped with a warning.
pub(crate) fn docker_env(
    config: &CommandConfig,
    docker: &DockerConfig,
    host: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<String> {
    let host: BTreeMap<OsString, OsString> = host.into_iter().collect();
    let mut vars: BTreeMap<String, String> = docker.environment.clone();
    for name in &config.env_passthrough {
        match host
            .get(&OsString::from(name))
            .map(|v| v.clone().into_string())
        {
            Some(Ok(value)) => {
                vars.insert(name.clone(), value);
            }
            Some(Err(_)) => {
                tracing::warn!(variable = %name, "env_passthrough: the host value is not Unicode; skipped in docker mode");
            }
            None => {}
        }
    }
    for (name, value) in &config.env {
        vars.insert(name.clone(), value.clone());
    }
    vars.into_iter()
        .filter(|(k, _)| !is_reserved_name(k))
        .map(|(k, v)| format!("{k}={v}"))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn host(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn native_precedence_and_filtering() {
        let config = CommandConfig::native()
            .with_env("EXPLICIT", "set")
            .with_env("HOME", "/override")
            .with_env_passthrough(["PASS_ME", "NOT_SET"]);
        let vars = native_env(
            &config,
            host(&[
                ("PATH", "/bin"),
                ("HOME", "/root"),
                ("LC_ALL", "C"),
                ("PASS_ME", "yes"),
                ("AWS_SECRET_ACCESS_KEY", "s"),
                ("IRIS_PROVIDER_API_KEYS__TAVILY", "secret-value"),
            ]),
        );
        let got: Vec<(String, String)> = vars
            .into_iter()
            .map(|(k, v)| (k.into_string().unwrap(), v.into_string().unwrap()))
            .collect();
        let want: Vec<(String, String)> = [
            ("EXPLICIT", "set"),
            ("HOME", "/override"),
            ("LC_ALL", "C"),
            ("PASS_ME", "yes"),
            ("PATH", "/bin"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn docker_takes_nothing_of_the_host_but_passthrough() {
        let mut docker = DockerConfig::default();
        docker.environment.insert("A".into(), "from docker".into());
        docker.environment.insert("B".into(), "from docker".into());
        let config = CommandConfig::docker(docker.clone())
            .with_env("B", "from env")
            .with_env_passthrough(["PASS_ME"]);
        let vars = docker_env(
            &config,
            &docker,
            host(&[("PATH", "/host/bin"), ("PASS_ME", "yes"), ("HOME", "/root")]),
        );
        assert_eq!(vars, ["A=from docker", "B=from env", "PASS_ME=yes"]);
    }
}
