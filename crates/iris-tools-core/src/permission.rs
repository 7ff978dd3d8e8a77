//! [`PermissionPolicy`] and the seed's [`DefaultPermissionPolicy`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::ToolExecutionContext;
use crate::definition::ToolCapability;
use crate::tool::Tool;
use crate::workspace::WorkspacePolicy;

/// What a policy decided for one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum PermissionEffect {
    /// Run the call.
    Allow,
    /// Refuse the call.
    Deny {
        /// Why.
        reason: String,
    },
    /// A human must decide first.
    RequireHuman {
        /// What the human is asked.
        reason: String,
    },
}

/// A policy decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionDecision {
    /// The effect.
    #[serde(flatten)]
    pub effect: PermissionEffect,
}

impl PermissionDecision {
    /// Allow.
    pub fn allow() -> Self {
        Self {
            effect: PermissionEffect::Allow,
        }
    }
    /// Deny with a reason.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self {
            effect: PermissionEffect::Deny {
                reason: reason.into(),
            },
        }
    }
    /// Ask a human, with a reason.
    pub fn require_human(reason: impl Into<String>) -> Self {
        Self {
            effect: PermissionEffect::RequireHuman {
                reason: reason.into(),
            },
        }
    }
    /// Whether the effect is allow.
    pub fn is_allowed(&self) -> bool {
        matches!(self.effect, PermissionEffect::Allow)
    }
}

/// Decides whether a call may run.
pub trait PermissionPolicy: Send + Sync {
    /// Checks one call with its validated params and the current identity.
    fn check(
        &self,
        tool: &dyn Tool,
        params: &Value,
        ctx: &ToolExecutionContext,
    ) -> PermissionDecision;
}

/// How a class of side effects is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Run without asking.
    Allow,
    /// Ask a human.
    #[default]
    Confirm,
    /// Never run.
    Deny,
}

/// The seed's default policy.
#[derive(Debug, Clone, Default)]
pub struct DefaultPermissionPolicy {
    /// Path confinement used for path parameters.
    pub workspace_policy: WorkspacePolicy,
    /// How write tools are treated.
    pub write_mode: ApprovalMode,
    /// How execute tools are treated.
    pub execute_mode: ApprovalMode,
}

impl PermissionPolicy for DefaultPermissionPolicy {
    fn check(
        &self,
        tool: &dyn Tool,
        _params: &Value,
        _ctx: &ToolExecutionContext,
    ) -> PermissionDecision {
        let def = tool.definition();
        if def.has(ToolCapability::Execute) {
            return decide(self.execute_mode, &def.name);
        }
        if tool.is_read_only() {
            return PermissionDecision::allow();
        }
        if def.has(ToolCapability::Write) {
            return decide(self.write_mode, &def.name);
        }
        PermissionDecision::require_human(format!("`{}` needs confirmation", def.name))
    }
}

fn decide(mode: ApprovalMode, name: &str) -> PermissionDecision {
    match mode {
        ApprovalMode::Allow => PermissionDecision::allow(),
        ApprovalMode::Confirm => {
            PermissionDecision::require_human(format!("`{name}` needs confirmation"))
        }
        ApprovalMode::Deny => {
            PermissionDecision::deny(format!("`{name}` is not allowed by policy"))
        }
    }
}
