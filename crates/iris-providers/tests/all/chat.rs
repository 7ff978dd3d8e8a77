//! Tests for the `chat` area: the provider-neutral conversation types, their serde
//! form, and how tool results and malformed calls enter the history.
// Tests report failures by panicking, so unwrap is the clearest assertion here.
#![allow(clippy::unwrap_used)]

use iris_providers::ProviderError;
use iris_providers::chat::{
    CompletionResponse, Message, ModelToolCall, Part, Role, StopReason, Usage,
};
use iris_tools_core::{ContentBlock, ToolOutput, ToolResultBlock};
use serde_json::{Value, json};

#[test]
fn tool_call_arguments_parse_once_and_problems_are_data() {
    // (raw text, parsed arguments, problem prefix)
    let cases = [
        (r#"{"a": 1}"#, json!({"a": 1}), None),
        ("", json!({}), None),
        ("  ", json!({}), None),
        (r#"{"a": 1"#, Value::Null, Some("not valid JSON")),
        ("[1]", Value::Null, Some("not a JSON object (an array)")),
        (
            r#""text""#,
            Value::Null,
            Some("not a JSON object (a string)"),
        ),
        ("null", Value::Null, Some("not a JSON object (null)")),
        ("{'a': 1}", Value::Null, Some("not valid JSON")),
    ];
    for (raw, arguments, problem) in cases {
        let call = ModelToolCall::parse("c1", "tool", raw);
        assert_eq!(call.arguments, arguments, "{raw}");
        assert_eq!(call.raw_arguments, raw);
        match problem {
            None => assert_eq!(call.problem, None, "{raw}"),
            Some(prefix) => assert!(
                call.problem.as_deref().unwrap().starts_with(prefix),
                "{raw}: {:?}",
                call.problem
            ),
        }
    }
    let unnamed = ModelToolCall::parse("c1", " ", "{}");
    assert_eq!(unnamed.problem.as_deref(), Some("the call names no tool"));
    assert!(unnamed.problem_result().is_some());
}

#[test]
fn tool_results_keep_images_and_errors() {
    let image = ToolOutput::new(vec![
        ContentBlock::text("chart"),
        ContentBlock::image("image/png", "AAAA"),
    ])
    .into_result("c1", "plot");
    let failed = ToolOutput::err("TOOL_FAILED", "boom").into_result("c2", "plot");
    let message = Message::tool_results([&image, &failed]);
    assert_eq!(message.role, Role::Tool);
    assert_eq!(
        message.content,
        vec![
            Part::ToolResult(ToolResultBlock {
                tool_use_id: "c1".into(),
                tool_name: "plot".into(),
                content: vec![
                    ContentBlock::text("chart"),
                    ContentBlock::image("image/png", "AAAA"),
                ],
                is_error: false,
            }),
            Part::ToolResult(ToolResultBlock {
                tool_use_id: "c2".into(),
                tool_name: "plot".into(),
                content: vec![ContentBlock::text("Error[TOOL_FAILED]: boom")],
                is_error: true,
            }),
        ]
    );
    // `to_msg()` converts the same way.
    assert_eq!(Message::from(image.to_msg()).content[0], message.content[0]);
}

#[test]
fn messages_have_a_stable_serde_form() {
    let mut turn = CompletionResponse::text("Looking.");
    turn.tool_calls = vec![
        ModelToolCall::parse("c1", "read_file", r#"{"file_path":"a"}"#),
        ModelToolCall::parse("c2", "read_file", "{oops"),
    ];
    turn.stop = StopReason::ToolUse;
    let history = vec![
        Message::new(
            Role::User,
            vec![Part::text("hi"), Part::image("image/gif", "R0lG")],
        ),
        turn.to_message(),
        Message::tool_results([&ToolOutput::text("A").into_result("c1", "read_file")]),
    ];
    let value = serde_json::to_value(&history).unwrap();
    assert_eq!(
        value,
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "mime_type": "image/gif", "data": "R0lG"}
            ]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_call", "id": "c1", "name": "read_file", "arguments": {"file_path": "a"}},
                // A malformed call is recorded with its raw text.
                {"type": "tool_call", "id": "c2", "name": "read_file", "arguments": "{oops"}
            ]},
            {"role": "tool", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "tool_name": "read_file",
                    "content": [{"type": "text", "text": "A"}], "is_error": false}
            ]}
        ])
    );
    let back: Vec<Message> = serde_json::from_value(value).unwrap();
    assert_eq!(back, history);

    let turn_json = serde_json::to_value(&turn).unwrap();
    assert_eq!(turn_json["stop"], "tool_use");
    assert_eq!(
        turn_json["usage"],
        json!({"input_tokens": 0, "output_tokens": 0})
    );
    let back: CompletionResponse = serde_json::from_value(turn_json).unwrap();
    assert_eq!(back, turn);
}

#[test]
fn usage_adds_up_and_errors_have_codes() {
    let mut total = Usage::new(10, 2);
    total += Usage::new(5, 1);
    assert_eq!(total, Usage::new(15, 3));
    assert_eq!(total.total(), 18);

    let codes: Vec<_> = [
        ProviderError::Auth {
            status: 403,
            message: None,
        },
        ProviderError::BadResponse { reason: "x".into() },
        ProviderError::Timeout {
            after: std::time::Duration::from_secs(3),
        },
        ProviderError::Unavailable {
            status: None,
            reason: "x".into(),
        },
        ProviderError::Refused { message: None },
        ProviderError::InvalidRequest {
            status: Some(400),
            message: "x".into(),
        },
        ProviderError::ScriptExhausted { played: 2 },
    ]
    .iter()
    .map(|e| (e.code(), e.is_retryable()))
    .collect();
    assert_eq!(
        codes,
        vec![
            ("PROVIDER_AUTH", false),
            ("PROVIDER_BAD_RESPONSE", false),
            ("PROVIDER_TIMEOUT", true),
            ("PROVIDER_UNAVAILABLE", true),
            ("PROVIDER_REFUSED", false),
            ("PROVIDER_INVALID_REQUEST", false),
            ("PROVIDER_SCRIPT_EXHAUSTED", false),
        ]
    );
    let info = ProviderError::Timeout {
        after: std::time::Duration::from_secs(3),
    }
    .to_info();
    assert_eq!(info.details["timeout_seconds"], 3.0);
    assert!(info.message.contains("3 s"), "{}", info.message);
}
