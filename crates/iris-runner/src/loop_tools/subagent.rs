//! `subagent`: a self-contained task delegated to a child run of an agent of the
//! catalog (see [`crate::subagent`]).

use iris_skill::SubagentCatalog;
use iris_tools_core::{BoxFuture, ToolCapability, ToolDefinition, typed::schema_for_input};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::loop_tool::{LoopCall, LoopStep, LoopTool, RunLoopTool};
use crate::run_loop::Stop;

use super::not_blank;

/// The tool's model-facing name.
pub const SUBAGENT: &str = "subagent";

/// `subagent`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The whole task: the subagent sees nothing else of this conversation, e.g.
    /// `Summarize docs/api.md in five bullets`.
    #[schemars(length(min = 1))]
    pub(crate) prompt: String,
    /// Which agent does the task (its selector); default the catalog's.
    #[serde(default)]
    pub(crate) agent: Option<String>,
}

/// The loop's side of `subagent`.
#[derive(Debug)]
pub(crate) struct Subagent;

impl LoopTool for Subagent {
    type Input = Input;

    fn definition(&self) -> ToolDefinition {
        // The agents are listed in `agent`'s description, so the tool's own stays
        // within the lint's two lines.
        ToolDefinition::new(
            SUBAGENT,
            "Delegate a self-contained task to a subagent and return its final answer.\n\
             Use for work one of the `agent`s does better; it sees only `prompt`, not this \
             conversation.",
            serde_json::Value::Null,
        )
        // The subagent tool has its own auto-allow rule: an `agent` tool that runs
        // without asking (the child's own calls are checked by the child's policy).
        .with_capabilities([ToolCapability::Agent])
        .with_auto_allow(true)
    }

    fn check(&self, input: &Input) -> Result<(), String> {
        not_blank("prompt", &input.prompt)
    }

    fn call<'a>(&'a self, cx: LoopCall<'a>, input: Input) -> BoxFuture<'a, Result<LoopStep, Stop>> {
        let LoopCall {
            runner,
            state,
            sink,
            slot,
            call,
        } = cx;
        runner.call_subagent(state, slot, call, sink, input)
    }
}

impl RunLoopTool {
    /// `subagent` over `catalog`: its `agent` parameter takes the catalog's selectors
    /// (its description lists the agents); see [`crate::subagent`].
    pub fn subagent(catalog: &SubagentCatalog) -> Self {
        let selectors: Vec<&str> = catalog.selectors().collect();
        let default = catalog.default_selector();
        let agents: Vec<String> = catalog
            .entries()
            .iter()
            .map(|e| {
                let mark = if e.selector == default {
                    " (default)"
                } else {
                    ""
                };
                format!("`{}`{mark}: {}", e.selector, e.description)
            })
            .collect();
        let checked = schema_for_input::<Input>();
        let mut schema = checked.clone();
        // The selectors are the catalog's, known only here.
        schema["properties"]["agent"] = json!({
            "type": "string",
            "enum": selectors,
            "default": default,
            "description": format!(
                "Which agent does the task; default `{default}`. Agents: {}",
                agents.join("; ")
            )
        });
        let mut definition = Subagent.definition();
        definition.input_schema = schema;
        // Checked without the enum: an unknown selector is answered by the tool
        // (`SUBAGENT_NOT_FOUND`, naming the selectors), not as a schema violation.
        Self::with_definition(definition, &checked, Subagent)
    }
}
