//! Tests for the `openai_responses` area: the Responses client against a local server
//! that answers with fixtures written from OpenAI's API reference (the
//! `openai/openai-openapi` schemas `Response`, `OutputMessage`, `FunctionToolCall`,
//! `RefusalContent`, `ResponseUsage`, `ResponseError`, and the streaming events
//! `response.created`, `response.output_item.added` / `.done`,
//! `response.content_part.added`, `response.output_text.delta` / `.done`,
//! `response.refusal.delta` / `.done`, `response.function_call_arguments.delta` /
//! `.done`, `response.completed`, `response.incomplete`, `response.failed`, `error`).
// Tests report failures by panicking, so unwrap is the clearest assertion here.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use iris_providers::chat::{
    CompletionRequest, Message, Part, Role, StopReason, StreamEvent, Usage,
};
use iris_providers::openai_responses::Client;
use iris_providers::{CompletionProvider, ProviderError, Strict};
use iris_tools_core::{ToolOutput, codes};
use serde_json::{Value, json};

use crate::support::{
    Reply, TEST_KEY, TestServer, after_one_retry, bad_stream, drain, failed_read_and_screenshot,
    fails_with, looking_turn, picture_question, responses_sse, stream_turn, weather_spec,
};

const MODEL: &str = "gpt-4.1-mini-2025-04-14";
const RESP: &str = "resp_67ccd3a9da748190baa7f1570fe91ac604becb25c45c1d41";

fn client(server: &TestServer) -> Client {
    Client::new(TEST_KEY)
        .with_base_url(&format!("{}/v1", server.url()))
        .unwrap()
}

/// The request most tests send.
pub(crate) fn request() -> CompletionRequest {
    CompletionRequest::new("gpt-4.1-mini")
        .with_instructions("You are terse.")
        .with_message(Message::user("What's the weather in Paris?"))
}

/// The HTTP statuses of the table-driven status test: (status, error `type`, code); the
/// error bodies are Chat Completions' (`openai_chat::error_body`).
pub(crate) const STATUSES: &[(u16, &str, &str)] = &[
    (401, "invalid_request_error", "PROVIDER_AUTH"),
    (403, "invalid_request_error", "PROVIDER_AUTH"),
    (400, "invalid_request_error", "PROVIDER_INVALID_REQUEST"),
    (404, "invalid_request_error", "PROVIDER_INVALID_REQUEST"),
    (500, "invalid_request_error", "PROVIDER_UNAVAILABLE"),
    (503, "invalid_request_error", "PROVIDER_UNAVAILABLE"),
];

/// A whole answer saying `text`, for the table-driven tests of `wire_formats`.
pub(crate) fn answer(text: &str) -> Value {
    let message = message_item("msg_1", "completed", json!([output_text(text)]));
    response("completed", json!([message]), usage(3, 1))
}

/// The `Response` object, as `response.created` (in progress, no output) or the final
/// event carries it.
fn response(status: &str, output: Value, usage: Value) -> Value {
    json!({
        "id": RESP, "object": "response", "created_at": 1741476777, "status": status,
        "completed_at": null, "error": null, "incomplete_details": null,
        "instructions": "You are terse.", "max_output_tokens": null, "model": MODEL,
        "output": output, "parallel_tool_calls": true, "previous_response_id": null,
        "reasoning": {"effort": null, "summary": null}, "store": false, "temperature": 1.0,
        "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": [],
        "top_p": 1.0, "truncation": "disabled", "usage": usage, "user": null, "metadata": {}
    })
}

fn usage(input: u64, output: u64) -> Value {
    json!({
        "input_tokens": input, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + output
    })
}

fn created() -> Value {
    json!({"type": "response.created", "response": response("in_progress", json!([]), Value::Null)})
}

fn in_progress() -> Value {
    json!({"type": "response.in_progress", "response": response("in_progress", json!([]), Value::Null)})
}

fn completed(output: Value, input: u64, out: u64) -> Value {
    json!({"type": "response.completed", "response": response("completed", output, usage(input, out))})
}

fn message_item(id: &str, status: &str, content: Value) -> Value {
    json!({"id": id, "type": "message", "status": status, "role": "assistant", "content": content})
}

fn output_text(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

fn item_added(output_index: u64, item: Value) -> Value {
    json!({"type": "response.output_item.added", "output_index": output_index, "item": item})
}

fn item_done(output_index: u64, item: Value) -> Value {
    json!({"type": "response.output_item.done", "output_index": output_index, "item": item})
}

fn part_added(item_id: &str, output_index: u64) -> Value {
    json!({"type": "response.content_part.added", "item_id": item_id,
        "output_index": output_index, "content_index": 0, "part": output_text("")})
}

fn text_delta(item_id: &str, output_index: u64, delta: &str) -> Value {
    json!({"type": "response.output_text.delta", "item_id": item_id,
        "output_index": output_index, "content_index": 0, "delta": delta, "logprobs": []})
}

fn text_done(item_id: &str, output_index: u64, text: &str) -> Value {
    json!({"type": "response.output_text.done", "item_id": item_id,
        "output_index": output_index, "content_index": 0, "text": text, "logprobs": []})
}

fn call_item(item_id: &str, call_id: &str, name: &str, arguments: &str, status: &str) -> Value {
    json!({"type": "function_call", "id": item_id, "call_id": call_id, "name": name,
        "arguments": arguments, "status": status})
}

fn args_delta(item_id: &str, output_index: u64, delta: &str) -> Value {
    json!({"type": "response.function_call_arguments.delta", "item_id": item_id,
        "output_index": output_index, "delta": delta})
}

fn args_done(item_id: &str, output_index: u64, name: &str, arguments: &str) -> Value {
    json!({"type": "response.function_call_arguments.done", "item_id": item_id,
        "output_index": output_index, "name": name, "arguments": arguments})
}

/// The whole event sequence of one streamed function call.
fn streamed_call(
    output_index: u64,
    item_id: &str,
    call_id: &str,
    pieces: &[&str],
) -> (Vec<Value>, Value) {
    let full = pieces.concat();
    let mut events = vec![item_added(
        output_index,
        call_item(item_id, call_id, "get_weather", "", "in_progress"),
    )];
    events.extend(pieces.iter().map(|p| args_delta(item_id, output_index, p)));
    events.push(args_done(item_id, output_index, "get_weather", &full));
    let done = call_item(item_id, call_id, "get_weather", &full, "completed");
    events.push(item_done(output_index, done.clone()));
    (events, done)
}

#[tokio::test]
async fn a_streamed_answer_yields_deltas_usage_and_the_turn() {
    let done = message_item("msg_123", "completed", json!([output_text("Hello! ☀")]));
    let server = TestServer::start(Reply::sse(responses_sse(&[
        created(),
        in_progress(),
        item_added(0, message_item("msg_123", "in_progress", json!([]))),
        part_added("msg_123", 0),
        text_delta("msg_123", 0, "Hel"),
        text_delta("msg_123", 0, "lo! ☀"),
        text_done("msg_123", 0, "Hello! ☀"),
        json!({"type": "response.content_part.done", "item_id": "msg_123", "output_index": 0,
            "content_index": 0, "part": output_text("Hello! ☀")}),
        item_done(0, done.clone()),
        completed(json!([done]), 19, 4),
    ])))
    .await;
    let (events, turn) = stream_turn(&client(&server), &request()).await;

    assert_eq!(
        events,
        vec![
            StreamEvent::TextDelta("Hel".into()),
            StreamEvent::TextDelta("lo! ☀".into()),
            StreamEvent::Usage(Usage::new(19, 4)),
            StreamEvent::Completed(turn.clone()),
        ]
    );
    assert_eq!(turn.text, "Hello! ☀");
    assert_eq!(turn.stop, StopReason::EndTurn);
    assert_eq!(turn.usage, Usage::new(19, 4));
    assert_eq!(turn.id.as_deref(), Some(RESP));
    assert_eq!(turn.model.as_deref(), Some(MODEL));

    let sent = server.only_request();
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/responses");
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {TEST_KEY}").as_str())
    );
    assert_eq!(
        sent.body,
        json!({
            "model": "gpt-4.1-mini",
            "instructions": "You are terse.",
            "input": [
                {"type": "message", "role": "user", "content": "What's the weather in Paris?"}
            ],
            "store": false,
            "stream": true
        })
    );
}

#[tokio::test]
async fn a_non_streamed_answer_is_read_whole() {
    let server = TestServer::start(Reply::json(response(
        "completed",
        json!([
            {"id": "rs_1", "type": "reasoning", "summary": []},
            message_item("msg_1", "completed", json!([output_text("I'll check.")])),
            call_item("fc_1", "call_Paris", "get_weather", "{\"location\":\"Paris\"}", "completed")
        ]),
        usage(2095, 503),
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
    assert_eq!(turn.tool_calls[0].id, "call_Paris");
    assert_eq!(turn.tool_calls[0].name, "get_weather");
    assert_eq!(turn.tool_calls[0].arguments, json!({"location": "Paris"}));

    let body = server.only_request().body;
    assert_eq!(body.get("stream"), None);
    assert_eq!(body["max_output_tokens"], 1024);
    assert_eq!(body["temperature"], 0.0);
    // Flat function tools; `strict: false` written because the API defaults to true.
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": weather_spec().input_schema, "strict": false}])
    );
}

#[tokio::test]
async fn two_parallel_tool_calls_are_assembled_by_item() {
    // The two calls' argument pieces interleave; each event names its item.
    let a = call_item(
        "fc_a",
        "call_a",
        "get_weather",
        "{\"location\": \"Paris\"}",
        "completed",
    );
    let b = call_item(
        "fc_b",
        "call_b",
        "get_weather",
        "{\"location\": \"Rome\"}",
        "completed",
    );
    let server = TestServer::start(Reply::sse(responses_sse(&[
        created(),
        item_added(
            0,
            call_item("fc_a", "call_a", "get_weather", "", "in_progress"),
        ),
        args_delta("fc_a", 0, "{\"location\""),
        item_added(
            1,
            call_item("fc_b", "call_b", "get_weather", "", "in_progress"),
        ),
        args_delta("fc_b", 1, "{\"location\": \"Ro"),
        args_delta("fc_a", 0, ": \"Paris\"}"),
        args_delta("fc_b", 1, "me\"}"),
        item_done(0, a.clone()),
        item_done(1, b.clone()),
        completed(json!([a, b]), 50, 30),
    ])))
    .await;
    let request = request()
        .with_tools(vec![weather_spec()])
        .with_strict(Strict::Yes);
    let (events, turn) = stream_turn(&client(&server), &request).await;

    assert_eq!(turn.stop, StopReason::ToolUse);
    let calls: Vec<_> = turn
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.arguments.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("call_a", json!({"location": "Paris"})),
            ("call_b", json!({"location": "Rome"})),
        ]
    );
    let starts: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStarted { index, id, .. } => Some((*index, id.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(starts, vec![(0, "call_a"), (1, "call_b")]);

    let body = server.only_request().body;
    assert_eq!(body["tools"][0]["strict"], true);
    assert_eq!(
        body["tools"][0]["parameters"]["additionalProperties"],
        false
    );
}

#[tokio::test]
async fn a_tool_call_split_across_events_is_reassembled() {
    // Arguments in five deltas, split inside keys and strings, and the SSE bytes in
    // 3-byte HTTP chunks; `.done` and the final response repeat the whole text.
    let pieces = [
        "{\"loca",
        "tion\": \"San Fra",
        "ncisco, CA\", \"unit\"",
        ": \"fahren",
        "heit\"}",
    ];
    let (mut events, done) = streamed_call(0, "fc_sf", "call_sf", &pieces);
    events.insert(0, created());
    events.push(completed(json!([done]), 40, 20));
    let server = TestServer::start(Reply::Sse {
        body: responses_sse(&events),
        piece: 3,
        complete: true,
    })
    .await;
    let (events, turn) = stream_turn(&client(&server), &request()).await;

    assert_eq!(
        turn.tool_calls[0].arguments,
        json!({"location": "San Francisco, CA", "unit": "fahrenheit"})
    );
    assert_eq!(turn.tool_calls[0].raw_arguments, pieces.concat());
    let deltas = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolCallArgumentsDelta { index: 0, .. }))
        .count();
    assert_eq!(deltas, pieces.len());
}

#[tokio::test]
async fn a_server_without_deltas_still_yields_text_and_calls() {
    // Only whole items: `output_item.done` for the message, the call only in the final
    // response.
    let message = message_item("msg_1", "completed", json!([output_text("Checking.")]));
    let call = call_item(
        "fc_1",
        "call_1",
        "get_weather",
        "{\"location\":\"Oslo\"}",
        "completed",
    );
    let server = TestServer::start(Reply::sse(responses_sse(&[
        created(),
        item_done(0, message.clone()),
        completed(json!([message, call]), 10, 5),
    ])))
    .await;
    let (_, turn) = stream_turn(&client(&server), &request()).await;
    assert_eq!(turn.text, "Checking.");
    assert_eq!(turn.tool_calls[0].id, "call_1");
    assert_eq!(turn.tool_calls[0].arguments, json!({"location": "Oslo"}));
    assert_eq!(turn.stop, StopReason::ToolUse);
}

#[tokio::test]
async fn a_refusal_streams_as_refusal_deltas() {
    let refusal = json!({"type": "refusal", "refusal": "I'm sorry, I can't help with that."});
    let done = message_item("msg_r", "completed", json!([refusal.clone()]));
    let server = TestServer::start(Reply::sse(responses_sse(&[
        created(),
        item_added(0, message_item("msg_r", "in_progress", json!([]))),
        json!({"type": "response.content_part.added", "item_id": "msg_r", "output_index": 0,
            "content_index": 0, "part": {"type": "refusal", "refusal": ""}}),
        json!({"type": "response.refusal.delta", "item_id": "msg_r", "output_index": 0,
            "content_index": 0, "delta": "I'm sorry, I can't "}),
        json!({"type": "response.refusal.delta", "item_id": "msg_r", "output_index": 0,
            "content_index": 0, "delta": "help with that."}),
        json!({"type": "response.refusal.done", "item_id": "msg_r", "output_index": 0,
            "content_index": 0, "refusal": "I'm sorry, I can't help with that."}),
        item_done(0, done.clone()),
        completed(json!([done]), 12, 9),
    ])))
    .await;
    let (events, turn) = stream_turn(&client(&server), &request()).await;

    assert_eq!(
        events[..2],
        [
            StreamEvent::RefusalDelta("I'm sorry, I can't ".into()),
            StreamEvent::RefusalDelta("help with that.".into()),
        ]
    );
    assert_eq!(turn.stop, StopReason::Refusal);
    assert_eq!(
        turn.refusal.as_deref(),
        Some("I'm sorry, I can't help with that.")
    );
    assert_eq!(turn.text, "");
    assert_eq!(turn.check_refusal().unwrap_err().code(), "PROVIDER_REFUSED");
}

#[tokio::test]
async fn statuses_map_to_stop_reasons() {
    let text = || {
        json!([message_item(
            "msg_1",
            "completed",
            json!([output_text("x")])
        )])
    };
    let incomplete = |reason: &str| {
        let mut r = response("incomplete", text(), usage(1, 1));
        r["incomplete_details"] = json!({"reason": reason});
        r
    };
    let cases = [
        (
            response("completed", text(), usage(1, 1)),
            StopReason::EndTurn,
        ),
        (incomplete("max_output_tokens"), StopReason::MaxTokens),
        (incomplete("content_filter"), StopReason::Refusal),
        (
            response(
                "completed",
                json!([message_item(
                    "msg_1",
                    "completed",
                    json!([{"type": "refusal", "refusal": "No."}])
                )]),
                usage(1, 1),
            ),
            StopReason::Refusal,
        ),
        (
            response("cancelled", text(), usage(1, 1)),
            StopReason::Other("cancelled".into()),
        ),
    ];
    for (body, expected) in cases {
        let server = TestServer::start(Reply::json(body.clone())).await;
        let turn = client(&server).complete(&request()).await.unwrap();
        assert_eq!(turn.stop, expected, "{body}");
    }

    // Streamed, `response.incomplete` ends the stream with the cap.
    let server = TestServer::start(Reply::sse(responses_sse(&[
        created(),
        text_delta("msg_1", 0, "Once upon a"),
        json!({"type": "response.incomplete", "response": incomplete("max_output_tokens")}),
    ])))
    .await;
    let (_, turn) = stream_turn(&client(&server), &request()).await;
    assert_eq!(turn.stop, StopReason::MaxTokens);
    // The final response's text ("x") does not extend the streamed one: deltas win.
    assert_eq!(turn.text, "Once upon a");
}

#[tokio::test]
async fn invalid_json_arguments_become_a_problem_not_a_failure() {
    let (bad_events, bad_done) =
        streamed_call(0, "fc_bad", "call_bad", &["{\"location\": ", "\"Par"]);
    let (good_events, good_done) =
        streamed_call(1, "fc_ok", "call_ok", &["{\"location\": \"Rome\"}"]);
    let mut events = vec![created()];
    events.extend(bad_events);
    events.extend(good_events);
    events.push(completed(json!([bad_done, good_done]), 10, 10));
    let server = TestServer::start(Reply::sse(responses_sse(&events))).await;
    let (_, turn) = stream_turn(&client(&server), &request()).await;

    let bad = &turn.tool_calls[0];
    assert_eq!(bad.arguments, Value::Null);
    assert_eq!(bad.raw_arguments, "{\"location\": \"Par");
    assert!(
        bad.problem
            .as_deref()
            .unwrap()
            .starts_with("not valid JSON"),
        "{bad:?}"
    );
    assert_eq!(bad.to_tool_use(), None);
    let result = bad.problem_result().unwrap();
    assert_eq!(result.tool_use_id, "call_bad");
    assert_eq!(result.error_code(), Some(codes::INVALID_INPUT));
    let good = &turn.tool_calls[1];
    assert_eq!(good.problem, None);
    assert_eq!(good.arguments, json!({"location": "Rome"}));

    // Replayed, the malformed call goes back exactly as the model sent it, and its
    // output is the correctable error.
    let ok = ToolOutput::text("Sunny").into_result("call_ok", "get_weather");
    let next = request()
        .with_message(turn.to_message())
        .with_message(Message::tool_results([&result, &ok]));
    let body = Client::new(TEST_KEY).request_body(&next, true).unwrap();
    let input = body["input"].as_array().unwrap();
    assert_eq!(input[1]["arguments"], "{\"location\": \"Par");
    assert_eq!(input[2]["arguments"], "{\"location\":\"Rome\"}");
    assert_eq!(input[3]["call_id"], "call_bad");
    assert!(
        input[3]["output"]
            .as_str()
            .unwrap()
            .starts_with("Error[INVALID_INPUT]"),
        "{}",
        input[3]
    );
}

#[tokio::test]
async fn a_rate_limit_is_retried_after_retry_after_then_succeeds() {
    let limited = Reply::status_json(
        429,
        json!({"error": {"message": "Rate limit reached for gpt-4.1-mini", "type": "requests",
            "param": null, "code": "rate_limit_exceeded"}}),
    )
    .header("retry-after", "0");
    let done = message_item("msg_1", "completed", json!([output_text("Hi")]));
    let ok = Reply::sse(responses_sse(&[
        created(),
        text_delta("msg_1", 0, "Hi"),
        completed(json!([done.clone()]), 3, 1),
    ]));
    let turn = after_one_retry(client, &request(), (limited.clone(), ok), 3, true).await;
    assert_eq!(turn.text, "Hi");

    let ok = Reply::json(response("completed", json!([done]), usage(3, 1)));
    let turn = after_one_retry(client, &request(), (limited, ok), 3, false).await;
    assert_eq!(turn.text, "Hi");

    // Without retries the 429 is typed, with its wait.
    let server = TestServer::start(
        Reply::status_json(
            429,
            json!({"error": {"message": "slow down", "type": "tokens", "param": null,
                "code": "rate_limit_exceeded"}}),
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
        json!({"error": {"message": "Incorrect API key provided: sk-test-****cdef.",
            "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}),
    ))
    .await;
    let err = client(&server).complete(&request()).await.unwrap_err();
    assert_eq!(
        err,
        ProviderError::Auth {
            status: 401,
            message: Some("Incorrect API key provided: sk-test-****cdef.".into())
        }
    );
    assert!(!err.is_retryable());
}

#[tokio::test]
async fn a_truncated_stream_is_a_bad_response() {
    let partial = responses_sse(&[
        created(),
        item_added(0, message_item("msg_1", "in_progress", json!([]))),
        text_delta("msg_1", 0, "The answer is"),
    ]);
    let cases = [
        // The connection drops mid-body.
        Reply::cut_off(partial.clone()),
        // The body ends cleanly without `response.completed`.
        Reply::sse(partial),
    ];
    for reply in cases {
        let events = bad_stream(client, &request(), reply, "cut off").await;
        assert_eq!(events, vec![StreamEvent::TextDelta("The answer is".into())]);
    }
}

#[tokio::test]
async fn failed_responses_and_error_events_end_the_stream() {
    let failed = |code: &str, message: &str| {
        let mut r = response("failed", json!([]), Value::Null);
        r["error"] = json!({"code": code, "message": message});
        json!({"type": "response.failed", "response": r})
    };
    // (the last event, the code, a piece of the message)
    let cases = [
        (
            failed("server_error", "The model failed to generate a response."),
            "PROVIDER_UNAVAILABLE",
            "failed to generate",
        ),
        (
            failed("invalid_prompt", "Invalid prompt."),
            "PROVIDER_INVALID_REQUEST",
            "Invalid prompt",
        ),
        (
            json!({"type": "error", "code": "rate_limit_exceeded",
                "message": "Rate limit reached", "param": null}),
            "PROVIDER_RATE_LIMITED",
            "Rate limit reached",
        ),
        (
            json!({"type": "error", "code": "ERR_SOMETHING",
                "message": "Something went wrong", "param": null}),
            "PROVIDER_UNAVAILABLE",
            "Something went wrong",
        ),
    ];
    for (last, code, says) in cases {
        let server = TestServer::start(Reply::sse(responses_sse(&[
            created(),
            text_delta("msg_1", 0, "Partial"),
            last.clone(),
        ])))
        .await;
        let (events, err) = drain(client(&server).stream(&request())).await;
        assert_eq!(events, vec![StreamEvent::TextDelta("Partial".into())]);
        let err = err.unwrap();
        assert_eq!(err.code(), code, "{last}");
        assert!(err.to_string().contains(says), "{err}");
    }
    // A non-streamed failed response is the same error.
    let mut body = response("failed", json!([]), Value::Null);
    body["error"] = json!({"code": "server_error", "message": "boom"});
    let server = TestServer::start(Reply::json(body)).await;
    let err = client(&server).complete(&request()).await.unwrap_err();
    assert_eq!(err.code(), "PROVIDER_UNAVAILABLE");
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_is_read_as_a_whole_answer() {
    let server = TestServer::start(Reply::json(response(
        "completed",
        json!([
            message_item("msg_1", "completed", json!([output_text("Plain JSON.")])),
            call_item("fc_1", "call_1", "now", "{}", "completed")
        ]),
        usage(7, 3),
    )))
    .await;
    let (_, turn) = stream_turn(&client(&server), &request()).await;
    assert_eq!(turn.text, "Plain JSON.");
    assert_eq!(turn.tool_calls[0].name, "now");
    assert_eq!(turn.usage, Usage::new(7, 3));
}

#[tokio::test]
async fn malformed_answers_are_bad_responses() {
    let cases = [
        Reply::sse("event: response.created\ndata: {not json\n\n"),
        Reply::Body {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: "{\"output\": [".into(),
        },
        Reply::json(json!({"id": "resp_1", "object": "response"})),
    ];
    for reply in cases {
        fails_with(client, &request(), reply, "PROVIDER_BAD_RESPONSE").await;
    }
}

#[test]
fn the_request_body_carries_history_tool_results_and_images() {
    let (failed, shot) = failed_read_and_screenshot("call_1", "call_2");
    let turn = looking_turn("call_1", "call_2");
    let request = CompletionRequest::new("gpt-4.1")
        .with_instructions("Be careful.")
        .with_message(picture_question())
        .with_message(turn.to_message())
        .with_message(Message::tool_results([&failed, &shot]))
        .with_message(Message::user("Answer in one line."))
        .with_message(Message::system("Never guess."))
        .with_max_output_tokens(64);
    let body = Client::new(TEST_KEY)
        .with_store(true)
        .request_body(&request, false)
        .unwrap();
    assert_eq!(
        body,
        json!({
            "model": "gpt-4.1",
            "instructions": "Be careful.",
            "max_output_tokens": 64,
            "store": true,
            "input": [
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "What is in this picture?"},
                    {"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/4AAQ", "detail": "auto"}
                ]},
                {"type": "message", "role": "assistant", "content": "Let me look."},
                {"type": "function_call", "call_id": "call_1", "name": "read_file",
                    "arguments": "{\"file_path\":\"/etc/passwd\"}"},
                {"type": "function_call", "call_id": "call_2", "name": "screenshot", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_1",
                    "output": "Error[PATH_OUTSIDE_WORKSPACE]: `/etc/passwd` is outside"},
                // The image stays in the tool result: the format takes it natively.
                {"type": "function_call_output", "call_id": "call_2", "output": [
                    {"type": "input_text", "text": "Rendered the page."},
                    {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"}
                ]},
                {"type": "message", "role": "user", "content": "Answer in one line."},
                {"type": "message", "role": "system", "content": "Never guess."}
            ]
        })
    );

    // A tool call in a user message cannot be expressed.
    let wrong = CompletionRequest::new("m").with_message(Message::new(
        Role::User,
        vec![Part::tool_call("c", "t", json!({}))],
    ));
    let err = Client::new(TEST_KEY)
        .request_body(&wrong, true)
        .unwrap_err();
    assert_eq!(err.code(), "PROVIDER_INVALID_REQUEST");
}

#[test]
fn base_urls_are_checked() {
    let err = Client::new(TEST_KEY)
        .with_base_url("http://api.example.com/v1")
        .unwrap_err();
    assert_eq!(err.code(), "PROVIDER_CONFIG_INVALID");
    assert_eq!(
        Client::new(TEST_KEY)
            .with_timeout(Duration::ZERO)
            .unwrap_err()
            .code(),
        "PROVIDER_CONFIG_INVALID"
    );
}
