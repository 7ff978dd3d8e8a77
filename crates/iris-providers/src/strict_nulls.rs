//! [`StrictNullsLayer`]: undoes OpenAI strict mode's `null`s before validation.
//!
//! In strict mode ([`crate::adapters::Strict::Yes`]) every property is required, so a
//! model sends `null` for an optional argument it does not mean to give. Those nulls
//! would fail the tool's original schema. This layer sits in the executor's layer slot
//! ([`iris_executor::ToolExecutor::with_layer`]), ahead of validation, and runs
//! [`strip_strict_nulls`] on the arguments of every call whose context says the
//! provider used strict mode ([`StrictModeCall`] in its extensions).

use iris_executor::{Next, ToolMiddleware, ToolRequest};
use iris_tools_core::{BoxFuture, ToolOutput};

use crate::adapters::strip_strict_nulls;

/// Marks a call context as coming from a provider request sent in strict mode; a
/// provider client attaches it with
/// [`ToolExecutionContext::with_extension`](iris_tools_core::ToolExecutionContext::with_extension).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StrictModeCall;

/// The strict-null stage of the executor pipeline; see the [module docs](self).
///
/// ```
/// use iris_executor::ToolExecutor;
/// use iris_providers::{StrictModeCall, StrictNullsLayer};
/// use iris_tools_core::{FnTool, ToolDefinition, ToolExecutionContext, ToolOutput, ToolRegistry, ToolUse};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let registry = ToolRegistry::new();
/// let schema = json!({"type": "object",
///     "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
///     "required": ["path"]});
/// registry.register(FnTool::new(ToolDefinition::new("read", "Read a file.", schema),
///     |input, _| async move { ToolOutput::text(input.to_string()) })).unwrap();
/// let executor = ToolExecutor::new(registry).with_layer(StrictNullsLayer);
///
/// let ctx = ToolExecutionContext::new(".").with_extension(StrictModeCall);
/// let call = ToolUse::new("c1", "read", json!({"path": "a.txt", "limit": null}));
/// let result = executor.execute_one(&call, &ctx, None).await;
/// assert_eq!(result.model_content(), r#"{"path":"a.txt"}"#);
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct StrictNullsLayer;

impl ToolMiddleware for StrictNullsLayer {
    fn wrap_tool_call<'a>(
        &'a self,
        mut req: ToolRequest,
        next: Next<'a>,
    ) -> BoxFuture<'a, ToolOutput> {
        if req.ctx.extensions.get::<StrictModeCall>().is_some() {
            let schema = &req.tool().definition().input_schema;
            let stripped = strip_strict_nulls(schema, req.arguments().clone());
            if &stripped != req.arguments() {
                // Before validation: the executor validates these arguments as the
                // model's own, once.
                req.input = iris_tools_core::ToolInput::new(stripped);
            }
        }
        next.run(req)
    }
}
