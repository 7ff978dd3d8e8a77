//! [`HookDispatcher`]: runs registrations in declared order, each with its own event
//! snapshot and deadline, and implements the executor's [`ToolHookDispatcher`].
//!
//! Failure policy (documented contract):
//! - `tool.before`: hooks run in declared order; the first deny stops the chain and
//!   denies the call. A hook that fails, panics, times out or answers with the wrong
//!   result type also denies (fail closed), with a reason naming the hook. The model
//!   always receives a tool result for a denied call (the executor builds it).
//! - `tool.before` replies may also rewrite the input (`updated_input`, seen by every
//!   later hook, validated and permission-checked again by the executor) or ask for a
//!   human approval (`ask`); a deny wins over both.
//! - `tool.after`, `run.started`, `run.finished`: failures are logged with `tracing` and
//!   returned to the caller as diagnostics; the run goes on. Feedback and additional
//!   context are collected in declared order; additional context is bounded by
//!   [`MAX_ADDITIONAL_CONTEXT_CHARS`].
//! - Cancellation is never turned into allow or deny: it surfaces as cancellation.

use iris_executor::{
    AfterOutcome, BeforeOutcome, BodyStatus, CatchUnwind, HookAsk, HookChanges, ToolHookDispatcher,
    UpdatedInput, panic_message,
};
use iris_tools_core::{BoxFuture, CancellationSignal, ToolExecutionContext, ToolOutput};
use serde_json::Value;

use crate::error::{HookError, HookErrorKind};
use crate::event::{EventCommon, EventPayload, HookEvent, HookEventKind, RunStatus};
use crate::registration::{
    HookRegistration, HookResult, MAX_ADDITIONAL_CONTEXT_CHARS, RunStartedResult, ToolAfterResult,
    ToolBeforeResult,
};

/// What the `run.started` hooks said.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunStartedOutcome {
    /// Additional context for the run's first model request, in declared order and
    /// bounded together by [`MAX_ADDITIONAL_CONTEXT_CHARS`].
    pub additional_context: Vec<String>,
    /// Hooks that failed (logged; the run goes on).
    pub failures: Vec<HookFailure>,
}

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

    /// Runs the `run.started` hooks: their additional context in declared order
    /// (bounded by [`MAX_ADDITIONAL_CONTEXT_CHARS`] together) for the run's first model
    /// request, and the failures, which are logged and never stop the run.
    pub async fn run_started(
        &self,
        common: EventCommon,
        run: Value,
        input: Value,
    ) -> RunStartedOutcome {
        let event = HookEvent {
            common,
            payload: EventPayload::RunStarted { run, input },
        };
        let kind = HookEventKind::RunStarted;
        let mut outcome = RunStartedOutcome::default();
        let mut context = Vec::new();
        for reg in self
            .registrations
            .iter()
            .filter(|r| r.applies_to(kind, None))
        {
            let error = match self.invoke(reg, event.clone(), None).await {
                Ok(HookResult::None) => continue,
                Ok(HookResult::RunStarted(RunStartedResult { additional_context })) => {
                    context.extend(additional_context);
                    continue;
                }
                Ok(other) => wrong_result(kind, &other),
                Err(e) if e.kind == HookErrorKind::Cancelled => break,
                Err(e) => e,
            };
            tracing::warn!(target: "iris::hooks", hook = %reg.name, event = %kind, code = error.code(), "hook failed: {error}");
            outcome.failures.push(HookFailure {
                hook: reg.name.clone(),
                event: kind,
                error,
            });
        }
        outcome.additional_context = bound_context(context);
        outcome
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
                Ok(other) => wrong_result(kind, &other),
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
    /// Hooks run in declared order. The first deny stops the chain. An
    /// `updated_input` replaces the arguments every later hook sees (the executor
    /// validates and permission-checks the last one); the first `ask` is kept, and a
    /// later hook may still deny.
    fn before_tool<'a>(
        &'a self,
        ctx: &'a ToolExecutionContext,
        call_id: &'a str,
        tool_name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, BeforeOutcome> {
        Box::pin(async move {
            let common = EventCommon::from_context(ctx);
            let mut current = arguments.clone();
            let mut rewriters: Vec<String> = Vec::new();
            let mut ask: Option<HookAsk> = None;
            for reg in self
                .registrations
                .iter()
                .filter(|r| r.applies_to(HookEventKind::ToolBefore, Some(tool_name)))
            {
                if ctx.cancel_requested() {
                    return BeforeOutcome::Cancelled;
                }
                let event = HookEvent {
                    common: common.clone(),
                    payload: EventPayload::ToolBefore {
                        call_id: call_id.to_owned(),
                        tool_name: tool_name.to_owned(),
                        arguments: current.clone(),
                    },
                };
                match self.invoke(reg, event, ctx.cancellation.as_ref()).await {
                    Ok(HookResult::None) => {}
                    Ok(HookResult::ToolBefore(ToolBeforeResult {
                        deny_reason: Some(reason),
                        ..
                    })) => {
                        return BeforeOutcome::Deny(format!(
                            "hook `{}` denied the call: {reason}",
                            reg.name
                        ));
                    }
                    Ok(HookResult::ToolBefore(ToolBeforeResult {
                        deny_reason: None,
                        updated_input,
                        ask: asked,
                    })) => {
                        if let Some(new) = updated_input {
                            if !new.is_object() {
                                return fail_closed(
                                    reg,
                                    &HookError::new(
                                        HookErrorKind::Protocol,
                                        "`updated_input` must be a JSON object",
                                    ),
                                );
                            }
                            current = new;
                            rewriters.push(reg.name.clone());
                        }
                        if let (None, Some(reason)) = (&ask, asked) {
                            ask = Some(HookAsk {
                                hook: reg.name.clone(),
                                reason,
                            });
                        }
                    }
                    Ok(other) => {
                        return fail_closed(reg, &wrong_result(HookEventKind::ToolBefore, &other));
                    }
                    Err(e) if e.kind == HookErrorKind::Cancelled => {
                        return BeforeOutcome::Cancelled;
                    }
                    Err(e) => return fail_closed(reg, &e),
                }
            }
            let updated_input = (!rewriters.is_empty()).then_some(UpdatedInput {
                hooks: rewriters,
                arguments: current,
            });
            if updated_input.is_none() && ask.is_none() {
                return BeforeOutcome::Continue;
            }
            BeforeOutcome::Changed(Box::new(HookChanges { updated_input, ask }))
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
    ) -> BoxFuture<'a, AfterOutcome> {
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
            let mut outcome = AfterOutcome::default();
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
                        feedback,
                        additional_context,
                    })) => {
                        outcome.feedback.extend(feedback);
                        outcome.additional_context.extend(additional_context);
                        continue;
                    }
                    Ok(HookResult::None) => continue,
                    Ok(other) => wrong_result(HookEventKind::ToolAfter, &other),
                    Err(e) if e.kind == HookErrorKind::Cancelled => break,
                    Err(e) => e,
                };
                tracing::warn!(target: "iris::hooks", hook = %reg.name, event = "tool.after", tool = tool_name, code = error.code(), "hook failed: {error}");
            }
            outcome.additional_context =
                bound_context(std::mem::take(&mut outcome.additional_context));
            outcome
        })
    }
}

/// The protocol error for a handler that answered another event's result.
fn wrong_result(kind: HookEventKind, result: &HookResult) -> HookError {
    let other = result.event().map_or("no", HookEventKind::as_str);
    HookError::new(
        HookErrorKind::Protocol,
        format!("a {kind} hook returned a {other} result"),
    )
}

/// Keeps at most [`MAX_ADDITIONAL_CONTEXT_CHARS`] characters of additional context, in
/// order; the text past the limit is cut, and the cut is named in the last text kept.
pub fn bound_context(texts: Vec<String>) -> Vec<String> {
    let total: usize = texts.iter().map(|t| t.chars().count()).sum();
    if total <= MAX_ADDITIONAL_CONTEXT_CHARS {
        return texts;
    }
    let mut left = MAX_ADDITIONAL_CONTEXT_CHARS;
    let mut kept = Vec::new();
    for text in texts {
        if left == 0 {
            break;
        }
        let n = text.chars().count();
        if n <= left {
            left -= n;
            kept.push(text);
        } else {
            kept.push(text.chars().take(left).collect());
            left = 0;
        }
    }
    let cut = total - MAX_ADDITIONAL_CONTEXT_CHARS;
    tracing::warn!(target: "iris::hooks", cut, "hook additional context over {MAX_ADDITIONAL_CONTEXT_CHARS} characters; the rest was cut");
    if let Some(last) = kept.last_mut() {
        last.push_str(&format!(
            "\n[{cut} more characters of hook context cut: the limit is {MAX_ADDITIONAL_CONTEXT_CHARS}]"
        ));
    }
    kept
}

fn fail_closed(reg: &HookRegistration, error: &HookError) -> BeforeOutcome {
    tracing::warn!(target: "iris::hooks", hook = %reg.name, event = "tool.before", code = error.code(), "hook failed; denying the call: {error}");
    BeforeOutcome::Deny(format!(
        "hook `{}` failed ({}): {error}; the call was denied",
        reg.name,
        error.code()
    ))
}
