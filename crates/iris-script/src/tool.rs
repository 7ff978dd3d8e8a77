//! [`RunToolScriptTool`]: `run_tool_script {code, timeout_seconds = null}`.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use iris_command::{CommandBinding, CommandChannel, CommandOutcome, CommandRequest, CommandScope};
use iris_executor::ToolExecutor;
use iris_tools_core::{
    Approval, ApprovalGrant, BoxFuture, CancellationSignal, ContentBlock, Tool, ToolCapability,
    ToolDefinition, ToolErrorInfo, ToolExecutionContext, ToolInput, ToolOutput, ToolTimeoutOwner,
    codes as core,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{Notify, Semaphore};
use tracing::Instrument as _;

use crate::callable::ScriptCallable;
use crate::host::{CallRecord, Grant, PendingApproval, Session, SocketPath, random_hex};
use crate::{MAX_CONCURRENT_CALLS, RUN_TOOL_SCRIPT, codes, module};

const DESCRIPTION: &str = "Run Python that calls tools via `import iris_tools`; returns only what it prints.\n\
Use for many calls whose results you need not read; else call tools directly.\n\
Failed calls raise iris_tools.ToolError.";

/// The executor a script's inner calls run through, attached to the outer call's
/// context by the host ([`ScriptHost::attach`]).
///
/// The tool cannot hold the executor itself: the executor holds the registry that
/// holds the tool. The host that runs calls knows its executor, so it puts a handle
/// on the context it runs them with (the run loop does it for every turn; `iris call`
/// for its one call).
///
/// ```
/// use iris_executor::ToolExecutor;
/// use iris_script::ScriptHost;
/// use iris_tools_core::{ToolExecutionContext, ToolRegistry};
/// let executor = ToolExecutor::new(ToolRegistry::new());
/// let ctx = ScriptHost::attach(ToolExecutionContext::new("."), &executor);
/// assert!(ScriptHost::of(&ctx).is_some());
/// ```
#[derive(Debug, Clone)]
pub struct ScriptHost {
    executor: ToolExecutor,
}

impl ScriptHost {
    /// The context with `executor` as the one inner calls run through.
    #[must_use]
    pub fn attach(mut ctx: ToolExecutionContext, executor: &ToolExecutor) -> ToolExecutionContext {
        ctx.extensions.insert(ScriptHost {
            executor: executor.clone(),
        });
        ctx
    }

    /// The executor attached to a context, if any.
    pub fn of(ctx: &ToolExecutionContext) -> Option<&ToolExecutor> {
        ctx.extensions.get::<ScriptHost>().map(|h| &h.executor)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    code: String,
    #[serde(default)]
    timeout_seconds: Option<f64>,
}

fn parse(raw: &Value) -> Result<Input, ToolErrorInfo> {
    let input = Input::deserialize(raw)
        .map_err(|e| ToolErrorInfo::new(core::INVALID_INPUT, e.to_string()))?;
    if input.code.trim().is_empty() {
        return Err(ToolErrorInfo::new(
            core::INVALID_INPUT,
            "`code` must not be empty",
        ));
    }
    if let Some(t) = input.timeout_seconds
        && !(t.is_finite() && t > 0.0)
    {
        return Err(ToolErrorInfo::new(
            core::INVALID_INPUT,
            format!("`timeout_seconds` must be a positive number, got {t}"),
        ));
    }
    Ok(input)
}

/// The definition of `run_tool_script` (YAML key `exec.tool_script`, group `core`,
/// capability `execute`).
pub fn run_tool_script_definition() -> ToolDefinition {
    ToolDefinition::new(
        RUN_TOOL_SCRIPT,
        DESCRIPTION,
        json!({
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Complete Python 3 program; `import iris_tools` and print what you need, e.g. `import iris_tools\\nprint(iris_tools.list_files().text)`."
                },
                "timeout_seconds": {
                    "type": ["number", "null"],
                    "exclusiveMinimum": 0,
                    "default": null,
                    "description": "Deadline for the whole program and its tool calls in seconds, e.g. 60; the configured timeout still caps it."
                }
            },
            "required": ["code"],
            "additionalProperties": false
        }),
    )
    .with_capabilities([ToolCapability::Execute])
    .with_group("core")
    .with_script_callable(false)
}

/// `run_tool_script {code, timeout_seconds = null}`: runs a complete Python program
/// through the command service (native or Docker, the limits and confinement of
/// `run_python`) with the generated `iris_tools` module, and runs every tool call the
/// program makes through the executor attached with [`ScriptHost`] (see the
/// [crate docs](crate)).
#[derive(Debug, Clone)]
pub struct RunToolScriptTool {
    binding: CommandBinding,
    callable: ScriptCallable,
    definition: ToolDefinition,
}

impl RunToolScriptTool {
    /// The tool, running programs through `binding`, letting them call the tools
    /// `callable` admits.
    pub fn new(binding: CommandBinding, callable: ScriptCallable) -> Self {
        Self {
            binding,
            callable,
            definition: run_tool_script_definition(),
        }
    }

    async fn run_script(&self, input: Input, ctx: &ToolExecutionContext) -> ToolOutput {
        let Some(executor) = ScriptHost::of(ctx).cloned() else {
            return ToolOutput::error(ToolErrorInfo::new(
                codes::SCRIPT_HOST_MISSING,
                "no executor is attached to this call's context (ScriptHost::attach)",
            ));
        };
        let tools = self.callable.callable_tools(executor.registry(), ctx);
        let socket = match SocketPath::new(self.binding.workspace_root()) {
            Ok(s) => s,
            Err(info) => return ToolOutput::error(info),
        };
        #[cfg(unix)]
        let listener = match tokio::net::UnixListener::bind(socket.path()) {
            Ok(l) => l,
            Err(e) => {
                return ToolOutput::error(ToolErrorInfo::new(
                    codes::SCRIPT_CHANNEL_UNAVAILABLE,
                    format!("cannot open the script channel: {e}"),
                ));
            }
        };
        #[cfg(not(unix))]
        {
            let _ = (&executor, &tools, &socket);
            return ToolOutput::error(ToolErrorInfo::new(
                codes::SCRIPT_CHANNEL_UNAVAILABLE,
                "run_tool_script needs Unix domain sockets",
            ));
        }
        #[cfg(unix)]
        self.serve(executor, tools, socket, listener, input, ctx)
            .await
    }

    #[cfg(unix)]
    async fn serve(
        &self,
        executor: ToolExecutor,
        tools: Vec<ToolDefinition>,
        socket: SocketPath,
        listener: tokio::net::UnixListener,
        input: Input,
        ctx: &ToolExecutionContext,
    ) -> ToolOutput {
        let token = random_hex();
        let source = module::module_source(&tools, &socket.path().to_string_lossy(), &token);
        let program = module::program(&source, &input.code);

        // The script's deadline: min(call, runtime, configured root); it bounds every
        // inner call too.
        let timeout = [
            input.timeout_seconds,
            ctx.tool_timeout
                .filter(|t| !t.is_zero())
                .map(|t| t.as_secs_f64()),
            Some(self.binding.timeout_seconds()),
        ]
        .into_iter()
        .flatten()
        .fold(f64::INFINITY, f64::min);
        let started = tokio::time::Instant::now();
        let deadline = started + Duration::try_from_secs_f64(timeout).unwrap_or(Duration::MAX / 4);

        let script_cancel = CancellationSignal::new();
        let inner_cancel = CancellationSignal::new();
        let mut inner_ctx = ctx.clone();
        inner_ctx.parent_call_id = Some(ctx.call_id.clone());
        inner_ctx.cancellation = Some(inner_cancel.clone());
        let grants = granted_inner_calls(ctx)
            .into_iter()
            .map(|(tool, arguments)| Grant {
                tool,
                arguments,
                used: false,
            })
            .collect();
        let session = Arc::new(Session {
            executor,
            callable: tools
                .iter()
                .map(|d| d.name.clone())
                .collect::<BTreeSet<_>>(),
            ctx: inner_ctx,
            parent_id: ctx.call_id.clone(),
            deadline,
            token,
            next: AtomicUsize::new(0),
            grants: Mutex::new(grants),
            log: Mutex::new(Vec::new()),
            approval: Mutex::new(None),
            approval_needed: Notify::new(),
        });

        // The program (with the token) travels on stdin, not in argv: other processes
        // can read a process's command line, and argv is capped at 128 KiB.
        let mut request = CommandRequest::python(
            ctx.call_id.clone(),
            module::BOOTSTRAP,
            ctx.workspace_root.clone(),
        )
        .stdin(program.into_bytes())
        .channel(CommandChannel {
            path: socket.path().to_path_buf(),
            count: MAX_CONCURRENT_CALLS,
            env: module::CHANNEL_FDS_ENV.to_owned(),
        });
        request.timeout_seconds = Some(timeout).filter(|t| t.is_finite());
        request.cancellation = Some(script_cancel.clone());
        let scope = CommandScope::new(ctx.run_id.clone(), ctx.session_id.clone());
        let exec = self.binding.execute(&scope, request);
        tokio::pin!(exec);
        let parent_cancel = ctx.cancellation.clone();
        let parent_cancelled = async {
            match &parent_cancel {
                Some(signal) => signal.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(parent_cancelled);
        let mut tasks = tokio::task::JoinSet::new();
        let mut stopping = false;
        // A connection is accepted only with a permit, held until it is served: at most
        // MAX_CONCURRENT_CALLS request buffers at once; the others wait in the listen
        // backlog (or in the program's `connect`) until a permit is free.
        let permits = Arc::new(Semaphore::new(MAX_CONCURRENT_CALLS));
        let outcome = loop {
            tokio::select! {
                outcome = &mut exec => break outcome,
                (permit, accepted) = async {
                    // Both futures are cancel-safe: a lost race drops the permit, and a
                    // connection not yet accepted stays in the backlog.
                    let permit = Arc::clone(&permits).acquire_owned().await;
                    (permit, listener.accept().await)
                } => {
                    if let (Ok(permit), Ok((stream, _))) = (permit, accepted) {
                        let session = Arc::clone(&session);
                        // Each inner call's `execute_tool` span is a child of this call's.
                        tasks.spawn(
                            async move {
                                session.serve(stream).await;
                                drop(permit);
                            }
                            .in_current_span(),
                        );
                    }
                }
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                () = session.approval_needed.notified(), if !stopping => {
                    // An inner call waits for a human: stop the program; the call is
                    // answered as waiting below.
                    stopping = true;
                    script_cancel.cancel();
                }
                () = &mut parent_cancelled, if !stopping => {
                    stopping = true;
                    script_cancel.cancel();
                    inner_cancel.cancel();
                }
            }
        };
        // Inner calls still running when the program ended are cancelled, and waited
        // for, so nothing they started outlives this call.
        inner_cancel.cancel();
        tasks.shutdown().await;
        drop(listener);
        drop(socket);

        let log = session
            .log
            .lock()
            .map(|l| l.clone())
            .unwrap_or_else(|p| p.into_inner().clone());
        let calls = calls_data(&log);
        let pending = session
            .approval
            .lock()
            .map(|p| p.clone())
            .unwrap_or_else(|p| p.into_inner().clone());
        if let Some(pending) = pending {
            return approval_output(&input.code, ctx, &pending, &log).with_data("calls", calls);
        }
        match outcome {
            Ok(outcome) => script_output(&outcome).with_data("calls", calls),
            Err(e) => ToolOutput::error(e.to_info()).with_data("calls", calls),
        }
    }
}

/// The inner calls a human approved for this call: the `inner_calls` of the grant
/// the host attached for the approved re-run.
fn granted_inner_calls(ctx: &ToolExecutionContext) -> Vec<(String, Value)> {
    let Some(grant) = ApprovalGrant::of(ctx) else {
        return Vec::new();
    };
    grant
        .arguments
        .get("inner_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .filter_map(|c| {
                    Some((
                        c.get("tool")?.as_str()?.to_owned(),
                        c.get("arguments")?.clone(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `data.calls`: how many inner calls, their tools in start order, their errors.
fn calls_data(log: &[CallRecord]) -> Value {
    let names: Vec<&str> = log.iter().map(|r| r.tool.as_str()).collect();
    let errors: Vec<Value> = log
        .iter()
        .filter_map(|r| match &r.outcome {
            Some(Some(code)) => Some(json!({"call_id": r.call_id, "tool": r.tool, "code": code})),
            None => Some(json!({"call_id": r.call_id, "tool": r.tool, "code": core::CANCELLED})),
            Some(None) => None,
        })
        .collect();
    json!({"count": log.len(), "names": names, "errors": errors})
}

/// The answer when an inner call waits for a human: the outer call waits for an
/// approval naming the inner call (the run loop asks; a standalone executor returns
/// `APPROVAL_REQUIRED`). The approved re-run runs the program again from the start,
/// so it is refused when an earlier inner call may have had a side effect that the
/// re-run would repeat.
fn approval_output(
    code: &str,
    ctx: &ToolExecutionContext,
    pending: &PendingApproval,
    log: &[CallRecord],
) -> ToolOutput {
    let unsafe_calls: Vec<&CallRecord> = log
        .iter()
        .filter(|r| r.call_id != pending.call_id && r.may_have_side_effect())
        .collect();
    if !unsafe_calls.is_empty() {
        let names: Vec<String> = unsafe_calls
            .iter()
            .map(|r| format!("`{}` ({})", r.tool, r.call_id))
            .collect();
        return ToolOutput::error(
            ToolErrorInfo::new(
                codes::SCRIPT_NOT_REPLAYABLE,
                format!(
                    "inner call `{}` ({}) needs approval, but an approved script runs again from the start and {} already ran with side effects; call `{}` directly, or put it before any side-effecting call",
                    pending.tool,
                    pending.call_id,
                    names.join(", "),
                    pending.tool
                ),
            )
            .with_detail("inner_call_id", pending.call_id.as_str())
            .with_detail("inner_tool", pending.tool.as_str()),
        );
    }
    let mut inner_calls: Vec<Value> = granted_inner_calls(ctx)
        .into_iter()
        .map(|(tool, arguments)| json!({"tool": tool, "arguments": arguments}))
        .collect();
    inner_calls.push(json!({"tool": pending.tool, "arguments": pending.arguments}));
    let reason = format!(
        "{RUN_TOOL_SCRIPT}: inner call `{}` ({}) needs approval: {}",
        pending.tool, pending.call_id, pending.reason
    );
    ToolOutput::awaiting_approval(Approval::new(
        reason,
        json!({"code": code, "inner_calls": inner_calls}),
    ))
    .with_data("inner_call_id", pending.call_id.as_str())
    .with_data("inner_tool", pending.tool.as_str())
}

/// What the model reads: what the program printed on stdout; stderr is added only
/// when the program failed (a traceback is what the model needs to fix it).
fn script_output(outcome: &CommandOutcome) -> ToolOutput {
    let mut output = match outcome.error_info() {
        Some(error) => ToolOutput::error(error),
        None => ToolOutput::default(),
    };
    let mut text = outcome.stdout.clone();
    if !outcome.success() && !outcome.stderr.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("[stderr]\n");
        text.push_str(&outcome.stderr);
    }
    if text.is_empty() {
        text.push_str("(no output)");
    }
    output.content = vec![ContentBlock::text(text)];
    let data = json!({
        "mode": outcome.mode.as_str(),
        "status": outcome.status.as_str(),
        "exit_code": outcome.exit_code,
        "duration_seconds": outcome.duration_seconds,
        "output_truncated": outcome.output_truncated,
        "output_stats": outcome.output_stats,
    });
    if let Value::Object(map) = data {
        output.data = map;
    }
    output
}

impl Tool for RunToolScriptTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn run<'a>(
        &'a self,
        mut input: ToolInput,
        ctx: &'a ToolExecutionContext,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let input = match input.take_parsed::<Input>() {
                Some(parsed) => parsed,
                None => match parse(input.value()) {
                    Ok(parsed) => parsed,
                    Err(e) => return ToolOutput::error(e),
                },
            };
            self.run_script(input, ctx).await
        })
    }

    fn validate_input(&self, raw: Value) -> Result<ToolInput, ToolErrorInfo> {
        let parsed = parse(&raw)?;
        Ok(ToolInput::with_parsed(raw, parsed))
    }

    fn is_concurrency_safe(&self) -> bool {
        false
    }

    fn timeout_owner(&self) -> ToolTimeoutOwner {
        ToolTimeoutOwner::Tool
    }
}
