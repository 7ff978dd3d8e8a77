//! Tests for the `openai_chat` area: the Chat Completions client against a local server
//! that answers with fixtures written from OpenAI's API reference
//! (`CreateChatCompletionStreamResponse`, `ChatCompletionMessageToolCallChunk`,
//! `CreateChatCompletionResponse`, `ErrorResponse`).
// Tests report failures by panicking, so unwrap is the clearest assertion here.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use iris_providers::chat::{
    CompletionRequest, Message, Part, Role, StopReason, StreamEvent, Usage,
};
use iris_providers::openai_chat::{Client, MaxTokensField};
use iris_providers::retry::{RetryPolicy, retry};
use iris_providers::{CompletionProvider, ProviderError, Strict};
use iris_tools_core::{ToolOutput, codes};
use serde_json::{Value, json};

use crate::support::{
    Reply, TEST_KEY, TestServer, after_one_retry, bad_stream, drain, failed_read_and_screenshot,
    fails_with, looking_turn, openai_sse, picture_question, read_file_spec, stream_turn,
};

const MODEL: &str = "gpt-4.1-mini-2025-04-14";

fn client(server: &TestServer) -> Client {
    Client::new(TEST_KEY)
        .with_base_url(&format!("{}/v1", server.url()))
        .unwrap()
}

/// The request most tests send.
pub(crate) fn request() -> CompletionRequest {
    CompletionRequest::new("gpt-4.1-mini")
        .with_instructions("You are terse.")
        .with_message(Message::user("Say hello."))
}

/// The HTTP statuses of the table-driven status test: (status, error `type`, code).
pub(crate) const STATUSES: &[(u16, &str, &str)] = &[
    (401, "invalid_request_error", "PROVIDER_AUTH"),
    (403, "invalid_request_error", "PROVIDER_AUTH"),
    (429, "invalid_request_error", "PROVIDER_RATE_LIMITED"),
    (400, "invalid_request_error", "PROVIDER_INVALID_REQUEST"),
    (404, "invalid_request_error", "PROVIDER_INVALID_REQUEST"),
    (500, "invalid_request_error", "PROVIDER_UNAVAILABLE"),
    (503, "invalid_request_error", "PROVIDER_UNAVAILABLE"),
];

/// An error body that echoes the key, as OpenAI's "Incorrect API key provided" does.
pub(crate) fn error_body(_status: u16, kind: &str) -> Value {
    let echo = format!("Incorrect API key provided: {TEST_KEY}.");
    json!({"error": {"message": echo, "type": kind, "param": null, "code": "invalid_api_key"}})
}

/// A whole answer saying `text`, for the table-driven tests of `wire_formats`.
pub(crate) fn answer(text: &str) -> Value {
    completion(json!({"role": "assistant", "content": text}), "stop")
}

/// One `chat.completion.chunk` with a delta for choice 0.
fn chunk(delta: Value, finish_reason: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion.chunk",
        "created": 1741570283,
        "model": MODEL,
        "system_fingerprint": "fp_fc9f1d7035",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        "usage": null
    })
}

/// The usage chunk `stream_options.include_usage` adds before `[DONE]`.
fn usage_chunk(prompt: u64, completion: u64) -> Value {
    json!({
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion.chunk",
        "created": 1741570283,
        "model": MODEL,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
        }
    })
}

fn role_chunk() -> Value {
    chunk(
        json!({"role": "assistant", "content": "", "refusal": null}),
        None,
    )
}

/// The first chunk of a tool call: index, id, type and name, empty arguments.
fn call_start(index: u64, id: &str, name: &str) -> Value {
    chunk(
        json!({"tool_calls": [{"index": index, "id": id, "type": "function",
            "function": {"name": name, "arguments": ""}}]}),
        None,
    )
}

/// A later chunk of a tool call: only the index and the next piece of arguments.
fn call_args(index: u64, piece: &str) -> Value {
    chunk(
        json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
        None,
    )
}

/// A non-streamed `chat.completion`.
fn completion(message: Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion",
        "created": 1741570283,
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "logprobs": null,
            "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 1117, "completion_tokens": 46, "total_tokens": 1163},
        "service_tier": "default"
    })
}

#[tokio::test]
async fn a_streamed_answer_yields_deltas_usage_and_the_turn() {
    let server = TestServer::start(Reply::sse(openai_sse(&[
        role_chunk(),
        chunk(json!({"content": "Hel"}), None),
        chunk(json!({"content": "lo! ☀"}), None),
        chunk(json!({}), Some("stop")),
        usage_chunk(19, 4),
    ])))
    .await;
    let client = client(&server);
    let (events, turn) = stream_turn(&client, &request()).await;

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
    assert_eq!(turn.model.as_deref(), Some(MODEL));
    assert_eq!(
        turn.id.as_deref(),
        Some("chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG")
    );

    let sent = server.only_request();
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {TEST_KEY}").as_str())
    );
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(
        sent.body,
        json!({
            "model": "gpt-4.1-mini",
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Say hello."}
            ],
            "stream": true,
            "stream_options": {"include_usage": true}
        })
    );
}

#[tokio::test]
async fn a_non_streamed_answer_is_read_whole() {
    let server = TestServer::start(Reply::json(completion(
        json!({"role": "assistant", "content": null, "refusal": null, "annotations": [],
            "tool_calls": [{"id": "call_9Xb", "type": "function",
                "function": {"name": "read_file", "arguments": "{\"file_path\":\"README.md\"}"}}]}),
        "tool_calls",
    )))
    .await;
    let request = request()
        .with_tools(vec![read_file_spec()])
        .with_max_output_tokens(300)
        .with_temperature(0.5);
    let turn = client(&server).complete(&request).await.unwrap();

    assert_eq!(turn.text, "");
    assert_eq!(turn.stop, StopReason::ToolUse);
    assert_eq!(turn.usage, Usage::new(1117, 46));
    assert_eq!(turn.tool_calls.len(), 1);
    assert_eq!(turn.tool_calls[0].id, "call_9Xb");
    assert_eq!(turn.tool_calls[0].name, "read_file");
    assert_eq!(
        turn.tool_calls[0].arguments,
        json!({"file_path": "README.md"})
    );
    assert_eq!(turn.tool_calls[0].problem, None);

    let body = server.only_request().body;
    assert_eq!(body.get("stream"), None);
    assert_eq!(body["max_completion_tokens"], 300);
    assert_eq!(body["temperature"], 0.5);
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "read_file");
    assert_eq!(body["tools"][0]["function"].get("strict"), None);
}

#[tokio::test]
async fn two_parallel_tool_calls_are_assembled_by_index() {
    // The two calls' argument pieces interleave, as parallel calls may.
    let server = TestServer::start(Reply::sse(openai_sse(&[
        role_chunk(),
        call_start(0, "call_a", "read_file"),
        call_args(0, "{\"file_"),
        call_start(1, "call_b", "read_file"),
        call_args(1, "{\"file_path\""),
        call_args(0, "path\": \"a.txt\"}"),
        call_args(1, ": \"b.txt\"}"),
        chunk(json!({}), Some("tool_calls")),
        usage_chunk(50, 30),
    ])))
    .await;
    let request = request()
        .with_tools(vec![read_file_spec()])
        .with_strict(Strict::Yes);
    let (events, turn) = stream_turn(&client(&server), &request).await;

    assert_eq!(turn.stop, StopReason::ToolUse);
    let calls: Vec<_> = turn
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("call_a", "read_file", json!({"file_path": "a.txt"})),
            ("call_b", "read_file", json!({"file_path": "b.txt"})),
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

    // Strict mode reached the wire.
    let body = server.only_request().body;
    assert_eq!(body["tools"][0]["function"]["strict"], true);
    assert_eq!(
        body["tools"][0]["function"]["parameters"]["additionalProperties"],
        false
    );
}

#[tokio::test]
async fn a_tool_call_split_across_chunks_is_reassembled() {
    // Arguments in five pieces, split inside keys and strings, and the SSE bytes in
    // 3-byte HTTP chunks.
    let pieces = [
        "{\"fi",
        "le_pa",
        "th\": \"src/ma",
        "in.rs\", \"limit\"",
        ": 20}",
    ];
    let mut chunks = vec![role_chunk(), call_start(0, "call_x", "read_file")];
    chunks.extend(pieces.iter().map(|p| call_args(0, p)));
    chunks.push(chunk(json!({}), Some("tool_calls")));
    let server = TestServer::start(Reply::Sse {
        body: openai_sse(&chunks),
        piece: 3,
        complete: true,
    })
    .await;
    let (events, turn) = stream_turn(&client(&server), &request()).await;

    assert_eq!(
        turn.tool_calls[0].arguments,
        json!({"file_path": "src/main.rs", "limit": 20})
    );
    assert_eq!(turn.tool_calls[0].raw_arguments, pieces.concat());
    let deltas = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolCallArgumentsDelta { index: 0, .. }))
        .count();
    assert_eq!(deltas, pieces.len());
    // No usage chunk was sent: usage stays zero rather than failing the turn.
    assert_eq!(turn.usage, Usage::default());
}

#[tokio::test]
async fn a_refusal_streams_as_refusal_deltas() {
    let server = TestServer::start(Reply::sse(openai_sse(&[
        role_chunk(),
        chunk(json!({"refusal": "I'm sorry, I can't "}), None),
        chunk(json!({"refusal": "help with that."}), None),
        chunk(json!({}), Some("stop")),
        usage_chunk(12, 9),
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
    let err = turn.check_refusal().unwrap_err();
    assert_eq!(err.code(), "PROVIDER_REFUSED");
}

#[tokio::test]
async fn finish_reasons_map_to_stop_reasons() {
    // (finish_reason, message, expected stop)
    let cases = [
        (
            "stop",
            json!({"role": "assistant", "content": "Done."}),
            StopReason::EndTurn,
        ),
        (
            "length",
            json!({"role": "assistant", "content": "Once upon a"}),
            StopReason::MaxTokens,
        ),
        (
            "content_filter",
            json!({"role": "assistant", "content": ""}),
            StopReason::Refusal,
        ),
        (
            "stop",
            json!({"role": "assistant", "content": null, "refusal": "I can't help with that."}),
            StopReason::Refusal,
        ),
        // Some compatible servers say `stop` after tool calls.
        (
            "stop",
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
                "type": "function", "function": {"name": "now", "arguments": ""}}]}),
            StopReason::ToolUse,
        ),
        (
            "function_call",
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
                "type": "function", "function": {"name": "now", "arguments": "{}"}}]}),
            StopReason::ToolUse,
        ),
        (
            "weird_new_reason",
            json!({"role": "assistant", "content": "x"}),
            StopReason::Other("weird_new_reason".into()),
        ),
    ];
    for (finish, message, expected) in cases {
        let server = TestServer::start(Reply::json(completion(message.clone(), finish))).await;
        let turn = client(&server).complete(&request()).await.unwrap();
        assert_eq!(turn.stop, expected, "{finish} {message}");
    }
}

#[tokio::test]
async fn invalid_json_arguments_become_a_problem_not_a_failure() {
    let server = TestServer::start(Reply::sse(openai_sse(&[
        role_chunk(),
        call_start(0, "call_bad", "read_file"),
        call_args(0, "{\"file_path\": \"a.txt\""),
        call_start(1, "call_ok", "read_file"),
        call_args(1, "{\"file_path\": \"b.txt\"}"),
        chunk(json!({}), Some("tool_calls")),
    ])))
    .await;
    let (_, turn) = stream_turn(&client(&server), &request()).await;

    let bad = &turn.tool_calls[0];
    assert_eq!(bad.arguments, Value::Null);
    assert_eq!(bad.raw_arguments, "{\"file_path\": \"a.txt\"");
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
    assert!(result.model_content().contains("not valid JSON"));

    let good = &turn.tool_calls[1];
    assert_eq!(good.problem, None);
    assert_eq!(
        good.to_tool_use().unwrap().input,
        json!({"file_path": "b.txt"})
    );

    // Replayed in the history, the malformed call goes back exactly as the model sent it.
    let ok = ToolOutput::text("B").into_result("call_ok", "read_file");
    let next = request()
        .with_message(turn.to_message())
        .with_message(Message::tool_results([&result, &ok]));
    let body = Client::new(TEST_KEY).request_body(&next, true).unwrap();
    let calls = &body["messages"][2]["tool_calls"];
    assert_eq!(
        calls[0]["function"]["arguments"],
        "{\"file_path\": \"a.txt\""
    );
    assert_eq!(
        calls[1]["function"]["arguments"],
        "{\"file_path\":\"b.txt\"}"
    );
}

#[tokio::test]
async fn a_rate_limit_is_retried_after_retry_after_then_succeeds() {
    let limited = Reply::status_json(
        429,
        json!({"error": {"message": "Rate limit reached for requests", "type": "requests",
            "param": null, "code": "rate_limit_exceeded"}}),
    )
    .header("retry-after", "0");
    let ok = Reply::sse(openai_sse(&[
        role_chunk(),
        chunk(json!({"content": "Hi"}), None),
        chunk(json!({}), Some("stop")),
    ]));
    let turn = after_one_retry(client, &request(), (limited.clone(), ok), 3, true).await;
    assert_eq!(turn.text, "Hi");

    // `complete` is retried the same way.
    let ok = Reply::json(completion(
        json!({"role": "assistant", "content": "Hi"}),
        "stop",
    ));
    let turn = after_one_retry(client, &request(), (limited, ok), 3, false).await;
    assert_eq!(turn.text, "Hi");
}

#[tokio::test]
async fn a_rate_limit_longer_than_the_budget_is_returned_with_its_retry_after() {
    let server = TestServer::start(
        Reply::status_json(
            429,
            json!({"error": {"message": "Rate limit reached", "type": "tokens",
                "param": null, "code": "rate_limit_exceeded"}}),
        )
        .header("retry-after", "120"),
    )
    .await;
    let client = client(&server);
    let policy = RetryPolicy::new(5, Duration::from_secs(10));
    let request = request();
    let err = retry(&policy, || client.complete(&request))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "PROVIDER_RATE_LIMITED");
    assert_eq!(err.retry_after(), Some(Duration::from_secs(120)));
    assert!(err.to_string().contains("Rate limit reached"), "{err}");
    assert!(err.to_info().retryable);
    // The wait would cross the budget, so nothing was retried.
    assert_eq!(server.requests().len(), 1);
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
    assert_eq!(err.to_info().details["status"], 401);
}

#[tokio::test]
async fn a_truncated_stream_is_a_bad_response() {
    let partial = openai_sse(&[
        role_chunk(),
        chunk(json!({"content": "The answer is"}), None),
    ]);
    let without_done = partial.trim_end_matches("data: [DONE]\n\n").to_owned();
    // (how the stream ends, what the error says)
    let cases = [
        // The connection drops mid-body.
        (Reply::cut_off(without_done.clone()), "cut off"),
        // The body ends cleanly, but neither finish_reason nor [DONE] came.
        (Reply::sse(without_done), "cut off before `finish_reason`"),
        // [DONE] without a finish_reason.
        (Reply::sse(partial), "without a `finish_reason`"),
    ];
    for (reply, reason) in cases {
        let events = bad_stream(client, &request(), reply, reason).await;
        assert_eq!(events, vec![StreamEvent::TextDelta("The answer is".into())]);
    }
}

#[tokio::test]
async fn malformed_answers_are_bad_responses() {
    let cases = [
        Reply::sse("data: {not json\n\n"),
        Reply::Body {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: "{\"choices\": [".into(),
        },
        Reply::json(json!({"id": "x", "choices": []})),
    ];
    for reply in cases {
        fails_with(client, &request(), reply, "PROVIDER_BAD_RESPONSE").await;
    }
}

#[tokio::test]
async fn an_error_chunk_inside_the_stream_ends_it() {
    let server = TestServer::start(Reply::sse(format!(
        "data: {}\n\ndata: {}\n\n",
        chunk(json!({"content": "Partial"}), None),
        json!({"error": {"message": "The server had an error while processing your request.",
            "type": "server_error", "param": null, "code": null}})
    )))
    .await;
    let (events, err) = drain(client(&server).stream(&request())).await;
    assert_eq!(events, vec![StreamEvent::TextDelta("Partial".into())]);
    let err = err.unwrap();
    assert_eq!(err.code(), "PROVIDER_UNAVAILABLE");
    assert!(err.to_string().contains("had an error"), "{err}");
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_is_read_as_a_whole_answer() {
    let server = TestServer::start(Reply::json(completion(
        json!({"role": "assistant", "content": "Plain JSON.", "tool_calls": [{"id": "c1",
            "type": "function", "function": {"name": "now", "arguments": "{}"}}]}),
        "tool_calls",
    )))
    .await;
    let (_, turn) = stream_turn(&client(&server), &request()).await;
    assert_eq!(turn.text, "Plain JSON.");
    assert_eq!(turn.tool_calls[0].name, "now");
    assert_eq!(turn.usage, Usage::new(1117, 46));
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
        .with_message(Message::system("Answer in one line."))
        .with_max_output_tokens(64);
    let client = Client::new(TEST_KEY).with_max_tokens_field(MaxTokensField::MaxTokens);
    let body = client.request_body(&request, false).unwrap();
    assert_eq!(
        body,
        json!({
            "model": "gpt-4.1",
            "max_tokens": 64,
            "messages": [
                {"role": "system", "content": "Be careful."},
                {"role": "user", "content": [
                    {"type": "text", "text": "What is in this picture?"},
                    {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}}
                ]},
                {"role": "assistant", "content": "Let me look.", "tool_calls": [
                    {"id": "call_1", "type": "function",
                        "function": {"name": "read_file", "arguments": "{\"file_path\":\"/etc/passwd\"}"}},
                    {"id": "call_2", "type": "function",
                        "function": {"name": "screenshot", "arguments": "{}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1",
                    "content": "Error[PATH_OUTSIDE_WORKSPACE]: `/etc/passwd` is outside"},
                {"role": "tool", "tool_call_id": "call_2",
                    "content": "Rendered the page.\n[1 image(s) from this call follow in the next user message]"},
                {"role": "user", "content": [
                    {"type": "text", "text": "Images returned by tool call `call_2` (screenshot):"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
                ]},
                {"role": "system", "content": "Answer in one line."}
            ]
        })
    );

    // A tool call in a user message cannot be expressed.
    let wrong = CompletionRequest::new("m").with_message(Message::new(
        Role::User,
        vec![Part::tool_call("c", "t", json!({}))],
    ));
    let err = client.request_body(&wrong, true).unwrap_err();
    assert_eq!(err.code(), "PROVIDER_INVALID_REQUEST");
}

#[test]
fn base_urls_are_checked() {
    let err = Client::new(TEST_KEY)
        .with_base_url("http://api.example.com/v1")
        .unwrap_err();
    assert_eq!(err.code(), "PROVIDER_CONFIG_INVALID");
    // Without a key, a LAN server over plain http is fine (vLLM, Ollama).
    let client = Client::new("")
        .with_base_url("http://gpu-box.lan:8000/v1")
        .unwrap();
    assert_eq!(client.base_url(), "http://gpu-box.lan:8000/v1/");
    assert_eq!(
        Client::new(TEST_KEY).base_url(),
        "https://api.openai.com/v1/"
    );
    assert_eq!(Client::new(TEST_KEY).name(), "openai");
    assert_eq!(
        Client::new(TEST_KEY)
            .with_timeout(Duration::ZERO)
            .unwrap_err()
            .code(),
        "PROVIDER_CONFIG_INVALID"
    );
}

#[tokio::test]
async fn a_hostile_call_index_does_not_overflow() {
    // The largest index, then a chunk that leaves `index` out and starts a new id: the
    // next key would overflow; the stream is read without a panic.
    let server = TestServer::start(Reply::sse(openai_sse(&[
        role_chunk(),
        call_start(u64::MAX, "call_a", "read_file"),
        call_args(u64::MAX, "{\"file_path\": \"a.txt\"}"),
        chunk(
            json!({"tool_calls": [{"id": "call_b", "type": "function",
                "function": {"name": "read_file", "arguments": ""}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
    ])))
    .await;
    let (_, turn) = stream_turn(&client(&server), &request()).await;
    assert_eq!(turn.stop, StopReason::ToolUse);
    assert_eq!(turn.tool_calls[0].id, "call_a");
    assert_eq!(turn.tool_calls[0].arguments, json!({"file_path": "a.txt"}));
}
