//! Background calls: started apart from the turn, collected at turn boundaries, followed again after a restart.

#[allow(clippy::wildcard_imports)] // The loop's shared types and imports, as in one file.
use super::*;

/// How long a run that gives its background work up waits for that work to wind
/// down (an MCP task's `tasks/cancel` is bounded at 5 s) before aborting it.
pub(super) const BACKGROUND_STOP_GRACE: Duration = Duration::from_secs(10);

pub(super) fn joined_result(
    joined: Result<BackgroundResult, tokio::task::JoinError>,
) -> BackgroundResult {
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

pub(super) fn push_joined(
    state: &mut RunState,
    sink: Option<&mut Sink>,
    joined: Result<BackgroundResult, tokio::task::JoinError>,
) {
    push_finished(state, sink, joined_result(joined));
}

pub(super) fn push_finished(
    state: &mut RunState,
    sink: Option<&mut Sink>,
    finished: BackgroundResult,
) {
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

/// Runs `work` of call `call_id` on the run's background set.
pub(super) fn spawn_work(
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
pub(super) fn take_handoffs(state: &mut RunState) -> bool {
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
pub(super) async fn stop_background(state: &mut RunState, mut sink: Option<&mut Sink>) {
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
    pub(super) fn start_background(
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
    pub(super) fn collect_background(&self, state: &mut RunState, sink: &mut Sink) {
        take_handoffs(state);
        while let Some(joined) = state.background.try_join_next() {
            push_joined(state, Some(sink), joined);
        }
    }

    /// Follows again the background work an earlier process of this run left in
    /// flight ([`RunRecord::background_running`]): an MCP task by its id, on the
    /// runner's MCP manager. Work that cannot be followed here finishes at once
    /// with `MCP_TASK_FAILED`, saying why.
    pub(super) async fn reattach_background(&self, state: &mut RunState, sink: &mut Sink) {
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
            let tool = match (&task, self.inner.parts.mcp.as_deref()) {
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
    pub(super) fn deliver_background(&self, state: &mut RunState) {
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
