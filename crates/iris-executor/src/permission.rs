//! [`PermissionPolicy`] and the default [`DefaultPermissionPolicy`].
//!
//! The executor asks a policy about every call after the input is validated and before
//! any hook, middleware or body runs. The answer is a [`PermissionDecision`]: allow,
//! deny with a reason, or require a human with a reason. A standalone executor never
//! prompts anyone; a require-human decision becomes a structured result the runner
//! turns into a WAITING run.
//!
//! Capability declarations drive the decision; they do not sandbox the process. A tool
//! that lies about its capabilities is outside what a policy can fix.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use iris_tools_core::{BoxFuture, Tool, ToolCapability, ToolDefinition, ToolExecutionContext};

use iris_fs::blocking::run_blocking_io;
use iris_fs::workspace::{PathError, WorkspacePolicy};

/// What a policy decided for one call.
///
/// Serialized with an `effect` tag; deny and require-human carry a `reason`:
///
/// ```
/// use iris_executor::PermissionDecision;
/// let d = PermissionDecision::require_human("tool `write_file` writes local state");
/// assert_eq!(
///     serde_json::to_value(&d).unwrap(),
///     serde_json::json!({"effect": "require_human", "reason": "tool `write_file` writes local state"}),
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum PermissionEffect {
    /// Run the call.
    Allow,
    /// Refuse the call; it does not run and no human is asked.
    Deny {
        /// Why, in one human-readable line naming the tool.
        reason: String,
    },
    /// A human must approve the call before it runs.
    RequireHuman {
        /// What the human is asked about, in one line naming the tool.
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

    /// Whether the effect is deny.
    pub fn is_denied(&self) -> bool {
        matches!(self.effect, PermissionEffect::Deny { .. })
    }

    /// Whether the effect is require-human.
    pub fn requires_human(&self) -> bool {
        matches!(self.effect, PermissionEffect::RequireHuman { .. })
    }

    /// The reason of a deny or require-human decision; `None` for allow.
    ///
    /// ```
    /// use iris_executor::PermissionDecision;
    /// assert_eq!(PermissionDecision::allow().reason(), None);
    /// assert_eq!(PermissionDecision::deny("no").reason(), Some("no"));
    /// ```
    pub fn reason(&self) -> Option<&str> {
        match &self.effect {
            PermissionEffect::Allow => None,
            PermissionEffect::Deny { reason } | PermissionEffect::RequireHuman { reason } => {
                Some(reason)
            }
        }
    }
}

/// Decides whether a call may run.
///
/// Asynchronous so a policy that looks at the file system or asks a service does so
/// off the async workers; a policy that decides from the call alone returns a ready
/// future (`Box::pin(std::future::ready(decision))`).
pub trait PermissionPolicy: Send + Sync {
    /// Checks one call with its validated params and the current identity.
    fn check<'a>(
        &'a self,
        tool: &'a dyn Tool,
        params: &'a Value,
        ctx: &'a ToolExecutionContext,
    ) -> BoxFuture<'a, PermissionDecision>;
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

impl ApprovalMode {
    /// The lower-case name used in YAML and JSON (`"allow"`, `"confirm"`, `"deny"`).
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Allow => "allow",
            ApprovalMode::Confirm => "confirm",
            ApprovalMode::Deny => "deny",
        }
    }
}

impl fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Parameter names that hold a file or directory path, checked against the workspace.
pub const PATH_PARAMETERS: [&str; 3] = ["file_path", "path", "cwd"];

/// The default permission policy.
///
/// Rules, in order; the first that applies decides:
///
/// 1. **Path escape.** A tool declaring `read`, `write` or `execute` whose top-level
///    string parameter `file_path`, `path` or `cwd` resolves outside the workspace
///    (through [`WorkspacePolicy::resolve_path`] against
///    [`ToolExecutionContext::workspace_root`]) is denied, whatever the modes say. A
///    path that merely does not exist yet is fine; an unusable path (empty, NUL byte)
///    is left to the tool, which reports `INVALID_PATH` itself.
/// 2. **Escalation.** A call for which [`Tool::requested_escalation`] names something
///    (`exec_command` asking for a wider sandbox) needs a human, even under
///    `execute_mode: allow`; the reason names the widening. Only a denial of rules 3–8
///    wins over it: a tool the modes deny stays denied.
/// 3. **Execute first.** A tool declaring `execute` gets `execute_mode`.
/// 4. **MCP.** A tool declaring `mcp` is allowed only when it is effectively trusted
///    read-only: [`Tool::is_read_only`] is true (the MCP layer says so only under
///    `trust_annotations` plus `readOnlyHint`) and it declares no `write`. Otherwise a
///    human decides.
/// 5. **Plain read-only.** [`Tool::is_read_only`] and no declared `write`: allowed.
/// 6. **Auto-allowed built-ins.** A tool whose [`Tool::is_auto_allowed`] is true (web,
///    tool discovery, memory search, subagent: [`ToolDefinition::auto_allow`]) and that
///    declares no `write`: allowed.
/// 7. **Pure read/write.** Capabilities within `{read, write}` with `write`:
///    `write_mode`.
/// 8. **Anything else** (network, agent, mixed): a human decides.
///
/// ```
/// use iris_executor::{ApprovalMode, DefaultPermissionPolicy};
/// use iris_tools_core::{FnTool, ToolCapability, ToolDefinition, ToolExecutionContext, ToolOutput};
/// use serde_json::json;
///
/// let write = FnTool::new(
///     ToolDefinition::new("write_note", "Write a note.", json!({"type": "object"}))
///         .with_capabilities([ToolCapability::Write]),
///     |_, _| async { ToolOutput::text("") },
/// );
/// let ctx = ToolExecutionContext::new(std::env::temp_dir());
///
/// let policy = DefaultPermissionPolicy::new();
/// assert!(policy.decide(&write, &json!({}), &ctx).requires_human());
///
/// let policy = DefaultPermissionPolicy::new().write_mode(ApprovalMode::Allow);
/// assert!(policy.decide(&write, &json!({}), &ctx).is_allowed());
/// ```
#[derive(Debug, Clone, Default)]
pub struct DefaultPermissionPolicy {
    /// Path confinement used for path parameters.
    pub workspace_policy: WorkspacePolicy,
    /// How pure read/write tools are treated (default: confirm).
    pub write_mode: ApprovalMode,
    /// How execute tools are treated (default: confirm).
    pub execute_mode: ApprovalMode,
}

impl DefaultPermissionPolicy {
    /// The defaults: `write_mode` and `execute_mode` both confirm.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets how pure read/write tools are treated.
    #[must_use]
    pub fn write_mode(mut self, mode: ApprovalMode) -> Self {
        self.write_mode = mode;
        self
    }

    /// Sets how execute tools are treated.
    #[must_use]
    pub fn execute_mode(mut self, mode: ApprovalMode) -> Self {
        self.execute_mode = mode;
        self
    }

    /// Sets the path confinement used for path parameters.
    #[must_use]
    pub fn workspace_policy(mut self, policy: WorkspacePolicy) -> Self {
        self.workspace_policy = policy;
        self
    }

    /// Every rule, synchronously: what [`PermissionPolicy::check`] decides, with the
    /// path resolution (rule 1) done on the calling thread.
    pub fn decide(
        &self,
        tool: &dyn Tool,
        params: &Value,
        ctx: &ToolExecutionContext,
    ) -> PermissionDecision {
        let def = tool.definition();
        let paths = path_parameters(def, params);
        first_escape(
            &self.workspace_policy,
            &def.name,
            &paths,
            &ctx.workspace_root,
        )
        .unwrap_or_else(|| self.by_capabilities(tool, params))
    }

    /// Rules 2–8: an escalation, then what the capabilities decide.
    fn by_capabilities(&self, tool: &dyn Tool, params: &Value) -> PermissionDecision {
        let decision = self.by_modes(tool);
        match tool.requested_escalation(params) {
            Some(widening) if !decision.is_denied() => PermissionDecision::require_human(format!(
                "tool `{}` asks to widen its sandbox: {widening}",
                tool.definition().name
            )),
            _ => decision,
        }
    }

    /// Rules 3–8: what the capabilities and the modes decide.
    fn by_modes(&self, tool: &dyn Tool) -> PermissionDecision {
        use ToolCapability as C;
        let def = tool.definition();
        let name = &def.name;
        if def.has(C::Execute) {
            return by_mode(
                self.execute_mode,
                format!("tool `{name}` executes programs"),
                "execute_mode",
            );
        }
        let writes = def.has(C::Write);
        if def.has(C::Mcp) {
            return if tool.is_read_only() && !writes {
                PermissionDecision::allow()
            } else {
                PermissionDecision::require_human(format!(
                    "MCP tool `{name}` is not trusted as read-only \
                     (that needs trust_annotations and readOnlyHint)"
                ))
            };
        }
        if tool.is_read_only() && !writes {
            return PermissionDecision::allow();
        }
        if !writes && tool.is_auto_allowed() {
            return PermissionDecision::allow();
        }
        let pure_read_write = def
            .capabilities
            .iter()
            .all(|c| matches!(c, C::Read | C::Write));
        if writes && pure_read_write {
            return by_mode(
                self.write_mode,
                format!("tool `{name}` writes local state"),
                "write_mode",
            );
        }
        let caps: Vec<&str> = def.capabilities.iter().map(|c| c.as_str()).collect();
        PermissionDecision::require_human(format!(
            "tool `{name}` declares {} and no automatic rule allows it",
            if caps.is_empty() {
                "no capabilities but is not read-only".to_owned()
            } else {
                format!("capabilities [{}]", caps.join(", "))
            }
        ))
    }
}

/// The path parameters rule 1 looks at: top-level strings under [`PATH_PARAMETERS`],
/// for tools that declare `read`, `write` or `execute`.
fn path_parameters(def: &ToolDefinition, params: &Value) -> Vec<(&'static str, String)> {
    let touches_paths = [
        ToolCapability::Read,
        ToolCapability::Write,
        ToolCapability::Execute,
    ]
    .into_iter()
    .any(|c| def.has(c));
    if !touches_paths {
        return Vec::new();
    }
    PATH_PARAMETERS
        .into_iter()
        .filter_map(|key| Some((key, params.get(key)?.as_str()?.to_owned())))
        .collect()
}

/// Rule 1: the first path parameter that resolves outside the workspace.
fn first_escape(
    policy: &WorkspacePolicy,
    tool: &str,
    paths: &[(&'static str, String)],
    workspace_root: &std::path::Path,
) -> Option<PermissionDecision> {
    paths.iter().find_map(|(key, value)| {
        match policy.resolve_path(value, workspace_root) {
            Err(PathError::OutsideWorkspace { workspace, .. }) => {
                Some(PermissionDecision::deny(format!(
                    "tool `{tool}`: `{key}` = `{}` resolves outside the workspace `{}`",
                    // Escaped so a hostile path cannot break the one-line reason.
                    value.escape_debug(),
                    workspace.display()
                )))
            }
            // Inside, or unusable: an unusable path is the tool's INVALID_PATH to
            // report, not a permission question.
            _ => None,
        }
    })
}

impl PermissionPolicy for DefaultPermissionPolicy {
    /// The rules of [`DefaultPermissionPolicy::decide`]; path resolution (which looks
    /// at the file system) runs on the blocking pool.
    fn check<'a>(
        &'a self,
        tool: &'a dyn Tool,
        params: &'a Value,
        ctx: &'a ToolExecutionContext,
    ) -> BoxFuture<'a, PermissionDecision> {
        let def = tool.definition();
        let paths = path_parameters(def, params);
        if paths.is_empty() {
            return Box::pin(std::future::ready(self.by_capabilities(tool, params)));
        }
        let policy = self.workspace_policy.clone();
        let root = ctx.workspace_root.clone();
        let name = def.name.clone();
        Box::pin(async move {
            let checked =
                run_blocking_io(move || first_escape(&policy, &name, &paths, &root)).await;
            match checked {
                Ok(Some(denied)) => denied,
                Ok(None) => self.by_capabilities(tool, params),
                // A check that cannot finish must not let the call through.
                Err(info) => PermissionDecision::deny(format!(
                    "tool `{}`: the workspace path check failed: {}",
                    def.name, info.message
                )),
            }
        })
    }
}

/// Applies a mode; `what` says what the tool does, `setting` names the mode.
fn by_mode(mode: ApprovalMode, what: String, setting: &str) -> PermissionDecision {
    match mode {
        ApprovalMode::Allow => PermissionDecision::allow(),
        ApprovalMode::Confirm => {
            PermissionDecision::require_human(format!("{what} and {setting} is `confirm`"))
        }
        ApprovalMode::Deny => PermissionDecision::deny(format!("{what} and {setting} is `deny`")),
    }
}
