//! [`CommandConfig`]: the root command resource (seed 000, command environment).
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
//! | `docker.environment` | `{}` | names non-empty without `=` or NUL; values without NUL |
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

/// Docker settings of a [`CommandConfig`]; every field has the seed's default.
///
/// ```
/// use iris_command::DockerConfig;
/// let docker = DockerConfig::default();
/// assert_eq!((docker.cpus, docker.memory_mb, docker.pids_limit), (2.0, 1024, 128));
/// assert!(docker.endpoint.is_none() && docker.environment.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
        for (name, value) in &self.environment {
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(CommandError::config(
                    "docker.environment",
                    format!(
                        "variable name `{}` must be non-empty without `=` or NUL",
                        name.escape_debug()
                    ),
                ));
            }
            if value.contains('\0') {
                return Err(CommandError::config(
                    "docker.environment",
                    format!("the value of `{name}` contains a NUL byte"),
                ));
            }
        }
        Ok(())
    }
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

/// The root command resource: mode, root timeout and Docker settings.
///
/// See the [module docs](self) for defaults and rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawCommandConfig")]
pub struct CommandConfig {
    /// Native or Docker.
    pub mode: CommandMode,
    /// Root cap of every call's deadline, in seconds.
    pub timeout_seconds: f64,
    /// Docker settings; only in Docker mode, `None` meaning every default.
    pub docker: Option<DockerConfig>,
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
            docker: None,
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
            docker: Some(docker),
        }
    }

    /// Sets the root timeout.
    #[must_use]
    pub fn with_timeout_seconds(mut self, seconds: f64) -> Self {
        self.timeout_seconds = seconds;
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
    docker: Option<DockerConfig>,
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
            docker: raw.docker,
        };
        config.validate()?;
        Ok(config)
    }
}
