//! The run's side of its MCP calls: elicitations go to the run's
//! [`ApprovalHandler`], progress notifications become [`RunEvent::Progress`], and
//! the MCP catalog is re-read between model requests when a server said its tools
//! changed.

use std::sync::Arc;

use iris_mcp::{
    ElicitationAnswer, ElicitationHandler, ElicitationKind, ElicitationRequest, InputRequired,
    MCPManager, McpElicitation, McpInputResumes, McpProgressSink,
};
use iris_tools_core::{BoxFuture, ToolExecutionContext, ToolResult};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::error::codes;
use crate::outcome::{Answer, ElicitationInteraction, RunError, RunEvent};
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
            // Nobody attached: on 2026-07-28 the call stops and the run waits for
            // the answer (`Interaction::Elicitation`); an older session declines.
            let answer = match &self.approvals {
                Some(handler) => handler.elicit(request).await,
                None => ElicitationAnswer::Wait {
                    reason: ELICITATION_NO_HOST.into(),
                },
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
/// progress reporter when the run is streamed, and the answers of calls that
/// stopped for input (sent again where they stopped).
pub(crate) fn attach(
    mut ctx: ToolExecutionContext,
    approvals: Option<&Arc<dyn ApprovalHandler>>,
    events: Option<&mpsc::UnboundedSender<RunEvent>>,
    turn: u32,
    resumes: &McpInputResumes,
) -> ToolExecutionContext {
    if !resumes.0.is_empty() {
        ctx.extensions.insert(resumes.clone());
    }
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
        input: Box::new(input),
    })
}

/// The server's answer for a `resume` answer: `Text` is the form's values as a
/// JSON object (or `accept` for a URL), `Deny` declines.
pub(crate) fn elicitation_answer(
    interaction: &ElicitationInteraction,
    answer: &Answer,
) -> Result<ElicitationAnswer, RunError> {
    let invalid = |why: String| RunError::new(codes::RUN_ANSWER_INVALID, why);
    match (answer, &interaction.input.request.kind) {
        (Answer::Deny { reason }, _) => Ok(ElicitationAnswer::decline(reason.clone())),
        (Answer::Text { text }, ElicitationKind::Url { .. }) => {
            if matches!(text.trim().to_ascii_lowercase().as_str(), "accept" | "yes" | "y") {
                Ok(ElicitationAnswer::Accept { content: None })
            } else {
                Err(invalid(format!(
                    "a URL request is answered `accept` (the user went there) or denied, not `{text}`"
                )))
            }
        }
        (Answer::Text { text }, _) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(content)) => Ok(ElicitationAnswer::Accept {
                content: Some(content),
            }),
            _ => Err(invalid(format!(
                "a form is answered with its values as one JSON object (e.g. {{\"field\": \"value\"}}), not `{text}`"
            ))),
        },
        _ => Err(invalid(
            "an elicitation is answered with --answer (the form's values as JSON, or accept for a URL) or --deny REASON".into(),
        )),
    }
}
