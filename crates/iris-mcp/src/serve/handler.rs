//! The rmcp server handler: `tools/list` from the session's scope, `tools/call`
//! through the executor, approvals asked of the client by elicitation.

use std::sync::Arc;

use iris_executor::HeartbeatListener;
use iris_tools_core::{
    CancellationSignal, ToolExecutionContext, ToolOutput, ToolResult, ToolUse, codes as core_codes,
};
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ElicitRequest, ErrorData, InputRequest, InputRequests,
    InputRequiredResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProgressToken, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;

use crate::error::codes;

use super::approval::{self, INPUT_KEY, Verdict};
use super::convert;
use super::{SessionScope, Shared};

/// One MCP session's handler (one per stdio connection, per legacy HTTP session, and
/// per stateless 2026-07-28 HTTP request).
#[derive(Debug, Clone)]
pub(crate) struct IrisServer {
    pub(crate) shared: Arc<Shared>,
    /// This session's scope (legacy sessions; stateless requests use the shared one).
    pub(crate) scope: Arc<dyn SessionScope>,
    /// The session id calls of this session run under (file read state, artifacts).
    pub(crate) session_id: String,
    /// Fired when the server shuts down: calls in flight are cancelled.
    pub(crate) shutdown: CancellationSignal,
}

/// Whether a request speaks 2026-07-28 or later: no session, no server-to-client
/// requests (approvals go through `input_required`).
fn stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| !v.has_initialize())
}

impl IrisServer {
    /// The scope a request sees: its session's, or for a stateless request the
    /// server-wide one (there is no session to keep reveals in).
    fn scope(&self, context: &RequestContext<RoleServer>) -> (Arc<dyn SessionScope>, String) {
        if stateless(context) {
            (
                Arc::clone(&self.shared.stateless),
                super::STATELESS_SESSION.to_owned(),
            )
        } else {
            (Arc::clone(&self.scope), self.session_id.clone())
        }
    }

    /// Runs one call through the executor, cancelled when the client cancels the
    /// request or the server shuts down.
    async fn execute(
        &self,
        tool_use: &ToolUse,
        ctx: ToolExecutionContext,
        approved: Option<&str>,
        context: &RequestContext<RoleServer>,
    ) -> ToolResult {
        let signal = CancellationSignal::new();
        let mut ctx = ctx.cancellation(signal.clone());
        if let Some(token) = context.meta.get_progress_token() {
            ctx.extensions.insert(progress_listener(token, context));
        }
        let run = self.shared.executor.execute_one(tool_use, &ctx, approved);
        tokio::pin!(run);
        tokio::select! {
            result = &mut run => return result,
            () = context.ct.cancelled() => {}
            () = self.shutdown.cancelled() => {}
        }
        // The executor races the body against the signal: it ends promptly with
        // CANCELLED after stopping what the call started.
        signal.cancel();
        run.await
    }

    /// Asks a legacy-session client by `elicitation/create` and waits for the answer.
    async fn ask(
        &self,
        tool: &str,
        reason: &str,
        arguments: &Value,
        context: &RequestContext<RoleServer>,
    ) -> Verdict {
        let asking = context
            .peer
            .create_elicitation(approval::form(tool, reason, arguments));
        let answer = tokio::select! {
            answer = asking => answer,
            () = context.ct.cancelled() => return Verdict::Denied(cancelled(tool)),
            () = self.shutdown.cancelled() => return Verdict::Denied(cancelled(tool)),
        };
        match answer {
            Ok(answer) => approval::verdict(tool, &answer),
            Err(e) => Verdict::Denied(approval::unavailable(
                tool,
                reason,
                &format!("asking the client for approval failed: {e}"),
            )),
        }
    }
}

/// Turns the executor's heartbeats of a long call into `notifications/progress` for
/// the request's token: progress is the seconds run so far, total the call's deadline
/// in seconds, so a client whose timeout restarts on progress keeps waiting.
fn progress_listener(
    token: ProgressToken,
    context: &RequestContext<RoleServer>,
) -> HeartbeatListener {
    let peer = context.peer.clone();
    HeartbeatListener::new(move |beat| {
        let mut progress =
            ProgressNotificationParam::new(token.clone(), beat.elapsed.as_secs_f64());
        progress.total = Some(beat.deadline.as_secs_f64());
        progress.message = Some(format!(
            "`{}` running for {:.0} s",
            beat.tool_name,
            beat.elapsed.as_secs_f64()
        ));
        let peer = peer.clone();
        // The listener is called on the call's task and must not block it.
        tokio::spawn(async move {
            let _ = peer.notify_progress(progress).await;
        });
    })
}

fn cancelled(tool: &str) -> ToolOutput {
    ToolOutput::err(
        core_codes::CANCELLED,
        format!("`{tool}` was not run: the request was cancelled while waiting for approval"),
    )
}

/// A unique call id: the artifact store names a large result's file after it.
fn call_id(session: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "{session}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

impl ServerHandler for IrisServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let mut info = ServerConfig::new(capabilities).with_server_info(
            rmcp::model::Implementation::new(&self.shared.name, &self.shared.version),
        );
        if let Some(instructions) = &self.shared.instructions {
            info = info.with_instructions(instructions.clone());
        }
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let (scope, _) = self.scope(&context);
        let tools = scope
            .listed()
            .iter()
            .map(|t| convert::mcp_tool(t.as_ref()))
            .collect();
        // The list grows when tool_search reveals a tool: not cacheable.
        Ok(ListToolsResult::with_all_items(tools).with_ttl_ms(0))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (scope, session_id) = self.scope(&context);
        let name = request.name.to_string();
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        let ctx = || {
            scope.prepare(ToolExecutionContext::new(&self.shared.workspace).session_id(&session_id))
        };

        // A 2026-07-28 client retrying with the approval answer.
        if let Some(handle) = &request.request_state {
            // The handle is used up even by a retry that does not match: an answer
            // is never applied to a call other than the one it was asked about.
            let pending = self.shared.pending.take(handle).ok_or_else(|| {
                approval::state_invalid("unknown, expired or already used requestState")
            })?;
            if pending.tool != name || pending.arguments != arguments {
                return Err(approval::state_invalid(
                    "the retry's tool or arguments differ from the call that asked for \
                     approval; its requestState is withdrawn",
                ));
            }
            let answer = request
                .input_responses
                .as_ref()
                .and_then(|r| r.get(INPUT_KEY))
                .and_then(|v| serde_json::from_value(v.clone()).ok());
            let tool_use = ToolUse::new(pending.call_id.clone(), &name, arguments);
            let result = match answer {
                Some(answer) => match approval::verdict(&name, &answer) {
                    Verdict::Approved => {
                        self.execute(&tool_use, ctx(), Some(&tool_use.id), &context)
                            .await
                    }
                    Verdict::Denied(output) => output.into_result(&tool_use.id, &name),
                },
                None => approval::unavailable(
                    &name,
                    "the retry carried no answer",
                    &format!(
                        "`inputResponses.{INPUT_KEY}` is missing or not an elicitation result"
                    ),
                )
                .into_result(&tool_use.id, &name),
            };
            return Ok(self.finish(&result, &context).await);
        }

        // Only what the session lists is callable: hidden system tools and deferred
        // tools nobody revealed are not.
        let listed = scope.listed();
        let canonical = self
            .shared
            .executor
            .registry()
            .get(&name)
            .map(|t| t.definition().clone());
        if let Ok(def) = &canonical
            && !listed.iter().any(|t| t.definition().name == def.name)
        {
            let output = if def.deferred {
                ToolOutput::err(
                    core_codes::TOOL_NOT_LOADED,
                    format!(
                        "`{}` is deferred: call tool_search with a query describing what you \
                         need; the tool it finds is then listed and callable in this session",
                        def.name
                    ),
                )
            } else {
                ToolOutput::err(
                    core_codes::TOOL_NOT_FOUND,
                    format!("no tool is named `{name}`"),
                )
            };
            let result = output.into_result(&call_id(&session_id), &def.name);
            return Ok(convert::call_result(&result).into());
        }

        let tool_use = ToolUse::new(call_id(&session_id), &name, arguments.clone());
        let mut result = self.execute(&tool_use, ctx(), None, &context).await;
        if let Some(waiting) = result.output.approval() {
            let reason = waiting.reason.clone();
            if !approval::can_elicit_form(context.client_capabilities().as_ref()) {
                result = approval::unavailable(
                    &name,
                    &reason,
                    "this MCP client did not declare the elicitation (form) capability, so \
                     nobody can be asked; connect with a client that supports elicitation, or \
                     let the call through without a human: a built-in tool with the agent \
                     YAML's permissions.write_mode / execute_mode: allow, a proxied MCP tool \
                     only when its server marks it readOnlyHint and the YAML sets \
                     mcp.overrides.<server>.trust_annotations: true",
                )
                .into_result(&tool_use.id, &name);
            } else if stateless(&context) {
                // 2026-07-28 forbids server-to-client requests: the client asks its user
                // and retries with the answer and this handle.
                match self
                    .shared
                    .pending
                    .insert(&name, arguments.clone(), tool_use.id.clone())
                {
                    Ok(handle) => {
                        let mut requests = InputRequests::new();
                        requests.insert(
                            INPUT_KEY.to_owned(),
                            InputRequest::Elicitation(ElicitRequest::new(approval::form(
                                &name, &reason, &arguments,
                            ))),
                        );
                        return Ok(InputRequiredResult::new(Some(requests), Some(handle)).into());
                    }
                    // No unguessable handle, no approval round: the call does not run.
                    Err(why) => {
                        result = ToolOutput::err(
                            codes::MCP_SERVE_FAILED,
                            format!(
                                "`{name}` needs approval ({reason}) and was not run: no approval \
                                 handle could be made ({why})"
                            ),
                        )
                        .into_result(&tool_use.id, &name);
                    }
                }
            } else {
                result = match self.ask(&name, &reason, &arguments, &context).await {
                    Verdict::Approved => {
                        self.execute(&tool_use, ctx(), Some(&tool_use.id), &context)
                            .await
                    }
                    Verdict::Denied(output) => output.into_result(&tool_use.id, &name),
                };
            }
        }
        Ok(self.finish(&result, &context).await)
    }
}

impl IrisServer {
    /// The MCP result; a `tool_search` that revealed tools tells a legacy session
    /// its list changed.
    async fn finish(
        &self,
        result: &ToolResult,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        if !result.output.revealed_tools.is_empty() && !stateless(context) {
            // A client that went away does not need to know.
            let _ = context.peer.notify_tool_list_changed().await;
        }
        convert::call_result(result).into()
    }
}
