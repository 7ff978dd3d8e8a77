//! The loop itself. [`AgentRunner`](crate::AgentRunner)'s public methods are thin
//! entry points into this module, split by job: this file holds one run's state, its
//! lease, saving, waiting and ending; `drive` the turns and model requests; `turn` one
//! turn's calls; `answer` what an answer does to its call (in process and on resume);
//! `journal` the tool-call journal; `background` background calls; `resume` answers
//! and recovery; `span` the run's span and run hooks.

mod answer;
mod background;
mod drive;
mod journal;
mod layers;
mod resume;
mod span;
mod turn;

use background::{push_joined, stop_background, take_handoffs};
use layers::LayerStates;
use span::Recorded;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use iris_discovery::DisclosureState;
use iris_executor::HeartbeatListener;
use iris_hooks::{EventCommon, RunStatus as HookRunStatus};
use iris_mcp::McpInputResumes;
use iris_providers::chat::{
    CompletionRequest, CompletionResponse, Message, ModelToolCall, Part, Role, StopReason,
    StreamEvent, Usage,
};
use iris_providers::{CompletionProvider, ProviderError, Strict, StrictModeCall, next};
use iris_tools_core::{
    ApprovalGrant, BackgroundHandoff, BackgroundWork, BoxFuture, CancellationSignal, ToolErrorInfo,
    ToolExecutionContext, ToolOutput, ToolResult, ToolUse, codes as core_codes,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::budget::Spent;
use crate::config::BackgroundCalls;
use crate::context::request_history;
use crate::error::codes;
use crate::interaction::{Accepted, CallAnswer};
use crate::loop_tool::{LoopCall, LoopEntry, LoopStep, loop_tool_of};
use crate::outcome::{
    Answer, ApprovalRequest, InDoubtRequest, Interaction, RunError, RunEvent, RunOutcome,
    SecretRequest,
};
use crate::runner::{AgentRunner, Inner, RunInput, TRACING_TARGET};
use crate::secret::{self, MAX_SECRET_ROUNDS, STORE_SECRET, SecretValue};
use crate::store::{
    BackgroundResult, BackgroundRunning, CallState, JournalEntry, PendingInteraction, PendingTurn,
    RunRecord, RunStatus, RunStore, StoreError, now_ms,
};

/// One run's live state: the record the store keeps, plus what only lives in memory.
pub(crate) struct RunState {
    pub(crate) record: RunRecord,
    pub(crate) cancel: CancellationSignal,
    /// The tool layers' per-run state (disclosure, read observations, MCP answers),
    /// one per type.
    pub(crate) layers: LayerStates,
    /// The lease owner this process drives the run as.
    pub(crate) owner: String,
    /// Renews the lease while the run is driven; dropped (aborted) when it stops.
    pub(crate) renewer: Option<tokio::task::JoinHandle<()>>,
    /// Background calls in flight (dropping the set aborts them).
    pub(crate) background: tokio::task::JoinSet<BackgroundResult>,
    /// What background work watches instead of the run's signal: cancelled when the
    /// run gives that work up (cancelled, or ended without waiting for it). A
    /// process that dies cancels nothing, so a server-side task outlives it and a
    /// recovered run follows it again.
    pub(crate) background_cancel: CancellationSignal,
    /// Work calls handed to the loop ([`BackgroundHandoff`]: an MCP task), with the
    /// turn of the call; moved into `background` by [`take_handoffs`].
    pub(crate) handoff_tx: mpsc::UnboundedSender<(u32, BackgroundWork)>,
    handoff_rx: mpsc::UnboundedReceiver<(u32, BackgroundWork)>,
    /// The background work noted in `record.background_running`, by call id: what a
    /// waiting run stops following (without cancelling it) to follow again on resume.
    followed: BTreeMap<String, tokio::task::AbortHandle>,
    /// Since when this process drives the run without having added the time to
    /// `record.spent.driven_ms` (the budget's `max_wall_seconds`).
    driven_from: Instant,
}

impl RunState {
    /// Moves the time driven since the last call into the record.
    fn clock_driven(&mut self) {
        let now = Instant::now();
        let ms = now.duration_since(self.driven_from).as_millis();
        self.record.spent.driven_ms = self
            .record
            .spent
            .driven_ms
            .saturating_add(u64::try_from(ms).unwrap_or(u64::MAX));
        self.driven_from = now;
    }

    /// The time the run was driven, in every process, up to now.
    pub(crate) fn driven(&mut self) -> Duration {
        self.clock_driven();
        Duration::from_millis(self.record.spent.driven_ms)
    }
}

impl Drop for RunState {
    fn drop(&mut self) {
        if let Some(task) = self.renewer.take() {
            task.abort();
        }
    }
}

/// Where events go: nowhere (`run`) or a channel (`run_streamed`).
pub(crate) enum Sink {
    None,
    Channel(mpsc::UnboundedSender<RunEvent>),
}

impl Sink {
    pub(crate) fn is_streaming(&self) -> bool {
        matches!(self, Sink::Channel(_))
    }

    pub(crate) fn emit(&mut self, event: RunEvent) {
        if let Sink::Channel(tx) = self {
            // A dropped receiver cancelled the run already; the event has no reader.
            let _ = tx.send(event);
        }
    }
}

/// How a step of the loop ended when it did not just go on.
pub(crate) type Stop = RunOutcome;

/// A lease owner id unique to this process and call: `<pid>-<millis>-<n>`.
pub(crate) fn new_owner() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{}-{:x}-{n}", std::process::id(), now_ms())
}

/// A run id unique in this process and unlikely to repeat across processes:
/// `run_<unix millis, hex>_<pid, hex>_<counter>`.
pub(crate) fn new_run_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("run_{:x}_{:x}_{n}", now_ms(), std::process::id())
}

fn failed(error: impl Into<RunError>) -> RunOutcome {
    RunOutcome::Failed {
        error: error.into(),
    }
}

impl AgentRunner {
    fn store(&self) -> Option<&Arc<dyn RunStore>> {
        self.inner.parts.store.as_ref()
    }

    /// Starts renewing the run's lease every third of its time to live. A store that
    /// fails for a moment (a busy SQLite file, a PostgreSQL reconnect) is tried again
    /// at the next third; a lease that is gone stops the renewals (the run's next
    /// save or journal write then fails `RUN_LEASE_LOST`).
    fn start_renewer(&self, state: &mut RunState) {
        let Some(store) = self.store().cloned() else {
            return;
        };
        let ttl = self.inner.config.lease_ttl;
        let (run_id, owner) = (state.record.run_id.clone(), state.owner.clone());
        state.renewer = Some(tokio::spawn(async move {
            loop {
                tokio::time::sleep(ttl / 3).await;
                match store.renew(&run_id, &owner, ttl).await {
                    Ok(()) => {}
                    Err(e @ StoreError::Failed { .. }) => {
                        tracing::warn!(target: TRACING_TARGET, run_id, error = %e, "cannot renew the run's lease; trying again");
                    }
                    Err(e) => {
                        tracing::warn!(target: TRACING_TARGET, run_id, error = %e, "the run's lease is gone; renewals stop");
                        return;
                    }
                }
            }
        }));
    }

    /// Saves the record (a no-op without a store).
    async fn save(&self, state: &mut RunState) -> Result<(), Stop> {
        state.clock_driven();
        let Some(store) = self.store() else {
            return Ok(());
        };
        state.record.updated_at_ms = now_ms();
        state.layers.save(&mut state.record);
        store
            .save(&state.record, &state.owner)
            .await
            .map_err(failed)
    }

    /// A new run's state and its first record.
    pub(crate) fn new_state(&self, input: &RunInput) -> RunState {
        let inner = &*self.inner;
        let run_id = input
            .child
            .as_ref()
            .map_or_else(new_run_id, |c| c.run_id.clone());
        let session_id = input.session_id.clone().unwrap_or_else(|| run_id.clone());
        let mut history = input.history.clone();
        if let Some(prompt) = &input.prompt {
            history.push(Message::user(prompt.clone()));
        }
        let now = now_ms();
        let (handoff_tx, handoff_rx) = mpsc::unbounded_channel();
        let record = RunRecord {
            run_id,
            status: RunStatus::Running,
            agent_id: inner.config.agent_id.clone(),
            session_id,
            created_at_ms: now,
            updated_at_ms: now,
            turns: 0,
            usage: Usage::default(),
            history: history.into(),
            revealed: Vec::new(),
            read_state: Vec::new(),
            pending: None,
            interaction: None,
            output: None,
            error: None,
            goal: inner
                .config
                .goal
                .clone()
                .or_else(|| input.prompt.clone())
                .unwrap_or_default(),
            goal_report: None,
            final_answer: None,
            model: inner.parts.model_config.clone(),
            background_done: Vec::new(),
            background_running: Vec::new(),
            secrets_asked: BTreeMap::new(),
            secret_rounds: BTreeMap::new(),
            parent: input.child.as_ref().map(|c| c.parent.clone()),
            spent: Spent::default(),
        };
        RunState {
            layers: LayerStates::restore(&record),
            record,
            cancel: input.cancellation.clone().unwrap_or_default(),
            owner: new_owner(),
            renewer: None,
            background: tokio::task::JoinSet::new(),
            background_cancel: CancellationSignal::new(),
            handoff_tx,
            handoff_rx,
            followed: BTreeMap::new(),
            driven_from: Instant::now(),
        }
    }

    /// The state of a stored run, restored for this process.
    fn restored_state(
        &self,
        record: RunRecord,
        cancel: CancellationSignal,
        owner: String,
    ) -> RunState {
        let (handoff_tx, handoff_rx) = mpsc::unbounded_channel();
        RunState {
            layers: LayerStates::restore(&record),
            record,
            cancel,
            owner,
            renewer: None,
            background: tokio::task::JoinSet::new(),
            background_cancel: CancellationSignal::new(),
            handoff_tx,
            handoff_rx,
            followed: BTreeMap::new(),
            driven_from: Instant::now(),
        }
    }

    /// A new run, from its first request to its end.
    pub(crate) async fn drive_new(&self, input: RunInput, sink: &mut Sink) -> RunOutcome {
        let mut state = self.new_state(&input);
        let input_json = json!({
            "prompt": input.prompt,
            "history_messages": input.history.len(),
        });
        let span = self.run_span(&state);
        async {
            let inner = &*self.inner;
            sink.emit(RunEvent::RunStarted {
                run_id: state.record.run_id.clone(),
                provider: inner.provider_name.clone(),
                model: inner.config.model.clone(),
            });
            if state.record.history.is_empty() {
                return failed(RunError::new(
                    codes::RUN_INPUT_INVALID,
                    "a run needs a prompt or a history to continue",
                ));
            }
            if let Some(store) = self.store() {
                if let Err(e) = store
                    .create(&state.record, &state.owner, inner.config.lease_ttl)
                    .await
                {
                    return failed(e);
                }
                self.start_renewer(&mut state);
            }
            let context = self.fire_started(&state, input_json).await;
            if !context.is_empty() {
                // `run.started` hooks' additional context: one user message after the
                // input, so the first request (and every later one) carries it, and a
                // resumed run keeps it.
                let parts = context.into_iter().map(Part::text).collect();
                state.record.history.push(Message::new(Role::User, parts));
                if let Err(stop) = self.save(&mut state).await {
                    return self.end(&mut state, &stop).await;
                }
            }
            let outcome = self.drive(&mut state, sink).await;
            self.end(&mut state, &outcome).await
        }
        .instrument(span.clone())
        .await
        .recorded(&span, &state)
    }

    async fn release(&self, state: &RunState) {
        if let Some(store) = self.store()
            && let Err(e) = store.release(&state.record.run_id, &state.owner).await
        {
            tracing::warn!(target: TRACING_TARGET, error = %e, "cannot release the run's lease");
        }
    }

    /// Puts the run into `waiting` on `interaction` (saved, lease released).
    pub(crate) async fn wait(
        &self,
        state: &mut RunState,
        slot: usize,
        interaction: Interaction,
    ) -> Stop {
        // Background calls do not outlive this process's part of the run: they finish
        // (or are cancelled with the run) and their results wait in the record for
        // the next turn boundary. Work the record can name (an MCP task) is not
        // waited for when the run is stored: it stays on its server, and the run
        // follows it again when it resumes.
        take_handoffs(state);
        let mut left_running = Vec::new();
        if self.store().is_some() {
            for (call_id, handle) in std::mem::take(&mut state.followed) {
                handle.abort();
                left_running.push(call_id);
            }
        }
        while let Some(joined) = tokio::select! {
            biased;
            () = state.cancel.cancelled() => None,
            joined = state.background.join_next() => joined,
        } {
            match joined {
                // Stopped following above; it runs on.
                Err(e) if e.is_cancelled() => {}
                joined => push_joined(state, None, joined),
            }
        }
        if state.cancel.requested() {
            // The rest is cancelled with the run; what was left running stays noted.
            let noted: Vec<BackgroundRunning> = state
                .record
                .background_running
                .iter()
                .filter(|r| left_running.contains(&r.call_id))
                .cloned()
                .collect();
            stop_background(state, None).await;
            state.record.background_running = noted;
        }
        let run_id = state.record.run_id.clone();
        state.record.status = RunStatus::Waiting;
        state.record.interaction = Some(PendingInteraction {
            id: interaction.id().to_owned(),
            call_index: slot,
            interaction: interaction.clone(),
        });
        if let Err(stop) = self.save(state).await {
            return stop;
        }
        RunOutcome::Waiting {
            run_id,
            interaction,
        }
    }

    /// Records how the run ended, releases the lease and fires `run.finished`.
    async fn end(&self, state: &mut RunState, outcome: &RunOutcome) -> RunOutcome {
        let mut outcome = outcome.clone();
        // A lost lease: another process drives the run now (and may follow its
        // tasks); this one lets go of its background work without cancelling it.
        let lost = matches!(&outcome, RunOutcome::Failed { error } if error.code == crate::store::codes::RUN_LEASE_LOST);
        if lost {
            state.background.abort_all();
        } else if !matches!(outcome, RunOutcome::Waiting { .. }) {
            // The run is over: what still runs in the background is given up (an
            // MCP task is sent `tasks/cancel`), nothing is left running.
            stop_background(state, None).await;
        }
        match &outcome {
            RunOutcome::Completed { output, .. } => {
                state.record.status = RunStatus::Completed;
                state.record.output = Some(output.clone());
            }
            RunOutcome::Waiting { .. } => {}
            RunOutcome::Failed { error } => {
                state.record.status = RunStatus::Failed;
                state.record.error = Some(error.clone());
            }
            RunOutcome::Cancelled => state.record.status = RunStatus::Cancelled,
        }
        if let Some(task) = state.renewer.take() {
            task.abort();
        }
        // A waiting run was saved by `wait`; a lost lease must not be written over.
        if !matches!(outcome, RunOutcome::Waiting { .. })
            && !lost
            && let Err(RunOutcome::Failed { error }) = self.save(state).await
        {
            outcome = RunOutcome::Failed { error };
        }
        if !lost {
            self.release(state).await;
        }
        self.fire_finished(state, &outcome).await;
        outcome
    }
}

/// The interaction id of a call of a run: stable in every process.
pub(crate) fn interaction_id(run_id: &str, call_id: &str) -> String {
    format!("{run_id}:{call_id}")
}

fn outcome_error(stop: Stop) -> RunError {
    match stop {
        RunOutcome::Failed { error } => error,
        other => RunError::new(
            codes::RUN_STORE_FAILED,
            format!("unexpected stop: {}", other.status()),
        ),
    }
}

/// The default time to live of a run's lease (renewed every third of it).
pub(crate) const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);

/// `ToolCallStarted` for a call of the model's turn.
pub(crate) fn started(turn: u32, call: &ModelToolCall) -> RunEvent {
    RunEvent::ToolCallStarted {
        turn,
        call_id: call.id.clone(),
        tool_name: call.name.clone(),
        arguments: call.arguments.clone(),
    }
}

/// `ToolCallStarted` for a call about to run through the executor.
fn started_use(turn: u32, tool_use: &ToolUse) -> RunEvent {
    RunEvent::ToolCallStarted {
        turn,
        call_id: tool_use.id.clone(),
        tool_name: tool_use.name.clone(),
        arguments: tool_use.input.clone(),
    }
}
