//! `get_goal` and `report_goal`: the run's goal, and the model's progress on it.
//!
//! The Python reference names the two tools without a contract; this is Iris's:
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
//! They are installed when the agent YAML sets `goal`: like other capability tools, they
//! are assembled from that capability's configuration, not from `tools.builtin` keys.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::loop_tools::get_goal::GET_GOAL;
pub use crate::loop_tools::report_goal::REPORT_GOAL;

/// A `report_goal` status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
