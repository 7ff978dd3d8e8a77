//! [`HookError`]: why a hook failed, with a stable code.

/// What kind of failure a hook had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HookErrorKind {
    /// A registration broke a rule (empty name, bad timeout, tools on a run event).
    InvalidRegistration,
    /// The hooks configuration (YAML) is invalid.
    InvalidConfig,
    /// The handler returned an error.
    HandlerFailed,
    /// The handler exceeded its deadline.
    Timeout,
    /// The handler's answer broke the protocol (wrong result type, bad JSON, extra keys).
    Protocol,
    /// A command hook exited non-zero.
    CommandFailed,
    /// An HTTP hook's request failed or its server answered a non-2xx status.
    HttpFailed,
    /// A factory name is not registered.
    UnknownFactory,
    /// Cancellation arrived while the hook ran.
    Cancelled,
}

impl HookErrorKind {
    /// Stable `SCREAMING_SNAKE` code.
    pub fn code(self) -> &'static str {
        match self {
            HookErrorKind::InvalidRegistration => "HOOK_INVALID_REGISTRATION",
            HookErrorKind::InvalidConfig => "HOOK_INVALID_CONFIG",
            HookErrorKind::HandlerFailed => "HOOK_FAILED",
            HookErrorKind::Timeout => "HOOK_TIMEOUT",
            HookErrorKind::Protocol => "HOOK_PROTOCOL_ERROR",
            HookErrorKind::CommandFailed => "HOOK_COMMAND_FAILED",
            HookErrorKind::HttpFailed => "HOOK_HTTP_FAILED",
            HookErrorKind::UnknownFactory => "HOOK_UNKNOWN_FACTORY",
            HookErrorKind::Cancelled => "CANCELLED",
        }
    }
}

/// A hook failure: a kind with a stable code and a one-line message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HookError {
    /// The kind.
    pub kind: HookErrorKind,
    /// One-line message.
    pub message: String,
}

impl HookError {
    /// A new error.
    pub fn new(kind: HookErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// A handler failure with a message (what user handlers usually return).
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(HookErrorKind::HandlerFailed, message)
    }

    /// The stable code.
    pub fn code(&self) -> &'static str {
        self.kind.code()
    }
}
