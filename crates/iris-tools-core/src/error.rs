//! Errors: the crate's [`Error`] type and the stable tool error codes.
//!
//! Two kinds of failure exist. An [`Error`] is a programming or configuration mistake
//! found while *building* tools (an invalid name, a conflicting registration). A
//! [`ToolErrorInfo`] travels inside a [`crate::ToolOutput`] to the model when a *call*
//! fails; its `code` is one of the constants in [`codes`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Stable `SCREAMING_SNAKE` error codes, shared by every layer.
///
/// Codes are part of the public contract: models, hosts and tests match on them.
/// Never rename one; add new ones here so they live in one place.
pub mod codes {
    /// A tool definition broke a validation rule (name, description or schema).
    pub const INVALID_DEFINITION: &str = "INVALID_DEFINITION";
    /// A name or alias is already taken in the registry.
    pub const TOOL_CONFLICT: &str = "TOOL_CONFLICT";
    /// No tool answers to the requested name or alias.
    pub const TOOL_NOT_FOUND: &str = "TOOL_NOT_FOUND";
    /// The tool input failed schema validation or typed parsing.
    pub const INVALID_INPUT: &str = "INVALID_INPUT";
    /// The permission policy denied the call.
    pub const PERMISSION_DENIED: &str = "PERMISSION_DENIED";
    /// The call needs a human decision before it may run.
    pub const APPROVAL_REQUIRED: &str = "APPROVAL_REQUIRED";
    /// The human asked about a call said no; the call did not run.
    pub const APPROVAL_DENIED: &str = "APPROVAL_DENIED";
    /// A path resolved outside the workspace.
    pub const PATH_OUTSIDE_WORKSPACE: &str = "PATH_OUTSIDE_WORKSPACE";
    /// A path could not be resolved (bad syntax, I/O failure while resolving).
    pub const INVALID_PATH: &str = "INVALID_PATH";
    /// A `tool.before` hook denied the call.
    pub const HOOK_DENIED: &str = "HOOK_DENIED";
    /// A `tool.before` hook rewrote the input to arguments that fail the tool's schema
    /// or typed parse; the call did not run.
    pub const HOOK_INPUT_INVALID: &str = "HOOK_INPUT_INVALID";
    /// The circuit breaker is open for this tool.
    pub const CIRCUIT_OPEN: &str = "CIRCUIT_OPEN";
    /// The call exceeded its deadline.
    pub const TOOL_TIMEOUT: &str = "TOOL_TIMEOUT";
    /// The call was cancelled.
    pub const CANCELLED: &str = "CANCELLED";
    /// The tool body panicked; the executor isolated the panic.
    pub const TOOL_PANICKED: &str = "TOOL_PANICKED";
    /// The tool body reported a failure.
    pub const TOOL_FAILED: &str = "TOOL_FAILED";
    /// A middleware broke its contract (for example called `next` twice).
    pub const MIDDLEWARE_ERROR: &str = "MIDDLEWARE_ERROR";
    /// A provider adapter cannot express this schema (for example in strict mode).
    pub const UNSUPPORTED_SCHEMA: &str = "UNSUPPORTED_SCHEMA";
    /// Persisting an artifact failed.
    pub const ARTIFACT_ERROR: &str = "ARTIFACT_ERROR";
    /// A file or process I/O failure.
    pub const IO_ERROR: &str = "IO_ERROR";
    /// A tool that is not loaded in the current request was called.
    pub const TOOL_NOT_LOADED: &str = "TOOL_NOT_LOADED";
    /// A configuration section breaks a rule (for example `context_policy`).
    pub const INVALID_CONFIG: &str = "INVALID_CONFIG";
}

/// Structured failure of one tool call: what the model and host see.
///
/// ```
/// use iris_tools_core::{ToolErrorInfo, codes};
/// let e = ToolErrorInfo::new(codes::INVALID_INPUT, "`path` is required");
/// assert_eq!(e.to_string(), "INVALID_INPUT: `path` is required");
/// assert!(!e.retryable);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolErrorInfo {
    /// Stable `SCREAMING_SNAKE` code, usually one of [`codes`].
    pub code: String,
    /// One-line human-readable message.
    pub message: String,
    /// Whether retrying the same call may succeed.
    #[serde(default)]
    pub retryable: bool,
    /// Structured details for hosts (never required by the model).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub details: Map<String, Value>,
}

impl ToolErrorInfo {
    /// A non-retryable error with no details.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            retryable: false,
            details: Map::new(),
        }
    }

    /// An error whose message is `error`'s `Display` followed by each of its sources
    /// (`outer: inner: innermost`), so nothing a chain says is lost on the way to the
    /// model or host.
    ///
    /// ```
    /// use iris_tools_core::ToolErrorInfo;
    /// let io = std::io::Error::other("disk full");
    /// assert_eq!(ToolErrorInfo::from_error("IO_ERROR", &io).message, "disk full");
    /// ```
    pub fn from_error(code: impl Into<String>, error: &(dyn std::error::Error + 'static)) -> Self {
        let mut message = error.to_string();
        let mut source = error.source();
        while let Some(s) = source {
            message.push_str(": ");
            message.push_str(&s.to_string());
            source = s.source();
        }
        Self::new(code, message)
    }

    /// Marks the error as retryable.
    #[must_use]
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// Adds one structured detail.
    #[must_use]
    pub fn with_detail(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.details.insert(key.into(), value.into());
        self
    }
}

impl std::fmt::Display for ToolErrorInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ToolErrorInfo {}

/// Errors raised while building or registering tools.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A [`crate::ToolDefinition`] broke a validation rule.
    #[error("invalid tool definition `{name}`: {reason}")]
    InvalidDefinition {
        /// The offending tool name (may itself be the invalid part).
        name: String,
        /// Which rule was broken.
        reason: String,
    },
    /// A name or alias is already registered.
    #[error("tool name `{name}` conflicts with an existing {existing}")]
    Conflict {
        /// The name or alias that collided.
        name: String,
        /// What already holds it, e.g. "tool `read_file`" or "alias of `read_file`".
        existing: String,
    },
    /// No tool answers to the name or alias.
    #[error("tool `{0}` not found")]
    NotFound(String),
}

impl Error {
    /// The stable error code for this error (one of [`codes`]).
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidDefinition { .. } => codes::INVALID_DEFINITION,
            Error::Conflict { .. } => codes::TOOL_CONFLICT,
            Error::NotFound(_) => codes::TOOL_NOT_FOUND,
        }
    }

    /// Converts the error into the structured form a tool result carries.
    pub fn to_info(&self) -> ToolErrorInfo {
        ToolErrorInfo::from_error(self.code(), self)
    }
}

/// Shorthand result type for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
