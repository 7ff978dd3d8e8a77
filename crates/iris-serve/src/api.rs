//! The request and response bodies of the HTTP API. The OpenAPI document
//! (`/v1/openapi.json`) takes its schemas from these types; values the runner defines
//! (a pending interaction, usage, the conversation, an event) are carried as the JSON
//! the runner serializes them to.

use iris_runner::store::{RunRecord, RunSummary};
use iris_runner::{Answer, SecretValue};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `POST /v1/runs`: start a run of a served agent.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRun {
    /// The agent's name (`default` is the `--config` YAML).
    pub agent: String,
    /// The user's message (not blank).
    pub input: String,
    /// The session (artifacts and read observations are per session); default: the
    /// run id.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Any JSON object the caller wants kept with the run; `GET /v1/runs/{id}` returns
    /// it, and it is the run's first event.
    #[serde(default)]
    pub metadata: Option<serde_json::Map<String, Value>>,
}

/// A run started (`201`) or an answer accepted (`202`): the run is driven in the
/// background.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunAccepted {
    /// The run.
    pub run_id: String,
}

/// `POST /v1/runs/{id}/answer`: the answer to the interaction the run waits for, the
/// same answers `iris resume` takes: `{"interaction_id": "…", "answer": "approve"}`,
/// `{"…", "answer": "deny", "reason": "…"}`, `{"…", "answer": "text", "text": "…"}`
/// (a question, or an MCP server's request for input), `rerun`, `skip`,
/// `{"answer": "record", "output": "…"}` (a call in doubt), `{"answer": "secret",
/// "value": "…"}`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AnswerRun {
    /// The pending interaction's id (`GET /v1/runs/{id}`'s `interaction.id`).
    pub interaction_id: String,
    /// The answer.
    #[serde(flatten)]
    pub answer: AnswerBody,
}

/// One answer ([`iris_runner::Answer`]).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum AnswerBody {
    /// Approve the call.
    Approve,
    /// Deny the call (or refuse a secret, or decline an MCP server's request).
    Deny {
        /// Why; the model reads it.
        reason: String,
    },
    /// Answer a question (one of its options when it has any), or an MCP server's
    /// request for input (the form's values as one JSON object, or `accept`).
    Text {
        /// The text.
        text: String,
    },
    /// Run a call in doubt again.
    Rerun,
    /// Do not run a call in doubt again.
    Skip,
    /// Record what a call in doubt produced, as its result.
    Record {
        /// The result text.
        output: String,
    },
    /// Give the secret the run waits for; it goes to the tools, never to the model,
    /// the run store, an event or a response.
    Secret {
        /// The value.
        #[schemars(with = "String")]
        value: SecretValue,
    },
}

impl AnswerBody {
    /// The runner's answer.
    pub fn into_answer(self) -> Answer {
        match self {
            AnswerBody::Approve => Answer::Approve,
            AnswerBody::Deny { reason } => Answer::Deny { reason },
            AnswerBody::Text { text } => Answer::Text { text },
            AnswerBody::Rerun => Answer::Rerun,
            AnswerBody::Skip => Answer::Skip,
            AnswerBody::Record { output } => Answer::Record { output },
            AnswerBody::Secret { value } => Answer::Secret { value },
        }
    }
}

/// `GET /v1/runs/{id}`: a run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunView {
    /// The run.
    pub run_id: String,
    /// The agent's name.
    pub agent: String,
    /// `running`, `waiting`, `completed`, `failed` or `cancelled`.
    pub status: String,
    /// The session.
    pub session_id: String,
    /// Created, milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// Last saved, milliseconds since the Unix epoch.
    pub updated_at_ms: u64,
    /// Model requests made.
    pub turns: u32,
    /// Tokens so far: `{"input_tokens", "output_tokens"}`.
    pub usage: Value,
    /// What the run waits for (a waiting run): `{"kind": "approval" | "question" |
    /// "in_doubt" | "secret" | "subagent" | "elicitation", "id", …}`; answer it with
    /// `POST /v1/runs/{id}/answer`. The approval of an `edit_file` / `write_file` call
    /// also has `diff`: the unified diff it would make against the file as it is now;
    /// so does such an approval a `subagent` interaction relays in `inner` (with the
    /// child agent's tools and workspace).
    pub interaction: Option<Value>,
    /// The final answer of a completed run.
    pub output: Option<String>,
    /// Why a failed run failed.
    pub error: Option<ErrorDetail>,
    /// The metadata the run was started with.
    pub metadata: Option<Value>,
    /// For a subagent's child run: the parent run, which is answered instead.
    pub parent_run_id: Option<String>,
    /// The conversation so far (the runner's messages).
    pub history: Value,
}

impl RunView {
    /// The view of a stored run and the metadata it was started with.
    pub fn of(record: &RunRecord, metadata: Option<Value>) -> Self {
        Self {
            run_id: record.run_id.clone(),
            agent: record.agent_id.clone(),
            status: record.status.as_str().to_owned(),
            session_id: record.session_id.clone(),
            created_at_ms: record.created_at_ms,
            updated_at_ms: record.updated_at_ms,
            turns: record.turns,
            usage: serde_json::to_value(record.usage).unwrap_or(Value::Null),
            interaction: record
                .interaction
                .as_ref()
                .and_then(|i| serde_json::to_value(&i.interaction).ok()),
            output: record.output.clone(),
            error: record.error.as_ref().map(|e| ErrorDetail {
                code: e.code.clone(),
                message: e.message.clone(),
            }),
            metadata,
            parent_run_id: record.parent.as_ref().map(|p| p.run_id.clone()),
            history: serde_json::to_value(&record.history).unwrap_or(Value::Null),
        }
    }
}

/// `GET /v1/runs`: one page of runs, newest first.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunList {
    /// The runs.
    pub runs: Vec<RunListItem>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// One run of a list (and an item of the runs feed, `GET /v1/events`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunListItem {
    /// The run.
    pub run_id: String,
    /// The agent's name.
    pub agent: String,
    /// Its state.
    pub status: String,
    /// Model requests made.
    pub turns: u32,
    /// Tokens so far.
    pub usage: Value,
    /// Created, milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// Last saved, milliseconds since the Unix epoch.
    pub updated_at_ms: u64,
    /// What a waiting run asks, in one line.
    pub waiting_for: Option<String>,
    /// For a subagent's child run: its parent.
    pub parent_run_id: Option<String>,
}

impl From<&RunSummary> for RunListItem {
    fn from(s: &RunSummary) -> Self {
        Self {
            run_id: s.run_id.clone(),
            agent: s.agent_id.clone(),
            status: s.status.as_str().to_owned(),
            turns: s.turns,
            usage: serde_json::to_value(s.usage).unwrap_or(Value::Null),
            created_at_ms: s.created_at_ms,
            updated_at_ms: s.updated_at_ms,
            waiting_for: s.waiting_for.clone(),
            parent_run_id: s.parent_run_id.clone(),
        }
    }
}

/// The query of `GET /v1/runs`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Only runs in this state.
    pub status: Option<String>,
    /// Only runs of this agent.
    pub agent: Option<String>,
    /// Where the page starts: the previous page's `next_cursor`.
    pub cursor: Option<String>,
    /// Runs per page, 1 to 200 (default 50).
    pub limit: Option<usize>,
}

/// Every refused request's body.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// A stable code and a message.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ErrorDetail {
    /// The stable code (`RUN_NOT_FOUND`, `RUN_INTERACTION_STALE`, `SERVE_REQUEST_INVALID`, …).
    pub code: String,
    /// What happened.
    pub message: String,
}
