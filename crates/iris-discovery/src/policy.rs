//! [`ContextPolicy`]: the `context_policy` section that switches deferred discovery on.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The `context_policy` configuration section (seed 000, tool discovery).
///
/// `enabled` defaults to true and `deferred_tools` to false. Turning `deferred_tools`
/// on installs `tool_search` and publishes connected MCP tools as deferred; it needs
/// `enabled`. It does not make ordinary eager tools deferred: a Rust tool's
/// `deferred` flag is its own definition's choice. Unknown fields are rejected so a
/// typo cannot silently leave discovery off.
///
/// ```
/// use iris_discovery::ContextPolicy;
///
/// let policy: ContextPolicy = serde_json::from_str(r#"{"deferred_tools": true}"#).unwrap();
/// assert!(policy.enabled && policy.deferred_tools);
/// assert!(policy.validate().is_ok());
/// assert!(policy.installs_tool_search());
///
/// let off = ContextPolicy { enabled: false, deferred_tools: true };
/// let err = off.validate().unwrap_err();
/// assert_eq!(err.code(), "INVALID_CONFIG");
/// assert_eq!(
///     err.to_string(),
///     "invalid configuration: `context_policy.deferred_tools` requires \
///      `context_policy.enabled = true`; enable the context policy or turn deferred tools off"
/// );
///
/// assert!(serde_json::from_str::<ContextPolicy>(r#"{"deferred_tool": true}"#).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContextPolicy {
    /// Whether the context policy is on. Default `true`.
    pub enabled: bool,
    /// Whether specialist tools are published as deferred and found through
    /// `tool_search`. Requires `enabled`. Default `false`.
    pub deferred_tools: bool,
}

impl Default for ContextPolicy {
    fn default() -> Self {
        Self {
            enabled: true,
            deferred_tools: false,
        }
    }
}

impl ContextPolicy {
    /// Checks the section: `deferred_tools` only with `enabled`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] (code `INVALID_CONFIG`) naming
    /// `context_policy.deferred_tools`.
    pub fn validate(&self) -> Result<()> {
        if self.deferred_tools && !self.enabled {
            return Err(Error::InvalidConfig {
                field: "context_policy.deferred_tools".to_owned(),
                reason: "requires `context_policy.enabled = true`; enable the context policy \
                         or turn deferred tools off"
                    .to_owned(),
            });
        }
        Ok(())
    }

    /// Whether `tool_search` is installed: the policy is on and defers tools.
    pub fn installs_tool_search(&self) -> bool {
        self.enabled && self.deferred_tools
    }

    /// Whether connected MCP tools are published as deferred (the same switch).
    pub fn defers_mcp_tools(&self) -> bool {
        self.installs_tool_search()
    }
}
