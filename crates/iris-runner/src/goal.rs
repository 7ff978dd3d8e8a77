//! `get_goal` and `report_goal`: the run's goal, and the model's progress on it.
//!
//! Seed 000 names the two tools without a contract; this is Iris's:
//!
//! * The run's **goal** is the YAML's `goal` when set, else the run's prompt.
//! * `get_goal()` answers the goal and the last reported status and summary.
//! * `report_goal(status, summary)` records progress: `status` is `in_progress`,
//!   `done` or `blocked`, `summary` a non-empty sentence or two. `done` ends the run
//!   once the turn's other calls have run: the summary becomes the final answer
//!   (`RunOutcome::Completed`), without another model request. `blocked` and
//!   `in_progress` only record (the model goes on, or asks the user).
//! * Both are read-only and answered by the run loop itself (they read and write the
//!   run's state), outside the hook and middleware chain like `ask_question`; called
//!   outside a run they are a `TOOL_FAILED` error saying so. The last report is part
//!   of the persisted run.
//!
//! They are installed when the agent YAML sets `goal` (seed 000: tools assembled from
//! capability configuration, not `tools.builtin` keys).

use iris_tools_core::ToolDefinition;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::loop_tool::RunLoopTool;

/// `get_goal`'s name.
pub const GET_GOAL: &str = "get_goal";
/// `report_goal`'s name.
pub const REPORT_GOAL: &str = "report_goal";

/// A `report_goal` status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalStatus {
    /// Work goes on.
    InProgress,
    /// The goal is reached: the run ends with the summary as its answer.
    Done,
    /// The goal cannot be reached without help.
    Blocked,
}

impl GoalStatus {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            GoalStatus::InProgress => "in_progress",
            GoalStatus::Done => "done",
            GoalStatus::Blocked => "blocked",
        }
    }
}

/// The last `report_goal` of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GoalReport {
    /// The status.
    pub status: GoalStatus,
    /// The model's summary.
    pub summary: String,
}

impl RunLoopTool {
    /// `get_goal`; see the [module docs](self).
    pub fn get_goal() -> Self {
        let definition = ToolDefinition::new(
            GET_GOAL,
            "Read the goal of this run and the progress reported so far.\n\nUse it to \
             check what you are asked to achieve before planning or reporting.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        );
        Self::new(definition)
    }

    /// `report_goal`; see the [module docs](self).
    pub fn report_goal() -> Self {
        let definition = ToolDefinition::new(
            REPORT_GOAL,
            "Report progress on the run's goal.\n\nUse `done` when the goal is reached: \
             the run ends and `summary` is the final answer. Use `blocked` when it cannot \
             be reached without help, `in_progress` for a milestone.",
            json!({
                "type": "object",
                "properties": {
                    "status": {"type": "string", "enum": ["in_progress", "done", "blocked"]},
                    "summary": {"type": "string", "minLength": 1,
                        "description": "What was achieved, or what blocks it."}
                },
                "required": ["status", "summary"],
                "additionalProperties": false
            }),
        );
        Self::new(definition)
    }
}

/// A `report_goal` call's report, or the `INVALID_INPUT` message the model gets.
pub(crate) fn parse_report(arguments: &Value) -> Result<GoalReport, String> {
    let object = arguments
        .as_object()
        .ok_or("report_goal takes an object with `status` and `summary`")?;
    if let Some(key) = object.keys().find(|k| *k != "status" && *k != "summary") {
        return Err(format!(
            "unknown argument `{key}`; report_goal takes `status` and `summary`"
        ));
    }
    let status = match object.get("status").and_then(Value::as_str) {
        Some("in_progress") => GoalStatus::InProgress,
        Some("done") => GoalStatus::Done,
        Some("blocked") => GoalStatus::Blocked,
        _ => return Err("`status` must be `in_progress`, `done` or `blocked`".into()),
    };
    let summary = match object.get("summary").and_then(Value::as_str) {
        Some(s) if !s.trim().is_empty() => s.to_owned(),
        _ => return Err("`summary` must be a non-empty string".into()),
    };
    Ok(GoalReport { status, summary })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reports_are_checked() {
        let ok = parse_report(&json!({"status": "done", "summary": "Shipped."})).unwrap();
        assert_eq!(ok.status, GoalStatus::Done);
        for bad in [
            json!({"status": "finished", "summary": "x"}),
            json!({"status": "done", "summary": " "}),
            json!({"status": "done"}),
            json!({"status": "done", "summary": "x", "extra": 1}),
            json!(["done"]),
        ] {
            assert!(parse_report(&bad).is_err(), "{bad}");
        }
    }
}
