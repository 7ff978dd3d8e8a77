//! OpenAI Responses (`POST {base_url}/responses`).
//!
//! # The wire, as this client relies on it
//!
//! From OpenAI's API reference (the `openai/openai-openapi` spec: schemas
//! `CreateResponse`, `Response`, `InputItem`, `EasyInputMessage`, `FunctionToolCall`,
//! `FunctionCallOutputItemParam`, `InputTextContentParam`,
//! `InputImageContentParamAutoParam`, `OutputMessage`, `OutputTextContent`,
//! `RefusalContent`, `ResponseUsage`, `ResponseError`, `ResponseErrorCode`, and the
//! streaming events `ResponseCreatedEvent`, `ResponseOutputItemAddedEvent`,
//! `ResponseOutputItemDoneEvent`, `ResponseContentPartAddedEvent`,
//! `ResponseTextDeltaEvent`, `ResponseTextDoneEvent`, `ResponseRefusalDeltaEvent`,
//! `ResponseRefusalDoneEvent`, `ResponseFunctionCallArgumentsDeltaEvent`,
//! `ResponseFunctionCallArgumentsDoneEvent`, `ResponseCompletedEvent`,
//! `ResponseIncompleteEvent`, `ResponseFailedEvent`, `ResponseErrorEvent`):
//!
//! * **Request**: `{"model", "input": [items], "instructions"?, "tools"?,
//!   "max_output_tokens"?, "temperature"?, "stream"?, "store"}`. Tools come from
//!   [`adapters::openai_responses`] (`strict` always written: the API defaults it to
//!   `true`). `store` is `false` by default ([`Client::with_store`]): the run loop sends
//!   the whole history every turn and never uses `previous_response_id`. Input items:
//!   * instructions go in `instructions`; [`Role::System`] messages are `{"type":
//!     "message", "role": "system", "content": "…"}`;
//!   * user: `{"type": "message", "role": "user", "content": "…"}`, or content parts
//!     `{"type": "input_text", "text"}` and `{"type": "input_image", "image_url":
//!     "data:<mime>;base64,<data>", "detail": "auto"}`;
//!   * assistant text: `{"type": "message", "role": "assistant", "content": "…"}`;
//!   * assistant calls: `{"type": "function_call", "call_id", "name", "arguments":
//!     "<JSON text>"}` (no item `id`: an `fc_…` id would have to come with the reasoning
//!     item that preceded it, which the history does not keep);
//!   * tool results: `{"type": "function_call_output", "call_id", "output"}`, `output`
//!     being the text, or — when the result holds images — a list of `input_text` and
//!     `input_image` parts (the format takes images in a tool result natively).
//! * **Non-streamed answer**: the `Response` object `{"id", "model", "status",
//!   "output": [items], "incomplete_details": {"reason"}?, "error"?, "usage":
//!   {"input_tokens", "output_tokens", …}}`; output items are `message` (`content`:
//!   `output_text` parts with `text`, `refusal` parts with `refusal`), `function_call`
//!   (`id`, `call_id`, `name`, `arguments`) and others (`reasoning`…, ignored).
//! * **Streamed answer**: SSE events named by `event:` with the same `type` in the data,
//!   each with a `sequence_number`; no `[DONE]`. `response.created` /
//!   `response.in_progress` (the `response` so far), `response.output_item.added`
//!   (`output_index`, `item`: a `message` with empty content or a `function_call` with
//!   empty `arguments`), `response.content_part.added`, `response.output_text.delta`
//!   (`item_id`, `output_index`, `content_index`, `delta`) and `.done` (`text`),
//!   `response.refusal.delta` / `.done` (`refusal`),
//!   `response.function_call_arguments.delta` (`item_id`, `output_index`, `delta`: the
//!   next piece of the arguments' JSON text) and `.done` (`name`, `arguments`),
//!   `response.output_item.done` (the finished `item`), then exactly one of
//!   `response.completed` / `response.incomplete` (the final `response`, with `usage`)
//!   or `response.failed` (`response.error`: `{"code", "message"}`). An `error` event
//!   (`{"type": "error", "code", "message", "param"}`) ends a stream too. Several items
//!   may stream at once, so pieces are assembled by `item_id` (or `output_index`).
//! * **Errors**: `{"error": {"message", "type", "param", "code"}}` with the HTTP status,
//!   as for Chat Completions.
//!
//! The deltas are what count: a `.done` event, `response.output_item.done` or the final
//! `response` only fill in what the deltas left out (a server that sends no deltas still
//! yields its text and calls), so the events of a stream always add up to its turn.
//!
//! # Mapping
//!
//! | wire | neutral |
//! |---|---|
//! | `status: completed`, no calls | [`StopReason::EndTurn`] |
//! | `status: completed` with `function_call` items | [`StopReason::ToolUse`] |
//! | `incomplete`, reason `max_output_tokens` | [`StopReason::MaxTokens`] |
//! | `incomplete`, reason `content_filter`, or any `refusal` content | [`StopReason::Refusal`] (refusal text in [`CompletionResponse::refusal`]) |
//! | other statuses or reasons | [`StopReason::Other`] |
//! | `call_id` | [`ModelToolCall::id`](crate::chat::ModelToolCall::id), answered by `function_call_output.call_id` |
//! | arguments that are not a JSON object | [`ModelToolCall::problem`](crate::chat::ModelToolCall::problem) |
//! | `usage.input_tokens` (cached included) / `output_tokens` (reasoning included) | [`Usage`] |
//! | `response.failed`, `error` with `rate_limit_exceeded` | `PROVIDER_RATE_LIMITED` |
//! | … with `server_error`, `vector_store_timeout` or an unknown code | `PROVIDER_UNAVAILABLE` |
//! | … with another documented `ResponseErrorCode` (`invalid_prompt`, image errors…) | `PROVIDER_INVALID_REQUEST` |
//! | a stream that ends before `response.completed` / `.incomplete`, or is cut off | `PROVIDER_BAD_RESPONSE` |
//! | a 200 with a JSON body to a streamed request | read as the non-streamed answer |
//!
//! Reasoning items are not replayed (the neutral history has no place for them), so a
//! reasoning model starts each turn from the visible history.

use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, HeaderName};
use serde_json::{Value, json};

use iris_tools_core::{ContentBlock, ToolResultBlock};

use crate::adapters;
use crate::assembly::{Draft, PartialCalls};
use crate::chat::{
    CompletionRequest, CompletionResponse, Message, Part, Role, StopReason, StreamEvent, Usage,
};
use crate::client::{
    self, WireFormat, argument_text, bad, invalid, json_body, json_event, system_text,
};
use crate::http::{Secret, Transport, one_line};
use crate::provider_error::ProviderError;
use crate::sse::SseEvent;
use crate::streaming::{Item, SseHandler};

/// A Responses API client; see the [module docs](self) for the wire.
///
/// * The key is given explicitly (the run loop reads `api_key_env`) and sent as
///   `Authorization: Bearer …`, marked sensitive; it appears in no `Debug` output or
///   error. A blank key sends no `Authorization` header (local servers).
/// * The base URL defaults to `https://api.openai.com/v1`; plain `http` is accepted for
///   loopback hosts, or for any host when there is no key.
/// * One timeout bounds the wait for the answer's head and for each next chunk
///   (default 120 s); no retries here — wrap the client in a
///   [`RetryingProvider`](crate::retry::RetryingProvider).
///
/// ```
/// use iris_providers::openai_responses::Client;
/// use iris_providers::chat::{CompletionRequest, Message};
///
/// let client = Client::new("sk-example").with_base_url("http://127.0.0.1:8000/v1")?;
/// assert_eq!(client.base_url(), "http://127.0.0.1:8000/v1/");
/// assert!(!format!("{client:?}").contains("sk-example"));
///
/// let request = CompletionRequest::new("gpt-4.1-mini")
///     .with_instructions("You are terse.")
///     .with_message(Message::user("Hi"));
/// let body = client.request_body(&request, true)?;
/// assert_eq!(body["instructions"], "You are terse.");
/// assert_eq!(body["input"][0], serde_json::json!({"type": "message", "role": "user", "content": "Hi"}));
/// assert_eq!(body["store"], false);
/// # Ok::<(), iris_providers::ProviderError>(())
/// ```
pub struct Client {
    transport: Transport,
    store: bool,
}

impl Client {
    /// OpenAI's API.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.openai.com/v1";

    /// A client for OpenAI with this key.
    pub fn new(api_key: impl Into<String>) -> Self {
        Self {
            transport: Transport::new(api_key.into(), Self::DEFAULT_BASE_URL),
            store: false,
        }
    }

    /// Points the client at another server (a proxy, a compatible server, a test
    /// server).
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

    /// Whether OpenAI stores the responses (`store`, default `false` here).
    pub fn with_store(mut self, store: bool) -> Self {
        self.store = store;
        self
    }

    /// The base URL, ending in `/`.
    pub fn base_url(&self) -> &str {
        self.transport.base_url()
    }

    /// The timeout.
    pub fn timeout(&self) -> Duration {
        self.transport.timeout()
    }

    /// The JSON body this client sends for `request`.
    ///
    /// # Errors
    /// `UNSUPPORTED_SCHEMA` when a tool schema cannot be sent (strict mode), and
    /// `PROVIDER_INVALID_REQUEST` when a message cannot be expressed (a tool call in a
    /// user message, an image in a system message).
    pub fn request_body(
        &self,
        request: &CompletionRequest,
        stream: bool,
    ) -> Result<Value, ProviderError> {
        let mut body = json!({
            "model": request.model,
            "input": encode_input(request)?,
            "store": self.store,
        });
        if let Some(instructions) = request.instructions.as_ref().filter(|i| !i.is_empty()) {
            body["instructions"] = json!(instructions);
        }
        if !request.tools.is_empty() {
            body["tools"] =
                Value::Array(adapters::openai_responses(&request.tools, request.strict)?);
        }
        if let Some(max) = request.max_output_tokens {
            body["max_output_tokens"] = json!(max);
        }
        if let Some(temperature) = request.temperature {
            body["temperature"] = json!(temperature);
        }
        if stream {
            body["stream"] = json!(true);
        }
        Ok(body)
    }
}

impl WireFormat for Client {
    type Reader = ResponsesStream;

    fn transport(&self) -> &Transport {
        &self.transport
    }

    fn endpoint(&self, _: &CompletionRequest, _: bool) -> Result<String, ProviderError> {
        Ok("responses".into())
    }

    fn body(&self, request: &CompletionRequest, stream: bool) -> Result<Value, ProviderError> {
        self.request_body(request, stream)
    }

    fn key_header(&self) -> (HeaderName, &'static str) {
        (AUTHORIZATION, "Bearer ")
    }

    fn reader(&self, _: &CompletionRequest) -> ResponsesStream {
        ResponsesStream::new(&self.transport.key)
    }
}

client::http_provider!(Client, "openai-responses");

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.transport
            .debug_struct(f, "openai_responses::Client")
            .field("store", &self.store)
            .finish()
    }
}

// ---------------------------------------------------------------------------------------
// Request encoding

fn encode_input(request: &CompletionRequest) -> Result<Vec<Value>, ProviderError> {
    let mut out = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        encode_message(message, &mut out)?;
    }
    Ok(out)
}

fn encode_message(message: &Message, out: &mut Vec<Value>) -> Result<(), ProviderError> {
    match message.role {
        Role::System => {
            out.push(
                json!({"type": "message", "role": "system", "content": system_text(message)?}),
            );
        }
        Role::Assistant => {
            let mut text = String::new();
            let flush = |text: &mut String, out: &mut Vec<Value>| {
                if !text.is_empty() {
                    let content = std::mem::take(text);
                    out.push(json!({"type": "message", "role": "assistant", "content": content}));
                }
            };
            for part in &message.content {
                match part {
                    Part::Text { text: t } => text.push_str(t),
                    Part::ToolCall {
                        id,
                        name,
                        arguments,
                        ..
                    } => {
                        flush(&mut text, out);
                        out.push(json!({
                            "type": "function_call",
                            "call_id": id,
                            "name": name,
                            "arguments": argument_text(arguments),
                        }));
                    }
                    _ => {
                        return Err(invalid(
                            "an assistant message may hold text and tool calls only",
                        ));
                    }
                }
            }
            flush(&mut text, out);
        }
        Role::User | Role::Tool => {
            // The outputs answer the calls directly; the message's other content
            // follows them as one user message.
            let mut user_parts = Vec::new();
            for part in &message.content {
                match part {
                    Part::ToolResult(block) => out.push(function_call_output(block)),
                    Part::Text { text } => {
                        user_parts.push(json!({"type": "input_text", "text": text}));
                    }
                    Part::Image { mime_type, data } => user_parts.push(image_part(mime_type, data)),
                    _ => {
                        return Err(invalid(
                            "a tool call may only appear in an assistant message",
                        ));
                    }
                }
            }
            if !user_parts.is_empty() {
                out.push(
                    json!({"type": "message", "role": "user", "content": user_content(user_parts)}),
                );
            }
        }
    }
    Ok(())
}

/// A tool result: its text as the `output` string, or a list of `input_text` and
/// `input_image` parts when it holds images.
fn function_call_output(block: &ToolResultBlock) -> Value {
    let has_images = block
        .content
        .iter()
        .any(|c| matches!(c, ContentBlock::Image { .. }));
    let output = if has_images {
        Value::Array(
            block
                .content
                .iter()
                .filter_map(|content| match content {
                    ContentBlock::Text { text } => {
                        Some(json!({"type": "input_text", "text": text}))
                    }
                    ContentBlock::Image { mime_type, data } => Some(image_part(mime_type, data)),
                    _ => None,
                })
                .collect(),
        )
    } else {
        Value::String(
            block
                .content
                .iter()
                .filter_map(ContentBlock::as_text)
                .collect::<Vec<_>>()
                .join("\n"),
        )
    };
    json!({"type": "function_call_output", "call_id": block.tool_use_id, "output": output})
}

fn image_part(mime_type: &str, data: &str) -> Value {
    json!({
        "type": "input_image",
        "image_url": format!("data:{mime_type};base64,{data}"),
        "detail": "auto",
    })
}

/// A lone text part is sent as a plain string.
fn user_content(mut parts: Vec<Value>) -> Value {
    if parts.len() == 1 && parts[0]["type"] == "input_text" {
        return parts.swap_remove(0)["text"].take();
    }
    Value::Array(parts)
}

// ---------------------------------------------------------------------------------------
// Response decoding

/// The error a failed response, an `error` event or an error body means.
fn failure(code: Option<&str>, message: Option<&str>, key: &Secret) -> ProviderError {
    let message = message
        .map(|m| key.redact(&one_line(m)))
        .filter(|m| !m.is_empty());
    let reason = || message.clone().unwrap_or_else(|| "no message".into());
    match code.unwrap_or_default() {
        code if code.contains("rate_limit") => ProviderError::RateLimited {
            retry_after: None,
            message,
        },
        "server_error" | "vector_store_timeout" | "" => ProviderError::Unavailable {
            status: None,
            reason: reason(),
        },
        code if code.contains("invalid")
            || code.contains("image")
            || matches!(code, "data_residency_mismatch" | "bio_policy") =>
        {
            ProviderError::InvalidRequest {
                status: None,
                message: reason(),
            }
        }
        _ => ProviderError::Unavailable {
            status: None,
            reason: reason(),
        },
    }
}

/// The error of an `{"code", "message"}` object (`response.error`, an error body's
/// `error`), whose `type` stands in for a missing `code`.
fn error_object(error: &Value, key: &Secret) -> ProviderError {
    let code = error
        .get("code")
        .and_then(Value::as_str)
        .or_else(|| error.get("type").and_then(Value::as_str));
    failure(code, error.get("message").and_then(Value::as_str), key)
}

fn parse_response(bytes: &[u8], key: &Secret) -> Result<CompletionResponse, ProviderError> {
    let value = json_body(bytes)?;
    let error = value.get("error").filter(|e| e.is_object());
    if value["status"] == "failed" || (value.get("output").is_none() && error.is_some()) {
        return Err(error.map_or_else(
            || failure(None, Some("the response failed"), key),
            |e| error_object(e, key),
        ));
    }
    if !value["output"].is_array() {
        return Err(bad("the answer has no `output` list"));
    }
    let mut assembly = Assembly::default();
    assembly.response(&value, &mut VecDeque::new());
    let status = value["status"].as_str().unwrap_or("completed");
    let reason = value
        .pointer("/incomplete_details/reason")
        .and_then(Value::as_str);
    Ok(assembly.finish(status, reason))
}

/// Which kind of text a content part streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextKind {
    Text,
    Refusal,
}

/// The turn being assembled from events or from a whole response; every piece it
/// takes in is queued as the stream event it means.
#[derive(Debug, Default)]
struct Assembly {
    draft: Draft,
    /// The item ids seen, by output index.
    keys: Vec<(u64, String)>,
    /// The text streamed so far per content part: item key, content index, kind.
    parts: Vec<(String, u64, TextKind, String)>,
    /// By item key: the item's id (`fc_…`), or `#<output_index>`.
    calls: PartialCalls<String>,
}

impl Assembly {
    /// How an event or an output item names its item: the item id, else the id of the
    /// item seen at that position, else the position.
    fn key(&mut self, item_id: Option<&str>, output_index: u64) -> String {
        let known = self.keys.iter().find(|(i, _)| *i == output_index);
        match (item_id.filter(|id| !id.is_empty()), known) {
            (Some(id), None) => {
                self.keys.push((output_index, id.to_owned()));
                id.to_owned()
            }
            (Some(id), Some(_)) => id.to_owned(),
            (None, Some((_, key))) => key.clone(),
            (None, None) => format!("#{output_index}"),
        }
    }

    fn event_key(&mut self, data: &Value) -> String {
        self.key(
            data["item_id"].as_str(),
            data["output_index"].as_u64().unwrap_or(0),
        )
    }

    fn header(&mut self, response: &Value) {
        self.draft
            .identify(response["id"].as_str(), response["model"].as_str());
    }

    /// A whole response (non-streamed, or the final one of a stream): fills in what
    /// the events left out, takes the usage.
    fn response(&mut self, response: &Value, out: &mut VecDeque<Item>) {
        self.header(response);
        if let Some(items) = response["output"].as_array() {
            for (index, item) in items.iter().enumerate() {
                self.item(index as u64, item, out);
            }
        }
        let usage = &response["usage"];
        if usage.is_object() {
            self.draft.usage = Usage::new(
                usage["input_tokens"].as_u64().unwrap_or(0),
                usage["output_tokens"].as_u64().unwrap_or(0),
            );
        }
    }

    /// An output item as `output_item.added` / `.done` or the final response carry it.
    fn item(&mut self, output_index: u64, item: &Value, out: &mut VecDeque<Item>) {
        let key = self.key(item["id"].as_str(), output_index);
        match item["type"].as_str() {
            Some("message") => {
                let parts = item["content"].as_array().map(Vec::as_slice).unwrap_or(&[]);
                for (index, part) in parts.iter().enumerate() {
                    self.content_part(&key, index as u64, part, out);
                }
            }
            Some("function_call") => {
                let index = self.calls.index(key);
                let call = self.calls.get_mut(index);
                if call.id.is_empty()
                    && let Some(id) = item["call_id"].as_str()
                {
                    call.id = id.to_owned();
                }
                if call.name.is_empty()
                    && let Some(name) = item["name"].as_str()
                {
                    call.name = name.to_owned();
                }
                self.calls.start(index, out);
                if let Some(arguments) = item["arguments"].as_str() {
                    self.calls.complete(index, arguments, out);
                }
            }
            // Reasoning, built-in tool calls and items added later.
            _ => {}
        }
    }

    /// A content part of a message item (`output_text` or `refusal`), whole.
    fn content_part(&mut self, key: &str, index: u64, part: &Value, out: &mut VecDeque<Item>) {
        match part["type"].as_str() {
            Some("output_text") => {
                let text = part["text"].as_str().unwrap_or_default();
                self.text_final(key, index, TextKind::Text, text, out);
            }
            Some("refusal") => {
                let text = part["refusal"].as_str().unwrap_or_default();
                self.text_final(key, index, TextKind::Refusal, text, out);
            }
            _ => {}
        }
    }

    fn streamed(&mut self, key: &str, index: u64, kind: TextKind) -> &mut String {
        let position = self
            .parts
            .iter()
            .position(|(k, i, t, _)| k == key && *i == index && *t == kind);
        let position = position.unwrap_or_else(|| {
            self.parts
                .push((key.to_owned(), index, kind, String::new()));
            self.parts.len() - 1
        });
        &mut self.parts[position].3
    }

    fn text_piece(
        &mut self,
        key: &str,
        index: u64,
        kind: TextKind,
        piece: &str,
        out: &mut VecDeque<Item>,
    ) {
        if piece.is_empty() {
            return;
        }
        self.streamed(key, index, kind).push_str(piece);
        match kind {
            TextKind::Text => self.draft.text(piece, out),
            TextKind::Refusal => self.draft.refusal(piece, out),
        }
    }

    /// The whole text of a part: whatever the deltas did not bring yet is added.
    fn text_final(
        &mut self,
        key: &str,
        index: u64,
        kind: TextKind,
        full: &str,
        out: &mut VecDeque<Item>,
    ) {
        let streamed = self.streamed(key, index, kind);
        if let Some(rest) = full.strip_prefix(streamed.as_str()) {
            let rest = rest.to_owned();
            self.text_piece(key, index, kind, &rest, out);
        }
    }

    fn finish(&mut self, status: &str, reason: Option<&str>) -> CompletionResponse {
        let calls = self.calls.finish();
        let stop = match (status, reason) {
            _ if self.draft.refused() => StopReason::Refusal,
            ("completed", _) if !calls.is_empty() => StopReason::ToolUse,
            ("completed", _) => StopReason::EndTurn,
            ("incomplete", Some("max_output_tokens")) => StopReason::MaxTokens,
            ("incomplete", Some("content_filter")) => StopReason::Refusal,
            ("incomplete", Some(other)) => StopReason::Other(other.to_owned()),
            (other, _) => StopReason::Other(other.to_owned()),
        };
        self.draft.finish(calls, stop)
    }
}

/// The reading of one streamed answer.
#[derive(Debug)]
pub(crate) struct ResponsesStream {
    key: Secret,
    assembly: Assembly,
    /// The final status and incomplete reason, once a terminal event came.
    end: Option<(String, Option<String>)>,
}

impl ResponsesStream {
    fn new(key: &Secret) -> Self {
        Self {
            key: key.clone(),
            assembly: Assembly::default(),
            end: None,
        }
    }
}

impl SseHandler for ResponsesStream {
    fn event(&mut self, event: SseEvent, out: &mut VecDeque<Item>) -> Result<bool, ProviderError> {
        let data = json_event(&event)?;
        let kind = data["type"].as_str().unwrap_or(event.event.as_str());
        let a = &mut self.assembly;
        match kind {
            "response.created" | "response.in_progress" | "response.queued" => {
                a.header(&data["response"]);
            }
            "response.output_item.added" | "response.output_item.done" => {
                let index = data["output_index"].as_u64().unwrap_or(0);
                a.item(index, &data["item"], out);
            }
            "response.content_part.added" | "response.content_part.done" => {
                let index = data["content_index"].as_u64().unwrap_or(0);
                let key = a.event_key(&data);
                a.content_part(&key, index, &data["part"], out);
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let text_kind = if kind == "response.refusal.delta" {
                    TextKind::Refusal
                } else {
                    TextKind::Text
                };
                let index = data["content_index"].as_u64().unwrap_or(0);
                let piece = data["delta"].as_str().unwrap_or_default();
                let key = a.event_key(&data);
                a.text_piece(&key, index, text_kind, piece, out);
            }
            "response.output_text.done" => {
                let index = data["content_index"].as_u64().unwrap_or(0);
                let text = data["text"].as_str().unwrap_or_default();
                let key = a.event_key(&data);
                a.text_final(&key, index, TextKind::Text, text, out);
            }
            "response.refusal.done" => {
                let index = data["content_index"].as_u64().unwrap_or(0);
                let text = data["refusal"].as_str().unwrap_or_default();
                let key = a.event_key(&data);
                a.text_final(&key, index, TextKind::Refusal, text, out);
            }
            "response.function_call_arguments.delta" => {
                let key = a.event_key(&data);
                let index = a.calls.index(key);
                a.calls
                    .piece(index, data["delta"].as_str().unwrap_or_default(), out);
            }
            "response.function_call_arguments.done" => {
                let key = a.event_key(&data);
                let index = a.calls.index(key);
                let call = a.calls.get_mut(index);
                if call.name.is_empty()
                    && let Some(name) = data["name"].as_str()
                {
                    call.name = name.to_owned();
                }
                a.calls.start(index, out);
                if let Some(arguments) = data["arguments"].as_str() {
                    a.calls.complete(index, arguments, out);
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = &data["response"];
                a.response(response, out);
                out.push_back(Ok(StreamEvent::Usage(a.draft.usage)));
                let default = kind.trim_start_matches("response.");
                let status = response["status"].as_str().unwrap_or(default).to_owned();
                let reason = response
                    .pointer("/incomplete_details/reason")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                self.end = Some((status, reason));
                return Ok(true);
            }
            "response.failed" => {
                let error = &data["response"]["error"];
                return Err(if error.is_object() {
                    error_object(error, &self.key)
                } else {
                    failure(None, Some("the response failed"), &self.key)
                });
            }
            "error" => {
                // The spec puts `code` and `message` on the event; some servers nest
                // them in `error`.
                let error = data.get("error").filter(|e| e.is_object()).unwrap_or(&data);
                return Err(error_object(error, &self.key));
            }
            // Reasoning, annotations, built-in tools, and events added later.
            _ => {}
        }
        Ok(false)
    }

    fn finish(&mut self, terminated: bool) -> Result<CompletionResponse, ProviderError> {
        match self.end.take() {
            Some((status, reason)) if terminated => {
                Ok(self.assembly.finish(&status, reason.as_deref()))
            }
            _ => Err(bad(
                "the stream was cut off before `response.completed` or `response.incomplete`",
            )),
        }
    }

    fn whole_body(&mut self, body: &[u8]) -> Result<CompletionResponse, ProviderError> {
        parse_response(body, &self.key)
    }
}
