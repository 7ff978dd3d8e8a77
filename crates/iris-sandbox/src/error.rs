//! [`SandboxError`]: why a policy is invalid or cannot be enforced.

/// Why a sandbox policy is invalid or cannot be enforced here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// A policy key broke a rule.
    #[error("invalid sandbox policy `{key}`: {reason}")]
    Config {
        /// The key (`deny_read`, `network.allow`, …).
        key: String,
        /// Which rule it broke.
        reason: String,
    },
    /// This host cannot enforce the policy: a kernel mechanism, the helper binary or a
    /// resource it needs is missing. The message names what is missing and the
    /// opt-outs.
    #[error("{0}")]
    Unavailable(String),
}

impl SandboxError {
    pub(crate) fn config(key: &str, reason: impl Into<String>) -> Self {
        SandboxError::Config {
            key: key.to_owned(),
            reason: reason.into(),
        }
    }

    /// An [`SandboxError::Unavailable`] whose message ends with the opt-outs.
    pub fn unavailable(what: impl std::fmt::Display) -> Self {
        SandboxError::Unavailable(format!(
            "the command sandbox cannot be enforced: {what}; to run commands without it, set `command.sandbox: {{filesystem: off, network: on}}` or use `command.mode: docker`"
        ))
    }
}
