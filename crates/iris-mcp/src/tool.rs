//! [`McpTool`]: one server tool as an Iris [`Tool`].
//!
//! A call sends `tools/call` with a `progressToken` and waits under two bounds: the
//! idle timeout (`tool_timeout_sec`), which every progress notification restarts,
//! and the absolute cap (`tool_max_sec`, lowered by the context's `tool_timeout`).
//! Each progress notification is the call's heartbeat: a tracing event on target
//! [`TRACING_TARGET`] and, when the host put an [`McpProgressSink`] into the
//! context's extensions, a call of that sink. A call given up on (a bound, the
//! host's cancellation, the future dropped) is withdrawn from the server: a
//! stateful session gets `notifications/cancelled`, a stateless 2026-07-28 HTTP
//! exchange has its response stream closed, and the result's `cancellation` detail
//! says which.
//!
//! A call the server makes a task (the tasks extension) is polled with
//! `tasks/get`, in place or handed off to the run loop as background work, and
//! keeps its heartbeat: the server's progress notifications for the call's token,
//! and each new `statusMessage` of the task, reach the same tracing event and
//! sink (see [`McpProgress`]).
//!
//! A session that broke mid-call is replaced by the server's next session; the
//! call is sent again only when the tool is safe to repeat (trusted `readOnlyHint`
//! or `idempotentHint`), otherwise it fails with `MCP_CONNECTION_LOST` ("may have
//! run").

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use iris_executor::ToolArtifactStore;
use iris_tools_core::{
    BackgroundHandoff, BackgroundWork, BoxFuture, ContentBlock, Tool, ToolDefinition,
    ToolErrorInfo, ToolExecutionContext, ToolInput, ToolOutput, ToolTimeoutOwner,
    codes as core_codes,
};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelTaskParams, ClientRequest, CreateTaskResult,
    ElicitRequestParams, GetTaskParams, InputRequest, InputRequiredResult, InputResponses,
    ServerResult, TaskPayload, UpdateTaskParams,
};
use rmcp::service::{PeerRequestOptions, RequestHandle};
use rmcp::{RoleClient, ServiceError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::time::Instant;

use crate::client::{InFlight, Progress, ProgressWatch};
use crate::connection::{
    CancelMode, Connection, auth_rejected, dropped_answer, transport_failure, undelivered,
};
use crate::elicitation::{
    self, ElicitationAnswer, ElicitationRequest, InputRequired, McpInputResume, McpInputResumes,
};
use crate::error::codes;
use crate::server::Server;

/// Image types projected to model content; others become a short text note.
pub const SUPPORTED_IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Largest `structuredContent` (as serialized JSON) carried whole in
/// `ToolOutput.data["structured_content"]`. A larger one is replaced there by a
/// bounded summary (`structured_content_summary`) naming the raw-result artifact,
/// which keeps it whole.
pub const MAX_INLINE_STRUCTURED_BYTES: usize = 64 * 1024;

/// Characters of JSON text in the summary of an oversized `structuredContent`.
const SUMMARY_PREVIEW_CHARS: usize = 2000;
/// Top-level keys listed in the summary of an oversized `structuredContent`.
const SUMMARY_MAX_KEYS: usize = 50;
/// Schema violations quoted in an `MCP_OUTPUT_SCHEMA_MISMATCH` error.
const MAX_SCHEMA_ERRORS: usize = 5;

/// Characters of the model text kept in the raw-result artifact's preview.
const ARTIFACT_PREVIEW_CHARS: usize = 200;

/// Rounds of `input_required` answered for one call before it is given up (as
/// rmcp's own `DEFAULT_MRTR_MAX_ROUNDS`).
pub const MAX_INPUT_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// The shortest and longest wait between two `tasks/get` polls (the server's
/// `pollIntervalMs` is kept within them; 500 ms when it suggests none).
const TASK_POLL_BOUNDS: (u64, u64) = (50, 5000);

/// The wait before the next `tasks/get`.
fn poll_interval(suggested_ms: Option<u64>) -> Duration {
    Duration::from_millis(
        suggested_ms
            .unwrap_or(500)
            .clamp(TASK_POLL_BOUNDS.0, TASK_POLL_BOUNDS.1),
    )
}

/// Adds what the call's elicitations asked and how they were answered to its
/// result: `metadata.mcp.elicitations`, and a text block for each one declined or
/// cancelled (so the model and the user see why).
fn with_notes(mut output: ToolOutput, call: &InFlight) -> ToolOutput {
    let notes = call.take_notes();
    if notes.is_empty() {
        return output;
    }
    for note in &notes {
        if let Some(text) = elicitation::note_text(note) {
            output.content.push(ContentBlock::text(text));
        }
    }
    let mcp = output
        .metadata
        .entry("mcp".to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(mcp) = mcp {
        mcp.insert("elicitations".into(), Value::Array(notes));
    }
    output
}

/// Why the requests of an `input_required` round were not all answered.
// Made at most once per call and returned at once: boxing the output would allocate
// for nothing.
#[allow(clippy::large_enum_variant)]
enum Unfulfilled {
    /// The call ends with this output (input Iris does not offer, or a host that
    /// waits for a later answer).
    Ended(ToolOutput),
    /// The call was cancelled while its host was answering.
    Cancelled,
}

/// The tracing target of the progress heartbeat.
pub const TRACING_TARGET: &str = "iris::mcp";

/// One progress notification of a running MCP call: the call's heartbeat.
///
/// A call the server runs as a task reports the same way while it is followed:
/// each `notifications/progress` for the call's token, and each new
/// `statusMessage` a `tasks/get` answers, reported with the last progress value
/// and total seen (`0` and none before any notification) and the status message
/// as `message`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpProgress {
    /// The Iris tool name (`mcp__<server>__<tool>`).
    pub tool: String,
    /// The raw server name.
    pub server: String,
    /// The call id from the context (empty outside the executor).
    pub call_id: String,
    /// The server's progress value (grows with each notification; a task's status
    /// message repeats the last one).
    pub progress: f64,
    /// The total, when the server knows it.
    pub total: Option<f64>,
    /// The server's message (or a task's status message), redacted and cut to one
    /// line.
    pub message: Option<String>,
    /// How long the call has run.
    pub elapsed: Duration,
    /// How much longer the call may now wait for its answer or the next progress
    /// notification (the idle timeout, or what is left of the cap). For a task:
    /// how long the `tasks/get` under way may still take, or between polls what
    /// is left of the cap.
    pub remaining: Duration,
}

/// A host's receiver of progress heartbeats. Put one into
/// [`ToolExecutionContext::extensions`] and every MCP call run with that context
/// calls it on each progress notification (from the task that waits for the call,
/// so it should return quickly: send to a channel, update a line).
///
/// ```
/// use iris_mcp::McpProgressSink;
/// use iris_tools_core::ToolExecutionContext;
/// let sink = McpProgressSink::new(|p| eprintln!("{} {}/{:?}", p.tool, p.progress, p.total));
/// let ctx = ToolExecutionContext::new("/srv/workspace").with_extension(sink);
/// assert!(ctx.extensions.get::<McpProgressSink>().is_some());
/// ```
#[derive(Clone)]
pub struct McpProgressSink(Arc<dyn Fn(&McpProgress) + Send + Sync>);

impl McpProgressSink {
    /// A sink calling `f` for each progress notification.
    pub fn new(f: impl Fn(&McpProgress) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }
}

impl std::fmt::Debug for McpProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpProgressSink").finish_non_exhaustive()
    }
}

/// An MCP task a call became, as a host keeps it to follow the task again by id
/// (`tasks/get`) after a restart: the [`BackgroundWork::reference`] of a handed-off
/// task, as JSON with `"kind": "mcp_task"`.
///
/// ```
/// use iris_mcp::McpTaskRef;
/// let r = McpTaskRef::from_reference(&serde_json::json!({
///     "kind": "mcp_task", "server": "build", "tool": "compile",
///     "task_id": "7f3a", "started_at_ms": 1_700_000_000_000u64,
/// })).unwrap();
/// assert_eq!((r.server.as_str(), r.task_id.as_str()), ("build", "7f3a"));
/// assert_eq!(r.to_reference()["kind"], "mcp_task");
/// assert!(McpTaskRef::from_reference(&serde_json::json!({"kind": "other"})).is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename = "mcp_task")]
#[non_exhaustive]
pub struct McpTaskRef {
    /// The raw server name.
    pub server: String,
    /// The raw tool name the server knows.
    pub tool: String,
    /// The server's task id.
    pub task_id: String,
    /// When the call began, milliseconds since the Unix epoch: the tool's cap
    /// (`tool_max_sec`) counts from it in every process that follows the task.
    pub started_at_ms: u64,
}

impl McpTaskRef {
    /// The reference in `value`, when it names an MCP task.
    pub fn from_reference(value: &Value) -> Option<Self> {
        serde_json::from_value(value.clone()).ok()
    }

    /// The reference as JSON (what [`BackgroundWork::reference`] carries).
    pub fn to_reference(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A tool of an MCP server, published under its Iris name and called by its raw wire
/// name.
///
/// Capabilities are `{mcp}`; [`Tool::is_read_only`] is true only when the server's
/// overrides set `trust_annotations` *and* the tool says `readOnlyHint: true`. The
/// tool owns its deadline ([`ToolTimeoutOwner::Tool`]): its definition's timeout is
/// the cap, and the idle timeout is enforced inside the call.
pub struct McpTool {
    definition: ToolDefinition,
    wire_name: String,
    read_only: bool,
    replay_safe: bool,
    idle_timeout: Duration,
    max_duration: Duration,
    server: Arc<Server>,
    output_schema: Option<Arc<jsonschema::Validator>>,
    removed: AtomicBool,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.definition.name)
            .field("server", &self.server.name)
            .field("wire_name", &self.wire_name)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

/// How one attempt of a call ended.
enum Attempt {
    Done(ToolOutput),
    /// The server needs answers first (SEP-2322): ask, then send the call again.
    InputRequired(Box<InputRequiredResult>),
    /// The server runs the call as a task (the tasks extension): poll it, with the
    /// call's progress route (filled in by [`McpTool::attempt`]).
    Task(Box<CreateTaskResult>, Option<TaskProgress>),
    /// The request never left: the session was already gone.
    NotSent,
    /// The session broke after the request was sent: the server may have run it.
    /// The reason, when the transport gave one.
    Lost(Option<String>),
    /// The request could not reach the server (a refused connection): it did not run.
    Unreachable(String),
}

/// The progress route of a call the server made a task, kept for the follow-up:
/// the server may go on sending `notifications/progress` with the `tools/call`
/// request's token while the task runs (the 2025-11-25 tasks utility keeps that
/// token valid for the task's lifetime; the 2026 tasks extension does not say).
struct TaskProgress {
    watch: ProgressWatch,
    rx: tokio::sync::mpsc::Receiver<Progress>,
    /// The last progress value and total seen for the call.
    last: Option<(f64, Option<f64>)>,
}

impl TaskProgress {
    /// The next progress notification; never, once the route is gone.
    async fn next(route: &mut Option<Self>) -> Option<Progress> {
        match route {
            Some(r) => r.rx.recv().await,
            None => std::future::pending().await,
        }
    }
}

/// A task to follow: what the server said when it made the task, and the call's
/// progress route when this process sent the call.
struct Followed {
    task_id: String,
    poll_interval_ms: Option<u64>,
    status_message: Option<String>,
    progress: Option<TaskProgress>,
}

impl Followed {
    fn new(task: &rmcp::model::Task, progress: Option<TaskProgress>) -> Self {
        Self {
            task_id: task.task_id.clone(),
            poll_interval_ms: task.poll_interval_ms,
            status_message: task.status_message.clone(),
            progress,
        }
    }
}

/// What woke a task's follow-up.
enum TaskWake<T> {
    Done(T),
    Progress(Option<Progress>),
    Deadline,
    Cancelled,
}

/// What the request's responder delivered.
type Answer = Result<Result<ServerResult, ServiceError>, tokio::sync::oneshot::error::RecvError>;

/// What woke the call's wait.
enum Wake {
    Answer(Box<Answer>),
    Cancelled,
    Progress(Option<Progress>),
    Deadline,
}

/// A sent request not answered yet. Dropped while armed (the call's future was
/// dropped), it withdraws the request from the server on a task of its own.
struct PendingCall {
    handle: Option<RequestHandle<RoleClient>>,
}

impl PendingCall {
    async fn answer(&mut self) -> Answer {
        match self.handle.as_mut() {
            Some(handle) => (&mut handle.rx).await,
            None => std::future::pending().await,
        }
    }

    fn disarm(&mut self) {
        self.handle.take();
    }

    async fn cancel(&mut self, reason: &str) {
        if let Some(handle) = self.handle.take() {
            // A session that is gone has nothing to withdraw.
            let _ = handle.cancel(Some(reason.to_owned())).await;
        }
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                let _ = handle
                    .cancel(Some("the call was abandoned by the client".to_owned()))
                    .await;
            });
        }
    }
}

/// What [`McpTool::new`] needs besides the definition.
pub(crate) struct McpToolSpec {
    pub(crate) wire_name: String,
    pub(crate) read_only: bool,
    pub(crate) replay_safe: bool,
    pub(crate) idle_timeout: Duration,
    pub(crate) max_duration: Duration,
    pub(crate) output_schema: Option<Arc<jsonschema::Validator>>,
}

impl McpTool {
    pub(crate) fn new(definition: ToolDefinition, spec: McpToolSpec, server: Arc<Server>) -> Self {
        Self {
            definition,
            wire_name: spec.wire_name,
            read_only: spec.read_only,
            replay_safe: spec.replay_safe,
            idle_timeout: spec.idle_timeout,
            max_duration: spec.max_duration,
            server,
            output_schema: spec.output_schema,
            removed: AtomicBool::new(false),
        }
    }

    /// The raw server name.
    pub fn server(&self) -> &str {
        &self.server.name
    }

    /// The raw tool name the server knows.
    pub fn wire_name(&self) -> &str {
        &self.wire_name
    }

    /// The idle timeout from `tool_timeout_sec`: how long a call may go without an
    /// answer or a progress notification.
    pub fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }

    /// The cap from `tool_max_sec`: progress never extends a call past it.
    pub fn max_duration(&self) -> Duration {
        self.max_duration
    }

    /// Whether a call broken by a lost connection is sent again after the server
    /// restarted: the tool is trusted read-only or trusted idempotent.
    pub fn replays_on_reconnect(&self) -> bool {
        self.replay_safe
    }

    /// Whether the server no longer lists this tool (after a catalog refresh).
    pub fn is_removed(&self) -> bool {
        self.removed.load(Ordering::Acquire)
    }

    pub(crate) fn set_removed(&self, removed: bool) {
        self.removed.store(removed, Ordering::Release);
    }

    async fn call(&self, input: ToolInput, ctx: &ToolExecutionContext) -> ToolOutput {
        // The arguments go to the server as they are: `validate_input` checked their
        // shape. The check repeats only for a direct `Tool::run` (a cheap match).
        let arguments = match arguments(input.into_value()) {
            Ok(arguments) => arguments,
            Err(info) => return ToolOutput::error(info),
        };
        if self.is_removed() {
            return ToolOutput::error(
                ToolErrorInfo::new(
                    codes::MCP_TOOL_REMOVED,
                    format!(
                        "MCP server `{}` no longer lists tool `{}`; it was not called",
                        self.server.name, self.wire_name
                    ),
                )
                .with_detail("server", self.server.name.clone()),
            );
        }
        if ctx.cancel_requested() {
            return ToolOutput::err(
                core_codes::CANCELLED,
                "the call was cancelled before it was sent to the MCP server",
            );
        }
        // Inside the executor `ctx.tool_timeout` is the call's effective deadline; a
        // zero one never reaches a body there, so it is ignored here like an unset one.
        let cap = match ctx.tool_timeout {
            Some(t) if !t.is_zero() => self.max_duration.min(t),
            _ => self.max_duration,
        };
        let idle = self.idle_timeout.min(cap);
        // The time a person spends answering an elicitation is added back, so
        // neither bound counts it.
        let mut started = Instant::now();
        let mut replayed = false;
        let mut unsent = false;
        let mut rounds = 0usize;
        let mut state_only_rounds = 0u32;
        let call = Arc::new(InFlight::new(&self.definition.name, ctx));
        let _listed = self.server.events.register_call(Arc::clone(&call));
        let mut params = CallToolRequestParams::new(self.wire_name.clone());
        if let Some(arguments) = &arguments {
            params = params.with_arguments(arguments.clone());
        }
        // Sent again after an `MCP_INPUT_REQUIRED` stop: the answers and the state.
        let keyed = ctx
            .extensions
            .get::<McpInputResumes>()
            .and_then(|all| all.0.get(&ctx.call_id));
        if let Some(resume) = keyed.or_else(|| ctx.extensions.get::<McpInputResume>()) {
            params.input_responses = Some(resume.responses.clone().into_iter().collect());
            params.request_state.clone_from(&resume.request_state);
        }
        loop {
            let conn = match self.server.connection().await {
                Ok(conn) => conn,
                Err(why) => return with_notes(self.unavailable(&why), &call),
            };
            let attempt = self
                .attempt(&conn, params.clone(), ctx, started, idle, cap, &call)
                .await;
            match attempt {
                Attempt::Done(output) => return with_notes(output, &call),
                Attempt::InputRequired(result) => {
                    rounds += 1;
                    if rounds > MAX_INPUT_ROUNDS {
                        return with_notes(
                            ToolOutput::error(self.failed(
                                codes::MCP_INPUT_UNSUPPORTED,
                                &format!(
                                    "MCP tool `{}` on server `{}` still asked for input after {MAX_INPUT_ROUNDS} rounds; the call was given up",
                                    self.wire_name, self.server.name
                                ),
                                &conn,
                            )),
                            &call,
                        );
                    }
                    let asked = Instant::now();
                    let had_requests = result
                        .input_requests
                        .as_ref()
                        .is_some_and(|r| !r.is_empty());
                    let request_state = result.request_state.clone();
                    let responses = match self.fulfil(*result, &call, &conn, true).await {
                        Ok(r) => r,
                        Err(Unfulfilled::Ended(output)) => return with_notes(output, &call),
                        // The server answered the round and keeps nothing for it:
                        // no request of the call is in flight to withdraw.
                        Err(Unfulfilled::Cancelled) => {
                            return with_notes(
                                ToolOutput::error(
                                    ToolErrorInfo::new(
                                        core_codes::CANCELLED,
                                        "the call was cancelled while the host was answering the MCP server's elicitation; no request of it was in flight on the server (an input_required round keeps nothing there)",
                                    )
                                    .with_detail("cancellation", "none_in_flight"),
                                ),
                                &call,
                            );
                        }
                    };
                    started += asked.elapsed();
                    if had_requests {
                        state_only_rounds = 0;
                    } else {
                        // Only state came back (load shedding): wait a little more
                        // each time before asking again, as rmcp's own loop does.
                        let wait = 50u64.saturating_mul(1 << state_only_rounds.min(3)).min(250);
                        state_only_rounds += 1;
                        tokio::time::sleep(Duration::from_millis(wait)).await;
                    }
                    params.input_responses = (!responses.is_empty()).then_some(responses);
                    params.request_state = request_state;
                }
                Attempt::Task(task, progress) => {
                    let progress = match self.hand_off(ctx, &task.task, started, progress) {
                        Ok(receipt) => return with_notes(receipt, &call),
                        Err(progress) => progress,
                    };
                    let followed = Followed::new(&task.task, progress);
                    let output = self
                        .follow_task(&conn, followed, ctx, started, idle, cap, &call)
                        .await;
                    return with_notes(output, &call);
                }
                // The request never reached the server; the next session gets it.
                Attempt::NotSent if !unsent => unsent = true,
                Attempt::NotSent => {
                    return with_notes(self.unavailable(&conn.describe_closed()), &call);
                }
                Attempt::Unreachable(why) => return with_notes(self.unavailable(&why), &call),
                Attempt::Lost(reason) => {
                    if let Some(process) = &conn.process {
                        // The stream usually closes a moment before the process is
                        // reaped; wait for that moment so the error can say how.
                        process.wait_exit(Duration::from_secs(2)).await;
                    }
                    if self.replay_safe && !replayed && started.elapsed() < cap {
                        replayed = true;
                        tracing::info!(target: TRACING_TARGET, server = %self.server.name, tool = %self.wire_name, "the connection broke mid-call; replaying the call (trusted read-only or idempotent)");
                        continue;
                    }
                    return with_notes(self.lost(&conn, replayed, reason.as_deref()), &call);
                }
            }
        }
    }

    /// Answers the requests of an `input_required` result: elicitations through
    /// the call's host (declined with a reason when it has none). Sampling and
    /// roots, which Iris does not declare, end the call with
    /// `MCP_INPUT_UNSUPPORTED`; the call's cancellation ends the wait for the host
    /// ([`Unfulfilled::Cancelled`], the caller withdraws what it has out).
    async fn fulfil(
        &self,
        result: InputRequiredResult,
        call: &InFlight,
        conn: &Connection,
        can_wait: bool,
    ) -> Result<InputResponses, Unfulfilled> {
        let mut responses = InputResponses::new();
        for (key, request) in result.input_requests.clone().unwrap_or_default() {
            let InputRequest::Elicitation(request) = request else {
                let method = match request {
                    InputRequest::CreateMessage(_) => "sampling/createMessage",
                    InputRequest::ListRoots(_) => "roots/list",
                    _ => "an input request iris does not know",
                };
                return Err(Unfulfilled::Ended(ToolOutput::error(self.failed(
                    codes::MCP_INPUT_UNSUPPORTED,
                    &format!(
                        "MCP tool `{}` on server `{}` asked for {method}, which iris does not offer (it declares elicitation only); the call ended",
                        self.wire_name, self.server.name
                    ),
                    conn,
                ))));
            };
            let Some((answer, asked)) = self.elicit(call, &request.params, can_wait).await else {
                return Err(Unfulfilled::Cancelled);
            };
            if let ElicitationAnswer::Wait { .. } = answer {
                let stop = InputRequired {
                    request: asked,
                    key,
                    request_state: result.request_state.clone(),
                    responses: responses.into_iter().collect(),
                };
                return Err(Unfulfilled::Ended(
                    stop.into_output(&self.wire_name, &self.server.name),
                ));
            }
            responses.insert(key, answer.to_wire());
        }
        Ok(responses)
    }

    /// Asks the call's host one elicitation, noting it for the result; `None` when
    /// the call was cancelled before the host answered (the host's wait is dropped).
    async fn elicit(
        &self,
        call: &InFlight,
        params: &ElicitRequestParams,
        can_wait: bool,
    ) -> Option<(ElicitationAnswer, ElicitationRequest)> {
        let request =
            ElicitationRequest::from_params(&self.server.name, &call.tool, &call.call_id, params);
        let answering = call.answering();
        let answered = tokio::select! {
            answered = elicitation::ask(call.handler.as_ref(), &request, can_wait) => answered,
            () = call.stopped() => {
                tracing::info!(target: TRACING_TARGET, server = %self.server.name, tool = %self.wire_name, mode = request.mode(), "elicitation abandoned: the call was cancelled before the host answered");
                return None;
            }
        };
        drop(answering);
        let (answer, note) = answered;
        crate::client::record(
            &self.server.diagnostics,
            &request,
            &answer,
            call.handler.is_none(),
        );
        call.note(note);
        Some((answer, request))
    }

    /// A copy of this tool that the follow-up of a handed-off task owns (the
    /// registry keeps the original).
    fn detached(&self) -> Self {
        Self {
            definition: self.definition.clone(),
            wire_name: self.wire_name.clone(),
            read_only: self.read_only,
            replay_safe: self.replay_safe,
            idle_timeout: self.idle_timeout,
            max_duration: self.max_duration,
            server: Arc::clone(&self.server),
            output_schema: self.output_schema.clone(),
            removed: AtomicBool::new(false),
        }
    }

    /// Hands the rest of a call the server made a task to the run loop, when the
    /// call runs inside one ([`BackgroundHandoff`] in the context, and not as an
    /// inner call of another tool): `Ok(receipt)`, the call's answer now, the
    /// follow-up taking the call's progress route along. `Err` gives the route
    /// back when the call follows the task itself.
    fn hand_off(
        &self,
        ctx: &ToolExecutionContext,
        task: &rmcp::model::Task,
        started: Instant,
        progress: Option<TaskProgress>,
    ) -> Result<ToolOutput, Option<TaskProgress>> {
        let task_id = task.task_id.as_str();
        if ctx.parent_call_id.is_some() {
            return Err(progress);
        }
        let Some(handoff) = ctx.extensions.get::<BackgroundHandoff>() else {
            return Err(progress);
        };
        let reference = McpTaskRef {
            server: self.server.name.clone(),
            tool: self.wire_name.clone(),
            task_id: task_id.to_owned(),
            started_at_ms: now_ms()
                .saturating_sub(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)),
        };
        // A refused handoff drops the route with the work: watched again, the
        // token's notifications in between wait among the early ones (the old
        // watch removes only its own route).
        let token = progress.as_ref().map(|p| p.watch.token().clone());
        let last = progress.as_ref().and_then(|p| p.last);
        let followed = Followed::new(task, progress);
        let work = Arc::new(self.detached()).follow_detached(followed, ctx, started);
        let work = BackgroundWork::new(
            ctx.call_id.clone(),
            self.definition.name.clone(),
            Some(reference.to_reference()),
            work,
        );
        if handoff.hand_off(work).is_err() {
            return Err(token.map(|token| {
                let (watch, rx) = self.server.events.watch_progress(token);
                TaskProgress { watch, rx, last }
            }));
        }
        tracing::info!(target: TRACING_TARGET, server = %self.server.name, tool = %self.wire_name, task = %task_id, "the call runs as an MCP task; the run follows it in the background");
        let receipt = json!({
            "task_id": ctx.call_id,
            "status": "running",
            "mcp_task": {
                "server": self.server.name,
                "task_id": task_id,
                "status": task.status,
            },
        });
        let mut output = ToolOutput::text(format!(
            "{receipt}\nMCP server `{}` runs the call as task `{task_id}`; its result arrives in a later message.",
            self.server.name
        ))
        .with_data("background", receipt);
        output.metadata.insert(
            "mcp".into(),
            json!({"server": self.server.name, "tool": self.wire_name, "task_id": task_id}),
        );
        Ok(output)
    }

    /// Follows MCP task `task` again by id (`tasks/get`) with `ctx`, as a call
    /// handed off to a run loop is followed: the work a resumed run re-attaches to
    /// after the process that started the call died. The cap (`tool_max_sec`)
    /// counts from the call's start ([`McpTaskRef::started_at_ms`]); `ctx`'s
    /// cancellation makes it send `tasks/cancel`.
    pub fn follow(
        self: &Arc<Self>,
        task: &McpTaskRef,
        ctx: &ToolExecutionContext,
    ) -> BoxFuture<'static, ToolOutput> {
        let ran = Duration::from_millis(now_ms().saturating_sub(task.started_at_ms));
        let now = Instant::now();
        let started = now.checked_sub(ran).unwrap_or(now);
        let mut ctx = ctx.clone();
        ctx.extensions.remove::<BackgroundHandoff>();
        // A new session: the call's progress token ended with the old one.
        let followed = Followed {
            task_id: task.task_id.clone(),
            poll_interval_ms: None,
            status_message: None,
            progress: None,
        };
        Arc::clone(self).follow_owned(followed, ctx, started)
    }

    /// The follow-up of a handed-off task: owned, under the handoff's cancellation.
    fn follow_detached(
        self: Arc<Self>,
        followed: Followed,
        ctx: &ToolExecutionContext,
        started: Instant,
    ) -> BoxFuture<'static, ToolOutput> {
        let mut ctx = ctx.clone();
        if let Some(handoff) = ctx.extensions.get::<BackgroundHandoff>() {
            ctx.cancellation = Some(handoff.cancellation().clone());
        }
        ctx.extensions.remove::<BackgroundHandoff>();
        // The call's deadline bounded the call; the follow-up has the tool's cap.
        ctx.tool_timeout = None;
        self.follow_owned(followed, ctx, started)
    }

    fn follow_owned(
        self: Arc<Self>,
        followed: Followed,
        ctx: ToolExecutionContext,
        started: Instant,
    ) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let cap = self.max_duration;
            let idle = self.idle_timeout.min(cap);
            let call = Arc::new(InFlight::new(&self.definition.name, &ctx));
            let _listed = self.server.events.register_call(Arc::clone(&call));
            let conn = match self.server.connection().await {
                Ok(conn) => conn,
                Err(why) => return with_notes(self.unavailable(&why), &call),
            };
            let output = self
                .follow_task(&conn, followed, &ctx, started, idle, cap, &call)
                .await;
            self.bounded(with_notes(output, &call), &ctx).await
        })
    }

    /// Bounds a follow-up's result as the executor bounds a call's: a model body
    /// longer than the definition's `max_result_chars` is saved in the session's
    /// artifacts and replaced by its preview and a reference (the follow-up's
    /// result does not pass through the executor).
    async fn bounded(&self, output: ToolOutput, ctx: &ToolExecutionContext) -> ToolOutput {
        let def = &self.definition;
        let body = output.model_content();
        if body.chars().count() <= def.max_result_chars {
            return output;
        }
        let store = ToolArtifactStore::for_session(ctx.workspace(), &ctx.session_id).with_preview(
            def.preview_chars.min(def.max_result_chars),
            def.preview_mode,
        );
        let saving = {
            let (store, call_id) = (store.clone(), ctx.call_id.clone());
            tokio::task::spawn_blocking(move || {
                let saved = store.save_body(&call_id, &body);
                (body, saved)
            })
        };
        match saving.await {
            Ok((body, Ok(saved))) => store.replace_with_preview(output, &body, saved),
            Ok((_, Err(e))) => {
                tracing::warn!(target: TRACING_TARGET, server = %self.server.name, tool = %self.wire_name, error = %e, "keeping the whole task result: saving it failed");
                output
            }
            Err(e) => {
                tracing::warn!(target: TRACING_TARGET, server = %self.server.name, tool = %self.wire_name, error = %e, "keeping the whole task result: saving it failed");
                output
            }
        }
    }

    /// Polls a task the server made of the call (`tasks/get`, at the server's
    /// suggested interval) until it ends, within the call's cap; answers its
    /// elicitations (`tasks/update`); sends `tasks/cancel` when the cap passes or
    /// the host cancels.
    ///
    /// The task reports progress as a call does, through [`McpTool::heartbeat`]:
    /// each `notifications/progress` for the call's token, and each new
    /// `statusMessage` from `tasks/get` (as the last progress value and total
    /// seen, `0` before any, with the status message as its message). A
    /// notification restarts the idle timeout of a `tasks/get` under way (the
    /// server is alive) but never moves the next poll: the poll is how the result
    /// arrives.
    #[allow(clippy::too_many_arguments)]
    async fn follow_task(
        &self,
        conn: &Arc<Connection>,
        followed: Followed,
        ctx: &ToolExecutionContext,
        mut started: Instant,
        idle: Duration,
        cap: Duration,
        call: &InFlight,
    ) -> ToolOutput {
        let Followed {
            task_id,
            poll_interval_ms,
            status_message,
            progress: mut route,
        } = followed;
        let mut interval = poll_interval(poll_interval_ms);
        let polls = AtomicU64::new(0);
        let mut last = route.as_ref().and_then(|r| r.last);
        let mut shown: Option<String> = None;
        tracing::info!(target: TRACING_TARGET, server = %self.server.name, tool = %self.wire_name, task = %task_id, "the call runs as an MCP task; polling it");
        let task_detail = |info: ToolErrorInfo| {
            info.with_detail("task_id", task_id.clone())
                .with_detail("task_polls", polls.load(Ordering::Relaxed))
        };
        let beat = |p: &Progress,
                    started: Instant,
                    remaining: Duration,
                    last: &mut Option<(f64, Option<f64>)>| {
            *last = Some((p.progress, p.total));
            self.heartbeat(ctx, p, started, remaining, conn, Some(&task_id));
        };
        let status = |message: Option<String>,
                      shown: &mut Option<String>,
                      last: Option<(f64, Option<f64>)>,
                      started: Instant,
                      remaining: Duration| {
            let Some(message) = message.filter(|m| !m.trim().is_empty()) else {
                return;
            };
            if shown.as_deref() == Some(message.as_str()) {
                return;
            }
            let (progress, total) = last.unwrap_or((0.0, None));
            let p = Progress {
                progress,
                total,
                message: Some(message.clone()),
            };
            self.heartbeat(ctx, &p, started, remaining, conn, Some(&task_id));
            *shown = Some(message);
        };
        status(
            status_message,
            &mut shown,
            last,
            started,
            cap.saturating_sub(started.elapsed()),
        );
        let cancelled = async {
            match &ctx.cancellation {
                Some(signal) => signal.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(cancelled);
        let cancelled_output = || {
            ToolOutput::error(task_detail(
                ToolErrorInfo::new(
                    core_codes::CANCELLED,
                    format!("the call was cancelled; the MCP server was told to cancel task `{task_id}` (tasks/cancel)"),
                )
                .with_detail("cancellation", "tasks/cancel"),
            ))
        };
        loop {
            let cap_at = started + cap;
            let wake = (Instant::now() + interval).min(cap_at);
            loop {
                let woke = tokio::select! {
                    biased;
                    () = &mut cancelled => TaskWake::Cancelled,
                    p = TaskProgress::next(&mut route) => TaskWake::Progress(p),
                    () = tokio::time::sleep_until(wake) => TaskWake::Done(()),
                };
                match woke {
                    TaskWake::Cancelled => {
                        self.cancel_task(conn, &task_id).await;
                        return cancelled_output();
                    }
                    TaskWake::Progress(Some(p)) => {
                        beat(
                            &p,
                            started,
                            cap_at.saturating_duration_since(Instant::now()),
                            &mut last,
                        );
                    }
                    TaskWake::Progress(None) => route = None,
                    TaskWake::Done(()) | TaskWake::Deadline => break,
                }
            }
            let left = cap_at.saturating_duration_since(Instant::now());
            let capped = |this: &Self| {
                ToolOutput::error(task_detail(
                    ToolErrorInfo::new(
                        core_codes::TOOL_TIMEOUT,
                        format!(
                            "MCP tool `{}` on server `{}` ran as task `{task_id}` and did not finish within its cap of {:.3}s; the server was told to cancel it (tasks/cancel)",
                            this.wire_name, this.server.name, cap.as_secs_f64()
                        ),
                    )
                    .retryable(true)
                    .with_detail("bound", "cap")
                    .with_detail("cap_seconds", cap.as_secs_f64())
                    .with_detail("cancellation", "tasks/cancel"),
                ))
            };
            if left.is_zero() {
                self.cancel_task(conn, &task_id).await;
                return capped(self);
            }
            polls.fetch_add(1, Ordering::Relaxed);
            let get = conn.peer.get_task(GetTaskParams::new(task_id.clone()));
            tokio::pin!(get);
            let mut poll_deadline = (Instant::now() + idle).min(cap_at);
            let got = loop {
                let woke = tokio::select! {
                    biased;
                    () = &mut cancelled => TaskWake::Cancelled,
                    got = &mut get => TaskWake::Done(got),
                    p = TaskProgress::next(&mut route) => TaskWake::Progress(p),
                    () = tokio::time::sleep_until(poll_deadline) => TaskWake::Deadline,
                };
                match woke {
                    TaskWake::Done(got) => break Some(got),
                    TaskWake::Progress(Some(p)) => {
                        // The server is alive: the answer may take another idle window.
                        poll_deadline = (Instant::now() + idle).min(cap_at);
                        beat(&p, started, poll_deadline - Instant::now(), &mut last);
                    }
                    TaskWake::Progress(None) => route = None,
                    TaskWake::Deadline => break None,
                    // A cancel while `tasks/get` is out is a cancel, not an idle timeout.
                    TaskWake::Cancelled => {
                        self.cancel_task(conn, &task_id).await;
                        return cancelled_output();
                    }
                }
            };
            let got = match got {
                Some(Ok(got)) => got,
                Some(Err(e)) => {
                    // Best effort: a task nobody follows any more should not run on.
                    self.cancel_task(conn, &task_id).await;
                    return ToolOutput::error(task_detail(self.failed(
                        codes::MCP_TASK_FAILED,
                        &format!(
                            "following task `{task_id}` of MCP tool `{}` on server `{}` failed (tasks/get): {}",
                            self.wire_name,
                            self.server.name,
                            one_line(&e.to_string())
                        ),
                        conn,
                    )));
                }
                None if poll_deadline >= cap_at => {
                    self.cancel_task(conn, &task_id).await;
                    return capped(self);
                }
                None => {
                    self.cancel_task(conn, &task_id).await;
                    return ToolOutput::error(task_detail(
                        ToolErrorInfo::new(
                            core_codes::TOOL_TIMEOUT,
                            format!(
                                "MCP server `{}` did not answer tasks/get for task `{task_id}` within {:.3}s; the server was told to cancel it (tasks/cancel)",
                                self.server.name, idle.as_secs_f64()
                            ),
                        )
                        .retryable(true)
                        .with_detail("bound", "idle")
                        .with_detail("cancellation", "tasks/cancel"),
                    ));
                }
            };
            interval = poll_interval(
                got.task
                    .task
                    .poll_interval_ms
                    .or(Some(interval.as_millis() as u64)),
            );
            status(
                got.task.task.status_message.clone(),
                &mut shown,
                last,
                started,
                cap_at.saturating_duration_since(Instant::now()),
            );
            match got.task.payload {
                TaskPayload::Completed { result } => {
                    let mut out = self.project(Value::Object(result), ctx, conn);
                    if let Some(Value::Object(mcp)) = out.metadata.get_mut("mcp") {
                        mcp.insert("task_id".into(), json!(task_id));
                        mcp.insert("task_polls".into(), json!(polls.load(Ordering::Relaxed)));
                    }
                    return out;
                }
                TaskPayload::Failed { error } => {
                    let message = error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("no message");
                    return ToolOutput::error(task_detail(
                        self.failed(
                            codes::MCP_TASK_FAILED,
                            &format!(
                                "MCP tool `{}` on server `{}` ran as task `{task_id}`, which failed: {}",
                                self.wire_name, self.server.name, one_line(message)
                            ),
                            conn,
                        )
                        .with_detail("error", Value::Object(error)),
                    ));
                }
                TaskPayload::Cancelled => {
                    return ToolOutput::error(task_detail(self.failed(
                        codes::MCP_TASK_FAILED,
                        &format!(
                            "MCP tool `{}` on server `{}` ran as task `{task_id}`, which the server cancelled",
                            self.wire_name, self.server.name
                        ),
                        conn,
                    )));
                }
                TaskPayload::InputRequired { input_requests } => {
                    let asked = Instant::now();
                    let result = InputRequiredResult::from_input_requests(input_requests);
                    // A task lives on the server: it cannot wait for a later answer.
                    let responses = match self.fulfil(result, call, conn, false).await {
                        Ok(r) => r,
                        Err(Unfulfilled::Ended(out)) => {
                            self.cancel_task(conn, &task_id).await;
                            return out;
                        }
                        Err(Unfulfilled::Cancelled) => {
                            self.cancel_task(conn, &task_id).await;
                            return cancelled_output();
                        }
                    };
                    started += asked.elapsed();
                    if let Err(e) = conn
                        .peer
                        .update_task(UpdateTaskParams::new(task_id.clone(), responses))
                        .await
                    {
                        self.cancel_task(conn, &task_id).await;
                        let mut out = self.service_error(&e, conn);
                        if let iris_tools_core::Outcome::Failed(info) = &mut out.outcome {
                            **info = task_detail((**info).clone());
                        }
                        return out;
                    }
                }
                // Working, or a status this version does not know: poll again.
                _ => {}
            }
        }
    }

    /// Sends `tasks/cancel`, bounded: a server that does not answer must not hold
    /// the call's end.
    async fn cancel_task(&self, conn: &Connection, task_id: &str) {
        let cancel = conn
            .peer
            .cancel_task(CancelTaskParams::new(task_id.to_owned()));
        match tokio::time::timeout(Duration::from_secs(5), cancel).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::debug!(server = %self.server.name, task = %task_id, error = %e, "tasks/cancel failed");
            }
            Err(_) => {
                tracing::debug!(server = %self.server.name, task = %task_id, "tasks/cancel was not answered");
            }
        }
    }

    /// One `tools/call` on `conn`, waited for under the idle timeout and the cap.
    #[allow(clippy::too_many_arguments)]
    async fn attempt(
        &self,
        conn: &Arc<Connection>,
        params: CallToolRequestParams,
        ctx: &ToolExecutionContext,
        started: Instant,
        idle: Duration,
        cap: Duration,
        call: &InFlight,
    ) -> Attempt {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // rmcp puts a fresh `progressToken` into every request's `_meta`.
        let handle = match conn
            .peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(_) => return Attempt::NotSent,
        };
        let (watch, mut progress) = self
            .server
            .events
            .watch_progress(handle.progress_token.clone());
        let mut pending = PendingCall {
            handle: Some(handle),
        };
        let mut cap_at = started + cap;
        let mut last_reset = Instant::now();
        let mut human_seen = false;
        let mut deadline = (last_reset + idle).min(cap_at);
        let mut beats = 0u64;
        let mut last = None;
        let mut progress_open = true;
        let cancelled = async {
            match &ctx.cancellation {
                Some(signal) => signal.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(cancelled);
        loop {
            let wake = tokio::select! {
                biased;
                answer = pending.answer() => Wake::Answer(Box::new(answer)),
                () = &mut cancelled => Wake::Cancelled,
                p = progress.recv(), if progress_open => Wake::Progress(p),
                () = tokio::time::sleep_until(deadline) => Wake::Deadline,
            };
            match wake {
                Wake::Answer(answer) => {
                    pending.disarm();
                    return match self.answered(*answer, ctx, conn) {
                        // The task's follow-up keeps the call's progress route.
                        Attempt::Task(task, _) => Attempt::Task(
                            task,
                            Some(TaskProgress {
                                watch,
                                rx: progress,
                                last,
                            }),
                        ),
                        other => other,
                    };
                }
                Wake::Cancelled => {
                    let mode = conn.cancel_mode();
                    pending.cancel("cancelled by the host").await;
                    return Attempt::Done(ToolOutput::error(
                        ToolErrorInfo::new(
                            core_codes::CANCELLED,
                            format!(
                                "the call was cancelled; the MCP server was told to stop ({})",
                                mode.as_str()
                            ),
                        )
                        .with_detail("cancellation", mode.as_str()),
                    ));
                }
                Wake::Progress(Some(p)) => {
                    beats += 1;
                    last_reset = Instant::now();
                    deadline = (last_reset + idle).min(cap_at);
                    last = Some((p.progress, p.total));
                    self.heartbeat(ctx, &p, started, deadline - last_reset, conn, None);
                }
                // `watch` holds the route, so this does not happen; if it did, the
                // wait goes on without progress.
                Wake::Progress(None) => progress_open = false,
                // A person is answering the server's elicitation: the bounds wait.
                Wake::Deadline if call.waiting_for_human() => {
                    human_seen = true;
                    let step = Duration::from_millis(200);
                    cap_at += step;
                    deadline = Instant::now() + step;
                }
                Wake::Deadline if human_seen => {
                    human_seen = false;
                    last_reset = Instant::now();
                    deadline = (last_reset + idle).min(cap_at);
                }
                Wake::Deadline => {
                    let mode = conn.cancel_mode();
                    let reason = "timed out";
                    pending.cancel(reason).await;
                    // The cap fired when it cut the idle window short.
                    let capped = deadline == cap_at && cap_at - last_reset < idle;
                    return Attempt::Done(self.timed_out(mode, capped, idle, cap, beats));
                }
            }
        }
    }

    fn timed_out(
        &self,
        mode: CancelMode,
        capped: bool,
        idle: Duration,
        cap: Duration,
        beats: u64,
    ) -> ToolOutput {
        let (message, bound, seconds) = if capped {
            (
                format!(
                    "MCP tool `{}` on server `{}` did not finish within its cap of {:.3}s (tool_max_sec, or the call's deadline), though it reported progress; the server was told to cancel the call ({})",
                    self.wire_name,
                    self.server.name,
                    cap.as_secs_f64(),
                    mode.as_str()
                ),
                "cap",
                cap,
            )
        } else {
            (
                format!(
                    "MCP tool `{}` on server `{}` sent neither an answer nor progress for {:.3}s; the server was told to cancel the call ({})",
                    self.wire_name,
                    self.server.name,
                    idle.as_secs_f64(),
                    mode.as_str()
                ),
                "idle",
                idle,
            )
        };
        ToolOutput::error(
            ToolErrorInfo::new(core_codes::TOOL_TIMEOUT, message)
                .retryable(true)
                .with_detail("timeout_seconds", seconds.as_secs_f64())
                .with_detail("bound", bound)
                .with_detail("idle_timeout_seconds", idle.as_secs_f64())
                .with_detail("cap_seconds", cap.as_secs_f64())
                .with_detail("progress_notifications", beats)
                .with_detail("cancellation", mode.as_str()),
        )
    }

    /// Reports one progress notification (or a task's new status message): a
    /// tracing event and the host's sink.
    fn heartbeat(
        &self,
        ctx: &ToolExecutionContext,
        p: &Progress,
        started: Instant,
        remaining: Duration,
        conn: &Connection,
        task: Option<&str>,
    ) {
        let message = p
            .message
            .as_deref()
            .map(|m| conn.redactor().redact(&one_line(m)));
        let elapsed = started.elapsed();
        let name = self.definition.name.as_str();
        let of = p.total.map(|t| format!("/{t}")).unwrap_or_default();
        tracing::info!(
            target: TRACING_TARGET,
            name,
            server = %self.server.name,
            elapsed_seconds = elapsed.as_secs(),
            progress = p.progress,
            total = p.total,
            task,
            "running name={name} elapsed={}s progress={}{of}{}",
            elapsed.as_secs(),
            p.progress,
            message.as_deref().map(|m| format!(" {m}")).unwrap_or_default(),
        );
        if let Some(sink) = ctx.extensions.get::<McpProgressSink>() {
            (sink.0)(&McpProgress {
                tool: self.definition.name.clone(),
                server: self.server.name.clone(),
                call_id: ctx.call_id.clone(),
                progress: p.progress,
                total: p.total,
                message,
                elapsed,
                remaining,
            });
        }
    }

    fn answered(&self, answer: Answer, ctx: &ToolExecutionContext, conn: &Connection) -> Attempt {
        let result = match answer {
            Err(_) => return Attempt::Lost(None),
            Ok(Err(e)) => {
                if let Some(why) = undelivered(&e) {
                    return Attempt::Unreachable(conn.redactor().redact(&why));
                }
                if let Some(status) = auth_rejected(&e) {
                    return Attempt::Done(self.auth_required(status, conn));
                }
                if dropped_answer(&e).is_none()
                    && matches!(
                        e,
                        ServiceError::TransportClosed | ServiceError::TransportSend(_)
                    )
                {
                    let reason = match e {
                        ServiceError::TransportSend(_) => Some(transport_failure(&e)),
                        _ => None,
                    };
                    return Attempt::Lost(reason);
                }
                return Attempt::Done(self.service_error(&e, conn));
            }
            Ok(Ok(result)) => result,
        };
        let raw = match result {
            ServerResult::CallToolResult(r) => serde_json::to_value(&r),
            // A result with nothing in it is a call that returned nothing.
            ServerResult::EmptyResult(_) => Ok(json!({"content": []})),
            ServerResult::InputRequiredResult(r) => return Attempt::InputRequired(Box::new(r)),
            ServerResult::CreateTaskResult(t) => return Attempt::Task(Box::new(t), None),
            _ => {
                return Attempt::Done(ToolOutput::error(self.failed(
                    codes::MCP_REQUEST_FAILED,
                    &format!(
                        "MCP server `{}` answered the call to `{}` with something that is not a tool result",
                        self.server.name, self.wire_name
                    ),
                    conn,
                )));
            }
        };
        Attempt::Done(match raw {
            Ok(raw) => self.project(raw, ctx, conn),
            Err(e) => ToolOutput::err(
                codes::MCP_REQUEST_FAILED,
                format!("the MCP result could not be read: {e}"),
            ),
        })
    }

    /// A failed call: `message` redacted (no secret of the server's config reaches
    /// the model or the user).
    fn failed(&self, code: &str, message: &str, conn: &Connection) -> ToolErrorInfo {
        ToolErrorInfo::new(code, conn.redactor().redact(message))
    }

    /// The server refused the credentials: the call did not run. The error names the
    /// host variable they come from (`details.secret`), so a host can supply a new
    /// value ([`crate::MCPManager::set_secret`]) and the call can be made again.
    fn auth_required(&self, status: u16, conn: &Connection) -> ToolOutput {
        let vars = &self.server.credential_vars;
        let source = match vars.as_slice() {
            [] => "its configuration holds them literally".to_owned(),
            [one] => format!("they come from the host variable `{one}`"),
            many => format!("they come from the host variables {}", many.join(", ")),
        };
        let mut info = self
            .failed(
                codes::MCP_AUTH_REQUIRED,
                &format!(
                    "MCP server `{}` rejected the credentials of the call to `{}` (HTTP {status}; missing, invalid or expired); the call did not run; {source}",
                    self.server.name, self.wire_name
                ),
                conn,
            )
            .with_detail("server", self.server.name.clone())
            .with_detail("status", status);
        if let Some(first) = vars.first() {
            info = info.with_detail("secret", first.clone());
        }
        ToolOutput::error(info)
    }

    /// No session to call on: closed, or a restart failed.
    fn unavailable(&self, why: &str) -> ToolOutput {
        let conn = self.server.current();
        let stderr = conn.redactor().redact(&conn.stderr_tail());
        ToolOutput::error(
            self.failed(
                codes::MCP_CONNECTION_CLOSED,
                &format!("MCP server `{}` is not connected: {why}", self.server.name),
                &conn,
            )
            .with_detail("server", self.server.name.clone())
            .with_detail("stderr", stderr),
        )
    }

    /// The session broke while the call was out and it is not safe to repeat.
    fn lost(&self, conn: &Connection, replayed: bool, reason: Option<&str>) -> ToolOutput {
        let stderr = conn.redactor().redact(&conn.stderr_tail());
        let again = if replayed { " (after one replay)" } else { "" };
        let how = match (&conn.process, reason) {
            (None, Some(reason)) => reason.to_owned(),
            _ => conn.describe_closed(),
        };
        ToolOutput::error(
            self.failed(
                codes::MCP_CONNECTION_LOST,
                &format!(
                    "the connection to MCP server `{}` broke while `{}` was running{again}: {}; the call may have run, and it was not repeated (only trusted read-only or idempotent tools are)",
                    self.server.name,
                    self.wire_name,
                    how
                ),
                conn,
            )
            .with_detail("server", self.server.name.clone())
            .with_detail("may_have_run", true)
            .with_detail("replayed", replayed)
            .with_detail("stderr", stderr),
        )
    }

    fn service_error(&self, e: &ServiceError, conn: &Connection) -> ToolOutput {
        if let Some((code, message)) = dropped_answer(e) {
            return ToolOutput::error(self.failed(
                code,
                &format!(
                    "MCP tool `{}` on server `{}`: {message}",
                    self.wire_name, self.server.name
                ),
                conn,
            ));
        }
        match e {
            ServiceError::McpError(data) => ToolOutput::error(
                self.failed(
                    codes::MCP_REQUEST_FAILED,
                    &format!(
                        "MCP server `{}` rejected the call to `{}` (JSON-RPC {}): {}",
                        self.server.name,
                        self.wire_name,
                        data.code.0,
                        one_line(&data.message)
                    ),
                    conn,
                )
                .with_detail("jsonrpc_code", data.code.0),
            ),
            other => ToolOutput::error(self.failed(
                codes::MCP_REQUEST_FAILED,
                &format!(
                    "the call to `{}` on MCP server `{}` failed: {}",
                    self.wire_name,
                    self.server.name,
                    one_line(&other.to_string())
                ),
                conn,
            )),
        }
    }

    /// Checks `structuredContent` against the tool's `outputSchema`, when it has
    /// one: `Err` with the first violations.
    fn check_output(&self, structured: Option<&Value>) -> Result<(), ToolErrorInfo> {
        let Some(validator) = &self.output_schema else {
            return Ok(());
        };
        let Some(value) = structured else {
            return Err(ToolErrorInfo::new(
                codes::MCP_OUTPUT_SCHEMA_MISMATCH,
                format!(
                    "MCP tool `{}` on server `{}` declares an outputSchema but its result has no structuredContent",
                    self.wire_name, self.server.name
                ),
            ));
        };
        let violations: Vec<Value> = validator
            .iter_errors(value)
            .take(MAX_SCHEMA_ERRORS)
            .map(|e| {
                json!({
                    "instance_path": e.instance_path().to_string(),
                    "schema_path": e.schema_path().to_string(),
                    "message": one_line(&e.to_string()),
                })
            })
            .collect();
        if violations.is_empty() {
            return Ok(());
        }
        let first = violations[0]["message"].as_str().unwrap_or("").to_owned();
        let at = violations[0]["instance_path"].as_str().unwrap_or("");
        Err(ToolErrorInfo::new(
            codes::MCP_OUTPUT_SCHEMA_MISMATCH,
            format!(
                "the structuredContent of MCP tool `{}` on server `{}` does not match its outputSchema: at `{}`: {first}",
                self.wire_name,
                self.server.name,
                if at.is_empty() { "/" } else { at }
            ),
        )
        .with_detail("violations", Value::Array(violations)))
    }

    /// Turns the raw `CallToolResult` JSON into a [`ToolOutput`]: content projected,
    /// `structuredContent` checked against the output schema and put in `data`
    /// (whole when small, summarized when large), the raw result saved as an
    /// artifact, the MCP identity (server, wire name, protocol) in `metadata.mcp`.
    fn project(&self, raw: Value, ctx: &ToolExecutionContext, conn: &Connection) -> ToolOutput {
        let mut content = raw
            .get("content")
            .and_then(Value::as_array)
            .map(|items| items.iter().map(project_block).collect::<Vec<_>>())
            .unwrap_or_default();
        let structured = raw.get("structuredContent");
        let is_error = raw.get("isError").and_then(Value::as_bool) == Some(true);
        let has_text = raw
            .get("content")
            .and_then(Value::as_array)
            .is_some_and(|items| {
                items
                    .iter()
                    .any(|i| i.get("type").and_then(Value::as_str) == Some("text"))
            });
        if !has_text && let Some(s) = structured {
            // The spec asks servers to mirror structured output as text; when one does
            // not, the model still needs to see it.
            content.push(ContentBlock::text(s.to_string()));
        }
        let mut result = if is_error {
            let mut r = ToolOutput::error(ToolErrorInfo::new(
                codes::MCP_TOOL_ERROR,
                format!(
                    "MCP tool `{}` on server `{}` reported an error",
                    self.wire_name, self.server.name
                ),
            ));
            r.content = content;
            r
        } else {
            match self.check_output(structured) {
                Ok(()) => ToolOutput::new(content),
                Err(info) => ToolOutput::error(info),
            }
        };
        let mut mcp = Map::new();
        mcp.insert("server".into(), json!(self.server.name));
        mcp.insert("tool".into(), json!(self.wire_name));
        mcp.insert("protocol".into(), json!(conn.protocol));
        let preview: String = result
            .model_content()
            .chars()
            .take(ARTIFACT_PREVIEW_CHARS)
            .collect();
        let store = ToolArtifactStore::for_session(ctx.workspace(), &ctx.session_id);
        let mut raw_path = None;
        match store.persist_json(&artifact_id(&ctx.call_id), &raw, &preview) {
            Ok(artifact) => {
                let path = artifact.path.to_string_lossy().into_owned();
                // Also under metadata: the executor's `persist_if_large` may replace
                // `artifact` with the saved text body of a long result.
                mcp.insert("raw_result_path".into(), json!(path));
                raw_path = Some(path);
                result.artifact = Some(Box::new(artifact));
            }
            Err(e) => {
                tracing::warn!(server = %self.server.name, tool = %self.wire_name, error = %e, "saving the raw MCP result failed");
                mcp.insert("raw_result_error".into(), json!(e.to_info().message));
            }
        }
        if let Some(s) = structured {
            let bytes = json_size(s);
            if bytes <= MAX_INLINE_STRUCTURED_BYTES || raw_path.is_none() {
                // Unsaved, the value has no other home: it stays whole.
                result.data.insert("structured_content".into(), s.clone());
            } else {
                result.data.insert(
                    "structured_content_summary".into(),
                    summarize(s, bytes, raw_path.as_deref().unwrap_or_default()),
                );
            }
        }
        result.metadata.insert("mcp".into(), Value::Object(mcp));
        result
    }
}

/// The length of `value` as compact JSON, counted without building the text.
fn json_size(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a writer that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// A bounded description of a large `structuredContent`: its size, its shape, the
/// start of its JSON text, and the artifact that keeps it whole.
fn summarize(value: &Value, bytes: usize, raw_result_path: &str) -> Value {
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let mut summary = Map::new();
    summary.insert("type".into(), json!(kind));
    summary.insert("bytes".into(), json!(bytes));
    match value {
        Value::Object(map) => {
            let keys: Vec<&String> = map.keys().take(SUMMARY_MAX_KEYS).collect();
            summary.insert("keys".into(), json!(keys));
            summary.insert("key_count".into(), json!(map.len()));
        }
        Value::Array(items) => {
            summary.insert("length".into(), json!(items.len()));
        }
        _ => {}
    }
    let mut preview = JsonPrefix::new(SUMMARY_PREVIEW_CHARS);
    let _ = serde_json::to_writer(&mut preview, value);
    summary.insert("preview".into(), json!(preview.finish()));
    summary.insert("raw_result_path".into(), json!(raw_result_path));
    Value::Object(summary)
}

/// A writer that keeps the first `limit` characters of what is written and then
/// refuses more, so serializing a huge value for a preview stops early.
struct JsonPrefix {
    bytes: Vec<u8>,
    limit: usize,
}

impl JsonPrefix {
    fn new(limit: usize) -> Self {
        Self {
            bytes: Vec::new(),
            limit,
        }
    }

    fn finish(self) -> String {
        let text = String::from_utf8_lossy(&self.bytes);
        let mut out: String = text.chars().take(self.limit).collect();
        out.push('…');
        out
    }
}

impl std::io::Write for JsonPrefix {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // Four bytes per character at most: past that the prefix is complete.
        if self.bytes.len() >= self.limit * 4 {
            return Err(std::io::Error::other("preview complete"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Tool for McpTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// Checks the arguments' shape (an object, or nothing); the server's own schema
    /// was already checked by the executor.
    fn validate_input(&self, raw: Value) -> Result<ToolInput, ToolErrorInfo> {
        match &raw {
            Value::Object(_) | Value::Null => Ok(ToolInput::new(raw)),
            other => Err(not_an_object(other)),
        }
    }

    fn run<'a>(
        &'a self,
        input: ToolInput,
        ctx: &'a ToolExecutionContext,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(self.call(input, ctx))
    }

    fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The call enforces the idle timeout and the cap itself (progress restarts
    /// the idle timer, which the executor cannot see).
    fn timeout_owner(&self) -> ToolTimeoutOwner {
        ToolTimeoutOwner::Tool
    }
}

/// The `arguments` of a `tools/call` request: a JSON object, or none for `null`.
fn arguments(raw: Value) -> Result<Option<Map<String, Value>>, ToolErrorInfo> {
    match raw {
        Value::Object(map) => Ok(Some(map)),
        Value::Null => Ok(None),
        other => Err(not_an_object(&other)),
    }
}

fn not_an_object(value: &Value) -> ToolErrorInfo {
    ToolErrorInfo::new(
        core_codes::INVALID_INPUT,
        format!("MCP tool arguments must be a JSON object, got {value}"),
    )
}

/// One MCP content item as a model content block.
fn project_block(item: &Value) -> ContentBlock {
    let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
    let str_of = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or("");
    match kind {
        "text" => ContentBlock::text(str_of("text")),
        "image" => {
            let mime = str_of("mimeType");
            if SUPPORTED_IMAGE_TYPES.contains(&mime) {
                ContentBlock::image(mime, str_of("data"))
            } else {
                ContentBlock::text(format!(
                    "[image omitted: type {mime} is not supported; the raw result keeps it]"
                ))
            }
        }
        "audio" => ContentBlock::text(format!(
            "[audio omitted: {}; the raw result keeps it]",
            str_of("mimeType")
        )),
        "resource" => {
            let resource = item.get("resource").cloned().unwrap_or(Value::Null);
            let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
            match resource.get("text").and_then(Value::as_str) {
                Some(text) => ContentBlock::text(text),
                None => ContentBlock::text(format!(
                    "[binary resource {uri} omitted; the raw result keeps it]"
                )),
            }
        }
        "resource_link" => {
            let name = str_of("name");
            let uri = str_of("uri");
            ContentBlock::text(format!("[resource link: {name} {uri}]").replace("  ", " "))
        }
        other => ContentBlock::text(format!(
            "[content of type `{other}` omitted; the raw result keeps it]"
        )),
    }
}

/// A file-name-safe artifact id: the call id, or a process-unique one when the call
/// has none (a direct `Tool::run` outside the executor).
fn artifact_id(call_id: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = if call_id.is_empty() {
        format!(
            "mcp-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        )
    } else {
        call_id.to_owned()
    };
    let safe: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}.mcp")
}

fn one_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("").trim();
    if line.chars().count() > 300 {
        let mut cut: String = line.chars().take(300).collect();
        cut.push('…');
        cut
    } else {
        line.to_owned()
    }
}
