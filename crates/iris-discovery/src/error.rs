//! [`Error`]: what configuring discovery fails with.

use iris_tools_core::codes;

/// Errors raised while configuring discovery (`context_policy`, a backend's settings).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration value breaks a rule.
    #[error("invalid configuration: `{field}` {reason}")]
    InvalidConfig {
        /// The offending field, e.g. `context_policy.deferred_tools`.
        field: String,
        /// Which rule was broken.
        reason: String,
    },
}

impl Error {
    /// The stable error code (`INVALID_CONFIG`).
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidConfig { .. } => codes::INVALID_CONFIG,
        }
    }
}

/// Shorthand result type for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
