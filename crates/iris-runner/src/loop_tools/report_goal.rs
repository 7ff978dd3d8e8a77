//! `report_goal`: the model records progress on the run's goal; `done` ends the run
//! (see [`crate::goal`]).

use iris_tools_core::{BoxFuture, ToolDefinition, ToolOutput};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::goal::{GoalReport, GoalStatus};
use crate::loop_tool::{LoopCall, LoopStep, LoopTool, RunLoopTool};
use crate::run_loop::Stop;

use super::not_blank;

/// `report_goal`'s name.
pub const REPORT_GOAL: &str = "report_goal";

/// `report_goal`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// `in_progress` for a milestone, `done` when the goal is reached, `blocked` when
    /// it cannot be reached without help.
    status: GoalStatus,
    /// What was achieved, or what blocks it.
    #[schemars(length(min = 1))]
    summary: String,
}

/// The loop's side of `report_goal`.
#[derive(Debug)]
pub(crate) struct ReportGoal;

impl LoopTool for ReportGoal {
    type Input = Input;

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::new(
            REPORT_GOAL,
            "Report progress on the run's goal.\n\nUse `done` when the goal is reached: \
             the run ends and `summary` is the final answer. Use `blocked` when it cannot \
             be reached without help, `in_progress` for a milestone.",
            serde_json::Value::Null,
        )
    }

    fn check(&self, input: &Input) -> Result<(), String> {
        not_blank("summary", &input.summary)
    }

    fn call<'a>(&'a self, cx: LoopCall<'a>, input: Input) -> BoxFuture<'a, Result<LoopStep, Stop>> {
        let result = ToolOutput::text(format!("recorded: {}", input.status.as_str()));
        let step = if input.status == GoalStatus::Done {
            LoopStep::End {
                result,
                answer: input.summary.clone(),
            }
        } else {
            LoopStep::Result(result)
        };
        cx.state.record.goal_report = Some(GoalReport {
            status: input.status,
            summary: input.summary,
        });
        Box::pin(async move { Ok(step) })
    }
}

impl RunLoopTool {
    /// `report_goal`: progress on the run's goal, `done` ends the run; see
    /// [`crate::goal`].
    pub fn report_goal() -> Self {
        Self::new(ReportGoal)
    }
}
