//! One turn's calls: loop tools, the executor's plan, approvals, secrets, the turn's context.

#[allow(clippy::wildcard_imports)] // The loop's shared types and imports, as in one file.
use super::*;

impl AgentRunner {
    /// Runs the pending turn's calls that have no result yet, in the executor's plan
    /// order, then puts the results into the history. `Err` stops the run (a wait,
    /// a store failure).
    pub(super) async fn finish_turn(
        &self,
        state: &mut RunState,
        sink: &mut Sink,
    ) -> Result<(), Stop> {
        let inner = &*self.inner;
        let Some(turn) = state.record.pending.clone() else {
            return Ok(());
        };
        let sent: BTreeSet<&str> = turn.sent.iter().map(String::as_str).collect();
        let registry = inner.executor.registry();
        let ctx = self.turn_context(state, turn.turn, sink);
        // Calls that cannot run are answered first, in order; the rest run by plan.
        let mut runnable: Vec<(usize, ToolUse)> = Vec::new();
        // The budget's first refusal: that call and every later one stay planned.
        let mut held: Option<RunError> = None;
        for (i, call) in turn.calls.iter().enumerate() {
            if turn.results[i].is_some() || held.is_some() {
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
                    if let Err(e) = count_call(&inner.config.limits, state, call) {
                        held = Some(e);
                        continue;
                    }
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
                    if let Err(e) = count_call(&inner.config.limits, state, call) {
                        held = Some(e);
                        continue;
                    }
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
                    // An MCP call continuing with its answer ran up to the question, so
                    // it was allowed or approved then.
                    let resumed = state
                        .layers
                        .get::<McpInputResumes>()
                        .is_some_and(|r| r.0.contains_key(&tool_use.id));
                    if !resumed {
                        sink.emit(RunEvent::ApprovalRequested {
                            request: request.clone(),
                        });
                    }
                    let interaction = Interaction::Approval(request);
                    let answer = if resumed {
                        Some(CallAnswer::Run {
                            approved: Some(approval.arguments.clone()),
                        })
                    } else {
                        match self.ask(&interaction).await {
                            Some(Accepted::Call(answer)) => Some(answer),
                            _ => None,
                        }
                    };
                    result = match answer {
                        Some(answer) => self.settle_answer(state, slot, call, answer, &ctx).await?,
                        None => {
                            // The call did not run: back to planned, then wait.
                            self.journal(state, slot, call, CallState::Planned, None)
                                .await?;
                            return Err(self.wait(state, slot, interaction).await);
                        }
                    };
                }
                if let Some(resumes) = state.layers.get_mut::<McpInputResumes>() {
                    resumes.0.remove(&tool_use.id);
                }
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

        if let Some(error) = held {
            // The calls that fit ran; the rest wait for a raised limit.
            self.save(state).await?;
            return Err(failed(error));
        }
        let Some(done) = state.record.pending.take() else {
            return Ok(());
        };
        state.record.spent.counted_calls.clear();
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
    /// step settled — an interaction it raises goes to the run's handler, and the
    /// run waits on it when nobody answers now. `Err` stops the run (it waits, or
    /// the store failed).
    pub(super) async fn answer_loop_call(
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
        match tool.answer(cx, call.arguments.clone()).await? {
            LoopStep::Result(output) => Ok(output.into_result(&call.id, tool.name())),
            LoopStep::End { result, answer } => {
                state.record.final_answer = Some(answer);
                Ok(result.into_result(&call.id, tool.name()))
            }
            LoopStep::Wait(interaction) => match self.ask(&interaction).await {
                Some(Accepted::Call(answer)) => {
                    let ctx = self.turn_context(state, turn, sink);
                    self.settle_answer(state, slot, call, answer, &ctx).await
                }
                _ => Err(self.wait(state, slot, interaction).await),
            },
        }
    }

    /// A `store_secret` call: its result when it cannot be asked (an unknown key,
    /// too many rounds), else the request to ask.
    pub(crate) fn secret_call(
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
        Err(request)
    }

    /// Gives a secret's value to the host's store and the tools that use it; the
    /// model's result says it is stored, never what it is.
    pub(super) fn deliver_secret(
        &self,
        state: &mut RunState,
        key: &str,
        value: &SecretValue,
    ) -> ToolOutput {
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
            Err((code, reason)) if code == secret::codes::SECRET_STORE_FAILED => ToolOutput::err(
                code,
                format!("the host's secret store refused `{key}`: {reason}"),
            ),
            Err((code, reason)) => ToolOutput::err(
                code,
                format!("`{key}` was not taken: {reason}; ask the user for a valid value"),
            ),
        }
    }

    /// A failed call whose error names a secret of this run (`details.secret`):
    /// remembered (so `store_secret` is offered) and the model told how to heal it —
    /// or, once the rounds are spent, that the failure stands.
    pub(super) fn note_auth_failure(&self, state: &mut RunState, result: &mut ToolResult) {
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
    pub(super) async fn run_approved(
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

    /// The context every call of one turn shares.
    pub(super) fn turn_context(
        &self,
        state: &RunState,
        turn: u32,
        sink: &Sink,
    ) -> ToolExecutionContext {
        let inner = &*self.inner;
        let mut ctx = ToolExecutionContext::new(&inner.config.workspace)
            .session_id(state.record.session_id.clone())
            .agent_id(inner.config.agent_id.clone())
            .run_id(state.record.run_id.clone())
            .activation_id(format!("{}:{turn}", state.record.run_id))
            .cancellation(state.cancel.clone());
        ctx = state.layers.attach(ctx);
        // run_tool_script's inner calls run through this run's executor.
        ctx = iris_script::ScriptHost::attach(ctx, &inner.executor);
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
        crate::mcp_host::attach(ctx, inner.parts.interactions.as_ref(), events, turn)
    }
}

/// Counts a call of the pending turn against the budget's tool-call limits, once: a
/// call already counted (before a wait) passes.
fn count_call(
    limits: &crate::budget::Limits,
    state: &mut RunState,
    call: &ModelToolCall,
) -> Result<(), RunError> {
    let spent = &mut state.record.spent;
    if spent.counted_calls.contains(&call.id) {
        return Ok(());
    }
    limits.before_call(&spent.tool_calls, &call.name)?;
    *spent.tool_calls.entry(call.name.clone()).or_insert(0) += 1;
    spent.counted_calls.push(call.id.clone());
    Ok(())
}
