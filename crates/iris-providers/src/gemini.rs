//! Google Gemini `generateContent` (`POST {base_url}/models/{model}:generateContent`,
//! streamed: `:streamGenerateContent?alt=sse`).
//!
//! # The wire, as this client relies on it
//!
//! From the Gemini API reference (`models.generateContent`,
//! `models.streamGenerateContent`, `Content`, `Part`, `Blob`, `FunctionCall`,
//! `FunctionResponse`, `GenerationConfig`, `GenerateContentResponse`, `Candidate`,
//! `FinishReason`, `PromptFeedback`/`BlockReason`, `UsageMetadata`, the function-calling
//! and thought-signature guides) and the `googleapis/python-genai` types that mirror it:
//!
//! * **Request**: header `x-goog-api-key`; body `{"contents", "systemInstruction"?,
//!   "tools"?, "generationConfig"?: {"maxOutputTokens"?, "temperature"?}}`, the same for
//!   both endpoints. Tools come from [`adapters::gemini_function_declarations`] (one
//!   `Tool` holding every declaration). Contents are `{"role": "user" | "model",
//!   "parts"}`, with parts:
//!   * `{"text"}` and `{"inlineData": {"mimeType", "data"}}` (base64);
//!   * model `{"functionCall": {"name", "args": {…}, "id"?}, "thoughtSignature"?}`;
//!   * user `{"functionResponse": {"name", "response": {"output": …} | {"error": …},
//!     "id"?}}`.
//!
//!   Instructions and [`Role::System`] messages become `systemInstruction`;
//!   [`Role::Tool`] messages are `user` contents; consecutive messages of one role merge
//!   into one content (Gemini wants turns to alternate), function responses first.
//! * **Ids**: Gemini's function calls usually carry no `id`, and results are matched to
//!   calls by name and order. A call without an id gets a stable generated one,
//!   `call_<turn>_<n>` (the turn: 1 + the assistant messages already in the history; `n`
//!   1-based), like the scripted provider's; such ids are never sent back. A call's
//!   results go back in the order of that turn's calls, each naming the call's tool; an
//!   id the server did send is echoed on both the call and its response.
//! * **Thought signatures**: a `functionCall` part may carry `thoughtSignature`; it is
//!   kept in [`ModelToolCall::signature`] and sent back on that part (Gemini 3 rejects a
//!   replayed call that lost it; in parallel calls only the first has one). Signatures on
//!   text parts are optional to return and are dropped; `thought: true` parts (thought
//!   summaries) are skipped.
//! * **Tool results**: the text goes in `response.output` (`response.error` for a failed
//!   call, as the reference asks). A result's images follow the turn's function
//!   responses as `inlineData` parts of the same content, each call's images introduced
//!   by a text part naming the call (`FunctionResponse.parts` takes images only on
//!   Gemini 3 models, so the parts every model reads are used).
//! * **Non-streamed answer**: `{"candidates": [{"content": {"role": "model", "parts"},
//!   "finishReason", "finishMessage"?, "index"}], "promptFeedback"?: {"blockReason",
//!   "blockReasonMessage"?}, "usageMetadata": {"promptTokenCount",
//!   "candidatesTokenCount", "toolUsePromptTokenCount"?, "thoughtsTokenCount"?,
//!   "totalTokenCount"}, "modelVersion", "responseId"}`; only candidate 0 is read.
//! * **Streamed answer**: SSE `data:` events, each a whole `GenerateContentResponse`
//!   holding the next parts; a function call arrives whole in one event (several calls
//!   may come in one event or in successive ones); the last event carries
//!   `finishReason` and the final `usageMetadata`. There is no terminator: the body just
//!   ends. A blocked prompt is one event with `promptFeedback.blockReason` and no
//!   candidates.
//! * **Errors**: `{"error": {"code", "message", "status", "details"?}}` with the HTTP
//!   status (400 `INVALID_ARGUMENT`, 403 `PERMISSION_DENIED`, 429 `RESOURCE_EXHAUSTED`
//!   with a `google.rpc.RetryInfo` `retryDelay` in `details`, 500 `INTERNAL`, 503
//!   `UNAVAILABLE`); the same object may arrive as a stream event.
//!
//! # Mapping
//!
//! | wire | neutral |
//! |---|---|
//! | `finishReason: STOP` | [`StopReason::EndTurn`] ([`StopReason::ToolUse`] when the turn has calls: Gemini says `STOP` there) |
//! | `MAX_TOKENS` | [`StopReason::MaxTokens`] |
//! | `SAFETY`, `RECITATION`, `BLOCKLIST`, `PROHIBITED_CONTENT`, `SPII`, `IMAGE_SAFETY`, … | [`StopReason::Refusal`], [`CompletionResponse::refusal`] = `finishMessage` or "the response was blocked (SAFETY)" |
//! | `promptFeedback.blockReason` | [`StopReason::Refusal`], refusal "the prompt was blocked (SAFETY)" |
//! | others (`MALFORMED_FUNCTION_CALL`, `OTHER`…) | [`StopReason::Other`] |
//! | usage | `promptTokenCount` + `toolUsePromptTokenCount` as input, `candidatesTokenCount` + `thoughtsTokenCount` as output |
//! | `args` that are not an object | [`ModelToolCall::problem`] (absent `args`: `{}`) |
//! | 400 with `ErrorInfo` reason `API_KEY_INVALID` | `PROVIDER_AUTH` |
//! | 429 | `PROVIDER_RATE_LIMITED`, waiting `Retry-After` or else `RetryInfo.retryDelay` |
//! | a stream that ends before a `finishReason` (or a block), or is cut off | `PROVIDER_BAD_RESPONSE` |
//! | a 200 with a JSON body (object or array of responses) to a streamed request | read as the whole answer |

use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName};
use serde_json::{Map, Value, json};

use iris_tools_core::{ContentBlock, ToolResultBlock};

use crate::adapters;
use crate::assembly::Draft;
use crate::chat::{
    CompletionRequest, CompletionResponse, Message, ModelToolCall, Part, Role, StopReason,
    StreamEvent, Usage,
};
use crate::client::{self, WireFormat, argument_object, bad, invalid, json_body, json_event};
use crate::http::{Secret, Transport, status_error};
use crate::provider_error::ProviderError;
use crate::sse::SseEvent;
use crate::streaming::{Item, SseHandler};

/// A Gemini API client; see the [module docs](self) for the wire.
///
/// * The key is given explicitly (the run loop reads `api_key_env`) and sent as
///   `x-goog-api-key`, marked sensitive — never in the URL; it appears in no `Debug`
///   output or error. A blank key sends no key header.
/// * The base URL defaults to `https://generativelanguage.googleapis.com/v1beta` (the
///   API version is part of it); one timeout bounds the wait for the answer's head and
///   for each next chunk (default 120 s).
/// * The model is `gemini-2.5-flash` or a resource name (`models/…`, `tunedModels/…`).
///
/// ```
/// use iris_providers::gemini::Client;
/// use iris_providers::chat::{CompletionRequest, Message};
///
/// let client = Client::new("AIza-example").with_base_url("http://127.0.0.1:9000/v1beta")?;
/// assert_eq!(client.base_url(), "http://127.0.0.1:9000/v1beta/");
/// assert!(!format!("{client:?}").contains("AIza-example"));
///
/// let request = CompletionRequest::new("gemini-2.5-flash")
///     .with_instructions("You are terse.")
///     .with_message(Message::user("Hi"))
///     .with_max_output_tokens(256);
/// let body = client.request_body(&request)?;
/// assert_eq!(body["systemInstruction"]["parts"][0]["text"], "You are terse.");
/// assert_eq!(body["contents"][0], serde_json::json!({"role": "user", "parts": [{"text": "Hi"}]}));
/// assert_eq!(body["generationConfig"]["maxOutputTokens"], 256);
/// # Ok::<(), iris_providers::ProviderError>(())
/// ```
pub struct Client {
    transport: Transport,
}

impl Client {
    /// Google's Gemini API, version `v1beta`.
    pub const DEFAULT_BASE_URL: &'static str = "https://generativelanguage.googleapis.com/v1beta";

    /// A client with this key.
    pub fn new(api_key: impl Into<String>) -> Self {
        Self {
            transport: Transport::new(api_key.into(), Self::DEFAULT_BASE_URL),
        }
    }

    /// Points the client at another server or API version (a proxy, a test server,
    /// `…/v1`).
    ///
    /// # Errors
    /// `PROVIDER_CONFIG_INVALID`, as [`crate::openai_chat::Client::with_base_url`].
    pub fn with_base_url(mut self, base_url: &str) -> Result<Self, ProviderError> {
        self.transport.set_base_url(base_url)?;
        Ok(self)
    }

    /// Sets the longest wait for the answer's head or its next chunk.
    ///
    /// # Errors
    /// `PROVIDER_CONFIG_INVALID` when it is zero.
    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self, ProviderError> {
        self.transport.set_timeout(timeout)?;
        Ok(self)
    }

    /// The base URL, ending in `/`.
    pub fn base_url(&self) -> &str {
        self.transport.base_url()
    }

    /// The timeout.
    pub fn timeout(&self) -> Duration {
        self.transport.timeout()
    }

    /// The JSON body this client sends for `request` (the same streamed or not).
    ///
    /// # Errors
    /// `UNSUPPORTED_SCHEMA` when a tool schema cannot be expressed in Gemini's `Schema`,
    /// and `PROVIDER_INVALID_REQUEST` when a message cannot be expressed (a tool call
    /// in a user message, an image in a system message).
    pub fn request_body(&self, request: &CompletionRequest) -> Result<Value, ProviderError> {
        let (system, contents) = encode_contents(request)?;
        let mut body = json!({ "contents": contents });
        if !system.is_empty() {
            body["systemInstruction"] = json!({"parts": [{"text": system}]});
        }
        if !request.tools.is_empty() {
            body["tools"] = json!([adapters::gemini_function_declarations(&request.tools)?]);
        }
        let mut config = Map::new();
        if let Some(max) = request.max_output_tokens {
            config.insert("maxOutputTokens".into(), json!(max));
        }
        if let Some(temperature) = request.temperature {
            config.insert("temperature".into(), json!(temperature));
        }
        if !config.is_empty() {
            body["generationConfig"] = Value::Object(config);
        }
        Ok(body)
    }
}

impl WireFormat for Client {
    type Reader = Turn;

    fn transport(&self) -> &Transport {
        &self.transport
    }

    fn endpoint(&self, request: &CompletionRequest, stream: bool) -> Result<String, ProviderError> {
        let path = model_path(&request.model)?;
        Ok(if stream {
            format!("{path}:streamGenerateContent?alt=sse")
        } else {
            format!("{path}:generateContent")
        })
    }

    fn body(&self, request: &CompletionRequest, _: bool) -> Result<Value, ProviderError> {
        self.request_body(request)
    }

    fn key_header(&self) -> (HeaderName, &'static str) {
        (HeaderName::from_static("x-goog-api-key"), "")
    }

    fn reader(&self, request: &CompletionRequest) -> Turn {
        Turn::new(&self.transport.key, request)
    }
}

client::http_provider!(Client, "gemini");

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.transport.debug_struct(f, "gemini::Client").finish()
    }
}

/// The model's resource path: `models/<name>` (or the `models/…` / `tunedModels/…`
/// name given), each segment made of letters, digits, `.`, `_` and `-` so the name
/// cannot reach another path.
fn model_path(model: &str) -> Result<String, ProviderError> {
    let model = model.trim();
    let path = if model.starts_with("models/") || model.starts_with("tunedModels/") {
        model.to_owned()
    } else {
        format!("models/{model}")
    };
    let valid = path.split('/').all(|segment| {
        !segment.is_empty()
            && segment != "."
            && segment != ".."
            && segment
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    });
    if !valid || path.split('/').count() != 2 {
        return Err(invalid(format!(
            "`{}` is not a Gemini model name (letters, digits, `.`, `_`, `-`)",
            crate::http::one_line(model)
        )));
    }
    Ok(path)
}

// ---------------------------------------------------------------------------------------
// Request encoding

/// A generated id (`call_<turn>_<n>`), which Gemini never saw and is not sent.
fn is_generated_id(id: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    id.strip_prefix("call_")
        .and_then(|rest| rest.split_once('_'))
        .is_some_and(|(turn, n)| digits(turn) && digits(n))
}

/// A part of a content being built, with what ordering the results needs.
enum Piece {
    /// A model `functionCall` part, with its call id.
    Call(String, Value),
    /// A user `functionResponse` part, with the id of the call it answers.
    Response(String, Value),
    /// Anything else.
    Other(Value),
}

fn encode_contents(request: &CompletionRequest) -> Result<(String, Vec<Value>), ProviderError> {
    let (system, contents) =
        client::alternating(request, ("model", model_pieces), user_pieces, Vec::extend)?;
    // Each user content answers the calls of the model content before it: function
    // responses first, in the order of those calls.
    let mut calls: Vec<String> = Vec::new();
    let mut out = Vec::with_capacity(contents.len());
    for (role, mut pieces) in contents {
        if role == "model" {
            calls = pieces
                .iter()
                .filter_map(|p| match p {
                    Piece::Call(id, _) => Some(id.clone()),
                    _ => None,
                })
                .collect();
        } else {
            let rank = |piece: &Piece| match piece {
                Piece::Response(id, _) => (0, calls.iter().position(|c| c == id)),
                _ => (1, None),
            };
            // Stable: responses to unknown calls keep their order, after the others.
            pieces.sort_by_key(|p| {
                let (group, position) = rank(p);
                (group, position.unwrap_or(usize::MAX))
            });
            calls.clear();
        }
        let parts: Vec<Value> = pieces
            .into_iter()
            .map(|p| match p {
                Piece::Call(_, v) | Piece::Response(_, v) | Piece::Other(v) => v,
            })
            .collect();
        out.push(json!({"role": role, "parts": parts}));
    }
    Ok((system, out))
}

fn model_pieces(message: &Message) -> Result<Vec<Piece>, ProviderError> {
    let mut pieces = Vec::new();
    for part in &message.content {
        match part {
            Part::Text { text } if text.is_empty() => {}
            Part::Text { text } => pieces.push(Piece::Other(json!({ "text": text }))),
            Part::ToolCall {
                id,
                name,
                arguments,
                signature,
                ..
            } => {
                let mut call = json!({"name": name, "args": argument_object(arguments)});
                if !is_generated_id(id) {
                    call["id"] = json!(id);
                }
                let mut part = json!({ "functionCall": call });
                if let Some(signature) = signature {
                    part["thoughtSignature"] = json!(signature);
                }
                pieces.push(Piece::Call(id.clone(), part));
            }
            _ => {
                return Err(invalid(
                    "an assistant message may hold text and tool calls only",
                ));
            }
        }
    }
    Ok(pieces)
}

fn user_pieces(message: &Message) -> Result<Vec<Piece>, ProviderError> {
    let mut responses = Vec::new();
    let mut others = Vec::new();
    for part in &message.content {
        match part {
            Part::ToolResult(block) => {
                responses.push(Piece::Response(
                    block.tool_use_id.clone(),
                    function_response(block),
                ));
                let images: Vec<Value> = block
                    .content
                    .iter()
                    .filter_map(|c| match c {
                        ContentBlock::Image { mime_type, data } => {
                            Some(inline_data(mime_type, data))
                        }
                        _ => None,
                    })
                    .collect();
                if !images.is_empty() {
                    others.push(Piece::Other(json!({"text": format!(
                        "Images returned by tool call `{}` ({}):",
                        block.tool_use_id, block.tool_name
                    )})));
                    others.extend(images.into_iter().map(Piece::Other));
                }
            }
            Part::Text { text } if text.is_empty() => {}
            Part::Text { text } => others.push(Piece::Other(json!({ "text": text }))),
            Part::Image { mime_type, data } => {
                others.push(Piece::Other(inline_data(mime_type, data)));
            }
            _ => {
                return Err(invalid(
                    "a tool call may only appear in an assistant message",
                ));
            }
        }
    }
    responses.extend(others);
    Ok(responses)
}

fn function_response(block: &ToolResultBlock) -> Value {
    let mut text = block
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect::<Vec<_>>()
        .join("\n");
    let images = block
        .content
        .iter()
        .filter(|c| matches!(c, ContentBlock::Image { .. }))
        .count();
    if images > 0 {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!(
            "[{images} image(s) from this call follow in this message]"
        ));
    }
    let key = if block.is_error { "error" } else { "output" };
    let mut response = json!({"name": block.tool_name, "response": { key: text }});
    if !is_generated_id(&block.tool_use_id) {
        response["id"] = json!(block.tool_use_id);
    }
    json!({ "functionResponse": response })
}

fn inline_data(mime_type: &str, data: &str) -> Value {
    json!({"inlineData": {"mimeType": mime_type, "data": data}})
}

// ---------------------------------------------------------------------------------------
// Response decoding

/// An `{"error": {"code", "message", "status", "details"}}` inside a 200 answer or a
/// stream event, read like the HTTP error it stands for.
fn error_object(error: &Value, key: &Secret) -> ProviderError {
    let status = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .and_then(|c| StatusCode::from_u16(c).ok())
        .filter(|s| !s.is_success())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = json!({ "error": error }).to_string();
    status_error(
        status,
        &HeaderMap::new(),
        body.as_bytes(),
        key,
        SystemTime::now(),
    )
}

/// Finish reasons that mean the output was blocked.
const BLOCKED: &[&str] = &[
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_RECITATION",
];

/// The turn being read, from stream events or one whole answer.
#[derive(Debug)]
pub(crate) struct Turn {
    key: Secret,
    /// The 1-based turn number for generated call ids.
    turn: usize,
    draft: Draft,
    calls: Vec<ModelToolCall>,
    finish: Option<String>,
}

impl Turn {
    fn new(key: &Secret, request: &CompletionRequest) -> Self {
        let assistant_turns = request
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count();
        Self {
            key: key.clone(),
            turn: assistant_turns + 1,
            draft: Draft::default(),
            calls: Vec::new(),
            finish: None,
        }
    }

    /// One `GenerateContentResponse`: queues what it adds.
    fn chunk(&mut self, value: &Value, out: &mut VecDeque<Item>) -> Result<(), ProviderError> {
        if let Some(error) = value.get("error").filter(|e| e.is_object()) {
            return Err(error_object(error, &self.key));
        }
        if !value.is_object() {
            return Err(bad("a response is not a JSON object"));
        }
        self.draft
            .identify(value["responseId"].as_str(), value["modelVersion"].as_str());
        if let Some(reason) = value
            .pointer("/promptFeedback/blockReason")
            .and_then(Value::as_str)
        {
            let message = value
                .pointer("/promptFeedback/blockReasonMessage")
                .and_then(Value::as_str)
                .map_or_else(
                    || format!("the prompt was blocked ({reason})"),
                    |m| format!("the prompt was blocked ({reason}): {m}"),
                );
            self.block(reason, &message, out);
        }
        let candidates = value["candidates"].as_array().map(Vec::as_slice);
        let candidate = candidates
            .unwrap_or(&[])
            .iter()
            .find(|c| c["index"].as_u64().unwrap_or(0) == 0);
        if let Some(candidate) = candidate {
            let parts = candidate
                .pointer("/content/parts")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            for part in parts {
                self.part(part, out);
            }
            if let Some(reason) = candidate["finishReason"].as_str() {
                if BLOCKED.contains(&reason) {
                    let message = candidate["finishMessage"]
                        .as_str()
                        .filter(|m| !m.trim().is_empty())
                        .map_or_else(
                            || format!("the response was blocked ({reason})"),
                            str::to_owned,
                        );
                    self.block(reason, &message, out);
                } else {
                    self.finish = Some(reason.to_owned());
                }
            }
        }
        if let Some(usage) = value.get("usageMetadata").filter(|u| u.is_object()) {
            let count = |name: &str| usage[name].as_u64().unwrap_or(0);
            let usage = Usage::new(
                count("promptTokenCount").saturating_add(count("toolUsePromptTokenCount")),
                count("candidatesTokenCount").saturating_add(count("thoughtsTokenCount")),
            );
            // Every chunk repeats the usage so far: announce it when it moved.
            self.draft.usage_changed(usage, out);
        }
        Ok(())
    }

    fn part(&mut self, part: &Value, out: &mut VecDeque<Item>) {
        if part["thought"] == true {
            return;
        }
        self.draft
            .text(part["text"].as_str().unwrap_or_default(), out);
        let Some(call) = part.get("functionCall").filter(|c| c.is_object()) else {
            return;
        };
        let index = self.calls.len();
        let id = call["id"].as_str().filter(|id| !id.is_empty()).map_or_else(
            || format!("call_{}_{}", self.turn, index + 1),
            str::to_owned,
        );
        let name = call["name"].as_str().unwrap_or_default().to_owned();
        let args = match call.get("args") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(args) => args.clone(),
        };
        let mut call = ModelToolCall::from_value(id, name, args);
        if let Some(signature) = part["thoughtSignature"].as_str().filter(|s| !s.is_empty()) {
            call = call.with_signature(signature);
        }
        out.push_back(Ok(StreamEvent::ToolCallStarted {
            index,
            id: call.id.clone(),
            name: call.name.clone(),
        }));
        out.push_back(Ok(StreamEvent::ToolCallArgumentsDelta {
            index,
            delta: call.raw_arguments.clone(),
        }));
        self.calls.push(call);
    }

    fn block(&mut self, reason: &str, message: &str, out: &mut VecDeque<Item>) {
        self.finish = Some(reason.to_owned());
        if !self.draft.refused() {
            self.draft.refusal(message, out);
        }
    }

    fn assemble(&mut self, ended: &str) -> Result<CompletionResponse, ProviderError> {
        let Some(finish) = self.finish.take() else {
            return Err(bad(ended));
        };
        let calls = std::mem::take(&mut self.calls);
        let stop = match finish.as_str() {
            _ if self.draft.refused() => StopReason::Refusal,
            "STOP" if !calls.is_empty() => StopReason::ToolUse,
            "STOP" => StopReason::EndTurn,
            "MAX_TOKENS" => StopReason::MaxTokens,
            other => StopReason::Other(other.to_owned()),
        };
        Ok(self.draft.finish(calls, stop))
    }
}

impl SseHandler for Turn {
    fn event(&mut self, event: SseEvent, out: &mut VecDeque<Item>) -> Result<bool, ProviderError> {
        let value = json_event(&event)?;
        self.chunk(&value, out)?;
        // No terminator: the stream ends with the body.
        Ok(false)
    }

    fn finish(&mut self, _terminated: bool) -> Result<CompletionResponse, ProviderError> {
        self.assemble("the stream was cut off before a `finishReason`")
    }

    fn whole_body(&mut self, body: &[u8]) -> Result<CompletionResponse, ProviderError> {
        let value = json_body(body)?;
        let mut ignored = VecDeque::new();
        match &value {
            // `streamGenerateContent` without `alt=sse` answers a JSON array.
            Value::Array(chunks) => {
                for chunk in chunks {
                    self.chunk(chunk, &mut ignored)?;
                }
            }
            _ => self.chunk(&value, &mut ignored)?,
        }
        if self.finish.is_none() && value.get("candidates").is_none() {
            return Err(bad("the answer has no candidate"));
        }
        self.assemble("the answer has no `finishReason`")
    }
}
