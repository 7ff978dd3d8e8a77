//! [`HookDispatcher`]: runs registrations in declared order, each with its own event
//! snapshot and deadline, and implements the executor's [`ToolHookDispatcher`].
//!
//! Failure policy (documented contract):
//! - `tool.before`: hooks run in declared order; the first deny stops the chain and
//!   denies the call. A hook that fails, panics, times out or answers with the wrong
//!   result type also denies (fail closed), with a reason naming the hook. The model
//!   always receives a tool result for a denied call (the executor builds it).
//! - `tool.after`, `run.started`, `run.finished`: failures are logged with `tracing` and
//!   returned to the caller as diagnostics; the run goes on. Feedback is collected in
//!   declared order.
//! - Cancellation is never turned into allow or deny: it surfaces as cancellation.

use iris_executor::{BeforeOutcome, BodyStatus, CatchUnwind, ToolHookDispatcher, panic_message};
use iris_tools_core::{BoxFuture, CancellationSignal, ToolExecutionContext, ToolOutput};
use serde_json::Value;

use crate::error::{HookError, HookErrorKind};
use crate::event::{EventCommon, EventPayload, HookEvent, HookEventKind, RunStatus};
use crate::registration::{HookRegistration, HookResult, ToolAfterResult, ToolBeforeResult};

/// One failed hook invocation, reported by the run-level dispatch methods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookFailure {
    /// The hook's name.
    pub hook: String,
    /// The event.
    pub event: HookEventKind,
    /// What went wrong.
    pub error: HookError,
}

/// Runs hook registrations.
///
/// ```
/// use iris_hooks::{HookDispatcher, HookEventKind, HookRegistration, HookResult};
/// use iris_executor::{BeforeOutcome, ToolHookDispatcher};
/// use iris_tools_core::ToolExecutionContext;
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let deny_rm = HookRegistration::builder(HookEventKind::ToolBefore, "no-rm", |event: iris_hooks::HookEvent| async move {
///     let args = event.to_json()["arguments"]["command"].as_str().unwrap_or("").to_owned();
///     Ok(if args.contains("rm ") { HookResult::deny("rm is not allowed") } else { HookResult::None })
/// })
/// .build()
/// .unwrap();
/// let hooks = HookDispatcher::new(vec![deny_rm]);
/// let ctx = ToolExecutionContext::new("/tmp");
/// let outcome = hooks.before_tool(&ctx, "c1", "exec_command", &json!({"command": "rm -rf /"})).await;
/// assert_eq!(outcome, BeforeOutcome::Deny("hook `no-rm` denied the call: rm is not allowed".into()));
/// # });
/// ```
#[derive(Debug, Clone, Default)]
pub struct HookDispatcher {
    registrations: Vec<HookRegistration>,
}

impl HookDispatcher {
    /// A dispatcher over registrations, kept in this order.
    pub fn new(registrations: Vec<HookRegistration>) -> Self {
        Self { registrations }
    }

    /// Appends a registration.
    pub fn register(&mut self, registration: HookRegistration) {
        self.registrations.push(registration);
    }

    /// The registrations in order.
    pub fn registrations(&self) -> &[HookRegistration] {
        &self.registrations
    }

    /// Whether any registration exists.
    pub fn is_empty(&self) -> bool {
        self.registrations.is_empty()
    }

    /// Invokes one registration with its own snapshot, deadline and cancellation.
    async fn invoke(
        &self,
        reg: &HookRegistration,
        event: HookEvent,
        cancellation: Option<&CancellationSignal>,
    ) -> Result<HookResult, HookError> {
        // `handle` itself runs inside the guarded poll: a closure handler that panics
        // before it returns its future is isolated like one that panics inside it.
        let handler = &reg.handler;
        let call = CatchUnwind::new(Box::pin(async move { handler.handle(event).await }));
        let timed = tokio::time::timeout(reg.timeout, call);
        let outcome = match cancellation {
            Some(signal) => {
                tokio::select! {
                    biased;
                    () = signal.cancelled() => {
                        return Err(HookError::new(HookErrorKind::Cancelled, "cancelled while the hook ran"));
                    }
                    out = timed => out,
                }
            }
            None => timed.await,
        };
        match outcome {
            Err(_) => Err(HookError::new(
                HookErrorKind::Timeout,
                format!("timed out after {:.3} s", reg.timeout.as_secs_f64()),
            )),
            Ok(Err(panic)) => Err(HookError::new(
                HookErrorKind::HandlerFailed,
                format!("panicked: {}", panic_message(&panic)),
            )),
            Ok(Ok(result)) => result,
        }
    }

    /// Runs the `run.started` hooks; failures are logged and returned.
    pub async fn run_started(
        &self,
        common: EventCommon,
        run: Value,
        input: Value,
    ) -> Vec<HookFailure> {
        let payload = EventPayload::RunStarted { run, input };
        self.dispatch_observer(HookEvent { common, payload }, None)
            .await
    }

    /// Runs the `run.finished` hooks; failures are logged and returned.
    pub async fn run_finished(
        &self,
        common: EventCommon,
        result: Value,
        status: RunStatus,
    ) -> Vec<HookFailure> {
        let payload = EventPayload::RunFinished { result, status };
        self.dispatch_observer(HookEvent { common, payload }, None)
            .await
    }

    async fn dispatch_observer(
        &self,
        event: HookEvent,
        cancellation: Option<&CancellationSignal>,
    ) -> Vec<HookFailure> {
        let kind = event.kind();
        let mut failures = Vec::new();
        for reg in self
            .registrations
            .iter()
            .filter(|r| r.applies_to(kind, None))
        {
            let error = match self.invoke(reg, event.clone(), cancellation).await {
                Ok(HookResult::None) => continue,
                Ok(_) => HookError::new(
                    HookErrorKind::Protocol,
                    format!("a {kind} hook may not return a tool result"),
                ),
                Err(e) if e.kind == HookErrorKind::Cancelled => break,
                Err(e) => e,
            };
            tracing::warn!(target: "iris::hooks", hook = %reg.name, event = %kind, code = error.code(), "hook failed: {error}");
            failures.push(HookFailure {
                hook: reg.name.clone(),
                event: kind,
                error,
            });
        }
        failures
    }
}

impl ToolHookDispatcher for HookDispatcher {
    fn before_tool<'a>(
        &'a self,
        ctx: &'a ToolExecutionContext,
        call_id: &'a str,
        tool_name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, BeforeOutcome> {
        Box::pin(async move {
            let event = HookEvent {
                common: EventCommon::from_context(ctx),
                payload: EventPayload::ToolBefore {
                    call_id: call_id.to_owned(),
                    tool_name: tool_name.to_owned(),
                    arguments: arguments.clone(),
                },
            };
            for reg in self
                .registrations
                .iter()
                .filter(|r| r.applies_to(HookEventKind::ToolBefore, Some(tool_name)))
            {
                if ctx.cancel_requested() {
                    return BeforeOutcome::Cancelled;
                }
                match self
                    .invoke(reg, event.clone(), ctx.cancellation.as_ref())
                    .await
                {
                    Ok(
                        HookResult::None
                        | HookResult::ToolBefore(ToolBeforeResult { deny_reason: None }),
                    ) => {}
                    Ok(HookResult::ToolBefore(ToolBeforeResult {
                        deny_reason: Some(reason),
                    })) => {
                        return BeforeOutcome::Deny(format!(
                            "hook `{}` denied the call: {reason}",
                            reg.name
                        ));
                    }
                    Ok(HookResult::ToolAfter(_)) => {
                        return fail_closed(
                            reg,
                            &HookError::new(
                                HookErrorKind::Protocol,
                                "a tool.before hook returned a tool.after result",
                            ),
                        );
                    }
                    Err(e) if e.kind == HookErrorKind::Cancelled => {
                        return BeforeOutcome::Cancelled;
                    }
                    Err(e) => return fail_closed(reg, &e),
                }
            }
            BeforeOutcome::Continue
        })
    }

    fn after_tool<'a>(
        &'a self,
        ctx: &'a ToolExecutionContext,
        call_id: &'a str,
        tool_name: &'a str,
        arguments: &'a Value,
        result: &'a ToolOutput,
        status: BodyStatus,
    ) -> BoxFuture<'a, Vec<String>> {
        Box::pin(async move {
            let event = HookEvent {
                common: EventCommon::from_context(ctx),
                payload: EventPayload::ToolAfter {
                    call_id: call_id.to_owned(),
                    tool_name: tool_name.to_owned(),
                    arguments: arguments.clone(),
                    result: serde_json::to_value(result).unwrap_or(Value::Null),
                    body_status: status.as_str().to_owned(),
                },
            };
            let mut feedback = Vec::new();
            for reg in self
                .registrations
                .iter()
                .filter(|r| r.applies_to(HookEventKind::ToolAfter, Some(tool_name)))
            {
                let error = match self
                    .invoke(reg, event.clone(), ctx.cancellation.as_ref())
                    .await
                {
                    Ok(HookResult::ToolAfter(ToolAfterResult {
                        feedback: Some(text),
                    })) => {
                        feedback.push(text);
                        continue;
                    }
                    Ok(
                        HookResult::None
                        | HookResult::ToolAfter(ToolAfterResult { feedback: None }),
                    ) => continue,
                    Ok(HookResult::ToolBefore(_)) => HookError::new(
                        HookErrorKind::Protocol,
                        "a tool.after hook returned a tool.before result",
                    ),
                    Err(e) if e.kind == HookErrorKind::Cancelled => break,
                    Err(e) => e,
                };
                tracing::warn!(target: "iris::hooks", hook = %reg.name, event = "tool.after", tool = tool_name, code = error.code(), "hook failed: {error}");
            }
            feedback
        })
    }
}

fn fail_closed(reg: &HookRegistration, error: &HookError) -> BeforeOutcome {
    tracing::warn!(target: "iris::hooks", hook = %reg.name, event = "tool.before", code = error.code(), "hook failed; denying the call: {error}");
    BeforeOutcome::Deny(format!(
        "hook `{}` failed ({}): {error}; the call was denied",
        reg.name,
        error.code()
    ))
}
