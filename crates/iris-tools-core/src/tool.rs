//! The [`Tool`] trait (the seed's `BaseTool`) and the model's [`ToolUse`] request.

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::ToolExecutionContext;
use crate::definition::{ToolCapability, ToolDefinition};
use crate::error::ToolErrorInfo;
use crate::result::ToolResult;

/// A boxed, `Send` future: what object-safe async trait methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Who owns a call's deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolTimeoutOwner {
    /// The executor enforces the deadline around the body.
    #[default]
    Runtime,
    /// The tool enforces its own deadline (command tools: they must kill a process
    /// tree and report `timed_out` themselves). The executor still passes the deadline
    /// in [`ToolExecutionContext::tool_timeout_seconds`].
    Tool,
}

/// A tool the executor can run. Object-safe: registries hold `Arc<dyn Tool>`.
///
/// Implement it by hand for class-style tools, or let `#[tool]` implement it for an
/// async fn.
///
/// ```
/// use iris_tools_core::{BoxFuture, Tool, ToolDefinition, ToolExecutionContext, ToolResult};
/// use serde_json::{json, Value};
///
/// struct Echo(ToolDefinition);
///
/// impl Tool for Echo {
///     fn definition(&self) -> &ToolDefinition { &self.0 }
///     fn run<'a>(&'a self, input: Value, _ctx: &'a ToolExecutionContext) -> BoxFuture<'a, ToolResult> {
///         Box::pin(async move { ToolResult::ok_text(input["text"].as_str().unwrap_or_default()) })
///     }
/// }
///
/// let echo = Echo(ToolDefinition::new("echo", "Echo the text back.", json!({"type": "object"})));
/// assert!(echo.is_read_only());
/// assert!(echo.is_concurrency_safe());
/// ```
pub trait Tool: Send + Sync + 'static {
    /// The tool's definition.
    fn definition(&self) -> &ToolDefinition;

    /// Runs the body with validated input.
    fn run<'a>(&'a self, input: Value, ctx: &'a ToolExecutionContext) -> BoxFuture<'a, ToolResult>;

    /// Parses raw model input. The default returns the raw value unchanged; the
    /// executor has already checked it against `input_schema`.
    fn validate_input(&self, raw: Value) -> Result<Value, ToolErrorInfo> {
        Ok(raw)
    }

    /// True only when no write/execute/network/mcp/agent capability is declared.
    fn is_read_only(&self) -> bool {
        let def = self.definition();
        !(def.has(ToolCapability::Write)
            || def.has(ToolCapability::Execute)
            || def.has(ToolCapability::Network)
            || def.has(ToolCapability::Mcp)
            || def.has(ToolCapability::Agent))
    }

    /// True when write or execute is declared.
    fn is_destructive(&self) -> bool {
        let def = self.definition();
        def.has(ToolCapability::Write) || def.has(ToolCapability::Execute)
    }

    /// Whether two calls may run at the same time. Default true; actual parallelism
    /// also needs [`Tool::is_read_only`].
    fn is_concurrency_safe(&self) -> bool {
        true
    }

    /// Who enforces the deadline.
    fn timeout_owner(&self) -> ToolTimeoutOwner {
        ToolTimeoutOwner::Runtime
    }
}

impl std::fmt::Debug for dyn Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.definition().name)
            .finish_non_exhaustive()
    }
}

/// One tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUse {
    /// The provider's call id.
    pub id: String,
    /// The name (or alias) the model called.
    pub name: String,
    /// The raw arguments.
    pub input: Value,
}

impl ToolUse {
    /// A tool call.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            input,
        }
    }
}
