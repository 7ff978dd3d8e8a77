//! The run's side of its MCP calls: elicitations go to the run's
//! [`InteractionHandler`] as [`Interaction::Elicitation`], progress notifications become [`RunEvent::Progress`], and
//! the MCP catalog is re-read between model requests when a server said its tools
//! changed.

use std::sync::Arc;

use iris_mcp::{
    ElicitationAnswer, ElicitationHandler, ElicitationRequest, InputRequired, MCPManager,
    McpElicitation, McpProgressSink,
};
use iris_tools_core::{BoxFuture, ToolExecutionContext, ToolResult};
use tokio::sync::mpsc;

use crate::interaction::{Accepted, InteractionHandler, ask};
use crate::outcome::{ElicitationInteraction, Interaction, RunEvent};
use crate::runner::{ELICITATION_NO_HOST, ELICITATION_NOT_ANSWERED};

/// Answers one turn's elicitations through the run's interaction handler (waiting,
/// with a reason, when it has none or it does not answer) and reports them on the
/// run's stream.
struct RunElicitation {
    interactions: Option<Arc<dyn InteractionHandler>>,
    events: Option<mpsc::UnboundedSender<RunEvent>>,
    turn: u32,
    run_id: String,
}

impl ElicitationHandler for RunElicitation {
    fn elicit<'a>(&'a self, request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitationAnswer> {
        Box::pin(async move {
            if let Some(tx) = &self.events {
                let _ = tx.send(RunEvent::ElicitationRequested {
                    turn: self.turn,
                    request: request.clone(),
                });
            }
            // Nobody answers now: on 2026-07-28 the call stops and the run waits for
            // the answer (`Interaction::Elicitation`); an older session declines.
            let answer = match &self.interactions {
                None => ElicitationAnswer::Wait {
                    reason: ELICITATION_NO_HOST.into(),
                },
                Some(handler) => {
                    let interaction = Interaction::Elicitation(ElicitationInteraction {
                        id: crate::run_loop::interaction_id(&self.run_id, &request.call_id),
                        run_id: self.run_id.clone(),
                        call_id: request.call_id.clone(),
                        tool_name: request.tool.clone(),
                        request: Box::new(request.clone()),
                        input: None,
                    });
                    match ask(Some(handler), &interaction).await {
                        Some(Accepted::Elicitation(answer)) => answer,
                        _ => ElicitationAnswer::Wait {
                            reason: ELICITATION_NOT_ANSWERED.into(),
                        },
                    }
                }
            };
            if let Some(tx) = &self.events {
                let _ = tx.send(RunEvent::ElicitationAnswered {
                    turn: self.turn,
                    call_id: request.call_id.clone(),
                    answer: answer.clone(),
                });
            }
            answer
        })
    }
}

/// Gives one turn's calls their MCP host: the elicitation answerer always, and the
/// progress reporter when the run is streamed. (The answers of calls that stopped for
/// input are the run's `McpInputResumes` layer state.)
pub(crate) fn attach(
    mut ctx: ToolExecutionContext,
    interactions: Option<&Arc<dyn InteractionHandler>>,
    events: Option<&mpsc::UnboundedSender<RunEvent>>,
    turn: u32,
) -> ToolExecutionContext {
    ctx.extensions.insert(McpElicitation::new(RunElicitation {
        interactions: interactions.cloned(),
        events: events.cloned(),
        turn,
        run_id: ctx.run_id.clone(),
    }));
    if let Some(tx) = events {
        let tx = tx.clone();
        ctx.extensions.insert(McpProgressSink::new(move |p| {
            let _ = tx.send(RunEvent::Progress {
                turn,
                call_id: p.call_id.clone(),
                tool_name: p.tool.clone(),
                progress: p.progress,
                total: p.total,
                message: p.message.clone(),
            });
        }));
    }
    ctx
}

/// Re-reads the servers whose tools changed since the last snapshot
/// (`notifications/tools/list_changed`, the 2026-07-28 subscription, a restarted
/// server listing other tools). Published names never change, and tools a
/// refresh adds come after the others, so the order of the request's tools is
/// stable. A failed refresh is logged and tried again before the next request.
pub(crate) async fn refresh_catalog(manager: Option<&MCPManager>) {
    let Some(manager) = manager else {
        return;
    };
    let Some(snapshot) = manager.snapshot() else {
        return;
    };
    if snapshot.generation == manager.catalog_generation() {
        return;
    }
    match manager.refresh_catalog().await {
        Ok(s) => tracing::info!(
            target: crate::runner::TRACING_TARGET,
            generation = s.generation,
            tools = s.tools.len(),
            "the MCP catalog changed; refreshed before the model request"
        ),
        Err(e) => tracing::warn!(
            target: crate::runner::TRACING_TARGET,
            error = %e,
            "refreshing the MCP catalog failed; the previous tools stay"
        ),
    }
}

/// The interaction of a call that stopped for input (`MCP_INPUT_REQUIRED`), if it
/// did.
pub(crate) fn stopped_for_input(
    run_id: &str,
    result: &ToolResult,
) -> Option<ElicitationInteraction> {
    let input = InputRequired::of(&result.output)?;
    Some(ElicitationInteraction {
        id: format!("{run_id}:{}", result.tool_use_id),
        run_id: run_id.to_owned(),
        call_id: result.tool_use_id.clone(),
        tool_name: result.tool_name.clone(),
        request: Box::new(input.request.clone()),
        input: Some(Box::new(input)),
    })
}
