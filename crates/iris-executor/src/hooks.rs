//! The hook-dispatcher trait the executor calls; `iris-hooks` implements it.

use serde_json::Value;

use iris_tools_core::{BoxFuture, ToolExecutionContext, ToolOutput};

/// Whether the body ran to a success or an error (the `tool.after` `body_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyStatus {
    /// The body returned a non-error result.
    Success,
    /// The body returned an error result (including timeout and panic).
    Error,
}

impl BodyStatus {
    /// `"success"` or `"error"`.
    pub fn as_str(self) -> &'static str {
        match self {
            BodyStatus::Success => "success",
            BodyStatus::Error => "error",
        }
    }
}

/// The outcome of the `tool.before` hooks for one call.
#[derive(Debug, Clone, PartialEq)]
pub enum BeforeOutcome {
    /// Run the call.
    Continue,
    /// Run the call as hooks changed it: with new arguments (validated and
    /// permission-checked again), or only once a human approved it.
    Changed(Box<HookChanges>),
    /// Do not run the call; the model receives a `HOOK_DENIED` result with this reason.
    Deny(String),
    /// Cancellation arrived while hooks ran.
    Cancelled,
}

/// What `tool.before` hooks changed about a call they let through.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HookChanges {
    /// Arguments that replace the call's (the last rewrite wins; later hooks saw it).
    pub updated_input: Option<UpdatedInput>,
    /// A hook asked for a human approval before the call runs.
    pub ask: Option<HookAsk>,
}

/// Arguments hooks rewrote.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdatedInput {
    /// The hooks that returned `updated_input`, in the order they ran.
    pub hooks: Vec<String>,
    /// The arguments the body should receive.
    pub arguments: Value,
}

/// A hook's request for a human approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookAsk {
    /// The hook that asked.
    pub hook: String,
    /// Why, in the hook's words.
    pub reason: String,
}

/// What the `tool.after` hooks of one call added for the model.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AfterOutcome {
    /// Feedback texts in order ([`iris_tools_core::ToolOutput::hook_feedback`]).
    pub feedback: Vec<String>,
    /// Additional context in order ([`iris_tools_core::ToolOutput::hook_context`]);
    /// the dispatcher bounds its size.
    pub additional_context: Vec<String>,
}

/// Dispatches tool hooks for the executor. Implementations decide ordering, deadlines
/// and failure policy (a failing before-hook must deny).
pub trait ToolHookDispatcher: Send + Sync {
    /// Runs the `tool.before` hooks for one call.
    fn before_tool<'a>(
        &'a self,
        ctx: &'a ToolExecutionContext,
        call_id: &'a str,
        tool_name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, BeforeOutcome>;

    /// Runs the `tool.after` hooks for a call whose body ran; returns their feedback
    /// and additional context in order.
    fn after_tool<'a>(
        &'a self,
        ctx: &'a ToolExecutionContext,
        call_id: &'a str,
        tool_name: &'a str,
        arguments: &'a Value,
        result: &'a ToolOutput,
        status: BodyStatus,
    ) -> BoxFuture<'a, AfterOutcome>;
}
