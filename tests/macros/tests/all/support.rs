//! Shared helpers: run a tool through the `Tool` trait the way the executor does.

use iris_tools_core::{Tool, ToolExecutionContext, ToolOutput};
use serde_json::Value;

/// What a call should produce.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Expect<'a> {
    /// A successful result whose model content is exactly this text.
    Text(&'a str),
    /// A successful result whose model content contains this text.
    Contains(&'a str),
    /// Rejected by `validate_input` with this code, before the body runs.
    Invalid(&'a str),
    /// The body ran and returned an error result with this code.
    Failed(&'a str),
}

/// `validate_input`, then `run`, as the executor does; `None` when validation failed.
pub(crate) async fn call(
    tool: &dyn Tool,
    input: Value,
    ctx: &ToolExecutionContext,
) -> Result<ToolOutput, iris_tools_core::ToolErrorInfo> {
    let input = tool.validate_input(input)?;
    Ok(tool.run(input, ctx).await)
}

/// Calls `tool` with `input` and checks the outcome.
pub(crate) async fn check(
    tool: &dyn Tool,
    input: Value,
    ctx: &ToolExecutionContext,
    expect: Expect<'_>,
) {
    let name = &tool.definition().name;
    let outcome = call(tool, input.clone(), ctx).await;
    match (outcome, expect) {
        (Ok(result), Expect::Text(text)) => {
            assert!(!result.is_error(), "{name}({input}): {result:?}");
            assert_eq!(result.model_content(), text, "{name}({input})");
        }
        (Ok(result), Expect::Contains(text)) => {
            assert!(!result.is_error(), "{name}({input}): {result:?}");
            assert!(
                result.model_content().contains(text),
                "{name}({input}): `{text}` not in {}",
                result.model_content()
            );
        }
        (Err(error), Expect::Invalid(code)) => {
            assert_eq!(error.code, code, "{name}({input}): {error}");
        }
        (Ok(result), Expect::Failed(code)) => {
            assert!(result.is_error(), "{name}({input}) should fail: {result:?}");
            assert_eq!(
                result.error_code(),
                Some(code),
                "{name}({input}): {result:?}"
            );
        }
        (outcome, expect) => panic!("{name}({input}): expected {expect:?}, got {outcome:?}"),
    }
}
