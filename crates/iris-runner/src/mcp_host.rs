//! The run's side of its MCP calls: elicitations go to the run's
//! [`ApprovalHandler`], progress notifications become [`RunEvent::Progress`], and
//! the MCP catalog is re-read between model requests when a server said its tools
//! changed.

use std::sync::Arc;

use iris_mcp::{
    ElicitationAnswer, ElicitationHandler, ElicitationRequest, MCPManager, McpElicitation,
    McpProgressSink,
};
use iris_tools_core::{BoxFuture, ToolExecutionContext};
use tokio::sync::mpsc;

use crate::outcome::RunEvent;
use crate::runner::{ApprovalHandler, ELICITATION_NO_HOST};

/// Answers one turn's elicitations through the run's approval handler (declining
/// with a reason when the run has none) and reports them on the run's stream.
struct RunElicitation {
    approvals: Option<Arc<dyn ApprovalHandler>>,
    events: Option<mpsc::UnboundedSender<RunEvent>>,
    turn: u32,
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
            let answer = match &self.approvals {
                Some(handler) => handler.elicit(request).await,
                None => ElicitationAnswer::decline(ELICITATION_NO_HOST),
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

/// Gives one turn's calls their MCP host: the elicitation answerer always, the
/// progress reporter when the run is streamed.
pub(crate) fn attach(
    mut ctx: ToolExecutionContext,
    approvals: Option<&Arc<dyn ApprovalHandler>>,
    events: Option<&mpsc::UnboundedSender<RunEvent>>,
    turn: u32,
) -> ToolExecutionContext {
    ctx.extensions.insert(McpElicitation::new(RunElicitation {
        approvals: approvals.cloned(),
        events: events.cloned(),
        turn,
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
