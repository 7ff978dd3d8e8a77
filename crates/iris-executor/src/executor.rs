//! [`ToolExecutor`]: the one path every tool call travels.

use std::future::Future as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Duration;

use serde_json::Value;
use tracing::Instrument;

use iris_tools_core::{
    Approval, BoxFuture, InputRewrite, Tool, ToolDefinition, ToolErrorInfo, ToolExecutionContext,
    ToolInput, ToolOutput, ToolRegistry, ToolResult, ToolTimeoutOwner, ToolUse, codes,
};

use crate::artifact::ToolArtifactStore;
use crate::breaker::CircuitBreaker;
use crate::deadline::{self, DEFAULT_HEARTBEAT_INTERVAL, Deadline, TOOL_OWNED_DEADLINE_GRACE};
use crate::hooks::{BeforeOutcome, BodyStatus, HookChanges, ToolHookDispatcher};
use crate::middleware::{Endpoint, Next, ToolMiddleware, ToolRequest};
use crate::panic::{CatchUnwind, PanicPayload, catch_sync, panic_message};
use crate::permission::{PermissionEffect, PermissionPolicy};
use crate::plan::ToolBatchPlan;
use crate::validation::SchemaCache;
use iris_fs::blocking::run_blocking_io;

/// The `tracing` target of every span and event the executor emits.
pub const TRACING_TARGET: &str = "iris::executor";

/// Executes tool calls: one at a time ([`ToolExecutor::execute_one`]) or a model step's
/// list in parallel windows ([`ToolExecutor::execute_many`]).
///
/// # The path of one call
///
/// Every tool — a `#[tool]` fn, a built-in, an MCP tool — travels the same stages in
/// this fixed order:
///
/// 1. **lookup** by name or alias (`TOOL_NOT_FOUND`);
/// 2. **layers** ([`ToolExecutor::with_layer`]): crate-contributed middleware that sees
///    the raw arguments and the final output (discovery's disclosure layer, the
///    strict-null layer of iris-providers);
/// 3. **cancellation** already requested (`CANCELLED`);
/// 4. **validation**, once: JSON Schema 2020-12, then the tool's own
///    [`Tool::validate_input`], whose parse the body receives (`INVALID_INPUT`);
/// 5. **deadline**: min(runtime cap, tool timeout, context timeout), or the 60 s
///    default;
/// 6. **permission** with the current identity (`PERMISSION_DENIED`, or an
///    [`Approval`] output the runner turns into a WAITING run);
/// 7. **circuit breaker** (`CIRCUIT_OPEN`);
/// 8. **`tool.before` hooks** (`HOOK_DENIED`); arguments a hook rewrote are
///    validated (`HOOK_INPUT_INVALID`) and permission-checked again, and a hook's
///    `ask` turns the call into an [`Approval`] output like the policy's;
/// 9. **middleware** ([`ToolExecutor::with_middleware`]), first added outermost;
///    arguments rewritten here go through validation and permission again;
/// 10. **body** under the deadline, racing cancellation, with heartbeats and panic
///     isolation (`TOOL_TIMEOUT`, `CANCELLED`, `TOOL_PANICKED`);
/// 11. **`tool.after` hooks**, only when the body ran;
/// 12. **artifacts**: a long body is saved off the async path and replaced by a
///     preview (`persist_if_large`);
/// 13. **identity**: the output becomes a [`ToolResult`] bound to the call id and the
///     canonical name, once.
///
/// Any short-circuit (unknown tool, invalid input, deny, approval required, circuit
/// open, hook deny, middleware short-circuit) skips the body and the after-hooks.
///
/// Cheap to clone (one `Arc` inside), `Send + Sync`. The executor never prompts a human
/// and never crashes: every failure is a [`ToolResult`] with a stable code. It needs a
/// tokio runtime (any flavour) with the time driver enabled.
///
/// ```
/// use iris_executor::ToolExecutor;
/// use iris_tools_core::{FnTool, ToolCapability, ToolDefinition, ToolExecutionContext, ToolOutput, ToolRegistry, ToolUse};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let registry = ToolRegistry::new();
/// let def = ToolDefinition::new(
///     "read_config",
///     "Read one key from the application config.",
///     json!({"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}),
/// )
/// .with_capabilities([ToolCapability::Read])
/// .with_aliases(["config"]);
/// registry
///     .register(FnTool::new(def, |input, _ctx| async move {
///         ToolOutput::text(format!("{} = INFO", input["key"].as_str().unwrap_or("?")))
///     }))
///     .unwrap();
///
/// let executor = ToolExecutor::new(registry);
/// let ctx = ToolExecutionContext::new(".").session_id("s-1");
///
/// let ok = executor
///     .execute_one(&ToolUse::new("call_1", "config", json!({"key": "log.level"})), &ctx, None)
///     .await;
/// assert_eq!(ok.model_content(), "log.level = INFO");
/// assert_eq!((ok.tool_use_id.as_str(), ok.tool_name.as_str()), ("call_1", "read_config"));
///
/// let bad = executor
///     .execute_one(&ToolUse::new("call_2", "read_config", json!({})), &ctx, None)
///     .await;
/// assert_eq!(bad.error_code(), Some("INVALID_INPUT"));
/// # }
/// ```
#[derive(Clone)]
pub struct ToolExecutor {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    registry: ToolRegistry,
    permission: Option<Arc<dyn PermissionPolicy>>,
    layers: Vec<Arc<dyn ToolMiddleware>>,
    middleware: Vec<Arc<dyn ToolMiddleware>>,
    breaker: Option<Arc<CircuitBreaker>>,
    hooks: Option<Arc<dyn ToolHookDispatcher>>,
    runtime_timeout: Option<Duration>,
    heartbeat: Duration,
    /// Shared by clones: compiled validators depend only on the tools.
    schemas: Arc<SchemaCache>,
}

impl std::fmt::Debug for ToolExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = &*self.inner;
        f.debug_struct("ToolExecutor")
            .field("registry", &inner.registry)
            .field("permission_policy", &inner.permission.is_some())
            .field("layers", &inner.layers.len())
            .field("middleware", &inner.middleware.len())
            .field("circuit_breaker", &inner.breaker)
            .field("hook_dispatcher", &inner.hooks.is_some())
            .field("runtime_timeout", &inner.runtime_timeout)
            .field("heartbeat_interval", &inner.heartbeat)
            .finish_non_exhaustive()
    }
}

impl ToolExecutor {
    /// An executor over a registry, with no permission policy (every call is
    /// allowed), no layers or middleware, no circuit breaker, no hooks, the 60 s
    /// default deadline and a 30 s heartbeat.
    pub fn new(registry: ToolRegistry) -> Self {
        Self {
            inner: Arc::new(Inner {
                registry,
                permission: None,
                layers: Vec::new(),
                middleware: Vec::new(),
                breaker: None,
                hooks: None,
                runtime_timeout: None,
                heartbeat: DEFAULT_HEARTBEAT_INTERVAL,
                schemas: Arc::default(),
            }),
        }
    }

    fn with(mut self, change: impl FnOnce(&mut Inner)) -> Self {
        change(Arc::make_mut(&mut self.inner));
        self
    }

    /// Sets the permission policy consulted before every body.
    #[must_use]
    pub fn with_permission_policy(self, policy: impl PermissionPolicy + 'static) -> Self {
        self.with(|i| i.permission = Some(Arc::new(policy)))
    }

    /// Appends a middleware to the middleware slot: after the `tool.before` hooks, around
    /// the body. The first one added is the outermost.
    #[must_use]
    pub fn with_middleware(self, middleware: impl ToolMiddleware + 'static) -> Self {
        self.with(|i| i.middleware.push(Arc::new(middleware)))
    }

    /// Appends a layer to the outer slot: after the lookup, around validation and
    /// everything after it, so it sees the raw arguments and the final output. The
    /// first one added is the outermost. Crates contribute their stages here (the
    /// discovery layer, the strict-null layer).
    #[must_use]
    pub fn with_layer(self, layer: impl ToolMiddleware + 'static) -> Self {
        self.with(|i| i.layers.push(Arc::new(layer)))
    }

    /// Sets the circuit breaker (none by default).
    #[must_use]
    pub fn with_circuit_breaker(self, breaker: CircuitBreaker) -> Self {
        self.with(|i| i.breaker = Some(Arc::new(breaker)))
    }

    /// Sets the hook dispatcher that runs `tool.before` and `tool.after` hooks.
    #[must_use]
    pub fn with_hook_dispatcher(self, dispatcher: impl ToolHookDispatcher + 'static) -> Self {
        self.with(|i| i.hooks = Some(Arc::new(dispatcher)))
    }

    /// Sets the runtime cap on every call's deadline.
    ///
    /// Without it, the 60 s default applies only to calls for which neither the
    /// tool nor the context sets a deadline (a tool's `timeout` overrides the default).
    /// With it, the cap takes part in the minimum for every call. See
    /// [`Deadline::resolve`].
    #[must_use]
    pub fn with_default_timeout(self, timeout: Duration) -> Self {
        self.with(|i| i.runtime_timeout = Some(timeout))
    }

    /// Sets how often a running body emits a heartbeat event (default 30 s). A zero
    /// interval turns heartbeats off.
    #[must_use]
    pub fn with_heartbeat_interval(self, interval: Duration) -> Self {
        self.with(|i| i.heartbeat = interval)
    }

    /// The registry calls are resolved in.
    pub fn registry(&self) -> &ToolRegistry {
        &self.inner.registry
    }

    /// The circuit breaker, when one is set.
    pub fn circuit_breaker(&self) -> Option<&CircuitBreaker> {
        self.inner.breaker.as_deref()
    }

    /// The deadline a call of `tool` would get under `ctx` (see [`Deadline::resolve`]).
    pub fn effective_deadline(
        &self,
        tool: &dyn Tool,
        ctx: &ToolExecutionContext,
    ) -> Result<Deadline, ToolErrorInfo> {
        Deadline::resolve(
            self.inner.runtime_timeout,
            tool.definition().timeout,
            ctx.tool_timeout,
        )
    }

    /// Cuts a model step's calls into parallel windows and barriers.
    ///
    /// A call may join a parallel window when its tool is read-only and
    /// concurrency-safe; adjacent such calls form one window. Every other call —
    /// including a call to an unknown tool — is a barrier of its own. The context is
    /// accepted for parity with the Python reference's
    /// `prepare_many(tool_uses, context)`; today the plan depends only on the tools.
    pub fn prepare_many(
        &self,
        tool_uses: &[ToolUse],
        _ctx: &ToolExecutionContext,
    ) -> ToolBatchPlan {
        ToolBatchPlan::from_flags(tool_uses.iter().map(|call| {
            self.inner.registry.get(&call.name).is_ok_and(|tool| {
                // A panicking flag method is user code failing; such a call is safest
                // as a barrier.
                catch_sync(|| tool.is_read_only() && tool.is_concurrency_safe()).unwrap_or(false)
            })
        }))
    }

    /// Runs a model step's calls and returns their results in call order.
    ///
    /// Parallel windows (see [`ToolExecutor::prepare_many`]) run their calls as
    /// concurrent tokio tasks; barriers run alone, in order, after everything before
    /// them finished. "Read, write, read" therefore never reorders. Calls made here
    /// carry no approval: a call that needs one returns `APPROVAL_REQUIRED`.
    pub async fn execute_many(
        &self,
        tool_uses: &[ToolUse],
        ctx: &ToolExecutionContext,
    ) -> Vec<ToolResult> {
        let plan = self.prepare_many(tool_uses, ctx);
        let mut results = Vec::with_capacity(tool_uses.len());
        let mut shared_ctx: Option<Arc<ToolExecutionContext>> = None;
        for batch in plan.batches() {
            if batch.is_parallel() && batch.len() > 1 {
                let ctx = shared_ctx.get_or_insert_with(|| Arc::new(ctx.clone()));
                let calls = &tool_uses[batch.indices()];
                results.extend(self.execute_window(calls, ctx).await);
            } else {
                for call in &tool_uses[batch.indices()] {
                    results.push(self.execute_one(call, ctx, None).await);
                }
            }
        }
        results
    }

    /// Runs one parallel window as tokio tasks, results in call order. Dropping the
    /// returned future aborts every task of the window (the `JoinSet` owns them).
    async fn execute_window(
        &self,
        calls: &[ToolUse],
        ctx: &Arc<ToolExecutionContext>,
    ) -> Vec<ToolResult> {
        let mut set = tokio::task::JoinSet::new();
        let mut index_of = std::collections::HashMap::with_capacity(calls.len());
        for (index, call) in calls.iter().enumerate() {
            let executor = self.clone();
            let call = call.clone();
            let ctx = Arc::clone(ctx);
            let task = async move { executor.execute_one(&call, &ctx, None).await };
            let handle = set.spawn(task.in_current_span());
            index_of.insert(handle.id(), index);
        }
        let mut slots: Vec<Option<ToolResult>> = vec![None; calls.len()];
        while let Some(joined) = set.join_next_with_id().await {
            match joined {
                Ok((id, result)) => {
                    if let Some(&index) = index_of.get(&id) {
                        slots[index] = Some(result);
                    }
                }
                // `execute_one` isolates panics itself, so a join error means the task
                // was aborted (runtime shutdown) or something escaped the isolation.
                Err(err) => {
                    let info = if err.is_panic() {
                        ToolErrorInfo::new(codes::TOOL_PANICKED, "the call's task panicked")
                    } else {
                        ToolErrorInfo::new(codes::CANCELLED, "the call's task was aborted")
                    };
                    if let Some(&index) = index_of.get(&err.id()) {
                        slots[index] =
                            Some(self.bind_to_call(ToolOutput::error(info), &calls[index]));
                    }
                }
            }
        }
        slots
            .into_iter()
            .zip(calls)
            .map(|(slot, call)| {
                slot.unwrap_or_else(|| {
                    let info = ToolErrorInfo::new(codes::CANCELLED, "the call never reported");
                    self.bind_to_call(ToolOutput::error(info), call)
                })
            })
            .collect()
    }

    /// Binds an output the call's own path did not produce: canonical name when the
    /// tool is known, the requested name otherwise.
    fn bind_to_call(&self, output: ToolOutput, call: &ToolUse) -> ToolResult {
        match self.inner.registry.get(&call.name) {
            Ok(tool) => output.into_result(&call.id, &tool.definition().name),
            Err(_) => output.into_result(&call.id, &call.name),
        }
    }

    /// Runs one call along the full path (see [`ToolExecutor`]) and returns its result,
    /// bound to `tool_use.id` and the tool's canonical name.
    ///
    /// `approved_tool_call_id`: when it equals `tool_use.id`, a `RequireHuman` decision
    /// counts as approved and the result has [`ToolResult::approved`] set. Permission
    /// is still checked again with the current policy and identity, so a policy that
    /// now denies still denies.
    pub async fn execute_one(
        &self,
        tool_use: &ToolUse,
        ctx: &ToolExecutionContext,
        approved_tool_call_id: Option<&str>,
    ) -> ToolResult {
        let tool = match self.inner.registry.get(&tool_use.name) {
            Ok(tool) => tool,
            Err(_) => {
                let span = call_span(&tool_use.name, &tool_use.id);
                let output = ToolOutput::error(
                    ToolErrorInfo::new(
                        codes::TOOL_NOT_FOUND,
                        format!("no tool is named `{}`", tool_use.name),
                    )
                    .with_detail("tool_name", tool_use.name.as_str()),
                );
                record_outcome(&span, &output);
                return output.into_result(&tool_use.id, &tool_use.name);
            }
        };
        let def = tool.definition();
        let span = call_span(&def.name, &tool_use.id);
        let approval = CallApproval {
            granted: approved_tool_call_id == Some(tool_use.id.as_str()),
            used: AtomicBool::new(false),
        };
        let mut call_ctx = ctx.clone();
        tool_use.id.clone_into(&mut call_ctx.call_id);
        def.name.clone_into(&mut call_ctx.tool_name);
        let req = ToolRequest::new(
            Arc::clone(&tool),
            ToolInput::new(tool_use.input.clone()),
            call_ctx,
        );
        let output = if self.inner.layers.is_empty() {
            self.checked(req, &approval).instrument(span.clone()).await
        } else {
            self.run_layers(req, &approval)
                .instrument(span.clone())
                .await
        };
        let output = if model_chars_upper_bound(&output) <= def.max_result_chars {
            output
        } else {
            Box::pin(self.persist(output, def, &tool_use.id, ctx)).await
        };
        record_outcome(&span, &output);
        let mut result = output.into_result(&tool_use.id, &def.name);
        result.approved = approval.used.load(Ordering::Acquire);
        result
    }

    /// Stage 2: the layers slot, around stages 3–11.
    async fn run_layers(&self, req: ToolRequest, approval: &CallApproval) -> ToolOutput {
        let inner = &*self.inner;
        let name = req.tool_name().to_owned();
        let end: &Endpoint<'_> = &|req| Box::pin(self.checked(req, approval));
        match guarded(|| Next::new(&inner.layers, end).run(req)).await {
            Ok(output) => output,
            Err(p) => ToolOutput::error(panicked(&name, "layer", &p)),
        }
    }

    /// Stages 3–11, in one straight path: cancellation, validation, deadline,
    /// permission, breaker, before-hooks, the middleware slot around the body,
    /// after-hooks.
    async fn checked(&self, mut req: ToolRequest, approval: &CallApproval) -> ToolOutput {
        let inner = &*self.inner;
        if req.ctx.cancel_requested() {
            return ToolOutput::error(cancelled("before it started"));
        }
        let tool = Arc::clone(req.tool());
        let raw = std::mem::replace(&mut req.input, ToolInput::new(Value::Null)).into_value();
        req.input = match self.validate(&tool, raw) {
            Ok(input) => input,
            Err(info) => return ToolOutput::error(info),
        };
        let deadline = match self.effective_deadline(tool.as_ref(), &req.ctx) {
            Ok(deadline) => deadline,
            Err(info) => return ToolOutput::error(info),
        };
        req.ctx.tool_timeout = Some(deadline.duration);
        if let Err(output) = self.check_permission(&req, approval).await {
            return *output;
        }
        let name = tool.definition().name.as_str();
        if let Some(breaker) = inner.breaker.as_deref()
            && let Err(info) = breaker.check(name)
        {
            return ToolOutput::error(info);
        }
        // From here a probe may be held: the verdict records the outcome (or releases
        // the probe) when it is dropped, even if this future is dropped mid-call.
        let verdict = BodyVerdict::new(inner.breaker.as_deref(), name);
        // Stages 8-11 race cancellation. Each await races on its own (rather than one
        // race around a sub-future), so the call's future stays one flat state.
        let cancel = Cancel(req.ctx.cancellation.clone());

        // Stage 8: before-hooks. The after-hooks see the arguments the body runs with.
        let hooks = inner.hooks.as_deref();
        // Boxed: only calls with hooks pay for it, and the call's state stays small.
        let mut hook_view = hooks.map(|_| Box::new((req.input.value().clone(), req.ctx.clone())));
        let mut rewrite: Option<Box<InputRewrite>> = None;
        if let (Some(hooks), Some(view)) = (hooks, hook_view.as_deref_mut()) {
            let (args, ctx) = &*view;
            let call_id = ctx.call_id.as_str();
            let before = guarded(|| hooks.before_tool(ctx, call_id, name, args));
            match cancel.race(before).await {
                None => return ToolOutput::error(cancelled("while it was running")),
                Some(Ok(BeforeOutcome::Continue)) => {}
                Some(Ok(BeforeOutcome::Changed(changes))) => {
                    if let Err(output) = Box::pin(self.apply_hook_changes(
                        &mut req,
                        *changes,
                        approval,
                        &mut rewrite,
                    ))
                    .await
                    {
                        return with_rewrite(*output, rewrite);
                    }
                    if rewrite.is_some() {
                        view.0 = req.input.value().clone();
                    }
                }
                Some(Ok(BeforeOutcome::Deny(reason))) => {
                    return ToolOutput::error(
                        ToolErrorInfo::new(codes::HOOK_DENIED, reason.clone())
                            .with_detail("reason", reason),
                    );
                }
                Some(Ok(BeforeOutcome::Cancelled)) => {
                    return ToolOutput::error(cancelled("while its hooks ran"));
                }
                // An ordinary before-hook failure denies the call.
                Some(Err(p)) => {
                    return ToolOutput::error(
                        ToolErrorInfo::new(
                            codes::HOOK_DENIED,
                            format!("a tool.before hook failed: {}", panic_message(&p)),
                        )
                        .with_detail("hook_panicked", true),
                    );
                }
            }
        }
        let output = self
            .after_before_hooks(
                req,
                deadline,
                &verdict,
                &cancel,
                approval,
                hooks,
                hook_view.as_deref(),
            )
            .await;
        with_rewrite(output, rewrite)
    }

    /// Stage 8's changes. Arguments a `tool.before` hook rewrote are validated and
    /// permission-checked again, so a rewrite never skips the schema or the policy
    /// (`HOOK_INPUT_INVALID` when they do not validate). A hook's `ask` turns the call
    /// into an approval request. An approval covers the call as the model made it: the
    /// request keeps the call's own arguments and its reason names the rewrite, and the
    /// approved re-run runs the hooks again (so the policy still judges what runs, and a
    /// denial is never approved away).
    async fn apply_hook_changes(
        &self,
        req: &mut ToolRequest,
        changes: HookChanges,
        approval: &CallApproval,
        rewrite: &mut Option<Box<InputRewrite>>,
    ) -> Result<(), Box<ToolOutput>> {
        let tool = Arc::clone(req.tool());
        let name = tool.definition().name.as_str();
        let original = req.input.value().clone();
        let mut rewritten_note = String::new();
        if let Some(update) = changes.updated_input {
            let hooks = hook_names(&update.hooks);
            tracing::info!(
                target: TRACING_TARGET,
                tool = name,
                hooks = hooks.as_str(),
                original = %original,
                updated = %update.arguments,
                "tool.before hooks rewrote the input"
            );
            *rewrite = Some(Box::new(InputRewrite::new(
                update.hooks.iter().cloned(),
                original.clone(),
                update.arguments.clone(),
            )));
            req.input = match self.validate(&tool, update.arguments) {
                Ok(input) => input,
                Err(info) => {
                    return Err(Box::new(ToolOutput::error(
                        ToolErrorInfo::new(
                            codes::HOOK_INPUT_INVALID,
                            format!(
                                "{hooks} rewrote the input of `{name}` to arguments that are \
                                 not valid ({}): {}; the call did not run",
                                info.code, info.message
                            ),
                        )
                        .with_detail("hooks", update.hooks)
                        .with_detail("validation_code", info.code)
                        .with_detail("validation_message", info.message),
                    )));
                }
            };
            rewritten_note = format!(" ({hooks} rewrote the input to {})", req.input.value());
            if let Err(output) = self.check_permission(req, approval).await {
                return Err(match output.approval() {
                    Some(asked) => Box::new(ToolOutput::awaiting_approval(Approval::new(
                        format!("{}{rewritten_note}", asked.reason),
                        original,
                    ))),
                    None => output,
                });
            }
        }
        if let Some(ask) = changes.ask {
            if approval.granted {
                approval.used.store(true, Ordering::Release);
            } else {
                return Err(Box::new(ToolOutput::awaiting_approval(Approval::new(
                    format!(
                        "hook `{}` asks before `{name}` runs: {}{rewritten_note}",
                        ask.hook, ask.reason
                    ),
                    original,
                ))));
            }
        }
        Ok(())
    }

    /// Stages 9-11, once the before-hooks let the call through.
    #[allow(clippy::too_many_arguments)] // One private stage of `checked`, kept flat.
    async fn after_before_hooks(
        &self,
        req: ToolRequest,
        deadline: Deadline,
        verdict: &BodyVerdict<'_>,
        cancel: &Cancel,
        approval: &CallApproval,
        hooks: Option<&dyn ToolHookDispatcher>,
        hook_view: Option<&(Value, ToolExecutionContext)>,
    ) -> ToolOutput {
        let inner = &*self.inner;
        let tool = Arc::clone(req.tool());
        let name = tool.definition().name.as_str();
        // Stages 9-10: the middleware slot around the body.
        let ran = if inner.middleware.is_empty() {
            let (tool, input, ctx) = req.into_parts();
            cancel
                .race(self.run_body(&tool, input, &ctx, deadline, verdict))
                .await
        } else {
            // What the policy (and a human, for an approved call) judged: a rewrite is
            // judged again, and an approval covers only these arguments.
            let judged = req.input.value().clone();
            let end: &Endpoint<'_> =
                &|req| Box::pin(self.revalidated_body(req, deadline, verdict, approval, &judged));
            let chain = guarded(|| Next::new(&inner.middleware, end).run(req));
            cancel.race(chain).await.map(|chained| match chained {
                Ok(output) => output,
                Err(p) => ToolOutput::error(panicked(name, "middleware", &p)),
            })
        };
        let Some(mut output) = ran else {
            return ToolOutput::error(cancelled("while it was running"));
        };

        // Stage 11: after-hooks, only when the body ran.
        if let (Some(hooks), Some(status), Some((args, ctx))) = (hooks, verdict.status(), hook_view)
        {
            let after =
                guarded(|| hooks.after_tool(ctx, &ctx.call_id, name, args, &output, status));
            match cancel.race(after).await {
                None => return ToolOutput::error(cancelled("while it was running")),
                Some(Ok(after)) => {
                    output.hook_feedback.extend(after.feedback);
                    output.hook_context.extend(after.additional_context);
                }
                // Failures of other hook events are logged and the run goes on.
                Some(Err(p)) => tracing::warn!(
                    target: TRACING_TARGET,
                    tool = name,
                    "a tool.after hook panicked: {}",
                    panic_message(&p)
                ),
            }
        }
        output
    }

    /// The end of the middleware slot: arguments a middleware rewrote are validated
    /// and permission-checked again before the body sees them. A human approval covers
    /// the arguments the human was shown (`judged`), so rewritten arguments that need a
    /// human wait for a new approval.
    async fn revalidated_body(
        &self,
        mut req: ToolRequest,
        deadline: Deadline,
        verdict: &BodyVerdict<'_>,
        approval: &CallApproval,
        judged: &Value,
    ) -> ToolOutput {
        if req.input.is_rewritten() {
            let tool = Arc::clone(req.tool());
            let raw = std::mem::replace(&mut req.input, ToolInput::new(Value::Null)).into_value();
            req.input = match self.validate(&tool, raw) {
                Ok(input) => input,
                Err(info) => return ToolOutput::error(info),
            };
            let unchanged = req.input.value() == judged;
            if !unchanged {
                // The approval, if one was used, was for other arguments.
                approval.used.store(false, Ordering::Release);
            }
            let rewritten_approval = CallApproval {
                granted: approval.granted && unchanged,
                used: AtomicBool::new(false),
            };
            let checked = if unchanged {
                approval
            } else {
                &rewritten_approval
            };
            if let Err(output) = self.check_permission(&req, checked).await {
                return *output;
            }
        }
        let (tool, input, ctx) = req.into_parts();
        self.run_body(&tool, input, &ctx, deadline, verdict).await
    }

    /// Stage 10: the body under its deadline, with heartbeats and panic isolation.
    /// Records the body's verdict for the breaker and the after-hooks.
    ///
    /// The tool and context are borrowed from the caller's frame, so the body's future
    /// (which borrows the context) adds no copy of either to the call's state.
    async fn run_body(
        &self,
        tool: &Arc<dyn Tool>,
        input: ToolInput,
        ctx: &ToolExecutionContext,
        deadline: Deadline,
        verdict: &BodyVerdict<'_>,
    ) -> ToolOutput {
        let name = tool.definition().name.as_str();
        let (limit, safety_net) = match tool.timeout_owner() {
            ToolTimeoutOwner::Runtime => (deadline.duration, false),
            ToolTimeoutOwner::Tool => (
                deadline.duration.saturating_add(TOOL_OWNED_DEADLINE_GRACE),
                true,
            ),
        };
        let started = tokio::time::Instant::now();
        let output = match catch_sync(|| tool.run(input, ctx)) {
            Err(p) => ToolOutput::error(panicked(name, "body", &p)),
            Ok(body) => {
                let mut body = CatchUnwind::new(body);
                // Most bodies finish on their first poll: answer those without arming
                // the deadline and heartbeat timers.
                let first = std::future::poll_fn(|cx| {
                    std::task::Poll::Ready(std::pin::Pin::new(&mut body).poll(cx))
                })
                .await;
                if let std::task::Poll::Ready(outcome) = first {
                    let output = match outcome {
                        Ok(output) => output,
                        Err(p) => ToolOutput::error(panicked(name, "body", &p)),
                    };
                    verdict.set(if output.is_error() {
                        BodyStatus::Error
                    } else {
                        BodyStatus::Success
                    });
                    return output;
                }
                // A body that waits: the deadline and heartbeat timers run in a boxed
                // future of their own, so their state does not enlarge (and get
                // copied with) every call's future.
                let wait = BodyWait {
                    name,
                    call_id: &ctx.call_id,
                    listener: ctx.extensions.get_arc::<deadline::HeartbeatListener>(),
                    deadline,
                    limit,
                    safety_net,
                    heartbeat: self.inner.heartbeat,
                    started,
                };
                Box::pin(wait.run(body)).await
            }
        };
        verdict.set(if output.is_error() {
            BodyStatus::Error
        } else {
            BodyStatus::Success
        });
        output
    }

    /// Stage 4: schema validation, then the tool's own parse. Exactly once per call
    /// (again only for arguments a middleware rewrote).
    fn validate(&self, tool: &Arc<dyn Tool>, raw: Value) -> Result<ToolInput, ToolErrorInfo> {
        let name = &tool.definition().name;
        catch_sync(|| self.inner.schemas.validate(tool, &raw))
            .map_err(|p| panicked(name, "schema validation", &p))??;
        catch_sync(|| tool.validate_input(raw)).map_err(|p| panicked(name, "validate_input", &p))?
    }

    /// Stage 6: `Ok(())` when the call may run (recording when a human approval was
    /// used); `Err(output)` for a denial or an approval request.
    async fn check_permission(
        &self,
        req: &ToolRequest,
        approval: &CallApproval,
    ) -> Result<(), Box<ToolOutput>> {
        let Some(policy) = &self.inner.permission else {
            return Ok(());
        };
        let tool = req.tool();
        let name = &tool.definition().name;
        let decision = guarded(|| policy.check(tool.as_ref(), req.input.value(), &req.ctx))
            .await
            .map_err(|p| {
                // A policy that cannot decide must not let the call through.
                Box::new(ToolOutput::error(
                    ToolErrorInfo::new(
                        codes::PERMISSION_DENIED,
                        format!(
                            "the permission policy failed on `{name}`: {}",
                            panic_message(&p)
                        ),
                    )
                    .with_detail("policy_panicked", true),
                ))
            })?;
        match decision.effect {
            PermissionEffect::Allow => Ok(()),
            PermissionEffect::Deny { reason } => {
                let mut info = ToolErrorInfo::new(codes::PERMISSION_DENIED, reason.clone())
                    .with_detail("reason", reason);
                if approval.granted {
                    info = info.with_detail("approved_tool_call_id", req.call_id());
                }
                Err(Box::new(ToolOutput::error(info)))
            }
            PermissionEffect::RequireHuman { reason } => {
                if approval.granted {
                    approval.used.store(true, Ordering::Release);
                    return Ok(());
                }
                Err(Box::new(ToolOutput::awaiting_approval(Approval::new(
                    reason,
                    req.input.value().clone(),
                ))))
            }
        }
    }

    /// Stage 12: saves a long body with the tool's limits into the session's artifact
    /// store, on the blocking pool.
    ///
    /// When saving fails, nothing is lost: the output keeps its whole body and gains
    /// [`ToolOutput::artifact_error`]. Returning an `ARTIFACT_ERROR` failure instead
    /// would throw away a body the tool already produced (and whose side effects
    /// already happened).
    async fn persist(
        &self,
        output: ToolOutput,
        def: &ToolDefinition,
        call_id: &str,
        ctx: &ToolExecutionContext,
    ) -> ToolOutput {
        let store = ToolArtifactStore::for_session(&ctx.workspace_root, &ctx.session_id)
            .with_preview(
                def.preview_chars.min(def.max_result_chars),
                def.preview_mode,
            );
        let body = output.model_content();
        if body.chars().count() <= def.max_result_chars {
            return output;
        }
        let saved = {
            let store = store.clone();
            let call_id = call_id.to_owned();
            run_blocking_io(move || {
                let saved = store.save_body(&call_id, &body);
                (body, saved)
            })
            .await
        };
        match saved {
            Ok((body, Ok(saved))) => store.replace_with_preview(output, &body, saved),
            Ok((_, Err(err))) => keep_whole(output, def, err.to_artifact_info()),
            Err(info) => keep_whole(output, def, info),
        }
    }
}

/// `hook `a`` or `hooks `a`, `b`` for messages.
fn hook_names(hooks: &[String]) -> String {
    let quoted: Vec<String> = hooks.iter().map(|h| format!("`{h}`")).collect();
    match quoted.len() {
        1 => format!("hook {}", quoted[0]),
        _ => format!("hooks {}", quoted.join(", ")),
    }
}

/// Records on an output that hooks rewrote the call's input (what the run record and
/// events show beside the call's own arguments).
fn with_rewrite(mut output: ToolOutput, rewrite: Option<Box<InputRewrite>>) -> ToolOutput {
    if rewrite.is_some() {
        output.input_rewrite = rewrite;
    }
    output
}

/// Keeps the whole body when saving it failed, noting why.
fn keep_whole(mut output: ToolOutput, def: &ToolDefinition, info: ToolErrorInfo) -> ToolOutput {
    tracing::warn!(
        target: TRACING_TARGET,
        tool = def.name.as_str(),
        "keeping the whole body: saving it as an artifact failed: {}",
        info.message
    );
    output.artifact_error = Some(Box::new(info));
    output
}

/// The slow path of the body stage: a body that did not finish on its first poll,
/// raced against its deadline, with a heartbeat event at each interval.
struct BodyWait<'n> {
    name: &'n str,
    call_id: &'n str,
    listener: Option<Arc<deadline::HeartbeatListener>>,
    deadline: Deadline,
    limit: Duration,
    safety_net: bool,
    heartbeat: Duration,
    started: tokio::time::Instant,
}

/// The latest a timer is set: about 31.7 years. A deadline or heartbeat interval beyond
/// it (`Duration::MAX` from a host, `--timeout 1e19`) means "never" in practice, and
/// `Instant + Duration` would overflow on it.
const FAR_FUTURE: Duration = Duration::from_secs(1_000_000_000);

/// `at + after`, with `after` capped at [`FAR_FUTURE`] so the sum cannot overflow.
fn later(at: tokio::time::Instant, after: Duration) -> tokio::time::Instant {
    at + after.min(FAR_FUTURE)
}

impl BodyWait<'_> {
    async fn run(self, mut body: CatchUnwind<BoxFuture<'_, ToolOutput>>) -> ToolOutput {
        let Self {
            name,
            call_id,
            listener,
            deadline,
            limit,
            safety_net,
            heartbeat,
            started,
        } = self;
        let expiry = tokio::time::sleep_until(later(started, limit));
        tokio::pin!(expiry);
        let mut next_beat = (!heartbeat.is_zero()).then(|| later(started, heartbeat));
        loop {
            let beat = async {
                match next_beat {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            // Biased: a body that is ready wins over a timer that fired in the same
            // instant, and an idle heartbeat timer is never polled before the body.
            tokio::select! {
                biased;
                outcome = &mut body => break match outcome {
                    Ok(output) => output,
                    Err(p) => ToolOutput::error(panicked(name, "body", &p)),
                },
                () = &mut expiry => {
                    break ToolOutput::error(deadline.timeout_error(name, started.elapsed(), safety_net));
                }
                () = beat => {
                    tracing::info!(
                        target: TRACING_TARGET,
                        name,
                        elapsed_seconds = started.elapsed().as_secs(),
                        deadline_seconds = deadline.seconds(),
                        "running name={name} elapsed={}s/{}s",
                        started.elapsed().as_secs(),
                        deadline::fmt_secs(deadline.duration),
                    );
                    if let Some(listener) = &listener {
                        listener.beat(&deadline::Heartbeat {
                            call_id: call_id.to_owned(),
                            tool_name: name.to_owned(),
                            elapsed: started.elapsed(),
                            deadline: deadline.duration,
                        });
                    }
                    next_beat = next_beat.map(|at| later(at, heartbeat));
                }
            }
        }
    }
}

/// The run's cancellation signal, raced against each await of stages 8-11.
struct Cancel(Option<iris_tools_core::CancellationSignal>);

impl Cancel {
    /// `None` when cancellation arrives first (biased: a requested cancellation wins
    /// over a future that is ready in the same poll).
    async fn race<T>(&self, work: impl std::future::Future<Output = T>) -> Option<T> {
        match &self.0 {
            None => Some(work.await),
            Some(signal) => tokio::select! {
                biased;
                () = signal.cancelled() => None,
                out = work => Some(out),
            },
        }
    }
}

/// Whether this call carries a human approval, and whether the policy used it.
struct CallApproval {
    granted: bool,
    used: AtomicBool,
}

/// Creates and polls a future from user code (hooks, middleware, policies), isolating
/// a panic in either step.
async fn guarded<'a, T>(make: impl FnOnce() -> BoxFuture<'a, T>) -> Result<T, PanicPayload> {
    CatchUnwind::new(catch_sync(make)?).await
}

const VERDICT_NONE: u8 = 0;
const VERDICT_SUCCESS: u8 = 1;
const VERDICT_ERROR: u8 = 2;

/// Whether and how the real body ended. Dropped at the end of a call (or when the call
/// future is dropped), it reports to the circuit breaker: success or failure for a
/// body that ran, `record_aborted` otherwise so a probe slot is never leaked.
struct BodyVerdict<'a> {
    breaker: Option<&'a CircuitBreaker>,
    tool: &'a str,
    state: AtomicU8,
}

impl<'a> BodyVerdict<'a> {
    fn new(breaker: Option<&'a CircuitBreaker>, tool: &'a str) -> Self {
        Self {
            breaker,
            tool,
            state: AtomicU8::new(VERDICT_NONE),
        }
    }

    fn set(&self, status: BodyStatus) {
        let value = match status {
            BodyStatus::Success => VERDICT_SUCCESS,
            BodyStatus::Error => VERDICT_ERROR,
        };
        self.state.store(value, Ordering::Release);
    }

    fn status(&self) -> Option<BodyStatus> {
        match self.state.load(Ordering::Acquire) {
            VERDICT_SUCCESS => Some(BodyStatus::Success),
            VERDICT_ERROR => Some(BodyStatus::Error),
            _ => None,
        }
    }
}

impl Drop for BodyVerdict<'_> {
    fn drop(&mut self) {
        let Some(breaker) = self.breaker else { return };
        match self.status() {
            Some(BodyStatus::Success) => breaker.record_success(self.tool),
            Some(BodyStatus::Error) => breaker.record_failure(self.tool),
            None => breaker.record_aborted(self.tool),
        }
    }
}

fn call_span(tool_name: &str, call_id: &str) -> tracing::Span {
    tracing::info_span!(
        target: TRACING_TARGET,
        "execute_tool",
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = tool_name,
        "gen_ai.tool.call.id" = call_id,
        "iris.tool.outcome" = tracing::field::Empty,
        "error.type" = tracing::field::Empty,
    )
}

fn record_outcome(span: &tracing::Span, output: &ToolOutput) {
    match output.error_code() {
        Some(code) => {
            span.record("iris.tool.outcome", code);
            span.record("error.type", code);
        }
        None => {
            span.record("iris.tool.outcome", "ok");
        }
    }
}

fn cancelled(when: &str) -> ToolErrorInfo {
    ToolErrorInfo::new(codes::CANCELLED, format!("the call was cancelled {when}"))
}

fn panicked(tool: &str, stage: &str, payload: &PanicPayload) -> ToolErrorInfo {
    let message = panic_message(payload);
    ToolErrorInfo::new(
        codes::TOOL_PANICKED,
        format!("`{tool}` panicked in its {stage}: {message}"),
    )
    .with_detail("stage", stage)
    .with_detail("panic", message)
}

/// An upper bound on `output.model_chars()` computed without building the string, so
/// the common short output skips the artifact store entirely.
fn model_chars_upper_bound(output: &ToolOutput) -> usize {
    let error = output
        .error_info()
        .map_or(32, |e| e.code.len() + e.message.len() + 16)
        + output.approval().map_or(0, |a| a.reason.len());
    let texts: usize = output
        .content
        .iter()
        .filter_map(|b| b.as_text())
        .map(str::len)
        .sum();
    let feedback: usize = output
        .hook_feedback
        .iter()
        .chain(&output.hook_context)
        .map(String::len)
        .sum();
    let rewrite = output
        .input_rewrite
        .as_ref()
        .map_or(0, |r| r.model_note().len() + 1);
    error
        + texts
        + feedback
        + rewrite
        + output.content.len()
        + output.hook_feedback.len()
        + output.hook_context.len()
}
