//! A waiting run answered, a crashed run taken over: the answer checked and applied.

#[allow(clippy::wildcard_imports)] // The loop's shared types and imports, as in one file.
use super::*;

/// Whether `answer` fits the run's pending interaction `interaction_id` (the checks
/// `resume` makes before anything runs).
pub(super) fn check_answer(
    state: &RunState,
    interaction_id: &str,
    answer: &Answer,
) -> Result<(), RunError> {
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
    // The one check every route makes (a subagent proxy: its child's interaction's).
    pending.interaction.check(answer).map_err(RunError::from)
}

impl AgentRunner {
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

    /// Continues a run that stopped at a budget limit (`failed`,
    /// `RUN_BUDGET_EXCEEDED`) under this runner's limits: the turn's held calls run,
    /// then the loop goes on.
    pub(crate) async fn drive_exceeded(
        &self,
        run_id: &str,
        cancel: CancellationSignal,
        sink: &mut Sink,
    ) -> Result<RunOutcome, RunError> {
        let mut state = self.take_over(run_id, cancel, RunStatus::Failed).await?;
        let code = state.record.error.as_ref().map(|e| e.code.clone());
        if code.as_deref() != Some(codes::RUN_BUDGET_EXCEEDED) {
            self.release(&state).await;
            return Err(RunError::new(
                codes::RUN_NOT_WAITING,
                format!(
                    "run `{run_id}` failed with {}, not at a budget limit; only a run that \
                     stopped at one (RUN_BUDGET_EXCEEDED) continues",
                    code.as_deref().unwrap_or("no error")
                ),
            ));
        }
        state.record.error = None;
        let span = self.run_span(&state);
        let outcome = async {
            sink.emit(RunEvent::RunStarted {
                run_id: state.record.run_id.clone(),
                provider: self.inner.provider_name.clone(),
                model: self.inner.config.model.clone(),
            });
            let outcome = self.drive(&mut state, sink).await;
            self.end(&mut state, &outcome).await
        }
        .instrument(span.clone())
        .await;
        Ok(outcome.recorded(&span, &state))
    }

    /// Loads a stored run in `status` and takes its lease.
    pub(super) async fn take_over(
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
            && !self.inner.parts.is_child
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

    /// Applies an answer to the pending interaction: the call's result is decided
    /// (or the call runs, for an approval or a re-run), and the run is running again.
    /// `Some` stops the run at once: a resumed subagent child waits again, the
    /// approved call asks for another approval (a script's next inner call), or the
    /// call that ran stopped for input.
    pub(super) async fn apply_answer(
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
        let ctx = self.turn_context(state, turn.turn, sink);
        let (result, ran) = match pending.interaction.accept(answer)? {
            Accepted::Elicitation(reply) => {
                let Interaction::Elicitation(asks) = &pending.interaction else {
                    return Err(RunError::new(
                        codes::RUN_ANSWER_INVALID,
                        "an elicitation answer for another kind of interaction",
                    ));
                };
                let Some(input) = &asks.input else {
                    return Err(RunError::new(
                        codes::RUN_STORE_FAILED,
                        format!("run `{run_id}` waits on an elicitation it cannot send again"),
                    ));
                };
                // The call runs again with the answer when the turn goes on.
                if let Some(resumes) = state.layers.get_mut::<McpInputResumes>() {
                    resumes.0.insert(call.id.clone(), input.resume(&reply));
                }
                state.record.interaction = None;
                state.record.status = RunStatus::Running;
                return self.save(state).await.map(|()| None).map_err(outcome_error);
            }
            // The child run answers it (`accept` checked the answer against its
            // interaction).
            Accepted::Subagent(answer) => {
                let Interaction::Subagent(request) = &pending.interaction else {
                    return Err(RunError::new(
                        codes::RUN_ANSWER_INVALID,
                        "a subagent answer for another kind of interaction",
                    ));
                };
                match self
                    .resume_subagent(state, turn.turn, index, &call, request, answer, sink)
                    .await?
                {
                    Ok(result) => (result, false),
                    Err(stop) => return Ok(Some(stop)),
                }
            }
            // A loop tool's call a crash left in doubt (a `subagent` call) is answered
            // again by the loop: a new child run.
            Accepted::Call(CallAnswer::Run { approved: None })
                if let Some(tool) = self.loop_tool(&call.name) =>
            {
                match self
                    .answer_loop_call(state, turn.turn, index, &call, sink, &tool)
                    .await
                {
                    Ok(result) => (result, false),
                    Err(stop) => return Ok(Some(stop)),
                }
            }
            Accepted::Call(answer) => {
                let runs = matches!(answer, CallAnswer::Run { .. });
                if runs {
                    if let Some(tool_use) = call.to_tool_use() {
                        sink.emit(started_use(turn.turn, &tool_use));
                    }
                    // The store must say `running` before the call can have any
                    // effect: a crash from here on leaves a run that `recover` settles
                    // from the journal (a started call is in doubt), never a
                    // `waiting` one whose approval a second resume would run again.
                    state.record.interaction = None;
                    self.save(state).await.map_err(outcome_error)?;
                }
                let result = self
                    .settle_answer(state, index, &call, answer, &ctx)
                    .await
                    .map_err(outcome_error)?;
                (result, runs)
            }
        };
        let mut result = result;
        if ran {
            self.note_auth_failure(state, &mut result);
        }
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
}
