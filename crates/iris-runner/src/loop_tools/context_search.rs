//! `context_search`: the run's history searched for a text, page by page (see
//! [`crate::context`]).

use iris_tools_core::{BoxFuture, ToolDefinition};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::{self, SEARCH_DEFAULT, SEARCH_MAX};
use crate::loop_tool::{LoopCall, LoopStep, LoopTool, RunLoopTool};
use crate::run_loop::Stop;

use super::not_blank;

/// `context_search`'s name.
pub const CONTEXT_SEARCH: &str = "context_search";

/// `context_search`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// Text to find, case-insensitive.
    #[schemars(length(min = 1))]
    pub(crate) query: String,
    /// Where to continue: `next_cursor` of the last answer; default 0, the start.
    #[serde(default)]
    pub(crate) cursor: usize,
    /// Hits to return, default 10.
    #[serde(default = "search_default")]
    #[schemars(range(min = 1, max = SEARCH_MAX))]
    pub(crate) limit: usize,
}

fn search_default() -> usize {
    SEARCH_DEFAULT
}

/// The loop's side of `context_search`.
#[derive(Debug)]
pub(crate) struct ContextSearch;

impl LoopTool for ContextSearch {
    type Input = Input;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            CONTEXT_SEARCH,
            "Search this conversation's messages and tool results for a text.\n\nUse it to \
             find an earlier result to read back with context_read; pass `cursor` from the \
             last answer to continue.",
            serde_json::Value::Null,
        )
    }

    fn check(&self, input: &Input) -> Result<(), String> {
        not_blank("query", &input.query)
    }

    fn call<'a>(&'a self, cx: LoopCall<'a>, input: Input) -> BoxFuture<'a, Result<LoopStep, Stop>> {
        let output = context::search(&cx.state.record.history, &input);
        Box::pin(async move { Ok(LoopStep::Result(output)) })
    }
}

impl RunLoopTool {
    /// `context_search`; see [`crate::context`].
    pub fn context_search() -> Self {
        Self::new(ContextSearch)
    }
}
