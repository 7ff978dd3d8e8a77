//! `get_goal`: the run's goal and the last progress the model reported on it (see
//! [`crate::goal`]).

use iris_tools_core::{BoxFuture, ToolDefinition, ToolOutput};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::loop_tool::{LoopCall, LoopStep, LoopTool, RunLoopTool};
use crate::run_loop::Stop;

/// `get_goal`'s name.
pub const GET_GOAL: &str = "get_goal";

/// `get_goal` takes no arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {}

/// The loop's side of `get_goal`.
#[derive(Debug)]
pub(crate) struct GetGoal;

impl LoopTool for GetGoal {
    type Input = Input;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            GET_GOAL,
            "Read the goal of this run and the progress reported so far.\n\nUse it to \
             check what you are asked to achieve before planning or reporting.",
            serde_json::Value::Null,
        )
    }

    fn call<'a>(
        &'a self,
        cx: LoopCall<'a>,
        _input: Input,
    ) -> BoxFuture<'a, Result<LoopStep, Stop>> {
        let record = &cx.state.record;
        let report = record.goal_report.as_ref();
        let answer = json!({
            "goal": record.goal,
            "status": report.map_or("not_reported", |r| r.status.as_str()),
            "summary": report.map(|r| r.summary.clone()),
        });
        let output = ToolOutput::text(answer.to_string()).with_data("goal", answer);
        Box::pin(async move { Ok(LoopStep::Result(output)) })
    }
}

impl RunLoopTool {
    /// `get_goal`: the run's goal and the last report; see [`crate::goal`].
    pub fn get_goal() -> Self {
        Self::new(GetGoal)
    }
}
