//! [`ToolExecutor`]: the one path every tool call travels.
//!
//! Every tool — a `#[tool]` fn, a built-in, an MCP tool — is executed here, along the
//! path of seed 000 ("调用、结果与权限", "Hook 与 Middleware") and seed 003
//! ("沿一次读取与修改任务看执行过程"):
//!
//! 1. look the tool up by name or alias (`TOOL_NOT_FOUND`);
//! 2. validate the input exactly once: JSON Schema 2020-12, then the tool's own
//!    [`Tool::validate_input`] (`INVALID_INPUT`, every violation with its JSON pointer);
//! 3. ask the permission policy with the *current* identity (`PERMISSION_DENIED`, or an
//!    `APPROVAL_REQUIRED` result the runner turns into a WAITING state);
//! 4. ask the circuit breaker (`CIRCUIT_OPEN`);
//! 5. run the `tool.before` hooks (`HOOK_DENIED`);
//! 6. run the middleware chain around the body; the body runs under its deadline, races
//!    cancellation and is isolated from panics (`TOOL_TIMEOUT`, `CANCELLED`,
//!    `TOOL_PANICKED`);
//! 7. run the `tool.after` hooks, only when the body ran;
//! 8. save a long body as an artifact (`persist_if_large`);
//! 9. bind the identity (`tool_use_id`, canonical `tool_name`) last.
//!
//! Any short-circuit (unknown tool, invalid input, deny, approval required, circuit
//! open, hook deny, middleware short-circuit) skips the body and the after-hooks.

mod deadline;
mod disclosure;
pub mod panic;
mod plan;
mod validation;

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tracing::Instrument;

use crate::artifact::ToolArtifactStore;
use crate::breaker::CircuitBreaker;
use crate::context::ToolExecutionContext;
use crate::definition::ToolDefinition;
use crate::error::{ToolErrorInfo, codes};
use crate::hooks::{BeforeOutcome, BodyStatus, ToolHookDispatcher};
use crate::middleware::{ToolCall, ToolMiddleware, ToolNext};
use crate::permission::{PermissionEffect, PermissionPolicy};
use crate::registry::ToolRegistry;
use crate::result::ToolResult;
use crate::tool::{BoxFuture, Tool, ToolTimeoutOwner, ToolUse};

pub use deadline::{
    DEFAULT_HEARTBEAT_INTERVAL, DEFAULT_TOOL_TIMEOUT, Deadline, DeadlineBound,
    TOOL_OWNED_DEADLINE_GRACE,
};
pub use plan::{ToolBatch, ToolBatchPlan};

use panic::{CatchUnwind, PanicPayload, catch_sync, panic_message};
use validation::SchemaCache;

/// The `tracing` target of every span and event the executor emits.
pub const TRACING_TARGET: &str = "iris::executor";

/// The command layer's binding, carried opaquely by core.
///
/// Core knows nothing of processes, so the executor stores whatever the command layer
/// hands it and puts it into every call's [`ToolExecutionContext::extensions`]. A
/// command tool reads it back with `ctx.extensions.get::<CommandBinding>()` and
/// [`CommandBinding::downcast_ref`].
///
/// ```
/// use std::sync::Arc;
/// use iris_tools_core::CommandBinding;
///
/// #[derive(Debug)]
/// struct Shell { timeout_seconds: u64 }
///
/// let binding = CommandBinding::new(Arc::new(Shell { timeout_seconds: 120 }));
/// assert_eq!(binding.downcast_ref::<Shell>().map(|s| s.timeout_seconds), Some(120));
/// assert!(binding.downcast_ref::<String>().is_none());
/// ```
#[derive(Clone)]
pub struct CommandBinding(Arc<dyn Any + Send + Sync>);

impl CommandBinding {
    /// Wraps the command layer's binding.
    pub fn new(binding: Arc<dyn Any + Send + Sync>) -> Self {
        Self(binding)
    }

    /// Borrows the binding as its concrete type.
    pub fn downcast_ref<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }

    /// The shared binding itself.
    pub fn as_arc(&self) -> &Arc<dyn Any + Send + Sync> {
        &self.0
    }
}

impl std::fmt::Debug for CommandBinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CommandBinding")
    }
}

/// Executes tool calls: one at a time ([`ToolExecutor::execute_one`]) or a model step's
/// list in parallel windows ([`ToolExecutor::execute_many`]).
///
/// Cheap to clone (one `Arc` inside), `Send + Sync`. The executor never prompts a human
/// and never crashes: every failure is a [`ToolResult`] with a stable code. It needs a
/// tokio runtime (any flavour) with the time driver enabled, for deadlines and
/// heartbeats.
///
/// ```
/// use iris_tools_core::{FnTool, ToolCapability, ToolDefinition, ToolExecutor,
///     ToolExecutionContext, ToolRegistry, ToolResult, ToolUse};
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
///         ToolResult::ok_text(format!("{} = INFO", input["key"].as_str().unwrap_or("?")))
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
    middleware: Vec<Arc<dyn ToolMiddleware>>,
    breaker: Option<Arc<CircuitBreaker>>,
    hooks: Option<Arc<dyn ToolHookDispatcher>>,
    runtime_timeout: Option<Duration>,
    heartbeat: Duration,
    command_binding: Option<CommandBinding>,
    /// Shared by clones: compiled validators depend only on the tools.
    schemas: Arc<SchemaCache>,
}

impl std::fmt::Debug for ToolExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = &*self.inner;
        f.debug_struct("ToolExecutor")
            .field("registry", &inner.registry)
            .field("permission_policy", &inner.permission.is_some())
            .field("middleware", &inner.middleware.len())
            .field("circuit_breaker", &inner.breaker)
            .field("hook_dispatcher", &inner.hooks.is_some())
            .field("runtime_timeout", &inner.runtime_timeout)
            .field("heartbeat_interval", &inner.heartbeat)
            .field("command_binding", &inner.command_binding.is_some())
            .finish_non_exhaustive()
    }
}

impl ToolExecutor {
    /// An executor over a registry, with no permission policy (every call is
    /// allowed), no middleware, no circuit breaker, no hooks, the seed's 60 s default
    /// deadline and a 30 s heartbeat.
    pub fn new(registry: ToolRegistry) -> Self {
        Self {
            inner: Arc::new(Inner {
                registry,
                permission: None,
                middleware: Vec::new(),
                breaker: None,
                hooks: None,
                runtime_timeout: None,
                heartbeat: DEFAULT_HEARTBEAT_INTERVAL,
                command_binding: None,
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

    /// Appends a middleware. The first one added is the outermost.
    #[must_use]
    pub fn with_middleware(self, middleware: impl ToolMiddleware + 'static) -> Self {
        self.with(|i| i.middleware.push(Arc::new(middleware)))
    }

    /// Sets the circuit breaker (none by default, as in the seed).
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
    /// Without it, the seed's 60 s default applies only to calls for which neither the
    /// tool nor the context sets a deadline (a tool's `timeout` overrides the default,
    /// seed 004). With it, the cap takes part in the minimum for every call. See
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

    /// Stores the command layer's binding; every call's context carries it as a
    /// [`CommandBinding`] extension.
    #[must_use]
    pub fn with_command_binding(self, binding: Arc<dyn Any + Send + Sync>) -> Self {
        self.with(|i| i.command_binding = Some(CommandBinding::new(binding)))
    }

    /// The registry calls are resolved in.
    pub fn registry(&self) -> &ToolRegistry {
        &self.inner.registry
    }

    /// The circuit breaker, when one is set.
    pub fn circuit_breaker(&self) -> Option<&CircuitBreaker> {
        self.inner.breaker.as_deref()
    }

    /// The command binding, when one is set.
    pub fn command_binding(&self) -> Option<&CommandBinding> {
        self.inner.command_binding.as_ref()
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
            ctx.tool_timeout_seconds,
        )
    }

    /// Cuts a model step's calls into parallel windows and barriers.
    ///
    /// A call may join a parallel window when its tool is read-only and
    /// concurrency-safe; adjacent such calls form one window. Every other call —
    /// including a call to an unknown tool — is a barrier of its own. The context is
    /// accepted for parity with the seed's `prepare_many(tool_uses, context)`; today
    /// the plan depends only on the tools.
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
                // `execute_one` bound the result to its call already.
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
                        slots[index] = Some(self.bind_to_call(fail(info), &calls[index]));
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
                    self.bind_to_call(fail(info), call)
                })
            })
            .collect()
    }

    /// Binds a result the call's own path did not produce: canonical name when the
    /// tool is known, the requested name otherwise.
    fn bind_to_call(&self, result: ToolResult, call: &ToolUse) -> ToolResult {
        match self.inner.registry.get(&call.name) {
            Ok(tool) => result.bind(&call.id, &tool.definition().name),
            Err(_) => result.bind(&call.id, &call.name),
        }
    }

    /// Runs one call along the full path (see the module docs) and returns its result,
    /// bound to `tool_use.id` and the tool's canonical name.
    ///
    /// `approved_tool_call_id`: when it equals `tool_use.id`, a `RequireHuman` decision
    /// counts as approved. Permission is still checked again with the current policy
    /// and identity, so a policy that now denies still denies.
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
                let result = fail(
                    ToolErrorInfo::new(
                        codes::TOOL_NOT_FOUND,
                        format!("no tool is named `{}`", tool_use.name),
                    )
                    .with_detail("tool_name", tool_use.name.as_str()),
                );
                record_outcome(&span, &result);
                return result.bind(&tool_use.id, &tool_use.name);
            }
        };
        let name = tool.definition().name.as_str();
        let span = call_span(name, &tool_use.id);
        let result = self
            .run_call(&tool, tool_use, ctx, approved_tool_call_id)
            .instrument(span.clone())
            .await;
        record_outcome(&span, &result);
        result.bind(&tool_use.id, name)
    }

    async fn run_call(
        &self,
        tool: &Arc<dyn Tool>,
        tool_use: &ToolUse,
        ctx: &ToolExecutionContext,
        approved_tool_call_id: Option<&str>,
    ) -> ToolResult {
        let inner = &*self.inner;
        let def = tool.definition();
        if ctx.cancel_requested() {
            return fail(cancelled("before it started"));
        }
        // Discovery (inert without a disclosure state on the context): a deferred tool
        // is callable only while the current request carries its schema.
        if let Some(info) = disclosure::refuse_unloaded(def, ctx) {
            return fail(info);
        }

        let input = match self.validate(tool, &tool_use.input) {
            Ok(input) => input,
            Err(info) => return fail(info),
        };

        let deadline = match self.effective_deadline(tool.as_ref(), ctx) {
            Ok(deadline) => deadline,
            Err(info) => return fail(info),
        };
        let mut call_ctx = self.call_context(ctx, &tool_use.id, &def.name, deadline);
        // Discovery: only a real `tool_search` body can fill this receipt.
        let receipt = disclosure::receipt_for(def, &mut call_ctx);

        let approved =
            match self.check_permission(tool, tool_use, &input, &call_ctx, approved_tool_call_id) {
                Ok(approved) => approved,
                Err(result) => return *result,
            };

        if let Some(breaker) = inner.breaker.as_deref()
            && let Err(info) = breaker.check(&def.name)
        {
            return fail(info);
        }
        // From here a probe may be held: the verdict records the outcome (or releases
        // the probe) when it is dropped, even if this future is dropped mid-call.
        let verdict = BodyVerdict::new(inner.breaker.as_deref(), &def.name);

        let staged = self.run_stages(tool, input, &call_ctx, deadline, &verdict);
        let result = match &ctx.cancellation {
            Some(signal) => {
                tokio::select! {
                    biased;
                    () = signal.cancelled() => fail(cancelled("while it was running")),
                    result = staged => result,
                }
            }
            None => staged.await,
        };

        let mut result = self.persist(result, def, &call_ctx);
        // Discovery: revealed tools come from the receipt, never from the result.
        disclosure::certify(&mut result, receipt.as_ref(), ctx);
        if approved {
            result.metadata.insert(
                "approved_tool_call_id".into(),
                Value::String(tool_use.id.clone()),
            );
        }
        result
    }

    /// Schema validation, then the tool's own parse. Exactly once per call.
    fn validate(&self, tool: &Arc<dyn Tool>, raw: &Value) -> Result<Value, ToolErrorInfo> {
        let name = &tool.definition().name;
        catch_sync(|| self.inner.schemas.validate(tool, raw))
            .map_err(|p| panicked(name, "schema validation", &p))??;
        catch_sync(|| tool.validate_input(raw.clone()))
            .map_err(|p| panicked(name, "validate_input", &p))?
    }

    /// `Ok(approved)` when the call may run (`approved` is true when a human approval
    /// was used); `Err(result)` for a denial or an approval request.
    fn check_permission(
        &self,
        tool: &Arc<dyn Tool>,
        tool_use: &ToolUse,
        input: &Value,
        call_ctx: &ToolExecutionContext,
        approved_tool_call_id: Option<&str>,
    ) -> Result<bool, Box<ToolResult>> {
        let Some(policy) = &self.inner.permission else {
            return Ok(false);
        };
        let name = &tool.definition().name;
        let decision =
            catch_sync(|| policy.check(tool.as_ref(), input, call_ctx)).map_err(|p| {
                // A policy that cannot decide must not let the call through.
                Box::new(fail(
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
            PermissionEffect::Allow => Ok(false),
            PermissionEffect::Deny { reason } => {
                let mut info = ToolErrorInfo::new(codes::PERMISSION_DENIED, reason.clone())
                    .with_detail("reason", reason);
                if let Some(id) = approved_tool_call_id {
                    info = info.with_detail("approved_tool_call_id", id);
                }
                Err(Box::new(fail(info)))
            }
            PermissionEffect::RequireHuman { reason } => {
                if approved_tool_call_id == Some(tool_use.id.as_str()) {
                    return Ok(true);
                }
                Err(Box::new(approval_required(&reason, tool_use, name, input)))
            }
        }
    }

    /// Before-hooks, middleware around the body, after-hooks.
    async fn run_stages(
        &self,
        tool: &Arc<dyn Tool>,
        input: Value,
        call_ctx: &ToolExecutionContext,
        deadline: Deadline,
        verdict: &BodyVerdict<'_>,
    ) -> ToolResult {
        let inner = &*self.inner;
        let name = tool.definition().name.as_str();
        let call_id = call_ctx.call_id.as_str();

        let hooks = inner.hooks.as_deref();
        if let Some(hooks) = hooks {
            match guarded(|| hooks.before_tool(call_ctx, call_id, name, &input)).await {
                Ok(BeforeOutcome::Continue) => {}
                Ok(BeforeOutcome::Deny(reason)) => {
                    return fail(
                        ToolErrorInfo::new(codes::HOOK_DENIED, reason.clone())
                            .with_detail("reason", reason),
                    );
                }
                Ok(BeforeOutcome::Cancelled) => return fail(cancelled("while its hooks ran")),
                // Seed 000: an ordinary before-hook failure denies the call.
                Err(p) => {
                    return fail(
                        ToolErrorInfo::new(
                            codes::HOOK_DENIED,
                            format!("a tool.before hook failed: {}", panic_message(&p)),
                        )
                        .with_detail("hook_panicked", true),
                    );
                }
            }
        }

        // The after-hooks need the arguments once the body consumed its copy.
        let hook_args = hooks.map(|_| input.clone());
        let mut result = if inner.middleware.is_empty() {
            self.run_body(tool, input, call_ctx, deadline, verdict)
                .await
        } else {
            let call = ToolCall {
                tool_use_id: call_ctx.call_id.clone(),
                tool_name: name.to_owned(),
                arguments: input.clone(),
                agent_id: call_ctx.agent_id.clone(),
                session_id: call_ctx.session_id.clone(),
                run_id: call_ctx.run_id.clone(),
                activation_id: call_ctx.activation_id.clone(),
                workspace_root: call_ctx.workspace_root.clone(),
            };
            let body: BodyFn<'_> =
                Box::new(move || Box::pin(self.run_body(tool, input, call_ctx, deadline, verdict)));
            match guarded(|| run_chain(&inner.middleware, call, body)).await {
                Ok(result) => result,
                Err(p) => fail(panicked(name, "middleware", &p)),
            }
        };

        if let (Some(hooks), Some(status), Some(args)) = (hooks, verdict.status(), hook_args) {
            let after =
                guarded(|| hooks.after_tool(call_ctx, call_id, name, &args, &result, status));
            match after.await {
                Ok(feedback) => result.hook_feedback.extend(feedback),
                // Seed 000: failures of other hook events are logged and the run goes on.
                Err(p) => tracing::warn!(
                    target: TRACING_TARGET,
                    tool = name,
                    "a tool.after hook panicked: {}",
                    panic_message(&p)
                ),
            }
        }
        result
    }

    /// The body under its deadline, with heartbeats and panic isolation. Records the
    /// body's verdict for the breaker and the after-hooks.
    async fn run_body(
        &self,
        tool: &Arc<dyn Tool>,
        input: Value,
        ctx: &ToolExecutionContext,
        deadline: Deadline,
        verdict: &BodyVerdict<'_>,
    ) -> ToolResult {
        let name = tool.definition().name.as_str();
        let (limit, safety_net) = match tool.timeout_owner() {
            ToolTimeoutOwner::Runtime => (deadline.duration, false),
            ToolTimeoutOwner::Tool => (
                deadline.duration.saturating_add(TOOL_OWNED_DEADLINE_GRACE),
                true,
            ),
        };
        let heartbeat = self.inner.heartbeat;
        let started = tokio::time::Instant::now();
        let result = match catch_sync(|| tool.run(input, ctx)) {
            Err(p) => fail(panicked(name, "body", &p)),
            Ok(body) => {
                let mut body = CatchUnwind::new(body);
                let expiry = tokio::time::sleep(limit);
                tokio::pin!(expiry);
                let mut next_beat = (!heartbeat.is_zero()).then(|| started + heartbeat);
                loop {
                    let beat = async {
                        match next_beat {
                            Some(at) => tokio::time::sleep_until(at).await,
                            None => std::future::pending().await,
                        }
                    };
                    // Biased: a body that is ready wins over a timer that fired in the
                    // same instant, and an idle heartbeat timer is never polled before
                    // the body gets its first chance.
                    tokio::select! {
                        biased;
                        outcome = &mut body => break match outcome {
                            Ok(result) => result,
                            Err(p) => fail(panicked(name, "body", &p)),
                        },
                        () = &mut expiry => {
                            break fail(deadline.timeout_error(name, started.elapsed(), safety_net));
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
                            next_beat = next_beat.map(|at| at + heartbeat);
                        }
                    }
                }
            }
        };
        verdict.set(if result.is_error {
            BodyStatus::Error
        } else {
            BodyStatus::Success
        });
        // Middleware sees the call's identity, even on a result the body left unbound.
        result.bind(&ctx.call_id, name)
    }

    /// The context the policy, hooks and body see: the caller's context with this
    /// call's identity, deadline and command binding.
    fn call_context(
        &self,
        ctx: &ToolExecutionContext,
        call_id: &str,
        name: &str,
        deadline: Deadline,
    ) -> ToolExecutionContext {
        let mut call_ctx = ctx.clone();
        call_id.clone_into(&mut call_ctx.call_id);
        name.clone_into(&mut call_ctx.tool_name);
        call_ctx.tool_timeout_seconds = Some(deadline.seconds());
        if let Some(binding) = &self.inner.command_binding {
            call_ctx.extensions.insert(binding.clone());
        }
        call_ctx
    }

    /// Saves a long body with the tool's limits into the session's artifact store.
    ///
    /// When saving fails, nothing is lost: the result keeps its whole body and gains
    /// `metadata.artifact_error = {code: "ARTIFACT_ERROR", message}`. Returning an
    /// `ARTIFACT_ERROR` result instead would throw away a body the tool already
    /// produced (and whose side effects already happened).
    fn persist(
        &self,
        result: ToolResult,
        def: &ToolDefinition,
        ctx: &ToolExecutionContext,
    ) -> ToolResult {
        if model_chars_upper_bound(&result) <= def.max_result_chars {
            return result;
        }
        let store = ToolArtifactStore::for_session(&ctx.workspace_root, &ctx.session_id)
            .with_preview(def.preview_chars, def.preview_mode);
        // The artifact file is named after the call id, which comes from the model: use
        // a file-safe form so an id like `../x` cannot place a file outside the store.
        let staged = result.clone().bind(&file_safe_id(&ctx.call_id), &def.name);
        match store.persist_if_large(staged, def.max_result_chars) {
            Ok(saved) => saved,
            Err(err) => {
                let info = err.to_info();
                tracing::warn!(
                    target: TRACING_TARGET,
                    tool = def.name.as_str(),
                    "keeping the whole body: saving it as an artifact failed: {}",
                    info.message
                );
                let mut result = result;
                result.metadata.insert(
                    "artifact_error".into(),
                    json!({"code": codes::ARTIFACT_ERROR, "message": info.message}),
                );
                result
            }
        }
    }
}

/// The rest of a middleware chain's innermost step: the guarded body.
type BodyFn<'a> = Box<dyn FnOnce() -> BoxFuture<'a, ToolResult> + Send + 'a>;

/// Builds the chain: the first middleware wraps the second, …, the last wraps the body.
fn run_chain<'a>(
    middleware: &'a [Arc<dyn ToolMiddleware>],
    call: ToolCall,
    body: BodyFn<'a>,
) -> BoxFuture<'a, ToolResult> {
    match middleware.split_first() {
        None => body(),
        Some((first, rest)) => {
            let inner_call = call.clone();
            first.wrap_tool_call(
                call,
                ToolNext::new(move || run_chain(rest, inner_call, body)),
            )
        }
    }
}

/// Creates and polls a future from user code (hooks, middleware), isolating a panic in
/// either step.
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

fn record_outcome(span: &tracing::Span, result: &ToolResult) {
    match result.error_code() {
        Some(code) => {
            span.record("iris.tool.outcome", code);
            span.record("error.type", code);
        }
        None if result.is_error => {
            span.record("iris.tool.outcome", codes::TOOL_FAILED);
            span.record("error.type", codes::TOOL_FAILED);
        }
        None => {
            span.record("iris.tool.outcome", "ok");
        }
    }
}

fn fail(info: ToolErrorInfo) -> ToolResult {
    ToolResult::error("", "", info)
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

/// The structured "awaiting approval" result: no prompting here; a runner turns it
/// into a WAITING state and later calls again with `approved_tool_call_id`.
fn approval_required(reason: &str, tool_use: &ToolUse, name: &str, input: &Value) -> ToolResult {
    let mut result =
        fail(ToolErrorInfo::new(codes::APPROVAL_REQUIRED, reason).with_detail("reason", reason));
    result
        .data
        .insert("awaiting_approval".into(), Value::Bool(true));
    result.data.insert("reason".into(), reason.into());
    result
        .data
        .insert("tool_use_id".into(), tool_use.id.as_str().into());
    result.data.insert("tool_name".into(), name.into());
    result.data.insert("arguments".into(), input.clone());
    result
        .metadata
        .insert("awaiting_approval".into(), Value::Bool(true));
    result.metadata.insert(
        "permission".into(),
        json!({"effect": "require_human", "reason": reason}),
    );
    result
}

/// An upper bound on `result.model_chars()` computed without building the string, so
/// the common short result skips the artifact store entirely.
fn model_chars_upper_bound(result: &ToolResult) -> usize {
    let error = result
        .error
        .as_ref()
        .map_or(32, |e| e.code.len() + e.message.len() + 16);
    let texts: usize = result
        .content
        .iter()
        .filter_map(|b| b.as_text())
        .map(str::len)
        .sum();
    let feedback: usize = result.hook_feedback.iter().map(String::len).sum();
    error + texts + feedback + result.content.len() + result.hook_feedback.len()
}

/// A file-name-safe form of a call id: ASCII letters, digits, `-` and `_` kept, other
/// characters replaced by `_`; an empty id becomes `call`.
fn file_safe_id(id: &str) -> String {
    if id.is_empty() {
        return "call".to_owned();
    }
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
