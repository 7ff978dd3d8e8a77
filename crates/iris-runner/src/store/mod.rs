//! Durable runs: the [`RunStore`] trait, what a run persists ([`RunRecord`]), the
//! tool-call journal and leases, with three backends — [`MemoryRunStore`] (one
//! process), [`SqliteRunStore`] (the embedded default, `.iris/runs.db`, WAL) and
//! [`PostgresRunStore`] (runs shared across machines).
//!
//! What a record holds: the status, the history, usage, the tools `tool_search`
//! revealed, the file tools' read observations (so read-before-edit holds in the
//! process that resumes), the turn in progress (its calls and the results so far) and
//! the pending interaction. Secrets are never part of it.
//!
//! **The journal.** Every call of a turn goes `planned → started → finished` (with its
//! result) in the store before and after it runs. A call found `started` when a run is
//! recovered after a crash is *in doubt*: it may have run.
//!
//! **Leases.** Only the holder of a run's lease drives it and may save it; a lease
//! expires unless renewed, so a run whose process died can be taken over
//! ([`RunStore::acquire`] answers `RUN_BUSY` while another live process holds it).
//!
//! **A flat cost per turn.** A save writes what the turn changed, not the whole run:
//! the memory store shares the history's messages with the run, and the SQL stores
//! keep one row per message and append a turn's new ones (the record's row holds the
//! rest, without the history); a history that was changed rather than grown is
//! written again whole. See `persisted.rs` for the rule.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use iris_files::Observation;
use iris_providers::chat::{History, ModelToolCall, Usage};
use iris_tools_core::{BoxFuture, ToolResult};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::goal::GoalReport;
use crate::outcome::{Interaction, RunError};

mod events;
mod memory;
mod persisted;
mod postgres;
mod sqlite;

pub use events::{EventWakeups, RunCursor, RunPage, RunQuery, StoredEvent};
pub use memory::MemoryRunStore;
pub use postgres::PostgresRunStore;
pub use sqlite::SqliteRunStore;

/// Stable codes of [`StoreError`].
pub mod codes {
    /// No run has this id.
    pub const RUN_NOT_FOUND: &str = "RUN_NOT_FOUND";
    /// Another live process holds the run's lease.
    pub const RUN_BUSY: &str = "RUN_BUSY";
    /// This process's lease was taken over (it expired); the run is not saved.
    pub const RUN_LEASE_LOST: &str = "RUN_LEASE_LOST";
    /// The store failed (I/O, the database, a record that does not decode).
    pub const RUN_STORE_FAILED: &str = "RUN_STORE_FAILED";
}

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No run has this id.
    #[error("no run `{run_id}` in the run store")]
    NotFound {
        /// The id.
        run_id: String,
    },
    /// Another process drives the run.
    #[error(
        "run `{run_id}` is driven by another process (its lease expires in {expires_in_ms} ms)"
    )]
    Busy {
        /// The id.
        run_id: String,
        /// When the other lease expires unless renewed.
        expires_in_ms: u64,
    },
    /// The lease expired and was taken over.
    #[error("the lease on run `{run_id}` was lost; another process took the run over")]
    LeaseLost {
        /// The id.
        run_id: String,
    },
    /// The backend failed.
    #[error("run store: {message}")]
    Failed {
        /// What failed (never a secret: connection strings are not quoted).
        message: String,
    },
}

impl StoreError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::NotFound { .. } => codes::RUN_NOT_FOUND,
            StoreError::Busy { .. } => codes::RUN_BUSY,
            StoreError::LeaseLost { .. } => codes::RUN_LEASE_LOST,
            StoreError::Failed { .. } => codes::RUN_STORE_FAILED,
        }
    }

    pub(crate) fn failed(message: impl fmt::Display) -> Self {
        StoreError::Failed {
            message: message.to_string(),
        }
    }
}

impl From<StoreError> for RunError {
    fn from(e: StoreError) -> Self {
        RunError::new(e.code(), e.to_string())
    }
}

/// The store's result type.
pub type StoreResult<T> = Result<T, StoreError>;

/// A run's lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// A process drives it (or drove it until it died: see the lease).
    Running,
    /// It waits for an answer to its pending interaction.
    Waiting,
    /// The model gave a final answer.
    Completed,
    /// It failed.
    Failed,
    /// It was cancelled.
    Cancelled,
}

impl RunStatus {
    /// Every status.
    pub const ALL: [RunStatus; 5] = [
        RunStatus::Running,
        RunStatus::Waiting,
        RunStatus::Completed,
        RunStatus::Failed,
        RunStatus::Cancelled,
    ];

    /// The stored spelling: `running`, `waiting`, …
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Waiting => "waiting",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The turn in progress: the model's calls and the results so far (`None`: not run
/// yet, or in flight).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingTurn {
    /// The turn (1-based).
    pub turn: u32,
    /// The model's calls, in order.
    pub calls: Vec<ModelToolCall>,
    /// One slot per call.
    pub results: Vec<Option<ToolResult>>,
    /// The tools the turn's request carried (only these may be called).
    pub sent: Vec<String>,
}

/// The interaction a waiting run needs, with its stable id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingInteraction {
    /// The id an answer names (`<run id>:<call id>`, the same in every process).
    pub id: String,
    /// Which call of the pending turn it is about.
    pub call_index: usize,
    /// What is asked.
    pub interaction: Interaction,
}

/// Everything a run persists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run id.
    pub run_id: String,
    /// Its state.
    pub status: RunStatus,
    /// The agent (the YAML file's stem, or the builder's id).
    pub agent_id: String,
    /// The session.
    pub session_id: String,
    /// Created, milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// Last saved, milliseconds since the Unix epoch.
    pub updated_at_ms: u64,
    /// Model requests made.
    pub turns: u32,
    /// Tokens so far.
    pub usage: Usage,
    /// The conversation (the input history, the prompt, every turn), shared: the loop
    /// builds each request from it without copying a message, and the durable stores
    /// append what a turn added instead of writing the record again (see
    /// [`RunStore::save`]).
    #[serde(default)]
    pub history: History,
    /// Deferred tools `tool_search` revealed, in reveal order.
    pub revealed: Vec<String>,
    /// The file tools' read observations.
    pub read_state: Vec<(PathBuf, Observation)>,
    /// The turn in progress.
    pub pending: Option<PendingTurn>,
    /// The pending interaction of a waiting run.
    pub interaction: Option<PendingInteraction>,
    /// The final answer of a completed run.
    pub output: Option<String>,
    /// Why a failed run failed.
    pub error: Option<RunError>,
    /// The run's goal: the YAML's `goal`, else its prompt.
    #[serde(default)]
    pub goal: String,
    /// The last `report_goal`.
    #[serde(default)]
    pub goal_report: Option<GoalReport>,
    /// The run's final answer, set by a loop tool that ends the run
    /// (`report_goal(done)`): the run ends with it once the turn's other calls ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_answer: Option<String>,
    /// The model configuration the run was started with, when the runner was built
    /// from one (the agent YAML's `model`, or `iris run --model`/`--base-url`): the
    /// provider, model name, base URL and the *name* of the key's variable, never the
    /// key. `iris resume` continues the run with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<crate::model::ModelConfig>,
    /// Background calls that finished and wait for the next turn boundary to reach
    /// the conversation.
    #[serde(default)]
    pub background_done: Vec<BackgroundResult>,
    /// Background calls in flight whose work the server keeps (an MCP task a call
    /// became): a run recovered or resumed in another process follows each again
    /// by its reference (`tasks/get` by task id) instead of losing it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub background_running: Vec<BackgroundRunning>,
    /// Secrets that auth failures of this run asked for, with the tools that failed
    /// (names only, never values): `store_secret` is offered while this is not empty.
    #[serde(default)]
    pub secrets_asked: BTreeMap<String, BTreeSet<String>>,
    /// `store_secret` rounds answered per secret (at most
    /// [`MAX_SECRET_ROUNDS`](crate::secret::MAX_SECRET_ROUNDS)).
    #[serde(default)]
    pub secret_rounds: BTreeMap<String, u32>,
    /// For a subagent's child run: the parent run and call it answers. Such a run is
    /// resumed through its parent (the parent's [`Interaction::Subagent`] proxy), never
    /// on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentRun>,
    /// What the run spent besides its own tokens (tool calls, time driven, ended
    /// subagents' tokens), for its budget ([`crate::budget`]).
    #[serde(default)]
    pub spent: crate::budget::Spent,
}

/// The parent of a child run ([`RunRecord::parent`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentRun {
    /// The parent run.
    pub run_id: String,
    /// The parent's `subagent` call.
    pub call_id: String,
    /// The child's catalog selector.
    pub agent_selector: String,
}

/// A background call's result, waiting for the next turn boundary to reach the
/// conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackgroundResult {
    /// The turn that started it.
    pub turn: u32,
    /// The result.
    pub result: ToolResult,
}

/// A background call in flight whose work can be followed again after a restart
/// ([`RunRecord::background_running`]); removed when its result arrives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackgroundRunning {
    /// The turn that started it.
    pub turn: u32,
    /// The model's call id.
    pub call_id: String,
    /// The call's canonical tool name.
    pub tool_name: String,
    /// What the work follows, as the tool's layer wrote it (an MCP task:
    /// [`iris_mcp::McpTaskRef`]).
    pub reference: Value,
}

/// One line of `iris runs`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// The run id.
    pub run_id: String,
    /// Its state.
    pub status: RunStatus,
    /// The agent.
    pub agent_id: String,
    /// Model requests made.
    pub turns: u32,
    /// Tokens so far.
    pub usage: Usage,
    /// Created, milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// Last saved, milliseconds since the Unix epoch.
    pub updated_at_ms: u64,
    /// What a waiting run asks, in one line.
    pub waiting_for: Option<String>,
    /// For a subagent's child run: its parent run (which a host resumes instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
}

impl RunSummary {
    /// The summary of a record.
    pub fn of(record: &RunRecord) -> Self {
        Self {
            run_id: record.run_id.clone(),
            status: record.status,
            agent_id: record.agent_id.clone(),
            turns: record.turns,
            usage: record.usage,
            created_at_ms: record.created_at_ms,
            updated_at_ms: record.updated_at_ms,
            waiting_for: record.interaction.as_ref().map(|i| i.interaction.summary()),
            parent_run_id: record.parent.as_ref().map(|p| p.run_id.clone()),
        }
    }
}

/// A call's journal state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallState {
    /// The model asked for it; it has not started.
    Planned,
    /// It started and has not finished (in doubt after a crash).
    Started,
    /// It finished; the result is recorded.
    Finished,
}

impl CallState {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            CallState::Planned => "planned",
            CallState::Started => "started",
            CallState::Finished => "finished",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(text: &str) -> Option<Self> {
        [CallState::Planned, CallState::Started, CallState::Finished]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// One journal row: a call of a run's turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// The turn.
    pub turn: u32,
    /// The call's position in the turn.
    pub index: usize,
    /// The model's call id.
    pub call_id: String,
    /// The tool name the model called.
    pub tool_name: String,
    /// Its state.
    pub state: CallState,
    /// The result, once finished.
    pub result: Option<ToolResult>,
}

/// Where runs live; see the [module docs](self). Object-safe, boxed futures.
///
/// Saving is fenced by the lease: [`RunStore::save`] and the journal calls fail with
/// `RUN_LEASE_LOST` when `owner` no longer holds the run's lease.
pub trait RunStore: Send + Sync {
    /// A short name for messages: `memory`, `sqlite <path>`, `postgres`.
    fn describe(&self) -> String;

    /// Inserts a new run with `owner` holding its lease for `ttl`.
    fn create<'a>(
        &'a self,
        record: &'a RunRecord,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<()>>;

    /// Replaces the run's record (`owner` must hold the lease). The stores write
    /// only what changed of the history: the messages after the part this process
    /// persisted, when the history only grew since.
    fn save<'a>(&'a self, record: &'a RunRecord, owner: &'a str) -> BoxFuture<'a, StoreResult<()>>;

    /// The run's record, `None` when there is no such run.
    fn load<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, StoreResult<Option<RunRecord>>>;

    /// Runs, newest first, optionally of one status, at most `limit`.
    fn list<'a>(
        &'a self,
        status: Option<RunStatus>,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<RunSummary>>>;

    /// Takes the run's lease for `owner` until `ttl` from now: free, expired or
    /// already `owner`'s. `RUN_BUSY` while another owner's lease is live,
    /// `RUN_NOT_FOUND` for an unknown run. Renewal is another `acquire`.
    fn acquire<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<()>>;

    /// Extends `owner`'s live lease to `ttl` from now: the renewal of a run's driver.
    /// `RUN_LEASE_LOST` when `owner` no longer holds a live lease (it expired, was
    /// released or taken), so a late renewal never takes a lease back the way
    /// [`acquire`](Self::acquire) would.
    fn renew<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<()>>;

    /// Gives the lease up (a no-op when `owner` does not hold it).
    fn release<'a>(&'a self, run_id: &'a str, owner: &'a str) -> BoxFuture<'a, StoreResult<()>>;

    /// Records a call's journal state (and its result when finished); `owner` must
    /// hold the lease.
    fn journal<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        entry: &'a JournalEntry,
    ) -> BoxFuture<'a, StoreResult<()>>;

    /// The run's journal rows of one turn, in call order.
    fn journal_of<'a>(
        &'a self,
        run_id: &'a str,
        turn: u32,
    ) -> BoxFuture<'a, StoreResult<Vec<JournalEntry>>>;

    /// A page of runs, newest first by creation time ([`RunQuery`]).
    fn list_page<'a>(&'a self, query: &'a RunQuery) -> BoxFuture<'a, StoreResult<RunPage>>;

    /// Appends `events` (JSON text each) to the run's event log, numbered after its
    /// last one, and wakes the readers ([`RunStore::event_wakeups`]). Returns the number
    /// of the last event appended (the log's last number when `events` is empty). Not
    /// fenced by the lease: the host that drives the run appends what it observed.
    fn append_events<'a>(
        &'a self,
        run_id: &'a str,
        events: &'a [String],
    ) -> BoxFuture<'a, StoreResult<u64>>;

    /// The run's events numbered after `after`, in order, at most `limit`.
    fn events_after<'a>(
        &'a self,
        run_id: &'a str,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<StoredEvent>>>;

    /// Wakeups for new events ([`EventWakeups`]): this process's appends, and with
    /// PostgreSQL every process's.
    fn event_wakeups(&self) -> EventWakeups;
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// How a store extends a lease: [`RunStore::acquire`] takes it, [`RunStore::renew`]
/// only extends the owner's live one. One statement per store serves both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeaseMode {
    /// Free, expired or already the owner's: taken (`RUN_BUSY` while another owner's
    /// lease lives).
    Take,
    /// Only the owner's live lease is extended (`RUN_LEASE_LOST` otherwise).
    Renew,
}

impl LeaseMode {
    /// The error when the lease of the existing run `run_id`, expiring at `until` (ms
    /// since the epoch, if any), was not extended at `now`.
    pub(crate) fn refused(self, run_id: String, until: Option<u64>, now: u64) -> StoreError {
        match self {
            LeaseMode::Take => StoreError::Busy {
                run_id,
                expires_in_ms: until.unwrap_or(0).saturating_sub(now),
            },
            LeaseMode::Renew => StoreError::LeaseLost { run_id },
        }
    }
}

/// `ttl` in milliseconds, saturating.
pub(crate) fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)
}

/// The SQL schema, one statement per migration step, shared by SQLite and
/// PostgreSQL (the types used mean the same in both). Migrations are applied in
/// order and recorded in `iris_schema_migrations`; a step never changes once released.
pub(crate) const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        "CREATE TABLE iris_runs (
            run_id TEXT PRIMARY KEY,
            status TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            created_at_ms BIGINT NOT NULL,
            updated_at_ms BIGINT NOT NULL,
            record TEXT NOT NULL,
            lease_owner TEXT,
            lease_expires_at_ms BIGINT
        )",
    ),
    (
        2,
        "CREATE INDEX iris_runs_status ON iris_runs (status, updated_at_ms)",
    ),
    (
        3,
        "CREATE TABLE iris_journal (
            run_id TEXT NOT NULL REFERENCES iris_runs (run_id) ON DELETE CASCADE,
            turn BIGINT NOT NULL,
            call_id TEXT NOT NULL,
            seq BIGINT NOT NULL,
            tool_name TEXT NOT NULL,
            state TEXT NOT NULL,
            result TEXT,
            PRIMARY KEY (run_id, turn, call_id)
        )",
    ),
    // A run's history, one row per message, so that a save appends a turn's messages
    // instead of writing the whole record again; `generation` changes when the history
    // is written again whole (the older generations' rows are deleted).
    (
        4,
        "CREATE TABLE iris_messages (
            run_id TEXT NOT NULL REFERENCES iris_runs (run_id) ON DELETE CASCADE,
            generation BIGINT NOT NULL,
            seq BIGINT NOT NULL,
            message TEXT NOT NULL,
            PRIMARY KEY (run_id, generation, seq)
        )",
    ),
    // How many messages of which generation are the run's history. A row of an earlier
    // release has 0 here and its history in `record`, where it is read from (and moved
    // out at its next save).
    (
        5,
        "ALTER TABLE iris_runs ADD COLUMN history_len BIGINT NOT NULL DEFAULT 0",
    ),
    (
        6,
        "ALTER TABLE iris_runs ADD COLUMN history_generation BIGINT NOT NULL DEFAULT 0",
    ),
    // A run's event log (`iris serve`'s `GET /v1/runs/{id}/events`). No foreign key:
    // a run's first event is observed before the run's row is written.
    (
        7,
        "CREATE TABLE iris_events (
            run_id TEXT NOT NULL,
            seq BIGINT NOT NULL,
            at_ms BIGINT NOT NULL,
            event TEXT NOT NULL,
            PRIMARY KEY (run_id, seq)
        )",
    ),
    // Pages of runs newest first by creation time ([`RunStore::list_page`]).
    (
        8,
        "CREATE INDEX iris_runs_created ON iris_runs (created_at_ms, run_id)",
    ),
];

/// The most events one [`RunStore::events_after`] returns, whatever it is asked.
pub const MAX_EVENTS_PER_READ: usize = 1000;

/// The `record` column of a run: the record without its history, which lives in
/// `iris_messages`. (A record of an earlier release holds its history here.)
pub(crate) fn encode_head(record: &RunRecord) -> StoreResult<String> {
    encode(&RunRecord {
        history: History::new(),
        ..record.clone()
    })
}

/// The `message` column of each message from `from` on.
pub(crate) fn encode_messages(history: &History, from: usize) -> StoreResult<Vec<String>> {
    history.shared_from(from).map(|m| encode(&**m)).collect()
}

/// A record read back: its `record` column and, unless that holds the history itself
/// (a row of an earlier release), the message rows in order. The flag says whether
/// the history came from the message rows (a row of an earlier release is written
/// again whole at its next save).
pub(crate) fn decode_record(head: &str, messages: &[String]) -> StoreResult<(RunRecord, bool)> {
    let mut record: RunRecord = decode(head, "run record")?;
    if !record.history.is_empty() {
        return Ok((record, false));
    }
    for message in messages {
        record
            .history
            .push(decode::<iris_providers::chat::Message>(message, "message")?);
    }
    Ok((record, true))
}

/// Encodes a record for the `record` column.
pub(crate) fn encode<T: Serialize>(value: &T) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|e| StoreError::failed(format!("cannot encode: {e}")))
}

/// Decodes a `record` or `result` column.
pub(crate) fn decode<T: for<'de> Deserialize<'de>>(text: &str, what: &str) -> StoreResult<T> {
    serde_json::from_str(text)
        .map_err(|e| StoreError::failed(format!("a stored {what} does not decode: {e}")))
}

/// A journal row read back from SQL.
pub(crate) fn journal_row(
    turn: u32,
    seq: i64,
    call_id: String,
    tool_name: String,
    state: &str,
    result: Option<String>,
) -> StoreResult<JournalEntry> {
    let state = CallState::parse(state)
        .ok_or_else(|| StoreError::failed(format!("unknown journal state `{state}`")))?;
    Ok(JournalEntry {
        turn,
        index: usize::try_from(seq).unwrap_or(0),
        call_id,
        tool_name,
        state,
        result: result.map(|r| decode(&r, "tool result")).transpose()?,
    })
}
