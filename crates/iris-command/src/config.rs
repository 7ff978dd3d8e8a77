//! [`CommandConfig`]: the root command resource of the command environment.
//!
//! | field | default | rule |
//! |---|---|---|
//! | `mode` | `native` | `native` or `docker` |
//! | `timeout_seconds` | `120` | positive finite; the root cap of every call's deadline |
//! | `docker` | `None` | only in docker mode; omitted means every default below |
//! | `docker.image` | `iris-command:local` | must already exist in the engine (never pulled or built) |
//! | `docker.endpoint` | `None` (the local default socket) | only `unix://<path>` or `npipe://<name>` |
//! | `docker.network` | `none` | `none` or `bridge` |
//! | `docker.cpus` | `2.0` | positive finite |
//! | `docker.memory_mb` | `1024` | positive integer |
//! | `docker.pids_limit` | `128` | positive integer |
//! | `docker.environment` | `{}` | the container's variables; names non-empty without `=` or NUL, never `IRIS_*`; values without NUL |
//! | `env` | `{}` | name → value set for every command and command hook (both modes); same name rules |
//! | `env_passthrough` | `[]` | host variables copied into every command and hook when set on the host (both modes); same name rules |
//! | `sandbox` | workspace-write, network off | the native sandbox of what the model runs: see [`iris_sandbox::policy`] for every key; Docker mode keeps the container's own isolation; there `network: {allow: …}` puts the container on an internal Docker network whose only way out is the egress proxy on its gateway address (not with `docker.network: bridge`), and `escalation: ask` is refused (one container serves every call) |
//!
//! A command or hook never sees the host's whole environment (see [`crate::env`]):
//! natively it gets the [`crate::env::DEFAULT_ENV_ALLOWLIST`] (and `LC_*`) from the host,
//! then `env_passthrough`, then `env` (later wins); in Docker the container gets
//! `docker.environment`, then `env_passthrough`, then `env`, and nothing else of the
//! host. No name starting with `IRIS_` (any case) is accepted in any of these keys:
//! `IRIS_*` variables hold Iris's own settings and secrets (`IRIS_PROVIDER_API_KEYS__*`),
//! so they never reach a command, even when listed.
//!
//! Deserializing validates (unknown fields are refused), so a config read from YAML or
//! JSON is always usable; a config built in code is checked by [`CommandConfig::validate`]
//! and again by [`crate::CommandService::new`].
//!
//! ```
//! use iris_command::{CommandConfig, CommandMode, DockerNetwork};
//!
//! let native: CommandConfig = serde_json::from_str("{}")?;
//! assert_eq!(native.mode, CommandMode::Native);
//! assert_eq!(native.timeout_seconds, 120.0);
//!
//! let docker: CommandConfig = serde_json::from_str(r#"{"mode": "docker"}"#)?;
//! let effective = docker.docker_config().expect("docker mode has docker settings");
//! assert_eq!(effective.image, "iris-command:local");
//! assert_eq!(effective.network, DockerNetwork::None);
//!
//! let bad = serde_json::from_str::<CommandConfig>(r#"{"mode": "native", "docker": {}}"#);
//! assert!(bad.unwrap_err().to_string().contains("native mode may not declare"));
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::collections::BTreeMap;

use iris_sandbox::{NetworkAccess, SandboxPolicy};
use serde::{Deserialize, Serialize};

use crate::error::CommandError;

/// Default root timeout of a command call, in seconds.
pub const DEFAULT_TIMEOUT_SECONDS: f64 = 120.0;
/// Default Docker image.
pub const DEFAULT_DOCKER_IMAGE: &str = "iris-command:local";
/// Default CPU limit of the Docker container.
pub const DEFAULT_DOCKER_CPUS: f64 = 2.0;
/// Default memory limit of the Docker container, in MiB.
pub const DEFAULT_DOCKER_MEMORY_MB: u64 = 1024;
/// Default process limit of the Docker container.
pub const DEFAULT_DOCKER_PIDS_LIMIT: u64 = 128;

/// Where commands run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandMode {
    /// On the host, with `/bin/sh` and the host's Python.
    #[default]
    Native,
    /// In one long-lived container per root service, through the Docker engine.
    Docker,
}

impl CommandMode {
    /// `"native"` or `"docker"`, as in configs and result data.
    pub fn as_str(self) -> &'static str {
        match self {
            CommandMode::Native => "native",
            CommandMode::Docker => "docker",
        }
    }
}

/// The container's network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DockerNetwork {
    /// No network at all: only a loopback interface.
    #[default]
    None,
    /// Docker's default bridge network.
    Bridge,
}

impl DockerNetwork {
    /// Docker's `NetworkMode` value: `"none"` or `"bridge"`.
    pub fn as_str(self) -> &'static str {
        match self {
            DockerNetwork::None => "none",
            DockerNetwork::Bridge => "bridge",
        }
    }
}

/// Docker settings of a [`CommandConfig`]; every field has a default, the same
/// as the Python reference's.
///
/// ```
/// use iris_command::DockerConfig;
/// let docker = DockerConfig::default();
/// assert_eq!((docker.cpus, docker.memory_mb, docker.pids_limit), (2.0, 1024, 128));
/// assert!(docker.endpoint.is_none() && docker.environment.is_empty());
/// ```
/// Its `Debug` output names the environment's variables, never their values.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DockerConfig {
    /// The image; it must already exist in the engine.
    pub image: String,
    /// `unix://<path>` or `npipe://<name>`; `None` is the local default socket
    /// (`DOCKER_HOST` when it is a `unix://` URL, else `/var/run/docker.sock`).
    pub endpoint: Option<String>,
    /// `none` or `bridge`.
    pub network: DockerNetwork,
    /// CPU limit (Docker `NanoCpus` = cpus × 10⁹).
    pub cpus: f64,
    /// Memory limit in MiB; swap is disabled so the limit is real.
    pub memory_mb: u64,
    /// Maximum number of processes in the container.
    pub pids_limit: u64,
    /// Environment variables of the container.
    pub environment: BTreeMap<String, String>,
}

impl Default for DockerConfig {
    fn default() -> Self {
        Self {
            image: DEFAULT_DOCKER_IMAGE.to_owned(),
            endpoint: None,
            network: DockerNetwork::None,
            cpus: DEFAULT_DOCKER_CPUS,
            memory_mb: DEFAULT_DOCKER_MEMORY_MB,
            pids_limit: DEFAULT_DOCKER_PIDS_LIMIT,
            environment: BTreeMap::new(),
        }
    }
}

impl DockerConfig {
    /// Checks every field against the table in the [module docs](self).
    pub fn validate(&self) -> Result<(), CommandError> {
        if self.image.trim().is_empty() {
            return Err(CommandError::config("docker.image", "must not be empty"));
        }
        if let Some(endpoint) = &self.endpoint {
            check_endpoint(endpoint)?;
        }
        if !(self.cpus.is_finite() && self.cpus > 0.0) {
            return Err(CommandError::config(
                "docker.cpus",
                format!("must be a positive finite number, got {}", self.cpus),
            ));
        }
        if self.memory_mb == 0 {
            return Err(CommandError::config(
                "docker.memory_mb",
                "must be a positive integer, got 0",
            ));
        }
        // Docker takes the limit in bytes as an i64; refuse what would overflow it.
        if self.memory_mb > (i64::MAX as u64) / (1024 * 1024) {
            return Err(CommandError::config("docker.memory_mb", "is too large"));
        }
        if self.pids_limit == 0 {
            return Err(CommandError::config(
                "docker.pids_limit",
                "must be a positive integer, got 0",
            ));
        }
        if self.pids_limit > i64::MAX as u64 {
            return Err(CommandError::config("docker.pids_limit", "is too large"));
        }
        check_env_map("docker.environment", &self.environment)
    }
}

/// Checks one variable name of `field`: non-empty, no `=` or NUL, not `IRIS_*`.
fn check_env_name(field: &str, name: &str) -> Result<(), CommandError> {
    if name.is_empty() || name.contains('=') || name.contains('\0') {
        return Err(CommandError::config(
            field,
            format!(
                "variable name `{}` must be non-empty without `=` or NUL",
                name.escape_debug()
            ),
        ));
    }
    if crate::env::is_reserved_name(name) {
        return Err(CommandError::config(
            field,
            format!(
                "`{}` is an Iris variable: IRIS_* variables hold Iris's own settings and secrets and never reach commands or hooks",
                name.escape_debug()
            ),
        ));
    }
    Ok(())
}

/// Checks a name → value map of `field`; values may not contain NUL (and are never
/// quoted in the error, since they may be secrets).
fn check_env_map(field: &str, vars: &BTreeMap<String, String>) -> Result<(), CommandError> {
    for (name, value) in vars {
        check_env_name(field, name)?;
        if value.contains('\0') {
            return Err(CommandError::config(
                field,
                format!("the value of `{}` contains a NUL byte", name.escape_debug()),
            ));
        }
    }
    Ok(())
}

fn check_endpoint(endpoint: &str) -> Result<(), CommandError> {
    if let Some(path) = endpoint.strip_prefix("unix://") {
        if path.starts_with('/') {
            return Ok(());
        }
        return Err(CommandError::config(
            "docker.endpoint",
            format!(
                "`{endpoint}` must name an absolute socket path, e.g. unix:///var/run/docker.sock"
            ),
        ));
    }
    if let Some(pipe) = endpoint.strip_prefix("npipe://")
        && !pipe.is_empty()
    {
        return Ok(());
    }
    Err(CommandError::config(
        "docker.endpoint",
        format!(
            "`{endpoint}` is not a local engine socket: only unix://<path> or npipe://<name> are allowed"
        ),
    ))
}

/// The root command resource: mode, root timeout, the commands' environment and Docker
/// settings.
///
/// See the [module docs](self) for defaults and rules.
///
/// ```
/// use iris_command::CommandConfig;
/// let config = CommandConfig::native()
///     .with_env("CI", "1")
///     .with_env_passthrough(["SSH_AUTH_SOCK"]);
/// assert!(config.validate().is_ok());
/// let secret = CommandConfig::native().with_env_passthrough(["IRIS_PROVIDER_API_KEYS__TAVILY"]);
/// assert!(secret.validate().unwrap_err().to_string().contains("never reach commands"));
/// ```
///
/// Its `Debug` output names the `env` variables, never their values (a token set for
/// commands is as secret as the host's own).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawCommandConfig")]
pub struct CommandConfig {
    /// Native or Docker.
    pub mode: CommandMode,
    /// Root cap of every call's deadline, in seconds.
    pub timeout_seconds: f64,
    /// Variables (name → value) set for every command and hook, in both modes; they win
    /// over the allow-list and `env_passthrough`.
    pub env: BTreeMap<String, String>,
    /// Host variables copied into every command and hook when they are set on the host
    /// (a name that is not set is skipped), in both modes.
    pub env_passthrough: Vec<String>,
    /// Docker settings; only in Docker mode, `None` meaning every default.
    pub docker: Option<DockerConfig>,
    /// The sandbox of the native processes a model causes to run (`exec_command`,
    /// `run_python`, code mode); command hooks run outside it.
    pub sandbox: SandboxPolicy,
}

impl Default for CommandConfig {
    fn default() -> Self {
        Self::native()
    }
}

impl CommandConfig {
    /// Native mode with the default timeout.
    pub fn native() -> Self {
        Self {
            mode: CommandMode::Native,
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
            env: BTreeMap::new(),
            env_passthrough: Vec::new(),
            docker: None,
            sandbox: SandboxPolicy::default(),
        }
    }

    /// Docker mode with the given settings and the default timeout.
    ///
    /// ```
    /// use iris_command::{CommandConfig, DockerConfig};
    /// let config = CommandConfig::docker(DockerConfig { memory_mb: 256, ..DockerConfig::default() });
    /// assert!(config.validate().is_ok());
    /// ```
    pub fn docker(docker: DockerConfig) -> Self {
        Self {
            mode: CommandMode::Docker,
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
            env: BTreeMap::new(),
            env_passthrough: Vec::new(),
            docker: Some(docker),
            sandbox: SandboxPolicy::default(),
        }
    }

    /// Sets the root timeout.
    #[must_use]
    pub fn with_timeout_seconds(mut self, seconds: f64) -> Self {
        self.timeout_seconds = seconds;
        self
    }

    /// Sets the sandbox policy of the commands a model runs.
    ///
    /// ```
    /// use iris_command::CommandConfig;
    /// use iris_sandbox::SandboxPolicy;
    /// let config = CommandConfig::native().with_sandbox(SandboxPolicy::off());
    /// assert!(config.sandbox.is_off());
    /// ```
    #[must_use]
    pub fn with_sandbox(mut self, sandbox: SandboxPolicy) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// Sets one variable of every command and hook (see [`CommandConfig::env`]).
    #[must_use]
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }

    /// Adds host variables to copy into every command and hook (see
    /// [`CommandConfig::env_passthrough`]).
    #[must_use]
    pub fn with_env_passthrough<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.env_passthrough
            .extend(names.into_iter().map(Into::into));
        self
    }

    /// The Docker settings in effect: the declared ones or the defaults, in Docker mode;
    /// `None` in native mode.
    pub fn docker_config(&self) -> Option<DockerConfig> {
        match self.mode {
            CommandMode::Native => None,
            CommandMode::Docker => Some(self.docker.clone().unwrap_or_default()),
        }
    }

    /// Checks the rules of the [module docs](self).
    pub fn validate(&self) -> Result<(), CommandError> {
        if !(self.timeout_seconds.is_finite() && self.timeout_seconds > 0.0) {
            return Err(CommandError::config(
                "timeout_seconds",
                format!(
                    "must be a positive finite number, got {}",
                    self.timeout_seconds
                ),
            ));
        }
        check_env_map("env", &self.env)?;
        for name in &self.env_passthrough {
            check_env_name("env_passthrough", name)?;
        }
        self.sandbox.validate().map_err(|e| match e {
            iris_sandbox::SandboxError::Config { key, reason } => {
                CommandError::config(&format!("sandbox.{key}"), reason)
            }
            other => CommandError::config("sandbox", other.to_string()),
        })?;
        if self.mode == CommandMode::Docker
            && matches!(self.sandbox.network, NetworkAccess::Allow(_))
            && self.docker_config().map(|d| d.network) == Some(DockerNetwork::Bridge)
        {
            // `allow` puts the container on an internal network of its own; a bridge
            // network beside it would be a route around the proxy.
            return Err(CommandError::config(
                "sandbox.network",
                "`allow` in docker mode gives the container an internal network whose only way out is the egress proxy; it cannot be combined with docker.network: bridge",
            ));
        }
        if self.mode == CommandMode::Docker
            && self.sandbox.escalation == iris_sandbox::Escalation::Ask
        {
            // The container's isolation is fixed when it starts (one container per
            // service); a single call cannot be given a wider one.
            return Err(CommandError::config(
                "sandbox.escalation",
                "`ask` is not available in docker mode: the container's isolation is fixed for every call",
            ));
        }
        match (self.mode, &self.docker) {
            (CommandMode::Native, Some(_)) => Err(CommandError::config(
                "docker",
                "native mode may not declare a docker section",
            )),
            (CommandMode::Native, None) | (CommandMode::Docker, None) => Ok(()),
            (CommandMode::Docker, Some(docker)) => docker.validate(),
        }
    }
}

/// The wire form, validated into a [`CommandConfig`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCommandConfig {
    #[serde(default)]
    mode: CommandMode,
    #[serde(default = "default_timeout")]
    timeout_seconds: f64,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    env_passthrough: Vec<String>,
    #[serde(default)]
    docker: Option<DockerConfig>,
    #[serde(default)]
    sandbox: SandboxPolicy,
}

fn default_timeout() -> f64 {
    DEFAULT_TIMEOUT_SECONDS
}

impl TryFrom<RawCommandConfig> for CommandConfig {
    type Error = CommandError;

    fn try_from(raw: RawCommandConfig) -> Result<Self, Self::Error> {
        let config = CommandConfig {
            mode: raw.mode,
            timeout_seconds: raw.timeout_seconds,
            env: raw.env,
            env_passthrough: raw.env_passthrough,
            docker: raw.docker,
            sandbox: raw.sandbox,
        };
        config.validate()?;
        Ok(config)
    }
}

/// Variable names, each with its value shown as `<redacted>`: what `Debug` prints of
/// an environment.
pub(crate) fn hidden_values(
    names: impl IntoIterator<Item = impl Into<String>>,
) -> BTreeMap<String, &'static str> {
    names
        .into_iter()
        .map(|n| (n.into(), "<redacted>"))
        .collect()
}

impl std::fmt::Debug for DockerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerConfig")
            .field("image", &self.image)
            .field("endpoint", &self.endpoint)
            .field("network", &self.network)
            .field("cpus", &self.cpus)
            .field("memory_mb", &self.memory_mb)
            .field("pids_limit", &self.pids_limit)
            .field(
                "environment",
                &hidden_values(self.environment.keys().cloned()),
            )
            .finish()
    }
}

impl std::fmt::Debug for CommandConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandConfig")
            .field("mode", &self.mode)
            .field("timeout_seconds", &self.timeout_seconds)
            .field("env", &hidden_values(self.env.keys().cloned()))
            .field("env_passthrough", &self.env_passthrough)
            .field("docker", &self.docker)
            .field("sandbox", &self.sandbox)
            .finish()
    }
}
