//! Tests for the `gemini` area: the `generateContent` client against a local server
//! that answers with fixtures written from the Gemini API reference
//! (`GenerateContentResponse`, `Candidate`, `Content`/`Part`, `FunctionCall` with
//! `thoughtSignature`, `FinishReason`, `PromptFeedback`, `UsageMetadata`, the error
//! object with `google.rpc` details) and the `googleapis/python-genai` types.
// Tests report failures by panicking, so unwrap is the clearest assertion here.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use iris_providers::chat::{
    CompletionRequest, CompletionResponse, Message, ModelToolCall, Part, Role, StopReason,
    StreamEvent, Usage,
};
use iris_providers::gemini::Client;
use iris_providers::{CompletionProvider, ProviderError};
use iris_tools_core::ToolOutput;
use serde_json::{Value, json};

use crate::support::{
    Reply, TEST_KEY, TestServer, after_one_retry, bad_stream, drain, failed_read_and_screenshot,
    fails_with, gemini_sse, picture_question, stream_turn, weather_spec,
};

const MODEL_VERSION: &str = "gemini-2.5-flash";
const STREAM_PATH: &str = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";

fn client(server: &TestServer) -> Client {
    Client::new(TEST_KEY)
        .with_base_url(&format!("{}/v1beta", server.url()))
        .unwrap()
}

/// The request most tests send.
pub(crate) fn request() -> CompletionRequest {
    CompletionRequest::new("gemini-2.5-flash")
        .with_instructions("You are terse.")
        .with_message(Message::user("What's the weather in Paris?"))
}

/// The HTTP statuses of the table-driven status test: (status, error `status`, code).
pub(crate) const STATUSES: &[(u16, &str, &str)] = &[
    (401, "UNAUTHENTICATED", "PROVIDER_AUTH"),
    (403, "PERMISSION_DENIED", "PROVIDER_AUTH"),
    (400, "INVALID_ARGUMENT", "PROVIDER_INVALID_REQUEST"),
    (404, "NOT_FOUND", "PROVIDER_INVALID_REQUEST"),
    (500, "INTERNAL", "PROVIDER_UNAVAILABLE"),
    (503, "UNAVAILABLE", "PROVIDER_UNAVAILABLE"),
];

/// An error body with this `status` name that echoes the key.
pub(crate) fn error_body(status: u16, name: &str) -> Value {
    json!({"error": {"code": status, "status": name,
        "message": format!("key {TEST_KEY} was not accepted")}})
}

/// A whole answer saying `t`, for the table-driven tests of `wire_formats`.
pub(crate) fn answer(t: &str) -> Value {
    chunk(json!([text(t)]), Some("STOP"), None)
}

fn usage(prompt: u64, candidates: u64) -> Value {
    json!({"promptTokenCount": prompt, "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}]})
}

/// One `GenerateContentResponse` with candidate 0 holding `parts`.
fn chunk(parts: Value, finish_reason: Option<&str>, usage: Option<Value>) -> Value {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    if let Some(reason) = finish_reason {
        candidate["finishReason"] = json!(reason);
    }
    let mut response = json!({"candidates": [candidate], "modelVersion": MODEL_VERSION,
        "responseId": "mNHOaNHJKvWD1dkP2KKZ8AQ"});
    if let Some(usage) = usage {
        response["usageMetadata"] = usage;
    }
    response
}

fn text(text: &str) -> Value {
    json!({ "text": text })
}

fn call(name: &str, args: Value) -> Value {
    json!({"functionCall": {"name": name, "args": args}})
}

fn signed_call(name: &str, args: Value, signature: &str) -> Value {
    json!({"functionCall": {"name": name, "args": args}, "thoughtSignature": signature})
}

#[tokio::test]
async fn a_streamed_answer_yields_deltas_usage_and_the_turn() {
    let server = TestServer::start(Reply::sse(gemini_sse(&[
        chunk(json!([text("Sunny, ")]), None, Some(usage(9, 2))),
        chunk(json!([text("22 °C.")]), Some("STOP"), Some(usage(9, 6))),
    ])))
    .await;
    let (events, turn) = stream_turn(&client(&server), &request()).await;

    assert_eq!(
        events,
        vec![
            StreamEvent::TextDelta("Sunny, ".into()),
            StreamEvent::Usage(Usage::new(9, 2)),
            StreamEvent::TextDelta("22 °C.".into()),
            StreamEvent::Usage(Usage::new(9, 6)),
            StreamEvent::Completed(turn.clone()),
        ]
    );
    assert_eq!(turn.text, "Sunny, 22 °C.");
    assert_eq!(turn.stop, StopReason::EndTurn);
    assert_eq!(turn.usage, Usage::new(9, 6));
    assert_eq!(turn.model.as_deref(), Some(MODEL_VERSION));
    assert_eq!(turn.id.as_deref(), Some("mNHOaNHJKvWD1dkP2KKZ8AQ"));

    let sent = server.only_request();
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, STREAM_PATH);
    assert_eq!(sent.header("x-goog-api-key"), Some(TEST_KEY));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.body,
        json!({
            "systemInstruction": {"parts": [{"text": "You are terse."}]},
            "contents": [{"role": "user", "parts": [{"text": "What's the weather in Paris?"}]}]
        })
    );
}

#[tokio::test]
async fn a_non_streamed_answer_is_read_whole() {
    let mut answer = chunk(
        json!([
            {"text": "The user wants weather.", "thought": true},
            text("I'll check."),
            signed_call("get_weather", json!({"location": "Paris"}), "CiQBcsjafA=="),
        ]),
        Some("STOP"),
        Some(json!({"promptTokenCount": 120, "candidatesTokenCount": 20,
            "thoughtsTokenCount": 30, "totalTokenCount": 170})),
    );
    answer["candidates"][0]["avgLogprobs"] = json!(-0.12);
    let server = TestServer::start(Reply::json(answer)).await;
    let request = request()
        .with_tools(vec![weather_spec()])
        .with_max_output_tokens(1024)
        .with_temperature(0.0);
    let turn = client(&server).complete(&request).await.unwrap();

    // Thought summaries are not answer text.
    assert_eq!(turn.text, "I'll check.");
    // Gemini says STOP after function calls.
    assert_eq!(turn.stop, StopReason::ToolUse);
    // Thinking tokens count as output.
    assert_eq!(turn.usage, Usage::new(120, 50));
    let call = &turn.tool_calls[0];
    assert_eq!(call.id, "call_1_1");
    assert_eq!(call.name, "get_weather");
    assert_eq!(call.arguments, json!({"location": "Paris"}));
    assert_eq!(call.signature.as_deref(), Some("CiQBcsjafA=="));

    let sent = server.only_request();
    assert_eq!(sent.path, "/v1beta/models/gemini-2.5-flash:generateContent");
    assert_eq!(
        sent.body["tools"],
        json!([{"functionDeclarations": [{"name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {"type": "OBJECT", "properties": {"location": {"type": "STRING"}},
                "required": ["location"]}}]}])
    );
    assert_eq!(
        sent.body["generationConfig"],
        json!({"maxOutputTokens": 1024, "temperature": 0.0})
    );
}

#[tokio::test]
async fn two_parallel_tool_calls_get_stable_ids() {
    // Parallel calls in one event; only the first carries the thought signature.
    let server = TestServer::start(Reply::sse(gemini_sse(&[chunk(
        json!([
            signed_call("get_weather", json!({"location": "Paris"}), "c2lnbmF0dXJl"),
            call("get_weather", json!({"location": "Rome"})),
        ]),
        Some("STOP"),
        Some(usage(50, 30)),
    )])))
    .await;
    // One assistant turn is already in the history: this is turn 2.
    let request = request()
        .with_message(Message::assistant("Which cities?"))
        .with_message(Message::user("Paris and Rome."));
    let (events, turn) = stream_turn(&client(&server), &request).await;

    assert_eq!(turn.stop, StopReason::ToolUse);
    let calls: Vec<_> = turn
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.arguments.clone(), c.signature.as_deref()))
        .collect();
    assert_eq!(
        calls,
        vec![
            (
                "call_2_1",
                json!({"location": "Paris"}),
                Some("c2lnbmF0dXJl")
            ),
            ("call_2_2", json!({"location": "Rome"}), None),
        ]
    );
    let starts: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStarted { index, id, .. } => Some((*index, id.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(starts, vec![(0, "call_2_1"), (1, "call_2_2")]);
}

#[tokio::test]
async fn calls_split_across_stream_events_are_assembled() {
    // Gemini sends each call whole; a turn's text and calls spread over several events,
    // and each event's bytes are split across 3-byte HTTP chunks.
    let server = TestServer::start(Reply::Sse {
        body: gemini_sse(&[
            chunk(json!([text("Checking ")]), None, None),
            chunk(
                json!([
                    text("both."),
                    call(
                        "get_weather",
                        json!({"location": "San Francisco, CA", "unit": "fahrenheit"})
                    )
                ]),
                None,
                None,
            ),
            chunk(
                json!([call("get_weather", json!({"location": "Zürich"}))]),
                None,
                None,
            ),
            chunk(json!([text("")]), Some("STOP"), Some(usage(40, 20))),
        ]),
        piece: 3,
        complete: true,
    })
    .await;
    let (_, turn) = stream_turn(&client(&server), &request()).await;
    assert_eq!(turn.text, "Checking both.");
    assert_eq!(
        turn.tool_calls[0].arguments,
        json!({"location": "San Francisco, CA", "unit": "fahrenheit"})
    );
    assert_eq!(turn.tool_calls[1].arguments, json!({"location": "Zürich"}));
    assert_eq!(turn.tool_calls[1].id, "call_1_2");
    assert_eq!(turn.usage, Usage::new(40, 20));
}

#[tokio::test]
async fn a_safety_stop_or_a_blocked_prompt_is_a_refusal() {
    // The output is filtered mid-stream: content stops, finishReason SAFETY.
    let mut blocked = json!({"candidates": [{"finishReason": "SAFETY", "index": 0,
        "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT",
            "probability": "HIGH", "blocked": true}]}],
        "usageMetadata": usage(12, 3), "modelVersion": MODEL_VERSION});
    let server = TestServer::start(Reply::sse(gemini_sse(&[
        chunk(json!([text("Here is how")]), None, None),
        blocked.clone(),
    ])))
    .await;
    let (events, turn) = stream_turn(&client(&server), &request()).await;
    assert!(events.contains(&StreamEvent::RefusalDelta(
        "the response was blocked (SAFETY)".into()
    )));
    assert_eq!(turn.stop, StopReason::Refusal);
    assert_eq!(turn.text, "Here is how");
    assert_eq!(
        turn.refusal.as_deref(),
        Some("the response was blocked (SAFETY)")
    );

    // A `finishMessage` is the refusal text when there is one.
    blocked["candidates"][0]["finishMessage"] = json!("Blocked: dangerous content.");
    let server = TestServer::start(Reply::json(blocked)).await;
    let turn = client(&server).complete(&request()).await.unwrap();
    assert_eq!(turn.refusal.as_deref(), Some("Blocked: dangerous content."));

    // The prompt itself is blocked: no candidates, only `promptFeedback`.
    let prompt_blocked = json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
        "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8},
        "modelVersion": MODEL_VERSION});
    let server = TestServer::start(Reply::sse(gemini_sse(std::slice::from_ref(
        &prompt_blocked,
    ))))
    .await;
    let (_, turn) = stream_turn(&client(&server), &request()).await;
    assert_eq!(turn.stop, StopReason::Refusal);
    assert_eq!(
        turn.refusal.as_deref(),
        Some("the prompt was blocked (PROHIBITED_CONTENT)")
    );
    let err = turn.check_refusal().unwrap_err();
    assert_eq!(err.code(), "PROVIDER_REFUSED");
    assert!(err.to_string().contains("PROHIBITED_CONTENT"), "{err}");

    let server = TestServer::start(Reply::json(prompt_blocked)).await;
    let turn = client(&server).complete(&request()).await.unwrap();
    assert_eq!(turn.stop, StopReason::Refusal);
}

#[tokio::test]
async fn finish_reasons_map_to_stop_reasons() {
    let cases = [
        ("STOP", StopReason::EndTurn),
        ("MAX_TOKENS", StopReason::MaxTokens),
        ("RECITATION", StopReason::Refusal),
        ("PROHIBITED_CONTENT", StopReason::Refusal),
        (
            "MALFORMED_FUNCTION_CALL",
            StopReason::Other("MALFORMED_FUNCTION_CALL".into()),
        ),
        ("OTHER", StopReason::Other("OTHER".into())),
    ];
    for (wire, expected) in cases {
        let server =
            TestServer::start(Reply::json(chunk(json!([text("x")]), Some(wire), None))).await;
        let turn = client(&server).complete(&request()).await.unwrap();
        assert_eq!(turn.stop, expected, "{wire}");
    }
}

#[tokio::test]
async fn arguments_that_are_not_an_object_become_a_problem() {
    let server = TestServer::start(Reply::json(chunk(
        json!([
            {"functionCall": {"name": "get_weather", "args": ["Paris"]}},
            {"functionCall": {"name": "now"}}
        ]),
        Some("STOP"),
        None,
    )))
    .await;
    let turn = client(&server).complete(&request()).await.unwrap();
    let bad = &turn.tool_calls[0];
    assert_eq!(bad.arguments, Value::Null);
    assert_eq!(bad.problem.as_deref(), Some("not a JSON object (an array)"));
    assert_eq!(
        bad.problem_result().unwrap().error_code(),
        Some("INVALID_INPUT")
    );
    // No `args` at all means no arguments.
    assert_eq!(turn.tool_calls[1].arguments, json!({}));
    assert_eq!(turn.tool_calls[1].problem, None);
}

#[tokio::test]
async fn a_rate_limit_is_retried_after_retry_after_then_succeeds() {
    let exhausted = |delay: &str| {
        json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                    "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
        ]}})
    };
    let limited = Reply::status_json(429, exhausted("0s")).header("retry-after", "0");
    let ok = Reply::sse(gemini_sse(&[chunk(
        json!([text("Hi")]),
        Some("STOP"),
        Some(usage(3, 1)),
    )]));
    let turn = after_one_retry(client, &request(), (limited.clone(), ok), 3, true).await;
    assert_eq!(turn.text, "Hi");

    let ok = Reply::json(chunk(json!([text("Hi")]), Some("STOP"), None));
    let turn = after_one_retry(client, &request(), (limited, ok), 3, false).await;
    assert_eq!(turn.text, "Hi");

    // Without a `Retry-After` header, the body's `RetryInfo` says how long to wait.
    let server = TestServer::start(Reply::status_json(429, exhausted("37s"))).await;
    let err = client(&server).complete(&request()).await.unwrap_err();
    assert_eq!(err.code(), "PROVIDER_RATE_LIMITED");
    assert_eq!(err.retry_after(), Some(Duration::from_secs(37)));
    assert!(
        err.to_string().contains("exceeded your current quota"),
        "{err}"
    );
}

#[tokio::test]
async fn unauthorized_is_provider_auth() {
    let server = TestServer::start(Reply::status_json(
        401,
        json!({"error": {"code": 401, "status": "UNAUTHENTICATED",
            "message": "Request had invalid authentication credentials."}}),
    ))
    .await;
    let err = client(&server).complete(&request()).await.unwrap_err();
    assert_eq!(
        err,
        ProviderError::Auth {
            status: 401,
            message: Some("Request had invalid authentication credentials.".into())
        }
    );

    // Gemini answers a bad API key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
    let server = TestServer::start(Reply::status_json(
        400,
        json!({"error": {"code": 400, "status": "INVALID_ARGUMENT",
            "message": "API key not valid. Please pass a valid API key.",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID", "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"}}]}}),
    ))
    .await;
    let (_, err) = drain(client(&server).stream(&request())).await;
    let err = err.unwrap();
    assert_eq!(err.code(), "PROVIDER_AUTH");
    assert!(!err.is_retryable());
    assert!(err.to_string().contains("API key not valid"), "{err}");
}

#[tokio::test]
async fn a_truncated_stream_is_a_bad_response() {
    let partial = gemini_sse(&[chunk(json!([text("Sunny")]), None, Some(usage(9, 1)))]);
    let cases = [
        // The connection drops mid-body, inside the next event.
        Reply::cut_off(format!("{partial}data: {{\"candidates\": [{{\"content\"")),
        // The body ends cleanly, but no event had a finishReason.
        Reply::sse(partial),
    ];
    for reply in cases {
        let events = bad_stream(client, &request(), reply, "cut off").await;
        assert_eq!(
            events,
            vec![
                StreamEvent::TextDelta("Sunny".into()),
                StreamEvent::Usage(Usage::new(9, 1))
            ]
        );
    }
}

#[tokio::test]
async fn an_error_event_ends_the_stream() {
    let server = TestServer::start(Reply::sse(gemini_sse(&[
        chunk(json!([text("Par")]), None, None),
        json!({"error": {"code": 503, "status": "UNAVAILABLE",
            "message": "The model is overloaded. Please try again later."}}),
    ])))
    .await;
    let (events, err) = drain(client(&server).stream(&request())).await;
    assert_eq!(events, vec![StreamEvent::TextDelta("Par".into())]);
    assert_eq!(
        err.unwrap(),
        ProviderError::Unavailable {
            status: Some(503),
            reason: "The model is overloaded. Please try again later.".into()
        }
    );
}

#[tokio::test]
async fn a_server_that_ignores_alt_sse_is_read_as_a_whole_answer() {
    // Without `alt=sse`, `streamGenerateContent` answers one JSON array of responses.
    let server = TestServer::start(Reply::json(json!([
        chunk(json!([text("Plain ")]), None, None),
        chunk(
            json!([text("JSON."), call("now", json!({}))]),
            Some("STOP"),
            Some(usage(7, 3))
        ),
    ])))
    .await;
    let (_, turn) = stream_turn(&client(&server), &request()).await;
    assert_eq!(turn.text, "Plain JSON.");
    assert_eq!(turn.tool_calls[0].name, "now");
    assert_eq!(turn.usage, Usage::new(7, 3));
}

#[tokio::test]
async fn malformed_answers_are_bad_responses() {
    let cases = [
        Reply::sse("data: {not json\r\n\r\n"),
        Reply::Body {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: "{\"candidates\": [".into(),
        },
        Reply::json(json!({"modelVersion": MODEL_VERSION})),
        // A candidate that never says why it stopped.
        Reply::json(chunk(json!([text("x")]), None, None)),
    ];
    for reply in cases {
        fails_with(client, &request(), reply, "PROVIDER_BAD_RESPONSE").await;
    }
}

#[tokio::test]
async fn model_names_are_checked_before_sending() {
    let server =
        TestServer::start(Reply::json(chunk(json!([text("ok")]), Some("STOP"), None))).await;
    for bad in ["../admin", "gemini 2.5", "models/a/b", "", "tunedModels/"] {
        let request = CompletionRequest::new(bad).with_message(Message::user("Hi"));
        let err = client(&server).complete(&request).await.unwrap_err();
        assert_eq!(err.code(), "PROVIDER_INVALID_REQUEST", "{bad}");
        let (_, err) = drain(client(&server).stream(&request)).await;
        assert_eq!(err.unwrap().code(), "PROVIDER_INVALID_REQUEST", "{bad}");
    }
    assert!(server.requests().is_empty());
    let request = CompletionRequest::new("models/gemini-2.5-pro").with_message(Message::user("Hi"));
    client(&server).complete(&request).await.unwrap();
    assert_eq!(
        server.only_request().path,
        "/v1beta/models/gemini-2.5-pro:generateContent"
    );
}

#[test]
fn the_request_body_carries_history_tool_results_and_images() {
    let (failed, shot) = failed_read_and_screenshot("call_1_1", "call_1_2");
    let echoed = ToolOutput::text("12:00").into_result("fc-9x7", "now");
    let mut turn = CompletionResponse::text("Let me look.");
    turn.tool_calls = vec![
        ModelToolCall::parse("call_1_1", "read_file", r#"{"file_path":"/etc/passwd"}"#)
            .with_signature("c2lnLTE="),
        ModelToolCall::parse("call_1_2", "screenshot", ""),
        // An id the server sent is echoed back.
        ModelToolCall::parse("fc-9x7", "now", "{}"),
    ];
    let request = CompletionRequest::new("gemini-2.5-flash")
        .with_instructions("Be careful.")
        .with_message(picture_question())
        .with_message(turn.to_message())
        // Results out of call order: they go back in the order of the calls.
        .with_message(Message::tool_results([&shot, &echoed, &failed]))
        .with_message(Message::user("Answer in one line."))
        .with_message(Message::system("Never guess."));
    let body = Client::new(TEST_KEY).request_body(&request).unwrap();
    assert_eq!(
        body,
        json!({
            "systemInstruction": {"parts": [{"text": "Be careful.\n\nNever guess."}]},
            "contents": [
                {"role": "user", "parts": [
                    {"text": "What is in this picture?"},
                    {"inlineData": {"mimeType": "image/jpeg", "data": "/9j/4AAQ"}}
                ]},
                {"role": "model", "parts": [
                    {"text": "Let me look."},
                    // Generated ids are not sent; the signature goes back on its part.
                    {"functionCall": {"name": "read_file", "args": {"file_path": "/etc/passwd"}},
                        "thoughtSignature": "c2lnLTE="},
                    {"functionCall": {"name": "screenshot", "args": {}}},
                    {"functionCall": {"name": "now", "args": {}, "id": "fc-9x7"}}
                ]},
                // The results and the next user text merge into one user content:
                // function responses first, in call order, then the images, then the text.
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "read_file", "response": {
                        "error": "Error[PATH_OUTSIDE_WORKSPACE]: `/etc/passwd` is outside"}}},
                    {"functionResponse": {"name": "screenshot", "response": {
                        "output": "Rendered the page.\n[1 image(s) from this call follow in this message]"}}},
                    {"functionResponse": {"name": "now", "response": {"output": "12:00"}, "id": "fc-9x7"}},
                    {"text": "Images returned by tool call `call_1_2` (screenshot):"},
                    {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                    {"text": "Answer in one line."}
                ]}
            ]
        })
    );

    // A tool call in a user message cannot be expressed.
    let wrong = CompletionRequest::new("gemini-2.5-flash").with_message(Message::new(
        Role::User,
        vec![Part::tool_call("c", "t", json!({}))],
    ));
    let err = Client::new(TEST_KEY).request_body(&wrong).unwrap_err();
    assert_eq!(err.code(), "PROVIDER_INVALID_REQUEST");
}

#[test]
fn signatures_survive_the_history_serde_form() {
    let mut turn = CompletionResponse::text("");
    turn.tool_calls = vec![ModelToolCall::parse("call_1_1", "now", "{}").with_signature("c2ln")];
    let message = turn.to_message();
    let value = serde_json::to_value(&message).unwrap();
    assert_eq!(
        value["content"][0],
        json!({"type": "tool_call", "id": "call_1_1", "name": "now", "arguments": {},
            "signature": "c2ln"})
    );
    let back: Message = serde_json::from_value(value).unwrap();
    assert_eq!(back, message);
}
