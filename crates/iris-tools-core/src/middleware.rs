//! [`ToolMiddleware`]: wrappers around a tool body, first one outermost.

use std::path::PathBuf;

use serde_json::Value;

use crate::result::ToolResult;
use crate::tool::BoxFuture;

/// What a middleware sees of one call. `arguments` is an independent snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The call id.
    pub tool_use_id: String,
    /// The canonical tool name.
    pub tool_name: String,
    /// A snapshot of the validated arguments.
    pub arguments: Value,
    /// Agent id.
    pub agent_id: String,
    /// Session id.
    pub session_id: String,
    /// Run id.
    pub run_id: String,
    /// Activation id.
    pub activation_id: String,
    /// The workspace root.
    pub workspace_root: PathBuf,
}

/// The rest of the chain: the next middleware, or the body. It takes no arguments and
/// is consumed when run, so a middleware calls it at most once by construction.
pub struct ToolNext<'a> {
    next: Box<dyn FnOnce() -> BoxFuture<'a, ToolResult> + Send + 'a>,
}

impl<'a> ToolNext<'a> {
    /// Wraps the rest of the chain.
    pub fn new(next: impl FnOnce() -> BoxFuture<'a, ToolResult> + Send + 'a) -> Self {
        Self {
            next: Box::new(next),
        }
    }

    /// Runs the rest of the chain.
    pub async fn run(self) -> ToolResult {
        (self.next)().await
    }
}

impl std::fmt::Debug for ToolNext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ToolNext")
    }
}

/// A wrapper around tool bodies. It may inspect the call, short-circuit with its own
/// result (the body and `tool.after` hooks then do not run), or call `next` once and
/// return a new result built from the one it got.
pub trait ToolMiddleware: Send + Sync {
    /// Wraps one call.
    fn wrap_tool_call<'a>(
        &'a self,
        call: ToolCall,
        next: ToolNext<'a>,
    ) -> BoxFuture<'a, ToolResult>;
}
