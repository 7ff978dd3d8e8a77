//! [`ProviderError`]: why a model request failed, with stable codes.

use std::time::Duration;

use iris_tools_core::ToolErrorInfo;
use serde_json::{Value, json};

/// Stable `SCREAMING_SNAKE` codes of [`ProviderError`].
///
/// Codes are part of the public contract: hosts, the run loop and tests match on them.
/// Never rename one.
pub mod codes {
    /// The provider rejected the credential (HTTP 401 or 403, or Gemini's 400
    /// `API_KEY_INVALID`).
    pub const PROVIDER_AUTH: &str = "PROVIDER_AUTH";
    /// The provider asked the client to slow down (HTTP 429); retryable after
    /// `retry_after` when it said how long.
    pub const PROVIDER_RATE_LIMITED: &str = "PROVIDER_RATE_LIMITED";
    /// The answer was not the documented format: unparseable body, missing fields, a
    /// stream cut off before its end.
    pub const PROVIDER_BAD_RESPONSE: &str = "PROVIDER_BAD_RESPONSE";
    /// No answer (or no next stream chunk) arrived in time; retryable.
    pub const PROVIDER_TIMEOUT: &str = "PROVIDER_TIMEOUT";
    /// The provider could not be reached or failed on its side (connect errors, 5xx,
    /// Anthropic's 529 overloaded); retryable.
    pub const PROVIDER_UNAVAILABLE: &str = "PROVIDER_UNAVAILABLE";
    /// The model refused (see [`crate::chat::CompletionResponse::check_refusal`]).
    pub const PROVIDER_REFUSED: &str = "PROVIDER_REFUSED";
    /// The provider refused the request itself (other 4xx: an unknown model, a context
    /// that is too long), or the request could not be expressed in its format.
    pub const PROVIDER_INVALID_REQUEST: &str = "PROVIDER_INVALID_REQUEST";
    /// The client was configured with an unusable value (base URL, timeout).
    pub const PROVIDER_CONFIG_INVALID: &str = "PROVIDER_CONFIG_INVALID";
    /// A [`crate::scripted::ScriptedProvider`] has no turn left.
    pub const PROVIDER_SCRIPT_EXHAUSTED: &str = "PROVIDER_SCRIPT_EXHAUSTED";
    /// A scripted turn's expectation did not hold, or the script is malformed.
    pub const PROVIDER_SCRIPT_INVALID: &str = "PROVIDER_SCRIPT_INVALID";
}

/// Why a model request failed.
///
/// No variant holds the API key: server messages are quoted only after the key is
/// redacted from them, and the clients never put it anywhere else.
///
/// ```
/// use std::time::Duration;
/// use iris_providers::ProviderError;
///
/// let err = ProviderError::RateLimited { retry_after: Some(Duration::from_secs(2)), message: None };
/// assert_eq!(err.code(), "PROVIDER_RATE_LIMITED");
/// assert!(err.is_retryable());
/// assert_eq!(err.to_info().details["retry_after_seconds"], 2.0);
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// HTTP 401 or 403 (or Gemini's 400 with reason `API_KEY_INVALID`).
    #[error(
        "the provider rejected the credential (HTTP {status}){}",
        suffix(message)
    )]
    Auth {
        /// 401 or 403; 400 for Gemini's `API_KEY_INVALID`.
        status: u16,
        /// The provider's own message, one line, key redacted.
        message: Option<String>,
    },
    /// HTTP 429.
    #[error("the provider's rate limit was hit (HTTP 429){}{}", retry_hint(*retry_after), suffix(message))]
    RateLimited {
        /// How long the provider asked to wait (`retry-after-ms`, `Retry-After` in
        /// seconds or as an HTTP date, OpenAI's `x-ratelimit-reset-*`, or the
        /// `google.rpc.RetryInfo` `retryDelay` of a Gemini error body).
        retry_after: Option<Duration>,
        /// The provider's own message.
        message: Option<String>,
    },
    /// The answer was not the documented format.
    #[error("the provider's answer is not the documented format: {reason}")]
    BadResponse {
        /// What was wrong, e.g. "the stream ended before `[DONE]`".
        reason: String,
    },
    /// Nothing arrived within the client's timeout.
    #[error("the provider did not answer within {}", seconds(*after))]
    Timeout {
        /// The timeout that passed.
        after: Duration,
    },
    /// The provider could not be reached, or failed on its side.
    #[error("the provider is unavailable{}: {reason}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
    Unavailable {
        /// The HTTP status, when there was an answer (5xx).
        status: Option<u16>,
        /// What happened, one line.
        reason: String,
    },
    /// The model refused.
    #[error("the model refused{}", suffix(message))]
    Refused {
        /// The model's refusal message, when it gave one.
        message: Option<String>,
    },
    /// The provider refused the request (other 4xx), or it cannot be expressed in the
    /// provider's format (`status` is then `None`).
    #[error("the provider refused the request{}: {message}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
    InvalidRequest {
        /// The HTTP status, when the server answered.
        status: Option<u16>,
        /// Why, one line.
        message: String,
    },
    /// A tool schema cannot be expressed in the provider's format.
    #[error(transparent)]
    Schema(#[from] crate::Error),
    /// A configuration value is unusable.
    #[error("invalid provider configuration: `{field}` {reason}")]
    Config {
        /// The setting, e.g. `base_url`.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A scripted provider has played every turn.
    #[error("the script has no turn left: all {played} turns were played")]
    ScriptExhausted {
        /// How many turns the script had.
        played: usize,
    },
    /// A script is malformed, or a scripted turn's expectation failed.
    #[error("script error: {reason}")]
    Script {
        /// What is wrong, naming the turn.
        reason: String,
    },
}

impl ProviderError {
    /// The stable error code; see [`codes`].
    pub fn code(&self) -> &'static str {
        match self {
            ProviderError::Auth { .. } => codes::PROVIDER_AUTH,
            ProviderError::RateLimited { .. } => codes::PROVIDER_RATE_LIMITED,
            ProviderError::BadResponse { .. } => codes::PROVIDER_BAD_RESPONSE,
            ProviderError::Timeout { .. } => codes::PROVIDER_TIMEOUT,
            ProviderError::Unavailable { .. } => codes::PROVIDER_UNAVAILABLE,
            ProviderError::Refused { .. } => codes::PROVIDER_REFUSED,
            ProviderError::InvalidRequest { .. } => codes::PROVIDER_INVALID_REQUEST,
            ProviderError::Schema(e) => e.code(),
            ProviderError::Config { .. } => codes::PROVIDER_CONFIG_INVALID,
            ProviderError::ScriptExhausted { .. } => codes::PROVIDER_SCRIPT_EXHAUSTED,
            ProviderError::Script { .. } => codes::PROVIDER_SCRIPT_INVALID,
        }
    }

    /// Whether the same request may succeed later: rate limits, timeouts and
    /// unavailability. [`crate::retry`] retries exactly these.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ProviderError::RateLimited { .. }
                | ProviderError::Timeout { .. }
                | ProviderError::Unavailable { .. }
        )
    }

    /// How long the provider asked to wait, for a rate limit that said so.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The structured form (code, one-line message, `retryable`, details such as
    /// `status` and `retry_after_seconds`), as the other Iris error types offer.
    pub fn to_info(&self) -> ToolErrorInfo {
        let mut info = ToolErrorInfo::new(self.code(), self.to_string());
        info.retryable = self.is_retryable();
        match self {
            ProviderError::Auth { status, .. } => info = info.with_detail("status", *status),
            ProviderError::RateLimited { retry_after, .. } => {
                info = info.with_detail("status", 429).with_detail(
                    "retry_after_seconds",
                    retry_after.map_or(Value::Null, |d| json!(d.as_secs_f64())),
                );
            }
            ProviderError::Unavailable {
                status: Some(status),
                ..
            }
            | ProviderError::InvalidRequest {
                status: Some(status),
                ..
            } => info = info.with_detail("status", *status),
            ProviderError::Timeout { after } => {
                info = info.with_detail("timeout_seconds", after.as_secs_f64());
            }
            _ => {}
        }
        info
    }
}

fn suffix(message: &Option<String>) -> String {
    message
        .as_deref()
        .filter(|m| !m.is_empty())
        .map(|m| format!(": {m}"))
        .unwrap_or_default()
}

fn retry_hint(retry_after: Option<Duration>) -> String {
    retry_after
        .map(|d| format!("; retry after {}", seconds(d)))
        .unwrap_or_default()
}

fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.3} s", d.as_secs_f64())
    }
}
