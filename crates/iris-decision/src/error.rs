//! The crate's [`Error`] type and its stable error codes.

use iris_tools_core::ToolErrorInfo;

/// Stable `SCREAMING_SNAKE` codes of this crate's errors.
///
/// Codes are part of the public contract: hosts, models and tests match on them.
/// Never rename one; add new ones here so they live in one place.
pub mod codes {
    /// A [`crate::DecisionRequest`] (or the discovery input that builds one) breaks a rule.
    pub const DECISION_INVALID_REQUEST: &str = "DECISION_INVALID_REQUEST";
    /// The evaluator's answer is malformed or does not match the questions asked.
    pub const DECISION_INVALID_RESPONSE: &str = "DECISION_INVALID_RESPONSE";
    /// The request did not finish within its one total deadline.
    pub const DECISION_TIMEOUT: &str = "DECISION_TIMEOUT";
    /// The decision service answered with an HTTP error status (other than 401/403).
    pub const DECISION_HTTP_ERROR: &str = "DECISION_HTTP_ERROR";
    /// The API key is missing, malformed, or was rejected (HTTP 401/403).
    pub const DECISION_AUTH: &str = "DECISION_AUTH";
    /// The decision service could not be reached (connect, TLS or transport failure).
    pub const DECISION_UNAVAILABLE: &str = "DECISION_UNAVAILABLE";
    /// Tool discovery was given more deferred tools than one decision can hold.
    pub const DECISION_TOO_MANY_TOOLS: &str = "DECISION_TOO_MANY_TOOLS";
    /// The client was closed; it sends no more requests.
    pub const DECISION_CLOSED: &str = "DECISION_CLOSED";
    /// The decision configuration or a client setting breaks a rule.
    pub const DECISION_INVALID_CONFIG: &str = "DECISION_INVALID_CONFIG";
}

/// Which part of the single request was running when the total deadline passed.
///
/// The deadline is one budget for the whole exchange; the phase only says where the
/// time ran out, which tells a slow service apart from a slow network transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeoutPhase {
    /// Connecting, sending the request, or waiting for the response headers.
    Request,
    /// The headers arrived; reading the response body took too long.
    Body,
}

impl TimeoutPhase {
    /// The lower-case name used in messages and error details (`request`, `body`).
    pub fn as_str(self) -> &'static str {
        match self {
            TimeoutPhase::Request => "request",
            TimeoutPhase::Body => "body",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            TimeoutPhase::Request => "before the response headers arrived",
            TimeoutPhase::Body => "while reading the response body",
        }
    }
}

/// Errors of the decision layer.
///
/// Messages are one line and never contain the API key: texts that come from the
/// service are redacted before they are stored here.
///
/// ```
/// use iris_decision::Error;
/// let err = Error::TooManyTools { count: 300, max: 254 };
/// assert_eq!(err.code(), "DECISION_TOO_MANY_TOOLS");
/// assert_eq!(
///     err.to_string(),
///     "tool discovery got 300 deferred tools; one decision holds at most 254 (no trimming)"
/// );
/// assert!(!err.retryable());
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The request (or the discovery input) breaks a rule.
    #[error("invalid decision request: `{field}` {reason}")]
    InvalidRequest {
        /// Where the problem is, e.g. `questions.pick.options`.
        field: String,
        /// Which rule was broken.
        reason: String,
    },
    /// The evaluator's answer is malformed or does not fit the questions.
    #[error("invalid decision response: `{field}` {reason}")]
    InvalidResponse {
        /// Where the problem is, e.g. `answers.pick.choice` (`<body>` for the whole body).
        field: String,
        /// Which rule was broken.
        reason: String,
    },
    /// The single request did not finish within the total deadline.
    #[error("the decision request timed out after {seconds} s {}", phase.describe())]
    Timeout {
        /// The total deadline, in seconds.
        seconds: f64,
        /// Where the time ran out.
        phase: TimeoutPhase,
    },
    /// The service answered with an HTTP error status other than 401/403.
    #[error("the decision service answered HTTP {status}{}", excerpt(message))]
    Http {
        /// The HTTP status code.
        status: u16,
        /// A short, redacted excerpt of the service's error message, when it sent one.
        message: Option<String>,
    },
    /// The API key is missing or malformed, or the service rejected it.
    #[error("decision authentication failed: {reason}")]
    Auth {
        /// What is wrong (never the key itself).
        reason: String,
        /// The HTTP status when the service rejected the key (401 or 403).
        status: Option<u16>,
    },
    /// The service could not be reached.
    #[error("the decision service is unavailable: {reason}")]
    Unavailable {
        /// What failed, e.g. "connection failed".
        reason: String,
        /// The transport error (its text names the URL, never the key).
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// Tool discovery got more candidates than one decision can hold.
    #[error(
        "tool discovery got {count} deferred tools; one decision holds at most {max} (no trimming)"
    )]
    TooManyTools {
        /// How many candidates were given.
        count: usize,
        /// The most one decision holds.
        max: usize,
    },
    /// The client was closed.
    #[error("the decision client is closed")]
    Closed,
    /// The configuration or a client setting breaks a rule.
    #[error("invalid decision configuration: `{field}` {reason}")]
    InvalidConfig {
        /// The offending field, e.g. `tools.discovery` or `timeout_seconds`.
        field: String,
        /// Why it is invalid.
        reason: String,
    },
}

fn excerpt(message: &Option<String>) -> String {
    message
        .as_deref()
        .map(|m| format!(": {m}"))
        .unwrap_or_default()
}

impl Error {
    /// The stable error code (one of [`codes`]).
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidRequest { .. } => codes::DECISION_INVALID_REQUEST,
            Error::InvalidResponse { .. } => codes::DECISION_INVALID_RESPONSE,
            Error::Timeout { .. } => codes::DECISION_TIMEOUT,
            Error::Http { .. } => codes::DECISION_HTTP_ERROR,
            Error::Auth { .. } => codes::DECISION_AUTH,
            Error::Unavailable { .. } => codes::DECISION_UNAVAILABLE,
            Error::TooManyTools { .. } => codes::DECISION_TOO_MANY_TOOLS,
            Error::Closed => codes::DECISION_CLOSED,
            Error::InvalidConfig { .. } => codes::DECISION_INVALID_CONFIG,
        }
    }

    /// Whether sending the same request again may succeed: timeouts, an unreachable
    /// service, HTTP 408/429 and 5xx. Everything else needs a change first.
    pub fn retryable(&self) -> bool {
        match self {
            Error::Timeout { .. } | Error::Unavailable { .. } => true,
            Error::Http { status, .. } => matches!(status, 408 | 429 | 500..=599),
            _ => false,
        }
    }

    /// The structured form a tool result carries: code, one-line message (with the
    /// source chain), `retryable`, and details a host may use.
    pub fn to_info(&self) -> ToolErrorInfo {
        let info = ToolErrorInfo::from_error(self.code(), self).retryable(self.retryable());
        match self {
            Error::InvalidRequest { field, .. }
            | Error::InvalidResponse { field, .. }
            | Error::InvalidConfig { field, .. } => info.with_detail("field", field.as_str()),
            Error::Timeout { seconds, phase } => info
                .with_detail("timeout_seconds", *seconds)
                .with_detail("phase", phase.as_str()),
            Error::Http { status, .. } => info.with_detail("status", *status),
            // `secret` names what a host supplies to heal it (credential auto-heal).
            Error::Auth {
                status: Some(status),
                ..
            } => info
                .with_detail("status", *status)
                .with_detail("secret", crate::jev::API_KEY_ENV),
            Error::Auth { status: None, .. } => info.with_detail("secret", crate::jev::API_KEY_ENV),
            Error::TooManyTools { count, max } => {
                info.with_detail("count", *count).with_detail("max", *max)
            }
            _ => info,
        }
    }

    pub(crate) fn request(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidRequest {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn response(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidResponse {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn config(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidConfig {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// Shorthand result type for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
