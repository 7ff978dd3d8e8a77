//! [`CommandError`] and the stable command error [`codes`].

use iris_tools_core::ToolErrorInfo;

/// Stable `SCREAMING_SNAKE` codes of the command layer (the command environment).
///
/// Tool results of `exec_command` and `run_python` carry one of the first six; the
/// last one is for configuration mistakes found while building the service. Path and
/// input errors reuse core's `INVALID_PATH`, `PATH_OUTSIDE_WORKSPACE` and `INVALID_INPUT`.
pub mod codes {
    /// The command ran and exited with a non-zero code (its output is still included).
    pub const COMMAND_FAILED: &str = "COMMAND_FAILED";
    /// The command hit its deadline; its whole process tree was killed.
    pub const COMMAND_TIMEOUT: &str = "COMMAND_TIMEOUT";
    /// The call was cancelled; its whole process tree was killed.
    pub const COMMAND_CANCELLED: &str = "COMMAND_CANCELLED";
    /// The environment went away under the command (scope stopped, service closed,
    /// container or engine lost).
    pub const COMMAND_ENVIRONMENT_INTERRUPTED: &str = "COMMAND_ENVIRONMENT_INTERRUPTED";
    /// The command environment is not available (not prepared, closed, engine or image
    /// missing, interpreter missing).
    pub const COMMAND_UNAVAILABLE: &str = "COMMAND_UNAVAILABLE";
    /// The command sandbox cannot be enforced on this host (a kernel mechanism or the
    /// helper binary is missing); the message names what and the opt-outs. Nothing ran.
    pub const COMMAND_SANDBOX_UNAVAILABLE: &str = "COMMAND_SANDBOX_UNAVAILABLE";
    /// A `CommandConfig` broke a validation rule.
    pub const INVALID_COMMAND_CONFIG: &str = "INVALID_COMMAND_CONFIG";
}

/// Why the command layer refused or could not run something.
///
/// Every variant has a stable [`CommandError::code`]; [`CommandError::to_info`] gives the
/// structured form a tool result carries.
///
/// ```
/// use iris_command::CommandError;
/// let err = CommandError::unavailable("the Docker engine does not answer");
/// assert_eq!(err.code(), "COMMAND_UNAVAILABLE");
/// assert_eq!(err.to_string(), "command environment unavailable: the Docker engine does not answer");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// A configuration field broke a rule.
    #[error("invalid command config `{field}`: {reason}")]
    InvalidConfig {
        /// The offending field, dotted (`docker.cpus`).
        field: String,
        /// Which rule it broke.
        reason: String,
    },
    /// The request itself is unusable (empty command, bad timeout, …).
    #[error("invalid command request: {0}")]
    InvalidRequest(String),
    /// The working directory is unusable (missing, not a directory, outside the
    /// workspace or the mounted workspace).
    #[error("invalid cwd `{cwd}`: {reason}")]
    InvalidCwd {
        /// The cwd as given.
        cwd: String,
        /// Why it was refused.
        reason: String,
        /// `INVALID_PATH` or `PATH_OUTSIDE_WORKSPACE`.
        code: &'static str,
    },
    /// The environment cannot run commands (not prepared, closed, engine or image
    /// missing, interpreter missing).
    #[error("command environment unavailable: {0}")]
    Unavailable(String),
    /// The command sandbox cannot be enforced here; nothing ran.
    #[error("{0}")]
    SandboxUnavailable(String),
    /// A receipt from another service was handed to [`crate::CommandService::wait_drained`].
    #[error("the stop receipt belongs to another command service")]
    ForeignReceipt,
}

impl From<iris_sandbox::SandboxError> for CommandError {
    fn from(error: iris_sandbox::SandboxError) -> Self {
        CommandError::SandboxUnavailable(error.to_string())
    }
}

impl CommandError {
    /// A [`CommandError::Unavailable`] with the given reason.
    pub fn unavailable(reason: impl Into<String>) -> Self {
        CommandError::Unavailable(reason.into())
    }

    pub(crate) fn config(field: &str, reason: impl Into<String>) -> Self {
        CommandError::InvalidConfig {
            field: field.to_owned(),
            reason: reason.into(),
        }
    }

    /// The stable error code.
    pub fn code(&self) -> &'static str {
        match self {
            CommandError::InvalidConfig { .. } => codes::INVALID_COMMAND_CONFIG,
            CommandError::InvalidRequest(_) => iris_tools_core::codes::INVALID_INPUT,
            CommandError::InvalidCwd { code, .. } => code,
            CommandError::Unavailable(_) => codes::COMMAND_UNAVAILABLE,
            CommandError::SandboxUnavailable(_) => codes::COMMAND_SANDBOX_UNAVAILABLE,
            CommandError::ForeignReceipt => iris_tools_core::codes::INVALID_INPUT,
        }
    }

    /// The structured form a tool result carries.
    pub fn to_info(&self) -> ToolErrorInfo {
        let info = ToolErrorInfo::new(self.code(), self.to_string());
        match self {
            CommandError::InvalidCwd { cwd, .. } => info.with_detail("cwd", cwd.clone()),
            CommandError::InvalidConfig { field, .. } => info.with_detail("field", field.clone()),
            _ => info,
        }
    }
}
