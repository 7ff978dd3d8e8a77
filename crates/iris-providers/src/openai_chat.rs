//! OpenAI Chat Completions (`POST {base_url}/chat/completions`), which also serves every
//! OpenAI-compatible server (vLLM, llama.cpp, Ollama, LM Studio…) through
//! [`Client::with_base_url`].
//!
//! # The wire, as this client relies on it
//!
//! From OpenAI's API reference (the `openai/openai-openapi` spec: schemas
//! `CreateChatCompletionRequest`, `CreateChatCompletionResponse`,
//! `CreateChatCompletionStreamResponse`, `ChatCompletionStreamResponseDelta`,
//! `ChatCompletionMessageToolCallChunk`, `ChatCompletionStreamOptions`,
//! `CompletionUsage`, `ChatCompletionRequestToolMessage`,
//! `ChatCompletionRequestMessageContentPartImage`, `ErrorResponse`):
//!
//! * **Request**: `{"model", "messages", "tools"?, "max_completion_tokens"?,
//!   "temperature"?, "stream"?, "stream_options": {"include_usage": true}?}`. Tools come
//!   from [`adapters::openai_chat`] (strict mode included). Messages:
//!   * instructions and system messages: `{"role": "system", "content": "…"}`;
//!   * user: `{"role": "user", "content": "…"}`, or content parts `{"type": "text",
//!     "text"}` and `{"type": "image_url", "image_url": {"url":
//!     "data:<mime>;base64,<data>"}}`;
//!   * assistant: `{"role": "assistant", "content": "…" | null, "tool_calls": [{"id",
//!     "type": "function", "function": {"name", "arguments": "<JSON text>"}}]}`;
//!   * tool results: `{"role": "tool", "tool_call_id", "content": "…"}`. A tool message
//!     takes text only, so a result's images follow the turn's tool messages in one
//!     `user` message of `image_url` parts, each call's images introduced by a text part
//!     naming the call; the tool message says how many images follow.
//! * **Non-streamed answer**: `{"id", "model", "choices": [{"index", "message":
//!   {"content", "refusal", "tool_calls"}, "finish_reason"}], "usage": {"prompt_tokens",
//!   "completion_tokens"}}`; only choice 0 is read.
//! * **Streamed answer**: SSE `data:` lines, each a chunk `{"id", "model", "choices":
//!   [{"index", "delta": {"content"?, "refusal"?, "tool_calls"?: [{"index", "id"?,
//!   "type"?, "function": {"name"?, "arguments"?}}]}, "finish_reason"}], "usage": null}`,
//!   then (with `include_usage`) a chunk with `"choices": []` and the usage, then `data:
//!   [DONE]`. A tool call's first chunk carries its `index`, `id` and name; later chunks
//!   carry only `index` and the next piece of `arguments`, so calls are assembled by
//!   `index` (several calls may interleave). `finish_reason` is `stop`, `length`,
//!   `tool_calls`, `content_filter` (or the deprecated `function_call`).
//! * **Errors**: `{"error": {"message", "type", "param", "code"}}` with the HTTP status;
//!   an error may also arrive as a stream chunk holding `error`.
//!
//! # Mapping
//!
//! | wire | neutral |
//! |---|---|
//! | `finish_reason: stop` | [`StopReason::EndTurn`] ([`StopReason::ToolUse`] when calls were made: some compatible servers say `stop` there) |
//! | `tool_calls`, `function_call` | [`StopReason::ToolUse`] |
//! | `length` | [`StopReason::MaxTokens`] |
//! | `content_filter`, or any `refusal` text | [`StopReason::Refusal`] (refusal text in [`CompletionResponse::refusal`]) |
//! | arguments that are not a JSON object | [`ModelToolCall::problem`] |
//! | a stream that ends without `finish_reason` or `[DONE]`, or is cut off | `PROVIDER_BAD_RESPONSE` |
//! | a stream that ends after `finish_reason` without `[DONE]` | accepted (lenient with compatible servers) |
//! | a 200 with a JSON body to a streamed request | read as the non-streamed answer |
//!
//! Strict mode and parallel calls: OpenAI documents that a parallel call may not match
//! a strict schema; the client does not turn `parallel_tool_calls` off, because the run
//! loop validates every call's arguments anyway and parallel reads matter more.

use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, HeaderName};
use serde::Deserialize;
use serde_json::{Value, json};

use iris_tools_core::ContentBlock;

use crate::adapters;
use crate::assembly::{Draft, PartialCalls};
use crate::chat::{
    CompletionRequest, CompletionResponse, Message, ModelToolCall, Part, Role, StopReason, Usage,
};
use crate::client::{self, WireFormat, argument_text, bad, invalid, json_body, system_text};
use crate::http::{Secret, Transport, server_message};
use crate::provider_error::ProviderError;
use crate::sse::SseEvent;
use crate::streaming::{Item, SseHandler};

/// Which request field carries [`CompletionRequest::max_output_tokens`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum MaxTokensField {
    /// `max_completion_tokens`: OpenAI's current field (reasoning models need it).
    #[default]
    MaxCompletionTokens,
    /// `max_tokens`: the deprecated field, which older compatible servers still expect.
    MaxTokens,
}

impl MaxTokensField {
    fn key(self) -> &'static str {
        match self {
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
            MaxTokensField::MaxTokens => "max_tokens",
        }
    }
}

/// A Chat Completions client; see the [module docs](self) for the wire.
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
/// use std::time::Duration;
/// use iris_providers::openai_chat::Client;
///
/// let client = Client::new("sk-example")
///     .with_base_url("http://127.0.0.1:11434/v1")?
///     .with_timeout(Duration::from_secs(30))?;
/// assert_eq!(client.base_url(), "http://127.0.0.1:11434/v1/");
/// assert!(!format!("{client:?}").contains("sk-example"));
/// # Ok::<(), iris_providers::ProviderError>(())
/// ```
pub struct Client {
    transport: Transport,
    max_tokens_field: MaxTokensField,
}

impl Client {
    /// OpenAI's API.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.openai.com/v1";

    /// A client for OpenAI with this key.
    pub fn new(api_key: impl Into<String>) -> Self {
        Self {
            transport: Transport::new(api_key.into(), Self::DEFAULT_BASE_URL),
            max_tokens_field: MaxTokensField::default(),
        }
    }

    /// Points the client at another server, e.g. `http://127.0.0.1:8000/v1` for vLLM.
    ///
    /// # Errors
    /// `PROVIDER_CONFIG_INVALID` when the URL is not http(s) with a host, carries
    /// credentials, a query or a fragment, or is plain http to a non-loopback host
    /// while a key is set.
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

    /// Chooses the field for the output token cap (default `max_completion_tokens`).
    pub fn with_max_tokens_field(mut self, field: MaxTokensField) -> Self {
        self.max_tokens_field = field;
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
            "messages": encode_messages(request)?,
        });
        if !request.tools.is_empty() {
            body["tools"] = Value::Array(adapters::openai_chat(&request.tools, request.strict)?);
        }
        if let Some(max) = request.max_output_tokens {
            body[self.max_tokens_field.key()] = json!(max);
        }
        if let Some(temperature) = request.temperature {
            body["temperature"] = json!(temperature);
        }
        if stream {
            body["stream"] = json!(true);
            body["stream_options"] = json!({"include_usage": true});
        }
        Ok(body)
    }
}

impl WireFormat for Client {
    type Reader = ChatStream;

    fn transport(&self) -> &Transport {
        &self.transport
    }

    fn endpoint(&self, _: &CompletionRequest, _: bool) -> Result<String, ProviderError> {
        Ok("chat/completions".into())
    }

    fn body(&self, request: &CompletionRequest, stream: bool) -> Result<Value, ProviderError> {
        self.request_body(request, stream)
    }

    fn key_header(&self) -> (HeaderName, &'static str) {
        (AUTHORIZATION, "Bearer ")
    }

    fn reader(&self, _: &CompletionRequest) -> ChatStream {
        ChatStream::new(&self.transport.key)
    }
}

client::http_provider!(Client, "openai");

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.transport
            .debug_struct(f, "openai_chat::Client")
            .field("max_tokens_field", &self.max_tokens_field)
            .finish()
    }
}

// ---------------------------------------------------------------------------------------
// Request encoding

fn encode_messages(request: &CompletionRequest) -> Result<Vec<Value>, ProviderError> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    if let Some(instructions) = request.instructions.as_ref().filter(|i| !i.is_empty()) {
        out.push(json!({"role": "system", "content": instructions}));
    }
    for message in &request.messages {
        encode_message(message, &mut out)?;
    }
    Ok(out)
}

fn encode_message(message: &Message, out: &mut Vec<Value>) -> Result<(), ProviderError> {
    match message.role {
        Role::System => {
            out.push(json!({"role": "system", "content": system_text(message)?}));
        }
        Role::Assistant => {
            let mut text = String::new();
            let mut calls = Vec::new();
            for part in &message.content {
                match part {
                    Part::Text { text: t } => text.push_str(t),
                    Part::ToolCall {
                        id,
                        name,
                        arguments,
                        ..
                    } => calls.push(json!({
                        "id": id,
                        "type": "function",
                        "function": {"name": name, "arguments": argument_text(arguments)},
                    })),
                    _ => {
                        return Err(invalid(
                            "an assistant message may hold text and tool calls only",
                        ));
                    }
                }
            }
            let mut entry = json!({"role": "assistant"});
            entry["content"] = if text.is_empty() && !calls.is_empty() {
                Value::Null
            } else {
                Value::String(text)
            };
            if !calls.is_empty() {
                entry["tool_calls"] = Value::Array(calls);
            }
            out.push(entry);
        }
        Role::User | Role::Tool => {
            // Tool messages must directly follow the assistant's calls, so every result
            // is written first and the message's other content (and result images)
            // after them, as one user message.
            let mut user_parts = Vec::new();
            for part in &message.content {
                match part {
                    Part::ToolResult(block) => {
                        let mut text = Vec::new();
                        let mut images = Vec::new();
                        for content in &block.content {
                            match content {
                                ContentBlock::Text { text: t } => text.push(t.as_str()),
                                ContentBlock::Image { mime_type, data } => {
                                    images.push(image_part(mime_type, data));
                                }
                                _ => {}
                            }
                        }
                        let mut content = text.join("\n");
                        if !images.is_empty() {
                            if !content.is_empty() {
                                content.push('\n');
                            }
                            content.push_str(&format!(
                                "[{} image(s) from this call follow in the next user message]",
                                images.len()
                            ));
                            user_parts.push(json!({
                                "type": "text",
                                "text": format!(
                                    "Images returned by tool call `{}` ({}):",
                                    block.tool_use_id, block.tool_name
                                ),
                            }));
                            user_parts.extend(images);
                        }
                        out.push(json!({
                            "role": "tool",
                            "tool_call_id": block.tool_use_id,
                            "content": content,
                        }));
                    }
                    Part::Text { text } => user_parts.push(json!({"type": "text", "text": text})),
                    Part::Image { mime_type, data } => user_parts.push(image_part(mime_type, data)),
                    _ => {
                        return Err(invalid(
                            "a tool call may only appear in an assistant message",
                        ));
                    }
                }
            }
            if !user_parts.is_empty() {
                out.push(json!({"role": "user", "content": user_content(user_parts)}));
            }
        }
    }
    Ok(())
}

fn image_part(mime_type: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime_type};base64,{data}")}})
}

/// A lone text part is sent as a plain string, the form every compatible server takes.
fn user_content(mut parts: Vec<Value>) -> Value {
    if parts.len() == 1 && parts[0]["type"] == "text" {
        return parts.swap_remove(0)["text"].take();
    }
    Value::Array(parts)
}

// ---------------------------------------------------------------------------------------
// Response decoding

#[derive(Debug, Deserialize)]
struct WireResponse {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct WireChoice {
    #[serde(default)]
    index: u32,
    message: WireMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Debug, Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Debug, Default, Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Self {
        Usage::new(u.prompt_tokens, u.completion_tokens)
    }
}

fn parse_response(bytes: &[u8], key: &Secret) -> Result<CompletionResponse, ProviderError> {
    let value = json_body(bytes)?;
    if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
        return Err(stream_error(error, key));
    }
    let wire: WireResponse =
        serde_json::from_value(value).map_err(|e| bad(format!("not a chat completion ({e})")))?;
    let choice = wire
        .choices
        .into_iter()
        .find(|c| c.index == 0)
        .ok_or_else(|| bad("the answer has no choice"))?;
    let calls = choice
        .message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(n, call)| {
            let function = call.function.unwrap_or_default();
            ModelToolCall::parse(
                call.id
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(|| format!("call_{n}")),
                function.name.unwrap_or_default(),
                function.arguments.unwrap_or_default(),
            )
        })
        .collect::<Vec<_>>();
    let finish = choice
        .finish_reason
        .ok_or_else(|| bad("the choice has no `finish_reason`"))?;
    let mut draft = Draft {
        id: wire.id,
        model: wire.model,
        text: choice.message.content.unwrap_or_default(),
        refusal: choice.message.refusal.unwrap_or_default(),
        usage: wire.usage.map(Usage::from).unwrap_or_default(),
    };
    let stop = stop_reason(&finish, draft.refused(), !calls.is_empty());
    Ok(draft.finish(calls, stop))
}

fn stop_reason(finish: &str, refused: bool, has_calls: bool) -> StopReason {
    match finish {
        _ if refused => StopReason::Refusal,
        "content_filter" => StopReason::Refusal,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "stop" if has_calls => StopReason::ToolUse,
        "stop" => StopReason::EndTurn,
        "length" => StopReason::MaxTokens,
        other => StopReason::Other(other.to_owned()),
    }
}

/// An `error` object inside a 200 answer or a stream chunk.
fn stream_error(error: &Value, key: &Secret) -> ProviderError {
    let wrapped = json!({ "error": error });
    let message = server_message(wrapped.to_string().as_bytes())
        .map(|m| key.redact(&m))
        .unwrap_or_else(|| "no message".into());
    let kind = [error.get("type"), error.get("code")]
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join(" ");
    if kind.contains("rate_limit") {
        ProviderError::RateLimited {
            retry_after: None,
            message: Some(message),
        }
    } else if kind.contains("invalid_request") {
        ProviderError::InvalidRequest {
            status: None,
            message,
        }
    } else {
        ProviderError::Unavailable {
            status: None,
            reason: message,
        }
    }
}

#[derive(Debug, Deserialize)]
struct WireChunk {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<WireChunkChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct WireChunkChoice {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    delta: Option<WireDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCallChunk>>,
}

#[derive(Debug, Deserialize)]
struct WireToolCallChunk {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

/// The reading of one streamed answer.
#[derive(Debug)]
pub(crate) struct ChatStream {
    key: Secret,
    draft: Draft,
    /// By the chunks' `index`.
    calls: PartialCalls<usize>,
    finish: Option<String>,
}

impl ChatStream {
    fn new(key: &Secret) -> Self {
        Self {
            key: key.clone(),
            draft: Draft::default(),
            calls: PartialCalls::default(),
            finish: None,
        }
    }

    fn tool_call_chunk(&mut self, chunk: WireToolCallChunk, out: &mut VecDeque<Item>) {
        // `index` is required by the spec; a server that leaves it out gets the
        // previous call, or a new one when a new id shows up.
        let wire_index = chunk
            .index
            .unwrap_or_else(|| match (&chunk.id, self.calls.last()) {
                (Some(id), Some(last)) if !id.is_empty() && *id != last.id => {
                    last.key.saturating_add(1)
                }
                (_, Some(last)) => last.key,
                (_, None) => 0,
            });
        let index = self.calls.index(wire_index);
        let call = self.calls.get_mut(index);
        if let Some(id) = chunk.id.filter(|id| !id.is_empty())
            && call.id.is_empty()
        {
            call.id = id;
        }
        let function = chunk.function.unwrap_or_default();
        if let Some(name) = function.name.filter(|n| !n.is_empty())
            && call.name.is_empty()
        {
            call.name = name;
        }
        self.calls
            .piece(index, &function.arguments.unwrap_or_default(), out);
        self.calls.start(index, out);
    }
}

impl SseHandler for ChatStream {
    fn event(&mut self, event: SseEvent, out: &mut VecDeque<Item>) -> Result<bool, ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        let chunk: WireChunk = serde_json::from_str(data).map_err(|e| {
            bad(format!(
                "a stream chunk is not a chat completion chunk ({e})"
            ))
        })?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            return Err(stream_error(&error, &self.key));
        }
        self.draft
            .identify(chunk.id.as_deref(), chunk.model.as_deref());
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if let Some(delta) = choice.delta {
                self.draft
                    .text(delta.content.as_deref().unwrap_or_default(), out);
                self.draft
                    .refusal(delta.refusal.as_deref().unwrap_or_default(), out);
                for call in delta.tool_calls.unwrap_or_default() {
                    self.tool_call_chunk(call, out);
                }
            }
            if let Some(finish) = choice.finish_reason {
                self.finish = Some(finish);
            }
        }
        if let Some(usage) = chunk.usage {
            self.draft.usage(usage.into(), out);
        }
        Ok(false)
    }

    fn finish(&mut self, terminated: bool) -> Result<CompletionResponse, ProviderError> {
        let Some(finish) = self.finish.take() else {
            return Err(bad(if terminated {
                "the stream ended without a `finish_reason`"
            } else {
                "the stream was cut off before `finish_reason` and `[DONE]`"
            }));
        };
        let calls = self.calls.finish();
        let stop = stop_reason(&finish, self.draft.refused(), !calls.is_empty());
        Ok(self.draft.finish(calls, stop))
    }

    fn whole_body(&mut self, body: &[u8]) -> Result<CompletionResponse, ProviderError> {
        parse_response(body, &self.key)
    }
}
