//! Tests for the `anthropic` area: the Messages client against a local server that
//! answers with fixtures written from Anthropic's API reference (Messages, Streaming
//! Messages, errors).
// Tests report failures by panicking, so unwrap is the clearest assertion here.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use iris_providers::anthropic::Client;
use iris_providers::chat::{CompletionRequest, Message, StopReason, StreamEvent, Usage};
use iris_providers::{CompletionProvider, ProviderError};
use serde_json::{Value, json};

use crate::support::{
    Reply, TEST_KEY, TestServer, after_one_retry, anthropic_sse, bad_stream, drain,
    failed_read_and_screenshot, looking_turn, picture_question, stream_turn, weather_spec,
};

const MODEL: &str = "claude-sonnet-4-5-20250929";

fn client(server: &TestServer) -> Client {
    Client::new(TEST_KEY).with_base_url(&server.url()).unwrap()
}

/// The request most tests send.
pub(crate) fn request() -> CompletionRequest {
    CompletionRequest::new("claude-sonnet-4-5")
        .with_instructions("You are terse.")
        .with_message(Message::user("What's the weather in Paris?"))
}

/// The HTTP statuses of the table-driven status test: (status, error `type`, code).
pub(crate) const STATUSES: &[(u16, &str, &str)] = &[
    (401, "authentication_error", "PROVIDER_AUTH"),
    (403, "permission_error", "PROVIDER_AUTH"),
    (400, "invalid_request_error", "PROVIDER_INVALID_REQUEST"),
    (413, "request_too_large", "PROVIDER_INVALID_REQUEST"),
    (500, "api_error", "PROVIDER_UNAVAILABLE"),
    (529, "overloaded_error", "PROVIDER_UNAVAILABLE"),
];

/// An error body of this `type` that echoes the key.
pub(crate) fn error_body(_status: u16, kind: &str) -> Value {
    json!({"type": "error", "error": {"type": kind,
        "message": format!("key {TEST_KEY} was not accepted")}})
}

/// A whole answer saying `text`, for the table-driven tests of `wire_formats`.
pub(crate) fn answer(text: &str) -> Value {
    message(json!([{"type": "text", "text": text}]), "end_turn")
}

fn message_start() -> Value {
    json!({"type": "message_start", "message": {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
        "content": [], "model": MODEL, "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 472, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 100, "output_tokens": 2}
    }})
}

fn text_start(index: u64) -> Value {
    json!({"type": "content_block_start", "index": index,
        "content_block": {"type": "text", "text": ""}})
}

fn text_delta(index: u64, text: &str) -> Value {
    json!({"type": "content_block_delta", "index": index,
        "delta": {"type": "text_delta", "text": text}})
}

fn tool_start(index: u64, id: &str, name: &str) -> Value {
    json!({"type": "content_block_start", "index": index,
        "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})
}

fn json_delta(index: u64, partial: &str) -> Value {
    json!({"type": "content_block_delta", "index": index,
        "delta": {"type": "input_json_delta", "partial_json": partial}})
}

fn block_stop(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn message_delta(stop_reason: &str, output_tokens: u64) -> Value {
    json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": output_tokens}})
}

fn message_stop() -> Value {
    json!({"type": "message_stop"})
}

fn ping() -> Value {
    json!({"type": "ping"})
}

/// A non-streamed `message`.
fn message(content: Value, stop_reason: &str) -> Value {
    json!({"id": "msg_01", "type": "message", "role": "assistant", "model": MODEL,
        "content": content, "stop_reason": stop_reason, "stop_sequence": null,
        "usage": {"input_tokens": 2095, "output_tokens": 503}})
}

#[tokio::test]
async fn a_streamed_answer_yields_deltas_usage_and_the_turn() {
    let server = TestServer::start(Reply::sse(anthropic_sse(&[
        message_start(),
        text_start(0),
        ping(),
        text_delta(0, "Sunny, "),
        text_delta(0, "22 °C."),
        block_stop(0),
        message_delta("end_turn", 15),
        message_stop(),
    ])))
    .await;
    let (events, turn) = stream_turn(&client(&server), &request()).await;

    assert_eq!(
        events,
        vec![
            StreamEvent::TextDelta("Sunny, ".into()),
            StreamEvent::TextDelta("22 °C.".into()),
            StreamEvent::Usage(Usage::new(572, 15)),
            StreamEvent::Completed(turn.clone()),
        ]
    );
    assert_eq!(turn.text, "Sunny, 22 °C.");
    assert_eq!(turn.stop, StopReason::EndTurn);
    // Cache reads count as input.
    assert_eq!(turn.usage, Usage::new(572, 15));
    assert_eq!(turn.id.as_deref(), Some("msg_01XFDUDYJgAACzvnptvVoYEL"));
    assert_eq!(turn.model.as_deref(), Some(MODEL));

    let sent = server.only_request();
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some(TEST_KEY));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "system": "You are terse.",
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "What's the weather in Paris?"}
            ]}],
            "stream": true
        })
    );
}

#[tokio::test]
async fn a_non_streamed_answer_is_read_whole() {
    let server = TestServer::start(Reply::json(message(
        json!([
            {"type": "thinking", "thinking": "The user wants weather.", "signature": "EqQB"},
            {"type": "text", "text": "I'll check."},
            {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9",
                "name": "get_weather", "input": {"location": "Paris"}}
        ]),
        "tool_use",
    )))
    .await;
    let request = request()
        .with_tools(vec![weather_spec()])
        .with_max_output_tokens(1024)
        .with_temperature(0.0);
    let turn = client(&server).complete(&request).await.unwrap();

    assert_eq!(turn.text, "I'll check.");
    assert_eq!(turn.stop, StopReason::ToolUse);
    assert_eq!(turn.usage, Usage::new(2095, 503));
    assert_eq!(turn.tool_calls.len(), 1);
    assert_eq!(turn.tool_calls[0].id, "toolu_01A09q90qw90lq917835lq9");
    assert_eq!(turn.tool_calls[0].arguments, json!({"location": "Paris"}));

    let body = server.only_request().body;
    assert_eq!(body.get("stream"), None);
    assert_eq!(body["max_tokens"], 1024);
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["tools"][0]["name"], "get_weather");
    assert_eq!(
        body["tools"][0]["input_schema"]["required"],
        json!(["location"])
    );
}

/// `with_api_version` sends another `anthropic-version`; one no header can carry is a
/// configuration error, and nothing is sent.
#[tokio::test]
async fn another_api_version_is_sent_and_a_bad_one_is_refused() {
    let server = TestServer::start(Reply::json(message(
        json!([{"type": "text", "text": "ok"}]),
        "end_turn",
    )))
    .await;
    let answer = client(&server).with_api_version("2024-10-22");
    answer.complete(&request()).await.unwrap();
    let sent = server.only_request();
    assert_eq!(sent.header("anthropic-version"), Some("2024-10-22"));
    let bad = client(&server).with_api_version("2024\n10-22");
    let err = bad.complete(&request()).await.unwrap_err();
    assert!(
        matches!(
            err,
            ProviderError::Config {
                field: "api_version",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn two_parallel_tool_calls_follow_text_and_thinking() {
    let server = TestServer::start(Reply::sse(anthropic_sse(&[
        message_start(),
        json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "thinking", "thinking": ""}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Two cities."}}),
        json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "signature_delta", "signature": "EqQB"}}),
        block_stop(0),
        text_start(1),
        text_delta(1, "Checking both."),
        block_stop(1),
        tool_start(2, "toolu_paris", "get_weather"),
        json_delta(2, ""),
        json_delta(2, "{\"location\": \"Paris\"}"),
        block_stop(2),
        tool_start(3, "toolu_rome", "get_weather"),
        json_delta(3, "{\"location\": \"Rome\"}"),
        block_stop(3),
        message_delta("tool_use", 89),
        message_stop(),
    ])))
    .await;
    let (events, turn) = stream_turn(&client(&server), &request()).await;

    assert_eq!(turn.text, "Checking both.");
    assert_eq!(turn.stop, StopReason::ToolUse);
    let calls: Vec<_> = turn
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.arguments.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("toolu_paris", json!({"location": "Paris"})),
            ("toolu_rome", json!({"location": "Rome"})),
        ]
    );
    // Indexes are positions among the calls, not content-block indexes.
    let starts: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStarted { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(starts, vec![0, 1]);
}

#[tokio::test]
async fn a_tool_call_split_across_chunks_is_reassembled() {
    let pieces = [
        "{\"loca",
        "tion\": \"San Fra",
        "ncisco, CA\", \"unit\": \"fah",
        "renheit\"}",
    ];
    let mut events = vec![message_start(), tool_start(0, "toolu_sf", "get_weather")];
    events.extend(pieces.iter().map(|p| json_delta(0, p)));
    events.extend([block_stop(0), message_delta("tool_use", 40), message_stop()]);
    let server = TestServer::start(Reply::Sse {
        body: anthropic_sse(&events),
        piece: 3,
        complete: true,
    })
    .await;
    let (_, turn) = stream_turn(&client(&server), &request()).await;
    assert_eq!(
        turn.tool_calls[0].arguments,
        json!({"location": "San Francisco, CA", "unit": "fahrenheit"})
    );
    assert_eq!(turn.tool_calls[0].raw_arguments, pieces.concat());
}

#[tokio::test]
async fn a_refusal_stops_with_refusal() {
    let server = TestServer::start(Reply::sse(anthropic_sse(&[
        message_start(),
        text_start(0),
        text_delta(0, "I can't help with that."),
        block_stop(0),
        message_delta("refusal", 8),
        message_stop(),
    ])))
    .await;
    let (_, turn) = stream_turn(&client(&server), &request()).await;
    assert_eq!(turn.stop, StopReason::Refusal);
    let err = turn.check_refusal().unwrap_err();
    assert_eq!(
        err,
        ProviderError::Refused {
            message: Some("I can't help with that.".into())
        }
    );
}

#[tokio::test]
async fn stop_reasons_map() {
    let cases = [
        ("end_turn", StopReason::EndTurn),
        ("stop_sequence", StopReason::EndTurn),
        ("max_tokens", StopReason::MaxTokens),
        ("tool_use", StopReason::ToolUse),
        ("refusal", StopReason::Refusal),
        ("pause_turn", StopReason::Other("pause_turn".into())),
    ];
    for (wire, expected) in cases {
        let server = TestServer::start(Reply::json(message(
            json!([{"type": "text", "text": "x"}]),
            wire,
        )))
        .await;
        let turn = client(&server).complete(&request()).await.unwrap();
        assert_eq!(turn.stop, expected, "{wire}");
    }
}

#[tokio::test]
async fn invalid_json_arguments_become_a_problem_not_a_failure() {
    let server = TestServer::start(Reply::sse(anthropic_sse(&[
        message_start(),
        tool_start(0, "toolu_bad", "get_weather"),
        json_delta(0, "{\"location\": \"Par"),
        block_stop(0),
        message_delta("tool_use", 10),
        message_stop(),
    ])))
    .await;
    let (_, turn) = stream_turn(&client(&server), &request()).await;
    let call = &turn.tool_calls[0];
    assert_eq!(call.arguments, Value::Null);
    assert!(
        call.problem
            .as_deref()
            .unwrap()
            .starts_with("not valid JSON")
    );
    assert_eq!(
        call.problem_result().unwrap().error_code(),
        Some("INVALID_INPUT")
    );

    // Replayed in the history, the call keeps its id with an empty `input` (the API
    // requires an object); its tool result says what was wrong.
    let next = request()
        .with_message(turn.to_message())
        .with_message(Message::tool_results([&call.problem_result().unwrap()]));
    let body = Client::new(TEST_KEY).request_body(&next, true).unwrap();
    assert_eq!(
        body["messages"][1]["content"][0],
        json!({"type": "tool_use", "id": "toolu_bad", "name": "get_weather", "input": {}})
    );
    assert_eq!(body["messages"][2]["content"][0]["is_error"], true);
}

#[tokio::test]
async fn a_rate_limit_is_retried_after_retry_after_then_succeeds() {
    let limited = Reply::status_json(
        429,
        json!({"type": "error", "error": {"type": "rate_limit_error",
            "message": "Number of request tokens has exceeded your per-minute rate limit"}}),
    )
    .header("retry-after", "0");
    let ok = Reply::sse(anthropic_sse(&[
        message_start(),
        text_start(0),
        text_delta(0, "Hi"),
        block_stop(0),
        message_delta("end_turn", 1),
        message_stop(),
    ]));
    let turn = after_one_retry(client, &request(), (limited, ok), 2, true).await;
    assert_eq!(turn.text, "Hi");

    // Without retries the 429 is typed, with its wait.
    let server = TestServer::start(
        Reply::status_json(
            429,
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
        )
        .header("retry-after", "3"),
    )
    .await;
    let err = client(&server).complete(&request()).await.unwrap_err();
    assert_eq!(
        err,
        ProviderError::RateLimited {
            retry_after: Some(Duration::from_secs(3)),
            message: Some("slow down".into())
        }
    );
}

#[tokio::test]
async fn unauthorized_is_provider_auth() {
    let server = TestServer::start(Reply::status_json(
        401,
        json!({"type": "error", "error": {"type": "authentication_error",
            "message": "invalid x-api-key"}}),
    ))
    .await;
    let err = client(&server).complete(&request()).await.unwrap_err();
    assert_eq!(
        err,
        ProviderError::Auth {
            status: 401,
            message: Some("invalid x-api-key".into())
        }
    );
}

#[tokio::test]
async fn a_truncated_stream_is_a_bad_response() {
    let partial = anthropic_sse(&[message_start(), text_start(0), text_delta(0, "Sunny")]);
    let cases = [Reply::cut_off(partial.clone()), Reply::sse(partial)];
    for reply in cases {
        let events = bad_stream(client, &request(), reply, "cut off").await;
        assert_eq!(events, vec![StreamEvent::TextDelta("Sunny".into())]);
    }
}

#[tokio::test]
async fn an_error_event_ends_the_stream() {
    let server = TestServer::start(Reply::sse(anthropic_sse(&[
        message_start(),
        text_start(0),
        text_delta(0, "Par"),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ])))
    .await;
    let (events, err) = drain(client(&server).stream(&request())).await;
    assert_eq!(events, vec![StreamEvent::TextDelta("Par".into())]);
    assert_eq!(
        err.unwrap(),
        ProviderError::Unavailable {
            status: Some(529),
            reason: "Overloaded".into()
        }
    );
}

#[test]
fn the_request_body_carries_history_tool_results_and_images() {
    let (failed, shot) = failed_read_and_screenshot("toolu_1", "toolu_2");
    let turn = looking_turn("toolu_1", "toolu_2");
    let request = CompletionRequest::new("claude-sonnet-4-5")
        .with_instructions("Be careful.")
        .with_message(picture_question())
        .with_message(turn.to_message())
        .with_message(Message::tool_results([&failed, &shot]))
        .with_message(Message::user("Answer in one line."))
        .with_message(Message::system("Never guess."));
    let body = Client::new(TEST_KEY)
        .with_default_max_tokens(512)
        .request_body(&request, false)
        .unwrap();
    assert_eq!(
        body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 512,
            "system": "Be careful.\n\nNever guess.",
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "What is in this picture?"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"}}
                ]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "toolu_1", "name": "read_file",
                        "input": {"file_path": "/etc/passwd"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "screenshot", "input": {}}
                ]},
                // The tool results and the next user text merge into one user message,
                // results first.
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true, "content": [
                        {"type": "text", "text": "Error[PATH_OUTSIDE_WORKSPACE]: `/etc/passwd` is outside"}
                    ]},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": false, "content": [
                        {"type": "text", "text": "Rendered the page."},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
                    ]},
                    {"type": "text", "text": "Answer in one line."}
                ]}
            ]
        })
    );
}
