//! The Tavily API key: a value that never prints, and where the client finds it.

use std::fmt;

/// The environment variable the runner's configuration maps to the Tavily key
/// (`provider.api_keys.tavily` with `IRIS_` + `__` nesting).
pub const TAVILY_API_KEY_ENV: &str = "IRIS_PROVIDER_API_KEYS__TAVILY";

/// A Tavily API key. Its `Debug` output is redacted and it has no `Display` or
/// `Serialize`, so it cannot end up in logs, errors or results by accident.
///
/// ```
/// use iris_web::ApiKey;
/// let key = ApiKey::new("tvly-secret-value");
/// assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
/// assert!(!key.is_blank());
/// assert!(ApiKey::new("  ").is_blank());
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// Whether the key is empty or whitespace only (a blank key counts as missing).
    pub fn is_blank(&self) -> bool {
        self.0.trim().is_empty()
    }

    /// The key itself, trimmed; only the client reads it, to build the header.
    pub(crate) fn expose(&self) -> &str {
        self.0.trim()
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl From<String> for ApiKey {
    fn from(key: String) -> Self {
        Self(key)
    }
}

impl From<&str> for ApiKey {
    fn from(key: &str) -> Self {
        Self(key.to_owned())
    }
}

/// Where the client's key comes from.
#[derive(Debug, Clone)]
pub(crate) enum KeySource {
    /// Given by the host.
    Explicit(ApiKey),
    /// Read from this environment variable at every request, so a host that stores the
    /// secret after start-up (credential auto-heal) does not need a new client.
    Env(String),
}

impl KeySource {
    /// The current key, when one is set and not blank.
    pub(crate) fn current(&self) -> Option<ApiKey> {
        let key = match self {
            KeySource::Explicit(key) => key.clone(),
            KeySource::Env(var) => ApiKey::new(std::env::var(var).ok()?),
        };
        (!key.is_blank()).then_some(key)
    }
}
