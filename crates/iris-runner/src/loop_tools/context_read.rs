//! `context_read`: a message or tool result of the run's history read back in pages
//! (see [`crate::context`]).

use iris_tools_core::{BoxFuture, ToolDefinition};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::{self, READ_DEFAULT, READ_MAX};
use crate::loop_tool::{LoopCall, LoopStep, LoopTool, RunLoopTool};
use crate::run_loop::Stop;

/// `context_read`'s name.
pub const CONTEXT_READ: &str = "context_read";

/// How a message or result is read back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Representation {
    /// As the model saw it.
    #[default]
    Text,
    /// The stored JSON.
    Raw,
}

/// `context_read`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// `result:<call id>` or `message:<index>` (0-based).
    #[serde(rename = "ref")]
    #[schemars(length(min = 1))]
    pub(crate) reference: String,
    /// `text` (default): as the model saw it; `raw`: the stored JSON.
    #[serde(default)]
    pub(crate) representation: Representation,
    /// First character, default 0.
    #[serde(default)]
    pub(crate) offset: usize,
    /// Characters to return, default 4000.
    #[serde(default = "read_default")]
    #[schemars(range(min = 1, max = READ_MAX))]
    pub(crate) limit: usize,
}

fn read_default() -> usize {
    READ_DEFAULT
}

/// The loop's side of `context_read`.
#[derive(Debug)]
pub(crate) struct ContextRead;

impl LoopTool for ContextRead {
    type Input = Input;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            CONTEXT_READ,
            "Read back a message or a tool result of this conversation in full.\n\nUse it \
             when an older result was shortened to a preview: pass the reference the \
             preview names (`result:<call id>`, or `message:<index>`), and `offset` to \
             page on.",
            serde_json::Value::Null,
        )
    }

    fn call<'a>(&'a self, cx: LoopCall<'a>, input: Input) -> BoxFuture<'a, Result<LoopStep, Stop>> {
        let output = context::read(&cx.state.record.history, &input);
        Box::pin(async move { Ok(LoopStep::Result(output)) })
    }
}

impl RunLoopTool {
    /// `context_read`; see [`crate::context`].
    pub fn context_read() -> Self {
        Self::new(ContextRead)
    }
}
