//! The crate's [`Error`] type and its stable error codes.

use std::time::Duration;

use iris_tools_core::ToolErrorInfo;
use serde_json::{Value, json};

/// Stable `SCREAMING_SNAKE` codes of the web tools' failures.
///
/// Codes are part of the public contract: hosts, models and tests match on them. Never
/// rename one. Invalid tool input uses the shared
/// [`iris_tools_core::codes::INVALID_INPUT`]; cancellation uses
/// [`iris_tools_core::codes::CANCELLED`].
pub mod codes {
    /// No Tavily API key is configured, or Tavily rejected it (HTTP 401 or 403).
    ///
    /// `details.secret` names the secret the host must supply (by default
    /// `IRIS_PROVIDER_API_KEYS__TAVILY`), so an agent can ask for it and retry: the
    /// credential auto-heal flow (the `store_secret` tool).
    pub const WEB_AUTH_REQUIRED: &str = "WEB_AUTH_REQUIRED";
    /// Tavily answered HTTP 429; the call is retryable, after `details.retry_after_seconds`
    /// when the server said so.
    pub const WEB_RATE_LIMITED: &str = "WEB_RATE_LIMITED";
    /// Tavily answered another HTTP error status; `details.status` holds it. Server
    /// errors (5xx) are retryable, client errors (4xx) are not.
    pub const WEB_HTTP_ERROR: &str = "WEB_HTTP_ERROR";
    /// The request did not finish within its total deadline; retryable.
    pub const WEB_TIMEOUT: &str = "WEB_TIMEOUT";
    /// The Tavily API could not be reached (connection refused, DNS, TLS); retryable.
    pub const WEB_UNREACHABLE: &str = "WEB_UNREACHABLE";
    /// Tavily answered 200 with a body that is not the documented JSON.
    pub const WEB_INVALID_RESPONSE: &str = "WEB_INVALID_RESPONSE";
    /// `web_fetch` could not extract any of the requested URLs.
    pub const WEB_FETCH_FAILED: &str = "WEB_FETCH_FAILED";
    /// The client was configured with an unusable base URL or deadline.
    pub const WEB_CONFIG_INVALID: &str = "WEB_CONFIG_INVALID";
}

/// Why a request needs a (new) credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthFailure {
    /// No key is configured (or it is blank).
    Missing,
    /// The configured key cannot be sent as an HTTP header (it holds control characters).
    Malformed,
    /// Tavily rejected the key with this HTTP status (401 or 403).
    Rejected(u16),
}

impl AuthFailure {
    /// Stable lower-case name used in `details.reason`: `missing`, `malformed`, `rejected`.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthFailure::Missing => "missing",
            AuthFailure::Malformed => "malformed",
            AuthFailure::Rejected(_) => "rejected",
        }
    }
}

/// Errors of the Tavily client and the web tools.
///
/// No variant ever holds the API key: messages name the *secret* (the environment
/// variable the host stores it under), never its value.
///
/// ```
/// use iris_web::{AuthFailure, Error};
/// let err = Error::AuthRequired {
///     secret: "IRIS_PROVIDER_API_KEYS__TAVILY".into(),
///     failure: AuthFailure::Missing,
/// };
/// assert_eq!(err.code(), "WEB_AUTH_REQUIRED");
/// let info = err.to_info();
/// assert_eq!(info.details["secret"], "IRIS_PROVIDER_API_KEYS__TAVILY");
/// assert!(info.message.contains("IRIS_PROVIDER_API_KEYS__TAVILY"));
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The call needs a valid Tavily API key.
    #[error("{}", auth_message(secret, *failure))]
    AuthRequired {
        /// The secret the host must supply, e.g. `IRIS_PROVIDER_API_KEYS__TAVILY`.
        secret: String,
        /// Why the current key (if any) does not work.
        failure: AuthFailure,
    },
    /// Tavily answered 429.
    #[error("the Tavily API rate limit was hit (HTTP 429){}", retry_hint(*retry_after))]
    RateLimited {
        /// How long the server asked to wait, when it sent `Retry-After` in seconds.
        retry_after: Option<Duration>,
    },
    /// Tavily answered another error status.
    #[error("the Tavily API answered HTTP {status}{}", server_says(message))]
    Http {
        /// The HTTP status.
        status: u16,
        /// The server's error text (one line, shortened), when it sent one.
        message: Option<String>,
    },
    /// The request missed its total deadline.
    #[error("the Tavily API did not answer within {}", human_duration(*timeout))]
    Timeout {
        /// The deadline that expired.
        timeout: Duration,
    },
    /// The API could not be reached.
    #[error("could not reach the Tavily API at {base_url}: {reason}")]
    Unreachable {
        /// The base URL the client talks to.
        base_url: String,
        /// What failed (connect, TLS, reading the body…).
        reason: String,
    },
    /// A 200 answer whose body is not the documented JSON.
    #[error("the Tavily API sent an unreadable {endpoint} response: {reason}")]
    InvalidResponse {
        /// `search` or `extract`.
        endpoint: &'static str,
        /// What was wrong with it.
        reason: String,
    },
    /// No requested URL could be extracted.
    #[error("none of the {} requested URLs could be extracted: {}", failed.len(), list_failures(failed))]
    FetchFailed {
        /// Each URL with the reason it failed, in request order.
        failed: Vec<(String, String)>,
    },
    /// The client configuration is unusable.
    #[error("invalid Tavily client configuration: `{field}` {reason}")]
    Config {
        /// `base_url` or `timeout`.
        field: &'static str,
        /// Why.
        reason: String,
    },
}

fn auth_message(secret: &str, failure: AuthFailure) -> String {
    match failure {
        AuthFailure::Missing => {
            format!("no Tavily API key is configured; the host must provide the secret `{secret}`")
        }
        AuthFailure::Malformed => format!(
            "the Tavily API key is not a valid header value; the host must provide a new \
             secret `{secret}`"
        ),
        AuthFailure::Rejected(status) => format!(
            "the Tavily API rejected the API key (HTTP {status}); the host must provide a \
             valid secret `{secret}`"
        ),
    }
}

/// `30 s`, `2.5 s`, `50 ms`: a deadline as a person would write it.
fn human_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else if d.subsec_nanos() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

fn retry_hint(retry_after: Option<Duration>) -> String {
    match retry_after {
        Some(d) => format!("; retry after {} s", d.as_secs()),
        None => "; retry later".to_owned(),
    }
}

fn server_says(message: &Option<String>) -> String {
    match message {
        Some(m) => format!(": {m}"),
        None => String::new(),
    }
}

fn list_failures(failed: &[(String, String)]) -> String {
    failed
        .iter()
        .map(|(url, reason)| format!("{url} ({reason})"))
        .collect::<Vec<_>>()
        .join("; ")
}

impl Error {
    /// The stable code of this error (one of [`codes`]).
    pub fn code(&self) -> &'static str {
        match self {
            Error::AuthRequired { .. } => codes::WEB_AUTH_REQUIRED,
            Error::RateLimited { .. } => codes::WEB_RATE_LIMITED,
            Error::Http { .. } => codes::WEB_HTTP_ERROR,
            Error::Timeout { .. } => codes::WEB_TIMEOUT,
            Error::Unreachable { .. } => codes::WEB_UNREACHABLE,
            Error::InvalidResponse { .. } => codes::WEB_INVALID_RESPONSE,
            Error::FetchFailed { .. } => codes::WEB_FETCH_FAILED,
            Error::Config { .. } => codes::WEB_CONFIG_INVALID,
        }
    }

    /// Whether the same call may succeed when retried unchanged: rate limits, timeouts,
    /// unreachable servers and server errors (5xx).
    pub fn retryable(&self) -> bool {
        match self {
            Error::RateLimited { .. } | Error::Timeout { .. } | Error::Unreachable { .. } => true,
            Error::Http { status, .. } => *status >= 500,
            _ => false,
        }
    }

    /// The structured form a tool result carries: code, message, retryable, and
    /// details (`secret`/`reason`/`status` for auth, `status` for HTTP errors,
    /// `retry_after_seconds`, `timeout_seconds`, `failed` for fetch failures).
    pub fn to_info(&self) -> ToolErrorInfo {
        let info = ToolErrorInfo::new(self.code(), self.to_string()).retryable(self.retryable());
        match self {
            Error::AuthRequired { secret, failure } => {
                let info = info
                    .with_detail("secret", secret.as_str())
                    .with_detail("provider", "tavily")
                    .with_detail("reason", failure.as_str());
                match failure {
                    AuthFailure::Rejected(status) => info.with_detail("status", *status),
                    _ => info,
                }
            }
            Error::RateLimited { retry_after } => info.with_detail("status", 429).with_detail(
                "retry_after_seconds",
                retry_after.map_or(Value::Null, |d| json!(d.as_secs())),
            ),
            Error::Http { status, .. } => info.with_detail("status", *status),
            Error::Timeout { timeout } => {
                info.with_detail("timeout_seconds", timeout.as_secs_f64())
            }
            Error::FetchFailed { failed } => info.with_detail(
                "failed",
                failed
                    .iter()
                    .map(|(url, error)| json!({"url": url, "error": error}))
                    .collect::<Vec<_>>(),
            ),
            Error::Config { field, .. } => info.with_detail("field", *field),
            Error::Unreachable { .. } | Error::InvalidResponse { .. } => info,
        }
    }
}

/// Shorthand result type for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `text` on one line (whitespace runs collapsed) and at most `max` characters, with
/// `…` when cut. Server text and extracted snippets pass through it so one bad answer
/// cannot break a one-line message.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= max {
        collapsed
    } else {
        let mut cut: String = collapsed.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}
