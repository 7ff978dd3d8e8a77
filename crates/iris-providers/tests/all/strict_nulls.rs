//! Tests for the `strict_nulls` area: `StrictNullsLayer` through a real executor, with
//! and without the strict-mode marker on the context.
// Tests report failures by panicking, so unwrap is the clearest assertion here.
#![allow(clippy::unwrap_used)]

use iris_executor::ToolExecutor;
use iris_providers::{StrictModeCall, StrictNullsLayer};
use iris_tools_core::{
    FnTool, ToolDefinition, ToolExecutionContext, ToolOutput, ToolRegistry, ToolUse, codes,
};
use serde_json::json;

fn executor() -> ToolExecutor {
    let registry = ToolRegistry::new();
    let schema = json!({
        "type": "object",
        "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["path"],
        "additionalProperties": false
    });
    registry
        .register(FnTool::new(
            ToolDefinition::new("read", "Read a file.", schema),
            |input, _| async move { ToolOutput::text(input.to_string()) },
        ))
        .unwrap();
    ToolExecutor::new(registry).with_layer(StrictNullsLayer)
}

/// (context marked strict, arguments, expected code, expected body input)
#[tokio::test]
async fn strict_nulls_are_stripped_only_for_strict_calls() {
    let strict = ToolExecutionContext::new(".").with_extension(StrictModeCall);
    let plain = ToolExecutionContext::new(".");
    let table = [
        (
            &strict,
            json!({"path": "a.txt", "limit": null}),
            None,
            Some(r#"{"path":"a.txt"}"#),
        ),
        (
            &strict,
            json!({"path": "a.txt", "limit": 5}),
            None,
            Some(r#"{"limit":5,"path":"a.txt"}"#),
        ),
        // A required property sent as null is not an optional one left out: still
        // invalid.
        (
            &strict,
            json!({"path": null}),
            Some(codes::INVALID_INPUT),
            None,
        ),
        // Without the marker the arguments are the model's own: `null` is invalid.
        (
            &plain,
            json!({"path": "a.txt", "limit": null}),
            Some(codes::INVALID_INPUT),
            None,
        ),
    ];
    let executor = executor();
    for (ctx, args, code, body) in table {
        let result = executor
            .execute_one(&ToolUse::new("c", "read", args.clone()), ctx, None)
            .await;
        assert_eq!(result.error_code(), code, "{args}");
        if let Some(body) = body {
            assert_eq!(result.model_content(), body, "{args}");
        }
    }
}
