//! The loop itself: one run's state, its turns, its calls, its persistence, and how a
//! waiting or crashed run continues. [`AgentRunner`](crate::AgentRunner)'s public
//! methods are thin entry points into this module.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use iris_discovery::DisclosureState;
use iris_executor::HeartbeatListener;
use iris_files::ReadState;
use iris_hooks::{EventCommon, RunStatus as HookRunStatus};
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

use crate::config::BackgroundCalls;
use crate::context::request_history;
use crate::error::codes;
use crate::loop_tool::{LoopCall, LoopEntry, LoopStep, loop_tool_of};
use crate::loop_tools::ask_question::ASK_QUESTION;
use crate::outcome::{
    Answer, ApprovalRequest, InDoubtRequest, Interaction, RunError, RunEvent, RunOutcome,
    SecretRequest,
};
use crate::runner::{AgentRunner, ApprovalDecision, Inner, RunInput, TRACING_TARGET};
use crate::secret::{self, MAX_SECRET_ROUNDS, STORE_SECRET, SecretValue};
use crate::store::{
    BackgroundResult, BackgroundRunning, CallState, JournalEntry, PendingInteraction, PendingTurn,
    RunRecord, RunStatus, RunStore, StoreError, now_ms,
};

/// One run's live state: the record the store keeps, plus what only lives in memory.
pub(crate) struct RunState {
    pub(crate) record: RunRecord,
    pub(crate) cancel: CancellationSignal,
    pub(crate) disclosure: DisclosureState,
    pub(crate) read_state: Arc<ReadState>,
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
    /// Answers to MCP calls that stopped for input, by call id, for their next run.
    pub(crate) resumes: iris_mcp::McpInputResumes,
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
        self.inner.store.as_ref()
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
        let Some(store) = self.store() else {
            return Ok(());
        };
        state.record.updated_at_ms = now_ms();
        state.record.revealed = state.disclosure.revealed();
        state.record.read_state = state.read_state.snapshot();
        store
            .save(&state.record, &state.owner)
            .await
            .map_err(failed)
    }

    /// Records a call's journal state (a no-op without a store).
    pub(crate) async fn journal(
        &self,
        state: &RunState,
        index: usize,
        call: &ModelToolCall,
        call_state: CallState,
        result: Option<&ToolResult>,
    ) -> Result<(), Stop> {
        let Some(store) = self.store() else {
            return Ok(());
        };
        let turn = state
            .record
            .pending
            .as_ref()
            .map_or(state.record.turns, |p| p.turn);
        let entry = JournalEntry {
            turn,
            index,
            call_id: call.id.clone(),
            tool_name: call.name.clone(),
            state: call_state,
            result: result.cloned(),
        };
        store
            .journal(&state.record.run_id, &state.owner, &entry)
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
        RunState {
            record: RunRecord {
                run_id,
                status: RunStatus::Running,
                agent_id: inner.config.agent_id.clone(),
                session_id,
                created_at_ms: now,
                updated_at_ms: now,
                turns: 0,
                usage: Usage::default(),
                history,
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
                model: inner.model_config.clone(),
                background_done: Vec::new(),
                background_running: Vec::new(),
                secrets_asked: BTreeMap::new(),
                secret_rounds: BTreeMap::new(),
                parent: input.child.as_ref().map(|c| c.parent.clone()),
            },
            cancel: input.cancellation.clone().unwrap_or_default(),
            disclosure: DisclosureState::new(),
            read_state: Arc::new(ReadState::new()),
            owner: new_owner(),
            renewer: None,
            background: tokio::task::JoinSet::new(),
            background_cancel: CancellationSignal::new(),
            handoff_tx,
            handoff_rx,
            followed: BTreeMap::new(),
            resumes: iris_mcp::McpInputResumes::default(),
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
            disclosure: DisclosureState::from_revealed(record.revealed.clone()),
            read_state: Arc::new(ReadState::restore(record.read_state.clone())),
            record,
            cancel,
            owner,
            renewer: None,
            background: tokio::task::JoinSet::new(),
            background_cancel: CancellationSignal::new(),
            handoff_tx,
            handoff_rx,
            followed: BTreeMap::new(),
            resumes: iris_mcp::McpInputResumes::default(),
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
            self.fire_started(&state, input_json).await;
            let outcome = self.drive(&mut state, sink).await;
            self.end(&mut state, &outcome).await
        }
        .instrument(span.clone())
        .await
        .recorded(&span, &state)
    }

    /// Continues a waiting run with the answer to its interaction.
    pub(crate) async fn drive_resume(
        &self,
        run_id: &str,
        interaction_id: &str,
        answer: Answer,
        cancel: CancellationSignal,
        sink: &mut Sink,
    ) -> Result<RunOutcome, RunError> {
        let mut state = self.take_over(run_id, cancel, RunStatus::Waiting).await?;
        let span = self.run_span(&state);
        // Refusals come before any event: a refused resume streams nothing.
        if let Err(e) = check_answer(&state, interaction_id, &answer) {
            self.release(&state).await;
            return Err(e);
        }
        sink.emit(RunEvent::RunStarted {
            run_id: state.record.run_id.clone(),
            provider: self.inner.provider_name.clone(),
            model: self.inner.config.model.clone(),
        });
        let prepared = self
            .apply_answer(&mut state, interaction_id, answer, sink)
            .await;
        let waiting = match prepared {
            Ok(waiting) => waiting,
            Err(e) => {
                self.release(&state).await;
                return Err(e);
            }
        };
        let outcome = async {
            let outcome = match waiting {
                Some(waiting) => waiting,
                None => {
                    self.reattach_background(&mut state, sink).await;
                    self.drive(&mut state, sink).await
                }
            };
            self.end(&mut state, &outcome).await
        }
        .instrument(span.clone())
        .await;
        Ok(outcome.recorded(&span, &state))
    }

    /// Takes over a run whose process died (its status still `running`, its lease
    /// expired): calls the journal shows finished keep their results, calls that
    /// never started run, and a call left `started` is re-run when it is read-only or
    /// idempotent, else it becomes an `in_doubt` interaction.
    pub(crate) async fn drive_recover(
        &self,
        run_id: &str,
        cancel: CancellationSignal,
        sink: &mut Sink,
    ) -> Result<RunOutcome, RunError> {
        let mut state = self.take_over(run_id, cancel, RunStatus::Running).await?;
        let span = self.run_span(&state);
        let outcome = async {
            sink.emit(RunEvent::RunStarted {
                run_id: state.record.run_id.clone(),
                provider: self.inner.provider_name.clone(),
                model: self.inner.config.model.clone(),
            });
            if let Err(stop) = self.settle_journal(&mut state).await {
                return self.end(&mut state, &stop).await;
            }
            self.reattach_background(&mut state, sink).await;
            let outcome = self.drive(&mut state, sink).await;
            self.end(&mut state, &outcome).await
        }
        .instrument(span.clone())
        .await;
        Ok(outcome.recorded(&span, &state))
    }

    /// Loads a stored run in `status` and takes its lease.
    async fn take_over(
        &self,
        run_id: &str,
        cancel: CancellationSignal,
        status: RunStatus,
    ) -> Result<RunState, RunError> {
        let store = self.store().ok_or_else(|| {
            RunError::new(
                codes::RUN_NOT_FOUND,
                format!("run `{run_id}`: this runner has no run store, so no run can be resumed"),
            )
        })?;
        let owner = new_owner();
        store
            .acquire(run_id, &owner, self.inner.config.lease_ttl)
            .await?;
        let loaded = match store.load(run_id).await {
            Ok(Some(record)) => record,
            Ok(None) => {
                return Err(StoreError::NotFound {
                    run_id: run_id.to_owned(),
                }
                .into());
            }
            Err(e) => {
                let _ = store.release(run_id, &owner).await;
                return Err(e.into());
            }
        };
        // The loop indexes a pending turn's results by call: a record whose two lists
        // differ (edited by hand, or written by another store implementation) is
        // refused here instead of panicking later.
        if let Some(pending) = &loaded.pending
            && pending.results.len() != pending.calls.len()
        {
            let _ = store.release(run_id, &owner).await;
            return Err(StoreError::failed(format!(
                "run `{run_id}`: its stored turn {} has {} calls and {} result slots",
                pending.turn,
                pending.calls.len(),
                pending.results.len()
            ))
            .into());
        }
        if let Some(parent) = &loaded.parent
            && !self.inner.is_child
        {
            let _ = store.release(run_id, &owner).await;
            return Err(crate::subagent::child_run_refused(run_id, parent));
        }
        if loaded.status != status {
            let _ = store.release(run_id, &owner).await;
            let hint = match loaded.status {
                RunStatus::Waiting => " (answer its interaction with resume)",
                RunStatus::Running => " (it was cut off; recover it)",
                _ => "",
            };
            return Err(RunError::new(
                codes::RUN_NOT_WAITING,
                format!("run `{run_id}` is {}, not {status}{hint}", loaded.status),
            ));
        }
        let mut state = self.restored_state(loaded, cancel, owner);
        state.record.status = RunStatus::Running;
        self.start_renewer(&mut state);
        Ok(state)
    }

    async fn release(&self, state: &RunState) {
        if let Some(store) = self.store()
            && let Err(e) = store.release(&state.record.run_id, &state.owner).await
        {
            tracing::warn!(target: TRACING_TARGET, error = %e, "cannot release the run's lease");
        }
    }

    /// Applies an answer to the pending interaction: the call's result is decided
    /// (or the call runs, for an approval or a re-run), and the run is running again.
    /// `Some` stops the run at once: a resumed subagent child waits again, the
    /// approved call asks for another approval (a script's next inner call), or the
    /// call that ran stopped for input.
    async fn apply_answer(
        &self,
        state: &mut RunState,
        interaction_id: &str,
        answer: Answer,
        sink: &mut Sink,
    ) -> Result<Option<Stop>, RunError> {
        check_answer(state, interaction_id, &answer)?;
        let run_id = state.record.run_id.clone();
        let Some(pending) = state.record.interaction.clone() else {
            return Err(RunError::new(
                codes::RUN_INTERACTION_STALE,
                format!("run `{run_id}` has no pending interaction"),
            ));
        };
        let Some(turn) = state.record.pending.clone() else {
            return Err(RunError::new(
                codes::RUN_STORE_FAILED,
                format!("run `{run_id}` waits without a turn in progress"),
            ));
        };
        let index = pending.call_index;
        let Some(call) = turn.calls.get(index).cloned() else {
            return Err(RunError::new(
                codes::RUN_STORE_FAILED,
                format!("run `{run_id}`: the interaction names call {index}, which its turn lacks"),
            ));
        };
        if let Interaction::Elicitation(asks) = &pending.interaction {
            // The call runs again with the answer when the turn goes on.
            let reply = crate::mcp_host::elicitation_answer(asks, &answer)?;
            state
                .resumes
                .0
                .insert(call.id.clone(), asks.input.resume(&reply));
            state.record.interaction = None;
            state.record.status = RunStatus::Running;
            return self.save(state).await.map(|()| None).map_err(outcome_error);
        }
        let ctx = self.turn_context(state, turn.turn, sink);
        let loop_tool = self.loop_tool(&call.name);
        let result = match (&pending.interaction, answer) {
            // A loop tool's call a crash left in doubt (a `subagent` call) is answered
            // again by the loop: a new child run.
            (Interaction::InDoubt(_), Answer::Rerun) if loop_tool.is_some() => {
                let Some(tool) = loop_tool else {
                    return Ok(None);
                };
                match self
                    .answer_loop_call(state, turn.turn, index, &call, sink, &tool)
                    .await
                {
                    Ok(result) => result,
                    Err(stop) => return Ok(Some(stop)),
                }
            }
            (interaction @ Interaction::Approval(_), Answer::Approve)
            | (interaction @ Interaction::InDoubt(_), Answer::Rerun) => {
                let Some(tool_use) = call.to_tool_use() else {
                    return Err(RunError::new(
                        codes::RUN_ANSWER_INVALID,
                        format!("call `{}` has unusable arguments and cannot run", call.id),
                    ));
                };
                sink.emit(started_use(turn.turn, &tool_use));
                let approved = match interaction {
                    Interaction::Approval(a) => Some(&a.arguments),
                    _ => None,
                };
                // The store must say `running` before the call can have any effect: a
                // crash from here on leaves a run that `recover` settles from the
                // journal (a started call is in doubt), never a `waiting` one whose
                // approval a second resume would run again.
                state.record.interaction = None;
                self.save(state).await.map_err(outcome_error)?;
                let mut result = self
                    .run_approved(state, index, &call, &tool_use, &ctx, approved)
                    .await
                    .map_err(outcome_error)?;
                self.note_auth_failure(state, &mut result);
                result
            }
            (Interaction::Secret(request), Answer::Secret { value }) => self
                .deliver_secret(state, &request.key, &value)
                .into_result(&call.id, STORE_SECRET),
            (Interaction::Secret(request), Answer::Deny { reason }) => {
                ToolOutput::error(ToolErrorInfo::new(
                    secret::codes::SECRET_DECLINED,
                    format!(
                        "the user did not give the secret `{}`: {reason}; the tools that \
                         need it keep failing",
                        request.key
                    ),
                ))
                .into_result(&call.id, STORE_SECRET)
            }
            (Interaction::Approval(a), Answer::Deny { reason }) => {
                denied(&a.tool_name, &call.id, &reason)
            }
            // `check_answer` above: the text fits the question's options.
            (Interaction::Question(_), Answer::Text { text }) => {
                ToolOutput::text(text).into_result(&call.id, ASK_QUESTION)
            }
            (Interaction::InDoubt(d), Answer::Skip) => ToolOutput::error(ToolErrorInfo::new(
                codes::TOOL_IN_DOUBT,
                format!(
                    "this `{}` call was interrupted by a crash and may or may not have run; \
                         the user chose not to run it again",
                    d.tool_name
                ),
            ))
            .into_result(&call.id, &d.tool_name),
            (Interaction::InDoubt(d), Answer::Record { output }) => {
                ToolOutput::text(output).into_result(&call.id, &d.tool_name)
            }
            // The child run answers it (`check_answer`: the answer fits its interaction).
            (Interaction::Subagent(request), answer) => {
                match self
                    .resume_subagent(state, turn.turn, index, &call, request, answer, sink)
                    .await?
                {
                    Ok(result) => result,
                    Err(stop) => return Ok(Some(stop)),
                }
            }
            // `check_answer` refused every other pairing already.
            (interaction, _) => {
                return Err(RunError::new(
                    codes::RUN_ANSWER_INVALID,
                    format!(
                        "the answer does not fit a {} interaction",
                        interaction.kind()
                    ),
                ));
            }
        };
        if let Some(approval) = result.output.approval().cloned() {
            let request = ApprovalRequest {
                id: pending.id.clone(),
                run_id: run_id.clone(),
                call_id: call.id.clone(),
                tool_name: result.tool_name.clone(),
                arguments: approval.arguments.clone(),
                reason: approval.reason.clone(),
            };
            sink.emit(RunEvent::ApprovalRequested {
                request: request.clone(),
            });
            self.journal(state, index, &call, CallState::Planned, None)
                .await
                .map_err(outcome_error)?;
            return Ok(Some(
                self.wait(state, index, Interaction::Approval(request))
                    .await,
            ));
        }
        if let Some(asks) = crate::mcp_host::stopped_for_input(&run_id, &result) {
            self.journal(state, index, &call, CallState::Planned, None)
                .await
                .map_err(outcome_error)?;
            let interaction = Interaction::Elicitation(asks);
            return Ok(Some(self.wait(state, index, interaction).await));
        }
        sink.emit(RunEvent::ToolCallFinished {
            turn: turn.turn,
            result: result.clone(),
        });
        self.journal(state, index, &call, CallState::Finished, Some(&result))
            .await
            .map_err(outcome_error)?;
        if let Some(p) = state.record.pending.as_mut() {
            p.results[index] = Some(result);
        }
        take_handoffs(state);
        state.record.interaction = None;
        state.record.status = RunStatus::Running;
        self.save(state).await.map(|()| None).map_err(outcome_error)
    }

    /// Fills a recovered turn's results from the journal; asks about a call left in
    /// doubt that may not simply run again.
    async fn settle_journal(&self, state: &mut RunState) -> Result<(), Stop> {
        let Some(turn) = state.record.pending.clone() else {
            return Ok(());
        };
        let Some(store) = self.store() else {
            return Ok(());
        };
        let rows = store
            .journal_of(&state.record.run_id, turn.turn)
            .await
            .map_err(failed)?;
        let registry = self.inner.executor.registry();
        for row in rows {
            let Some(slot) = turn.calls.iter().position(|c| c.id == row.call_id) else {
                continue;
            };
            if state
                .record
                .pending
                .as_ref()
                .is_some_and(|p| p.results[slot].is_some())
            {
                continue;
            }
            match row.state {
                CallState::Finished => {
                    if let (Some(result), Some(p)) = (row.result, state.record.pending.as_mut()) {
                        p.results[slot] = Some(result);
                    }
                }
                CallState::Planned => {}
                CallState::Started => {
                    let call = &turn.calls[slot];
                    let safe = registry
                        .get(&call.name)
                        .is_ok_and(|t| t.is_read_only() || t.is_idempotent());
                    if !safe {
                        let request = InDoubtRequest {
                            id: interaction_id(&state.record.run_id, &call.id),
                            run_id: state.record.run_id.clone(),
                            call_id: call.id.clone(),
                            tool_name: call.name.clone(),
                            arguments: call.arguments.clone(),
                        };
                        return Err(self.wait(state, slot, Interaction::InDoubt(request)).await);
                    }
                    // Read-only or idempotent: it runs again (with the same
                    // idempotency key, `<run id>:<call id>`).
                }
            }
        }
        self.save(state).await
    }

    /// The run's turns until it ends: a pending turn's calls first, then requests.
    async fn drive(&self, state: &mut RunState, sink: &mut Sink) -> RunOutcome {
        let inner = &*self.inner;
        let provider = inner.provider.for_run();
        let view = inner
            .executor
            .registry()
            .view(inner.config.view_filter.clone());
        loop {
            if state.record.pending.is_some()
                && let Err(stop) = self.finish_turn(state, sink).await
            {
                return stop;
            }
            // A loop tool that ended the run (`report_goal(done)`) did so once its
            // turn ran: its answer is the run's.
            if let Some(output) = state.record.final_answer.clone() {
                // Streams show the answer like any other: it is the run's last text.
                sink.emit(RunEvent::TextDelta {
                    text: output.clone(),
                });
                state
                    .record
                    .history
                    .push(Message::assistant(output.clone()));
                return RunOutcome::Completed {
                    output,
                    usage: state.record.usage,
                    turns: state.record.turns,
                    history: state.record.history.clone(),
                };
            }
            if state.cancel.requested() {
                return RunOutcome::Cancelled;
            }
            self.collect_background(state, sink);
            self.deliver_background(state);
            if state.record.turns >= inner.config.max_turns {
                // Under `background_calls: wait` the loop also comes back here after
                // an answer that came while background calls ran: then the model did
                // not ask for tools, and the run ends for want of a request to give it
                // their results.
                let answered = state
                    .record
                    .history
                    .iter()
                    .rev()
                    .find(|m| m.role == Role::Assistant)
                    .is_some_and(|m| !m.content.iter().any(|p| matches!(p, Part::ToolCall { .. })));
                let message = if answered {
                    format!(
                        "the model answered while background calls were running, and after {} \
                         model requests (max_turns) none is left to give it their results",
                        inner.config.max_turns
                    )
                } else {
                    format!(
                        "the model still asked for tools after {} model requests (max_turns)",
                        inner.config.max_turns
                    )
                };
                return failed(RunError::new(codes::RUN_MAX_TURNS, message));
            }
            state.record.turns += 1;
            let turn = state.record.turns;
            crate::mcp_host::refresh_catalog(inner.mcp.as_deref()).await;
            let mut sent = state
                .disclosure
                .request_specs(&view, inner.config.schema_budget);
            // After an auth failure that named a secret of this run, `store_secret`
            // (a system-use tool, outside every view) is offered.
            if !state.record.secrets_asked.is_empty()
                && !sent.specs.iter().any(|s| s.name == STORE_SECRET)
                && let Ok(tool) = inner.executor.registry().get(STORE_SECRET)
            {
                sent.specs.push(tool.definition().to_spec());
            }
            let sent_names: Vec<String> = sent.specs.iter().map(|s| s.name.clone()).collect();
            sink.emit(RunEvent::TurnStarted {
                turn,
                tools: sent_names.clone(),
            });
            let history = inner
                .config
                .retention
                .as_ref()
                .and_then(|r| request_history(&state.record.history, inner.executor.registry(), r))
                .unwrap_or_else(|| state.record.history.clone());
            let mut request = CompletionRequest::new(inner.config.model.clone())
                .with_messages(history)
                .with_tools(sent.specs)
                .with_strict(inner.config.strict);
            request.instructions.clone_from(&inner.config.instructions);
            request.max_output_tokens = inner.config.max_output_tokens;
            request.temperature = inner.config.temperature;

            let response = tokio::select! {
                biased;
                () = state.cancel.cancelled() => return RunOutcome::Cancelled,
                r = self.request(&*provider, &request, sink).instrument(chat_span(inner, &request)) => r,
            };
            let response = match response.and_then(CompletionResponse::check_refusal) {
                Ok(r) => r,
                Err(e) => return failed(RunError::new(e.code(), e.to_string())),
            };
            state.record.usage += response.usage;
            sink.emit(RunEvent::Usage {
                turn,
                usage: response.usage,
                total: state.record.usage,
            });
            state.record.history.push(response.to_message());
            if response.tool_calls.is_empty() && !state.background.is_empty() {
                if inner.config.background_calls == BackgroundCalls::Wait {
                    // The answer came before the background calls finished: wait for
                    // the next one, give the model its result, and ask again.
                    tokio::select! {
                        biased;
                        () = state.cancel.cancelled() => return RunOutcome::Cancelled,
                        joined = state.background.join_next() => {
                            if let Some(joined) = joined {
                                push_joined(state, Some(sink), joined);
                            }
                        }
                    }
                    if let Err(stop) = self.save(state).await {
                        return stop;
                    }
                    continue;
                }
                stop_background(state, Some(sink)).await;
            }
            if response.tool_calls.is_empty() {
                return RunOutcome::Completed {
                    output: response.text,
                    usage: state.record.usage,
                    turns: state.record.turns,
                    history: state.record.history.clone(),
                };
            }
            let calls = response.tool_calls;
            state.record.pending = Some(PendingTurn {
                turn,
                results: vec![None; calls.len()],
                calls,
                sent: sent_names,
            });
            if let Err(stop) = self.save(state).await {
                return stop;
            }
            if self.store().is_some() {
                let calls = state
                    .record
                    .pending
                    .as_ref()
                    .map(|p| p.calls.clone())
                    .unwrap_or_default();
                for (i, call) in calls.iter().enumerate() {
                    if let Err(stop) = self.journal(state, i, call, CallState::Planned, None).await
                    {
                        return stop;
                    }
                }
            }
        }
    }

    /// Runs the pending turn's calls that have no result yet, in the executor's plan
    /// order, then puts the results into the history. `Err` stops the run (a wait,
    /// a store failure).
    async fn finish_turn(&self, state: &mut RunState, sink: &mut Sink) -> Result<(), Stop> {
        let inner = &*self.inner;
        let Some(turn) = state.record.pending.clone() else {
            return Ok(());
        };
        let sent: BTreeSet<&str> = turn.sent.iter().map(String::as_str).collect();
        let registry = inner.executor.registry();
        let ctx = self.turn_context(state, turn.turn, sink);
        // Calls that cannot run are answered first, in order; the rest run by plan.
        let mut runnable: Vec<(usize, ToolUse)> = Vec::new();
        for (i, call) in turn.calls.iter().enumerate() {
            if turn.results[i].is_some() {
                continue;
            }
            let refused = if let Some(result) = call.problem_result() {
                Some(result)
            } else if let Some(result) = self.refuse_recursion(call) {
                Some(result)
            } else if let Ok(tool) = registry.get(&call.name) {
                let def = tool.definition();
                if !sent.contains(def.name.as_str()) {
                    let hint = if def.deferred {
                        "; find it with tool_search first"
                    } else {
                        ""
                    };
                    Some(
                        ToolOutput::error(
                            ToolErrorInfo::new(
                                core_codes::TOOL_NOT_LOADED,
                                format!(
                                    "`{}` is not among the tools of this request{hint}",
                                    def.name
                                ),
                            )
                            .with_detail("tool_name", def.name.as_str()),
                        )
                        .into_result(&call.id, &def.name),
                    )
                } else if let Some(loop_tool) = loop_tool_of(tool.as_ref()) {
                    // The loop answers its own tools, outside the executor's chain.
                    let result = self
                        .answer_loop_call(state, turn.turn, i, call, sink, &loop_tool)
                        .await?;
                    sink.emit(RunEvent::ToolCallFinished {
                        turn: turn.turn,
                        result: result.clone(),
                    });
                    self.journal(state, i, call, CallState::Finished, Some(&result))
                        .await?;
                    if let Some(p) = state.record.pending.as_mut() {
                        p.results[i] = Some(result);
                    }
                    continue;
                } else {
                    None
                }
            } else {
                None
            };
            match refused {
                Some(result) => {
                    sink.emit(started(turn.turn, call));
                    sink.emit(RunEvent::ToolCallFinished {
                        turn: turn.turn,
                        result: result.clone(),
                    });
                    self.journal(state, i, call, CallState::Finished, Some(&result))
                        .await?;
                    if let Some(p) = state.record.pending.as_mut() {
                        p.results[i] = Some(result);
                    }
                }
                None => {
                    let Some(tool_use) = call.to_tool_use() else {
                        continue;
                    };
                    if registry
                        .get(&call.name)
                        .is_ok_and(|t| t.definition().background)
                    {
                        let result = self.start_background(state, &tool_use, &ctx, turn.turn);
                        sink.emit(started(turn.turn, call));
                        sink.emit(RunEvent::ToolCallFinished {
                            turn: turn.turn,
                            result: result.clone(),
                        });
                        self.journal(state, i, call, CallState::Finished, Some(&result))
                            .await?;
                        if let Some(p) = state.record.pending.as_mut() {
                            p.results[i] = Some(result);
                        }
                    } else {
                        runnable.push((i, tool_use));
                    }
                }
            }
        }

        let uses: Vec<ToolUse> = runnable.iter().map(|(_, u)| u.clone()).collect();
        let plan = inner.executor.prepare_many(&uses, &ctx);
        for batch in plan.batches() {
            let batch_uses = &uses[batch.indices()];
            for (offset, u) in batch_uses.iter().enumerate() {
                let slot = runnable[batch.indices().start + offset].0;
                sink.emit(started_use(turn.turn, u));
                self.journal(state, slot, &turn.calls[slot], CallState::Started, None)
                    .await?;
            }
            let results = if batch.is_parallel() && batch.len() > 1 {
                inner.executor.execute_many(batch_uses, &ctx).await
            } else {
                let mut one = Vec::with_capacity(batch_uses.len());
                for u in batch_uses {
                    one.push(inner.executor.execute_one(u, &ctx, None).await);
                }
                one
            };
            for (offset, mut result) in results.into_iter().enumerate() {
                let position = batch.indices().start + offset;
                let (slot, tool_use) = (runnable[position].0, &uses[position]);
                let call = &turn.calls[slot];
                // A loop: an approved call may ask again (a script's next inner call).
                while let Some(approval) = result.output.approval().cloned() {
                    let request = ApprovalRequest {
                        id: interaction_id(&state.record.run_id, &tool_use.id),
                        run_id: state.record.run_id.clone(),
                        call_id: tool_use.id.clone(),
                        tool_name: result.tool_name.clone(),
                        arguments: approval.arguments.clone(),
                        reason: approval.reason.clone(),
                    };
                    let decision = if state.resumes.0.contains_key(&tool_use.id) {
                        // An MCP call continuing with its answer ran up to the
                        // question, so it was allowed or approved then.
                        ApprovalDecision::Approve
                    } else {
                        sink.emit(RunEvent::ApprovalRequested {
                            request: request.clone(),
                        });
                        match &inner.approvals {
                            Some(handler) => handler.decide(&request).await,
                            None => ApprovalDecision::Defer,
                        }
                    };
                    result = match decision {
                        ApprovalDecision::Approve => {
                            self.run_approved(
                                state,
                                slot,
                                call,
                                tool_use,
                                &ctx,
                                Some(&request.arguments),
                            )
                            .await?
                        }
                        ApprovalDecision::Deny { reason } => {
                            denied(&result.tool_name, &tool_use.id, &reason)
                        }
                        ApprovalDecision::Defer => {
                            // The call did not run: back to planned, then wait.
                            self.journal(state, slot, call, CallState::Planned, None)
                                .await?;
                            return Err(self
                                .wait(state, slot, Interaction::Approval(request))
                                .await);
                        }
                    };
                }
                state.resumes.0.remove(&tool_use.id);
                if let Some(asks) =
                    crate::mcp_host::stopped_for_input(&state.record.run_id, &result)
                {
                    // Its server keeps no state: the answer sends it again.
                    self.journal(state, slot, call, CallState::Planned, None)
                        .await?;
                    return Err(self.wait(state, slot, Interaction::Elicitation(asks)).await);
                }
                self.note_auth_failure(state, &mut result);
                sink.emit(RunEvent::ToolCallFinished {
                    turn: turn.turn,
                    result: result.clone(),
                });
                self.journal(state, slot, call, CallState::Finished, Some(&result))
                    .await?;
                if let Some(p) = state.record.pending.as_mut() {
                    p.results[slot] = Some(result);
                }
            }
            // A call that became a server-side task: followed from now on, and
            // saved at once so that a crash does not lose it.
            if take_handoffs(state) {
                self.save(state).await?;
            }
        }

        let Some(done) = state.record.pending.take() else {
            return Ok(());
        };
        let results: Vec<ToolResult> = done
            .results
            .into_iter()
            .zip(&done.calls)
            .map(|(slot, call)| {
                slot.unwrap_or_else(|| {
                    ToolOutput::err(core_codes::CANCELLED, "the call did not run")
                        .into_result(&call.id, &call.name)
                })
            })
            .collect();
        state.record.history.push(Message::tool_results(&results));
        self.save(state).await
    }

    /// The loop tool a call names, when the registry's entry for that name is one
    /// (a host's own tool of the same name is not).
    pub(crate) fn loop_tool(&self, name: &str) -> Option<Arc<LoopEntry>> {
        let entry = self.inner.executor.registry().get(name).ok()?;
        loop_tool_of(entry.as_ref())
    }

    /// Answers a loop tool's call: announced, its input validated, its body run, its
    /// step settled. `Err` stops the run (it waits, or the store failed).
    async fn answer_loop_call(
        &self,
        state: &mut RunState,
        turn: u32,
        slot: usize,
        call: &ModelToolCall,
        sink: &mut Sink,
        tool: &LoopEntry,
    ) -> Result<ToolResult, Stop> {
        sink.emit(started(turn, call));
        let cx = LoopCall {
            runner: self,
            state,
            sink,
            slot,
            call,
        };
        let step = tool.answer(cx, call.arguments.clone()).await?;
        let output = self.settle_step(state, slot, step).await?;
        Ok(output.into_result(&call.id, tool.name()))
    }

    /// What a loop tool's step does to the run: its result, the run waiting on its
    /// interaction (`Err`), or its result with the run's final answer noted.
    async fn settle_step(
        &self,
        state: &mut RunState,
        slot: usize,
        step: LoopStep,
    ) -> Result<ToolOutput, Stop> {
        match step {
            LoopStep::Result(output) => Ok(output),
            LoopStep::Wait(interaction) => Err(self.wait(state, slot, interaction).await),
            LoopStep::End { result, answer } => {
                state.record.final_answer = Some(answer);
                Ok(result)
            }
        }
    }

    /// A `store_secret` call: its result, or the request the run waits on when the
    /// host's handler has no value.
    pub(crate) async fn secret_call(
        &self,
        state: &mut RunState,
        call_id: &str,
        key: String,
    ) -> Result<ToolOutput, SecretRequest> {
        let inner = &*self.inner;
        let fail = |code: &str, message: String| Ok(ToolOutput::err(code, message));
        if !inner.secrets.declares(&key) {
            return fail(
                secret::codes::SECRET_UNKNOWN,
                format!(
                    "no tool of this run uses a secret named `{key}`; name the key exactly \
                     as the failed tool's error gave it ({})",
                    inner.secrets.names().join(", ")
                ),
            );
        }
        let rounds = state.record.secret_rounds.get(&key).copied().unwrap_or(0);
        if rounds >= MAX_SECRET_ROUNDS {
            return fail(
                secret::codes::SECRET_ROUNDS_EXHAUSTED,
                format!(
                    "`{key}` was supplied {rounds} times in this run already; the tool's \
                     failure stands: report it to the user"
                ),
            );
        }
        let request = SecretRequest {
            id: interaction_id(&state.record.run_id, call_id),
            run_id: state.record.run_id.clone(),
            call_id: call_id.to_owned(),
            tools: state
                .record
                .secrets_asked
                .get(&key)
                .map(|t| t.iter().cloned().collect())
                .unwrap_or_default(),
            key,
        };
        let value = match &inner.approvals {
            Some(handler) => handler.secret(&request).await,
            None => None,
        };
        match value.filter(|v| !v.is_blank()) {
            Some(value) => Ok(self.deliver_secret(state, &request.key, &value)),
            None => Err(request),
        }
    }

    /// Gives a secret's value to the host's store and the tools that use it; the
    /// model's result says it is stored, never what it is.
    fn deliver_secret(&self, state: &mut RunState, key: &str, value: &SecretValue) -> ToolOutput {
        *state
            .record
            .secret_rounds
            .entry(key.to_owned())
            .or_insert(0) += 1;
        match self.inner.secrets.deliver(key, value) {
            Ok(()) => {
                let tools = state
                    .record
                    .secrets_asked
                    .remove(key)
                    .map(|t| t.into_iter().collect::<Vec<_>>().join(", "))
                    .unwrap_or_default();
                let retry = if tools.is_empty() {
                    "call the tool that needed it again".to_owned()
                } else {
                    format!("call {tools} again")
                };
                ToolOutput::text(format!("The secret `{key}` is stored; {retry}."))
            }
            Err(reason) => ToolOutput::err(
                secret::codes::SECRET_STORE_FAILED,
                format!("the host's secret store refused `{key}`: {reason}"),
            ),
        }
    }

    /// A failed call whose error names a secret of this run (`details.secret`):
    /// remembered (so `store_secret` is offered) and the model told how to heal it —
    /// or, once the rounds are spent, that the failure stands.
    fn note_auth_failure(&self, state: &mut RunState, result: &mut ToolResult) {
        let Some(key) = secret::asked_secret(result) else {
            return;
        };
        if !self.inner.secrets.declares(&key) {
            return;
        }
        let rounds = state.record.secret_rounds.get(&key).copied().unwrap_or(0);
        state
            .record
            .secrets_asked
            .entry(key.clone())
            .or_default()
            .insert(result.tool_name.clone());
        let hint = if rounds >= MAX_SECRET_ROUNDS {
            format!(
                " (`{key}` was supplied {rounds} times in this run and still fails: report \
                 this to the user)"
            )
        } else {
            format!(
                " (the user can supply it: call `{STORE_SECRET}` with {{\"key\": \"{key}\"}}, \
                 then call this tool again)"
            )
        };
        if let iris_tools_core::Outcome::Failed(info) = &mut result.output.outcome {
            info.message.push_str(&hint);
        }
    }

    /// Runs one call a human approved (or chose to re-run), journaled.
    ///
    /// `approved` is the approval request's arguments, when a human approved one: the
    /// call's context carries them ([`ApprovalGrant`]), so a call whose request named
    /// work of its own (a script's inner call) runs that work granted.
    async fn run_approved(
        &self,
        state: &RunState,
        slot: usize,
        call: &ModelToolCall,
        tool_use: &ToolUse,
        ctx: &ToolExecutionContext,
        approved: Option<&Value>,
    ) -> Result<ToolResult, Stop> {
        self.journal(state, slot, call, CallState::Started, None)
            .await?;
        let granted;
        let ctx = match approved {
            Some(arguments) => {
                granted = ctx
                    .clone()
                    .with_extension(ApprovalGrant::new(tool_use.id.clone(), arguments.clone()));
                &granted
            }
            None => ctx,
        };
        Ok(self
            .inner
            .executor
            .execute_one(tool_use, ctx, Some(&tool_use.id))
            .await)
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

    /// One model request: whole, or streamed with text deltas forwarded.
    async fn request(
        &self,
        provider: &dyn CompletionProvider,
        request: &CompletionRequest,
        sink: &mut Sink,
    ) -> Result<CompletionResponse, ProviderError> {
        let span = tracing::Span::current();
        let result = if sink.is_streaming() {
            let mut stream = provider.stream(request);
            let mut done = None;
            while let Some(event) = next(&mut stream).await {
                match event? {
                    StreamEvent::TextDelta(text) => sink.emit(RunEvent::TextDelta { text }),
                    StreamEvent::Completed(response) => {
                        done = Some(response);
                        break;
                    }
                    _ => {}
                }
            }
            done.ok_or_else(|| ProviderError::BadResponse {
                reason: "the stream ended without a completed turn".into(),
            })
        } else {
            provider.complete(request).await
        };
        match &result {
            Ok(r) => {
                span.record("gen_ai.usage.input_tokens", r.usage.input_tokens);
                span.record("gen_ai.usage.output_tokens", r.usage.output_tokens);
                span.record("gen_ai.response.finish_reasons", stop_name(&r.stop));
                if let Some(id) = &r.id {
                    span.record("gen_ai.response.id", id.as_str());
                }
                if let Some(model) = &r.model {
                    span.record("gen_ai.response.model", model.as_str());
                }
            }
            Err(e) => {
                span.record("error.type", e.code());
            }
        }
        result
    }

    /// The context every call of one turn shares.
    fn turn_context(&self, state: &RunState, turn: u32, sink: &Sink) -> ToolExecutionContext {
        let inner = &*self.inner;
        let mut ctx = ToolExecutionContext::new(&inner.config.workspace)
            .session_id(state.record.session_id.clone())
            .agent_id(inner.config.agent_id.clone())
            .run_id(state.record.run_id.clone())
            .activation_id(format!("{}:{turn}", state.record.run_id))
            .cancellation(state.cancel.clone());
        ctx = state.disclosure.attach(ctx);
        // run_tool_script's inner calls run through this run's executor.
        ctx = iris_script::ScriptHost::attach(ctx, &inner.executor);
        ctx.extensions.insert_arc(Arc::clone(&state.read_state));
        // A call the server makes a task is followed in the background.
        let handoffs = state.handoff_tx.clone();
        ctx.extensions.insert(BackgroundHandoff::new(
            state.background_cancel.clone(),
            move |work| handoffs.send((turn, work)).map_err(|e| e.0.1),
        ));
        if let Sink::Channel(tx) = sink {
            let tx = tx.clone();
            ctx.extensions.insert(HeartbeatListener::new(move |beat| {
                let _ = tx.send(RunEvent::Heartbeat {
                    turn,
                    call_id: beat.call_id.clone(),
                    tool_name: beat.tool_name.clone(),
                    elapsed_seconds: beat.elapsed.as_secs_f64(),
                    deadline_seconds: beat.deadline.as_secs_f64(),
                });
            }));
        }
        if inner.config.strict == Strict::Yes {
            ctx = ctx.with_extension(StrictModeCall);
        }
        let events = match sink {
            Sink::Channel(tx) => Some(tx),
            Sink::None => None,
        };
        crate::mcp_host::attach(ctx, inner.approvals.as_ref(), events, turn, &state.resumes)
    }

    fn run_span(&self, state: &RunState) -> tracing::Span {
        let inner = &*self.inner;
        tracing::info_span!(
            target: TRACING_TARGET,
            "invoke_agent",
            "otel.name" = format!("invoke_agent {}", inner.config.agent_id),
            "gen_ai.operation.name" = "invoke_agent",
            "gen_ai.agent.name" = inner.config.agent_id.as_str(),
            "gen_ai.provider.name" = inner.provider_name.as_str(),
            "gen_ai.request.model" = inner.config.model.as_str(),
            "gen_ai.conversation.id" = state.record.session_id.as_str(),
            "iris.run.id" = state.record.run_id.as_str(),
            "iris.run.status" = tracing::field::Empty,
            "iris.run.turns" = tracing::field::Empty,
            "gen_ai.usage.input_tokens" = tracing::field::Empty,
            "gen_ai.usage.output_tokens" = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
        )
    }

    async fn fire_started(&self, state: &RunState, input: Value) {
        let Some(hooks) = &self.inner.hooks else {
            return;
        };
        let run = json!({
            "run_id": state.record.run_id,
            "agent_id": self.inner.config.agent_id,
            "session_id": state.record.session_id,
            "provider": self.inner.provider_name,
            "model": self.inner.config.model,
            "max_turns": self.inner.config.max_turns,
        });
        hooks.run_started(self.common(state), run, input).await;
    }

    async fn fire_finished(&self, state: &RunState, outcome: &RunOutcome) {
        let Some(hooks) = &self.inner.hooks else {
            return;
        };
        let status = match outcome {
            RunOutcome::Completed { .. } => HookRunStatus::Completed,
            RunOutcome::Waiting { .. } => HookRunStatus::Waiting,
            RunOutcome::Failed { .. } => HookRunStatus::Failed,
            RunOutcome::Cancelled => HookRunStatus::Cancelled,
        };
        let mut result = json!({
            "status": outcome.status(),
            "turns": state.record.turns,
            "usage": state.record.usage,
        });
        match outcome {
            RunOutcome::Completed { output, .. } => result["output"] = json!(output),
            RunOutcome::Waiting { interaction, .. } => result["interaction"] = json!(interaction),
            RunOutcome::Failed { error } => result["error"] = json!(error),
            RunOutcome::Cancelled => {}
        }
        hooks.run_finished(self.common(state), result, status).await;
    }

    fn common(&self, state: &RunState) -> EventCommon {
        EventCommon {
            agent_id: self.inner.config.agent_id.clone(),
            session_id: state.record.session_id.clone(),
            workspace: self.inner.config.workspace.clone(),
            run_id: state.record.run_id.clone(),
            activation_id: format!("{}:{}", state.record.run_id, state.record.turns),
            parent_call_id: None,
            occurred_at: iris_hooks::event::rfc3339_now(),
        }
    }
}

trait Recorded {
    fn recorded(self, span: &tracing::Span, state: &RunState) -> Self;
}

impl Recorded for RunOutcome {
    /// Records the run's end on its `invoke_agent` span.
    fn recorded(self, span: &tracing::Span, state: &RunState) -> Self {
        span.record("iris.run.status", self.status());
        span.record("iris.run.turns", state.record.turns);
        span.record("gen_ai.usage.input_tokens", state.record.usage.input_tokens);
        span.record(
            "gen_ai.usage.output_tokens",
            state.record.usage.output_tokens,
        );
        if let RunOutcome::Failed { error } = &self {
            span.record("error.type", error.code.as_str());
        }
        self
    }
}

/// The interaction id of a call of a run: stable in every process.
pub(crate) fn interaction_id(run_id: &str, call_id: &str) -> String {
    format!("{run_id}:{call_id}")
}

fn denied(tool_name: &str, call_id: &str, reason: &str) -> ToolResult {
    ToolOutput::error(
        ToolErrorInfo::new(
            core_codes::APPROVAL_DENIED,
            format!("the user denied this `{tool_name}` call: {reason}"),
        )
        .with_detail("reason", reason),
    )
    .into_result(call_id, tool_name)
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

/// The `chat` span of one model request (OpenTelemetry GenAI conventions).
fn chat_span(inner: &Inner, request: &CompletionRequest) -> tracing::Span {
    tracing::info_span!(
        target: TRACING_TARGET,
        "chat",
        "otel.name" = format!("chat {}", request.model),
        "gen_ai.operation.name" = "chat",
        "gen_ai.provider.name" = inner.provider_name.as_str(),
        "gen_ai.request.model" = request.model.as_str(),
        "gen_ai.request.max_tokens" = request.max_output_tokens,
        "gen_ai.request.temperature" = request.temperature,
        "iris.request.tools" = request.tools.len(),
        "gen_ai.response.id" = tracing::field::Empty,
        "gen_ai.response.model" = tracing::field::Empty,
        "gen_ai.response.finish_reasons" = tracing::field::Empty,
        "gen_ai.usage.input_tokens" = tracing::field::Empty,
        "gen_ai.usage.output_tokens" = tracing::field::Empty,
        "error.type" = tracing::field::Empty,
    )
}

fn stop_name(stop: &StopReason) -> &str {
    match stop {
        StopReason::EndTurn => "stop",
        StopReason::ToolUse => "tool_calls",
        StopReason::MaxTokens => "length",
        StopReason::Refusal => "content_filter",
        StopReason::Other(other) => other,
        _ => "other",
    }
}

/// The default time to live of a run's lease (renewed every third of it).
pub(crate) const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);

fn joined_result(joined: Result<BackgroundResult, tokio::task::JoinError>) -> BackgroundResult {
    joined.unwrap_or_else(|e| BackgroundResult {
        turn: 0,
        result: ToolOutput::err(
            if e.is_panic() {
                core_codes::TOOL_PANICKED
            } else {
                core_codes::CANCELLED
            },
            "the background call's task ended without a result",
        )
        .into_result("", ""),
    })
}

fn push_joined(
    state: &mut RunState,
    sink: Option<&mut Sink>,
    joined: Result<BackgroundResult, tokio::task::JoinError>,
) {
    push_finished(state, sink, joined_result(joined));
}

fn push_finished(state: &mut RunState, sink: Option<&mut Sink>, finished: BackgroundResult) {
    if let Some(sink) = sink {
        sink.emit(RunEvent::BackgroundFinished {
            turn: finished.turn,
            result: finished.result.clone(),
        });
    }
    let id = &finished.result.tool_use_id;
    state.record.background_running.retain(|r| &r.call_id != id);
    state.followed.remove(id);
    state.record.background_done.push(finished);
}

/// How long a run that gives its background work up waits for that work to wind
/// down (an MCP task's `tasks/cancel` is bounded at 5 s) before aborting it.
const BACKGROUND_STOP_GRACE: Duration = Duration::from_secs(10);

/// Runs `work` of call `call_id` on the run's background set.
fn spawn_work(
    state: &mut RunState,
    turn: u32,
    call_id: String,
    tool_name: String,
    work: BoxFuture<'static, ToolOutput>,
) -> tokio::task::AbortHandle {
    state.background.spawn(async move {
        BackgroundResult {
            turn,
            result: work.await.into_result(&call_id, &tool_name),
        }
    })
}

/// Moves the work calls handed to the loop onto its background set; the work a
/// later process can follow again is noted in the record. `true` when the record
/// gained such a note (the caller saves it).
fn take_handoffs(state: &mut RunState) -> bool {
    let mut noted = false;
    while let Ok((turn, work)) = state.handoff_rx.try_recv() {
        if let Some(reference) = work.reference {
            state.record.background_running.push(BackgroundRunning {
                turn,
                call_id: work.call_id.clone(),
                tool_name: work.tool_name.clone(),
                reference,
            });
            noted = true;
            let call_id = work.call_id.clone();
            let handle = spawn_work(state, turn, work.call_id, work.tool_name, work.work);
            state.followed.insert(call_id, handle);
        } else {
            spawn_work(state, turn, work.call_id, work.tool_name, work.work);
        }
    }
    noted
}

/// Gives the run's background work up: cancels it (its own signal, so an MCP task
/// is sent `tasks/cancel`), collects what ends within [`BACKGROUND_STOP_GRACE`],
/// aborts the rest. Nothing is left to follow again.
async fn stop_background(state: &mut RunState, mut sink: Option<&mut Sink>) {
    take_handoffs(state);
    if !state.background.is_empty() {
        state.background_cancel.cancel();
        let until = tokio::time::Instant::now() + BACKGROUND_STOP_GRACE;
        loop {
            match tokio::time::timeout_at(until, state.background.join_next()).await {
                Ok(Some(joined)) => push_joined(state, sink.as_deref_mut(), joined),
                Ok(None) => break,
                Err(_) => {
                    state.background.abort_all();
                    break;
                }
            }
        }
    }
    state.record.background_running.clear();
    state.followed.clear();
}

impl AgentRunner {
    /// Starts a background call; its receipt is the call's result now.
    fn start_background(
        &self,
        state: &mut RunState,
        tool_use: &ToolUse,
        ctx: &ToolExecutionContext,
        turn: u32,
    ) -> ToolResult {
        let executor = self.inner.executor.clone();
        let (tool_use, mut ctx) = (tool_use.clone(), ctx.clone());
        // It is the background call already: it finishes its work itself, and
        // answers to the loop's background signal.
        ctx.extensions.remove::<BackgroundHandoff>();
        ctx.cancellation = Some(state.background_cancel.clone());
        let receipt = json!({"task_id": tool_use.id, "status": "running"});
        let result = ToolOutput::text(format!(
            "{receipt}\nThe call runs in the background; its result arrives in a later message."
        ))
        .with_data("background", receipt)
        .into_result(&tool_use.id, &tool_use.name);
        state.background.spawn(async move {
            let result = executor.execute_one(&tool_use, &ctx, None).await;
            BackgroundResult { turn, result }
        });
        result
    }

    /// Moves finished background calls into the record (without waiting).
    fn collect_background(&self, state: &mut RunState, sink: &mut Sink) {
        take_handoffs(state);
        while let Some(joined) = state.background.try_join_next() {
            push_joined(state, Some(sink), joined);
        }
    }

    /// Follows again the background work an earlier process of this run left in
    /// flight ([`RunRecord::background_running`]): an MCP task by its id, on the
    /// runner's MCP manager. Work that cannot be followed here finishes at once
    /// with `MCP_TASK_FAILED`, saying why.
    async fn reattach_background(&self, state: &mut RunState, sink: &mut Sink) {
        // A call of this process's part of the run (the answer's call) is followed
        // already.
        let running: Vec<BackgroundRunning> = state
            .record
            .background_running
            .iter()
            .filter(|r| !state.followed.contains_key(&r.call_id))
            .cloned()
            .collect();
        for entry in running {
            let mut ctx = self.turn_context(state, entry.turn, sink);
            ctx.call_id.clone_from(&entry.call_id);
            ctx.tool_name.clone_from(&entry.tool_name);
            ctx.cancellation = Some(state.background_cancel.clone());
            let task = iris_mcp::McpTaskRef::from_reference(&entry.reference);
            let tool = match (&task, self.inner.mcp.as_deref()) {
                (Some(task), Some(mcp)) => mcp.tool(&task.server, &task.tool).await,
                _ => None,
            };
            match (task, tool) {
                (Some(task), Some(tool)) => {
                    tracing::info!(target: TRACING_TARGET, server = %task.server, task = %task.task_id, call_id = %entry.call_id, "following the run's MCP task again");
                    let work = tool.follow(&task, &ctx);
                    let call_id = entry.call_id.clone();
                    let handle =
                        spawn_work(state, entry.turn, entry.call_id, entry.tool_name, work);
                    state.followed.insert(call_id, handle);
                }
                (task, _) => {
                    let what = task.map_or_else(
                        || format!("background work {}", entry.reference),
                        |t| {
                            format!(
                                "MCP task `{}` of tool `{}` on server `{}` (this runner has no such MCP tool)",
                                t.task_id, t.tool, t.server
                            )
                        },
                    );
                    let result = ToolOutput::err(
                        iris_mcp::codes::MCP_TASK_FAILED,
                        format!("this run cannot follow {what} again; its result is lost"),
                    )
                    .into_result(&entry.call_id, &entry.tool_name);
                    let finished = BackgroundResult {
                        turn: entry.turn,
                        result,
                    };
                    push_finished(state, Some(sink), finished);
                }
            }
        }
    }

    /// Puts collected background results into the history, one user message each:
    /// they answer no pending tool call (the receipt did), so they arrive as news.
    fn deliver_background(&self, state: &mut RunState) {
        for done in std::mem::take(&mut state.record.background_done) {
            let r = &done.result;
            let status = r
                .error_code()
                .map_or_else(|| "finished".to_owned(), |c| format!("failed ({c})"));
            state.record.history.push(Message::user(format!(
                "[background call {} ({}) started in turn {} {status}]\n{}",
                r.tool_use_id,
                r.tool_name,
                done.turn,
                r.model_content()
            )));
        }
    }
}

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

/// Whether `answer` fits the run's pending interaction `interaction_id` (the checks
/// `resume` makes before anything runs).
fn check_answer(state: &RunState, interaction_id: &str, answer: &Answer) -> Result<(), RunError> {
    let run_id = &state.record.run_id;
    let Some(pending) = &state.record.interaction else {
        return Err(RunError::new(
            codes::RUN_INTERACTION_STALE,
            format!("run `{run_id}` has no pending interaction"),
        ));
    };
    if pending.id != interaction_id {
        return Err(RunError::new(
            codes::RUN_INTERACTION_STALE,
            format!(
                "interaction `{interaction_id}` is not the one run `{run_id}` waits for \
                 (`{}`); it was answered already or never existed",
                pending.id
            ),
        ));
    }
    // A subagent proxy takes the answer its child's interaction takes.
    let interaction = pending.interaction.innermost();
    let expected = match (interaction, answer) {
        (Interaction::Approval(_), Answer::Approve | Answer::Deny { .. })
        | (Interaction::InDoubt(_), Answer::Rerun | Answer::Skip | Answer::Record { .. })
        | (Interaction::Secret(_), Answer::Deny { .. }) => {
            return Ok(());
        }
        (Interaction::Secret(_), Answer::Secret { value }) => {
            if !value.is_blank() {
                return Ok(());
            }
            return Err(RunError::new(
                codes::RUN_ANSWER_INVALID,
                "the secret is empty; give its value (or deny)",
            ));
        }
        (Interaction::Question(q), Answer::Text { text }) => {
            if q.options.is_empty() || q.options.contains(text) {
                return Ok(());
            }
            return Err(RunError::new(
                codes::RUN_ANSWER_INVALID,
                format!("the answer must be one of: {}", q.options.join(", ")),
            ));
        }
        (Interaction::Elicitation(e), _) => {
            return crate::mcp_host::elicitation_answer(e, answer).map(|_| ());
        }
        (Interaction::Approval(_), _) => "approve or deny",
        (Interaction::Question(_), _) => "a text answer",
        (Interaction::InDoubt(_), _) => "rerun, skip or record",
        (Interaction::Secret(_), _) => "the secret's value (or deny)",
        // `innermost` never is a proxy.
        (Interaction::Subagent(_), _) => "the answer of its child's interaction",
    };
    Err(RunError::new(
        codes::RUN_ANSWER_INVALID,
        format!(
            "interaction `{interaction_id}` is {}: answer it with {expected}",
            interaction.kind()
        ),
    ))
}
