//! Which tools a script may call ([`ScriptCallable`]).

use std::collections::BTreeSet;

use iris_discovery::DisclosureState;
use iris_tools_core::{Tool, ToolDefinition, ToolExecutionContext, ToolRegistry};

/// Tools a script can never call, whatever their definitions or the YAML say: the
/// script tool itself (no recursion), and the tools that need the run loop or a human
/// (`subagent`, `ask_question`, `store_secret`).
pub const NEVER_CALLABLE: [&str; 4] = [
    crate::RUN_TOOL_SCRIPT,
    "subagent",
    "ask_question",
    "store_secret",
];

/// The rule that decides which tools a `run_tool_script` program may call.
///
/// A tool is callable when it is not in [`NEVER_CALLABLE`], the current request may
/// call it (with a [`DisclosureState`] on the context: its full spec was sent; without
/// one, or before any request: it is not deferred, or it was revealed), and its definition opts in:
/// [`ToolDefinition::script_callable`] `Some(true)`, or `None` with the tool read-only
/// or listed here (the agent YAML's `tools.script.callable`). `Some(false)` always
/// opts out.
///
/// ```
/// use iris_script::ScriptCallable;
/// use iris_tools_core::{FnTool, ToolCapability, ToolDefinition, ToolOutput};
/// use serde_json::json;
///
/// let def = |name: &str, cap| {
///     ToolDefinition::new(name, "A tool.", json!({"type": "object"})).with_capabilities([cap])
/// };
/// let read = FnTool::new(def("read_file", ToolCapability::Read), |_, _| async { ToolOutput::text("") });
/// let write = FnTool::new(def("write_file", ToolCapability::Write), |_, _| async { ToolOutput::text("") });
/// let rule = ScriptCallable::default();
/// assert!(rule.admits(&read));
/// assert!(!rule.admits(&write));
/// assert!(ScriptCallable::listing(["write_file"]).admits(&write));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScriptCallable {
    listed: BTreeSet<String>,
}

impl ScriptCallable {
    /// The rule with these tool names admitted although not read-only.
    pub fn listing<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        Self {
            listed: names.into_iter().map(Into::into).collect(),
        }
    }

    /// The names listed as callable although not read-only.
    pub fn listed(&self) -> &BTreeSet<String> {
        &self.listed
    }

    /// Whether the tool's definition (and the list) lets scripts call it; ignores
    /// what the current request carries (see [`ScriptCallable::callable_tools`]).
    pub fn admits(&self, tool: &dyn Tool) -> bool {
        let def = tool.definition();
        if NEVER_CALLABLE.contains(&def.name.as_str()) {
            return false;
        }
        match def.script_callable {
            Some(opted) => opted,
            None => tool.is_read_only() || self.listed.contains(&def.name),
        }
    }

    /// The definitions of the tools a script started under `ctx` may call, in
    /// registration order.
    pub fn callable_tools(
        &self,
        registry: &ToolRegistry,
        ctx: &ToolExecutionContext,
    ) -> Vec<ToolDefinition> {
        // A state whose request loaded nothing yet (a context built outside the run
        // loop) says nothing about the request: eager tools and revealed ones count.
        let state = DisclosureState::of(ctx);
        let loaded = state.map(DisclosureState::loaded).filter(|l| !l.is_empty());
        registry
            .tools()
            .into_iter()
            .filter(|tool| {
                let def = tool.definition();
                let in_request = match &loaded {
                    Some(loaded) => loaded.contains(&def.name),
                    None => !def.deferred || state.is_some_and(|s| s.is_revealed(&def.name)),
                };
                in_request && self.admits(tool.as_ref())
            })
            .map(|tool| tool.definition().clone())
            .collect()
    }
}
