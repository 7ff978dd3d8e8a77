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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeforeOutcome {
    /// Run the call.
    Continue,
    /// Do not run the call; the model receives a `HOOK_DENIED` result with this reason.
    Deny(String),
    /// Cancellation arrived while hooks ran.
    Cancelled,
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

    /// Runs the `tool.after` hooks for a call whose body ran; returns feedback texts
    /// in order.
    fn after_tool<'a>(
        &'a self,
        ctx: &'a ToolExecutionContext,
        call_id: &'a str,
        tool_name: &'a str,
        arguments: &'a Value,
        result: &'a ToolOutput,
        status: BodyStatus,
    ) -> BoxFuture<'a, Vec<String>>;
}
