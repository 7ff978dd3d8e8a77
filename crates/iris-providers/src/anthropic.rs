//! Anthropic Messages (`POST {base_url}/v1/messages`).
//!
//! # The wire, as this client relies on it
//!
//! From Anthropic's API reference (Messages, Streaming Messages, tool use, vision,
//! errors; `anthropic-version: 2023-06-01`):
//!
//! * **Request**: headers `x-api-key` and `anthropic-version`; body `{"model",
//!   "max_tokens" (required), "system"?, "messages", "tools"?, "temperature"?,
//!   "stream"?}`. Tools come from [`adapters::anthropic_messages`]. Messages alternate
//!   `user` and `assistant`, each with content blocks:
//!   * `{"type": "text", "text"}` (never empty: the API rejects empty text blocks);
//!   * `{"type": "image", "source": {"type": "base64", "media_type", "data"}}`;
//!   * assistant `{"type": "tool_use", "id", "name", "input": {…}}`;
//!   * user `{"type": "tool_result", "tool_use_id", "content": [text and image blocks],
//!     "is_error"}`, placed before any other block of that user message.
//!
//!   Instructions and [`Role::System`] messages become the top-level `system` text;
//!   [`Role::Tool`] messages are `user` messages; consecutive messages of one role are
//!   merged into one.
//! * **Non-streamed answer**: `{"id", "model", "content": [{"type": "text", "text"} |
//!   {"type": "tool_use", "id", "name", "input"} | …], "stop_reason", "usage":
//!   {"input_tokens", "output_tokens", "cache_creation_input_tokens"?,
//!   "cache_read_input_tokens"?}}`.
//! * **Streamed answer**: SSE events, each named by `event:` with the same `type` in its
//!   data: `message_start` (`message` with `id`, `model`, `usage`), then per content
//!   block `content_block_start` (`index`, `content_block`: `text` or `tool_use` with
//!   `id`, `name`, `input: {}`), `content_block_delta` (`delta`: `text_delta` with
//!   `text`, or `input_json_delta` with `partial_json`, pieces of the input's JSON text),
//!   `content_block_stop`; then `message_delta` (`delta.stop_reason`, cumulative
//!   `usage.output_tokens`), `message_stop`. `ping` events may appear anywhere; an
//!   `error` event (`{"type": "error", "error": {"type", "message"}}`, e.g.
//!   `overloaded_error`) ends a stream. Unknown events and block types (`thinking`…)
//!   are ignored, as Anthropic's versioning policy asks.
//! * **Errors**: `{"type": "error", "error": {"type", "message"}}` with the HTTP status
//!   (529 = overloaded).
//!
//! # Mapping
//!
//! | wire | neutral |
//! |---|---|
//! | `stop_reason: end_turn`, `stop_sequence` | [`StopReason::EndTurn`] |
//! | `tool_use` | [`StopReason::ToolUse`] |
//! | `max_tokens` | [`StopReason::MaxTokens`] |
//! | `refusal` | [`StopReason::Refusal`] |
//! | others (`pause_turn`…) | [`StopReason::Other`] |
//! | usage | `input_tokens` + both cache counts as input, `output_tokens` as output |
//! | `input_json_delta` pieces that do not form a JSON object | [`ModelToolCall::problem`] |
//! | a stream that ends before `message_stop` | `PROVIDER_BAD_RESPONSE` |
//!
//! [`Role::System`]: crate::chat::Role::System
//! [`Role::Tool`]: crate::chat::Role::Tool

use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};

use iris_tools_core::ContentBlock;

use crate::adapters;
use crate::assembly::{Draft, PartialCalls};
use crate::chat::{
    CompletionRequest, CompletionResponse, Message, ModelToolCall, Part, StopReason, StreamEvent,
    Usage,
};
use crate::client::{self, WireFormat, argument_object, bad, invalid, json_body, json_event};
use crate::http::{Secret, Transport, one_line};
use crate::provider_error::ProviderError;
use crate::sse::SseEvent;
use crate::streaming::{Item, SseHandler};

/// A Messages API client; see the [module docs](self) for the wire.
///
/// * The key is given explicitly (the run loop reads `api_key_env`) and sent as
///   `x-api-key`, marked sensitive; it appears in no `Debug` output or error.
/// * `max_tokens` is required by the API: [`CompletionRequest::max_output_tokens`], else
///   the client's default (4096, [`Client::with_default_max_tokens`]).
/// * The base URL defaults to `https://api.anthropic.com`; one timeout bounds the wait
///   for the answer's head and for each next chunk (default 120 s).
///
/// ```
/// use iris_providers::anthropic::Client;
///
/// let client = Client::new("sk-ant-example").with_base_url("http://127.0.0.1:9000")?;
/// assert_eq!(client.base_url(), "http://127.0.0.1:9000/");
/// assert!(!format!("{client:?}").contains("sk-ant-example"));
/// # Ok::<(), iris_providers::ProviderError>(())
/// ```
pub struct Client {
    transport: Transport,
    version: String,
    default_max_tokens: u32,
}

impl Client {
    /// Anthropic's API.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.anthropic.com";
    /// The `anthropic-version` sent by default.
    pub const API_VERSION: &'static str = "2023-06-01";
    /// The `max_tokens` sent when the request sets none.
    pub const DEFAULT_MAX_TOKENS: u32 = 4096;

    /// A client with this key.
    pub fn new(api_key: impl Into<String>) -> Self {
        Self {
            transport: Transport::new(api_key.into(), Self::DEFAULT_BASE_URL),
            version: Self::API_VERSION.to_owned(),
            default_max_tokens: Self::DEFAULT_MAX_TOKENS,
        }
    }

    /// Points the client at another server (a proxy, a test server).
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

    /// Sets the `max_tokens` used when a request sets none.
    pub fn with_default_max_tokens(mut self, max_tokens: u32) -> Self {
        self.default_max_tokens = max_tokens.max(1);
        self
    }

    /// Sends another `anthropic-version`.
    pub fn with_api_version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// The base URL, ending in `/`.
    pub fn base_url(&self) -> &str {
        self.transport.base_url()
    }

    /// The JSON body this client sends for `request`.
    ///
    /// # Errors
    /// `PROVIDER_INVALID_REQUEST` when a message cannot be expressed (a tool call in a
    /// user message, a tool result in an assistant message, an image in a system
    /// message).
    pub fn request_body(
        &self,
        request: &CompletionRequest,
        stream: bool,
    ) -> Result<Value, ProviderError> {
        let (system, messages) = encode_messages(request)?;
        let mut body = json!({
            "model": request.model,
            "max_tokens": request.max_output_tokens.unwrap_or(self.default_max_tokens),
            "messages": messages,
        });
        if !system.is_empty() {
            body["system"] = Value::String(system);
        }
        if !request.tools.is_empty() {
            body["tools"] = Value::Array(adapters::anthropic_messages(&request.tools));
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
    type Reader = MessagesStream;

    fn transport(&self) -> &Transport {
        &self.transport
    }

    fn endpoint(&self, _: &CompletionRequest, _: bool) -> Result<String, ProviderError> {
        Ok("v1/messages".into())
    }

    fn body(&self, request: &CompletionRequest, stream: bool) -> Result<Value, ProviderError> {
        self.request_body(request, stream)
    }

    fn key_header(&self) -> (HeaderName, &'static str) {
        (HeaderName::from_static("x-api-key"), "")
    }

    fn extra_headers(&self, headers: &mut HeaderMap) -> Result<(), ProviderError> {
        let version = HeaderValue::from_str(&self.version).map_err(|_| ProviderError::Config {
            field: "api_version",
            reason: "holds characters an HTTP header cannot carry".into(),
        })?;
        headers.insert(HeaderName::from_static("anthropic-version"), version);
        Ok(())
    }

    fn reader(&self, _: &CompletionRequest) -> MessagesStream {
        MessagesStream::new(&self.transport.key)
    }
}

client::http_provider!(Client, "anthropic");

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.transport
            .debug_struct(f, "anthropic::Client")
            .field("version", &self.version)
            .field("default_max_tokens", &self.default_max_tokens)
            .finish()
    }
}

// ---------------------------------------------------------------------------------------
// Request encoding

fn encode_messages(request: &CompletionRequest) -> Result<(String, Vec<Value>), ProviderError> {
    let (system, turns) = client::alternating(
        request,
        ("assistant", assistant_blocks),
        user_blocks,
        |content, blocks| {
            // Tool results lead a user message.
            let (mut results, others): (Vec<_>, Vec<_>) = std::mem::take(content)
                .into_iter()
                .chain(blocks)
                .partition(|b| b["type"] == "tool_result");
            results.extend(others);
            *content = results;
        },
    )?;
    let messages = turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    Ok((system, messages))
}

fn assistant_blocks(message: &Message) -> Result<Vec<Value>, ProviderError> {
    message
        .content
        .iter()
        .filter(|p| !matches!(p, Part::Text { text } if text.is_empty()))
        .map(|part| match part {
            Part::Text { text } => Ok(json!({"type": "text", "text": text})),
            Part::ToolCall {
                id,
                name,
                arguments,
                ..
            } => Ok(json!({
                "type": "tool_use", "id": id, "name": name, "input": argument_object(arguments),
            })),
            _ => Err(invalid(
                "an assistant message may hold text and tool calls only",
            )),
        })
        .collect()
}

fn user_blocks(message: &Message) -> Result<Vec<Value>, ProviderError> {
    let mut results = Vec::new();
    let mut others = Vec::new();
    for part in &message.content {
        match part {
            Part::ToolResult(block) => {
                let content: Vec<Value> = block.content.iter().filter_map(content_block).collect();
                let mut result = json!({
                    "type": "tool_result",
                    "tool_use_id": block.tool_use_id,
                    "is_error": block.is_error,
                });
                if !content.is_empty() {
                    result["content"] = Value::Array(content);
                }
                results.push(result);
            }
            Part::Text { text } if text.is_empty() => {}
            Part::Text { text } => others.push(json!({"type": "text", "text": text})),
            Part::Image { mime_type, data } => others.push(image_block(mime_type, data)),
            _ => {
                return Err(invalid(
                    "a tool call may only appear in an assistant message",
                ));
            }
        }
    }
    results.extend(others);
    Ok(results)
}

fn content_block(block: &ContentBlock) -> Option<Value> {
    match block {
        ContentBlock::Text { text } if text.is_empty() => None,
        ContentBlock::Text { text } => Some(json!({"type": "text", "text": text})),
        ContentBlock::Image { mime_type, data } => Some(image_block(mime_type, data)),
        _ => None,
    }
}

fn image_block(mime_type: &str, data: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": mime_type, "data": data}})
}

// ---------------------------------------------------------------------------------------
// Response decoding

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(default)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// The input count, when the event carries one.
    fn input(&self) -> Option<u64> {
        self.input_tokens.map(|input| {
            input
                .saturating_add(self.cache_creation_input_tokens.unwrap_or(0))
                .saturating_add(self.cache_read_input_tokens.unwrap_or(0))
        })
    }
}

#[derive(Debug, Deserialize)]
struct WireResponse {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    content: Vec<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: WireUsage,
}

fn parse_response(bytes: &[u8], key: &Secret) -> Result<CompletionResponse, ProviderError> {
    let value = json_body(bytes)?;
    if value["type"] == "error" {
        return Err(error_event(&value, key));
    }
    let wire: WireResponse =
        serde_json::from_value(value).map_err(|e| bad(format!("not a Messages answer ({e})")))?;
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in &wire.content {
        match block["type"].as_str() {
            Some("text") => text.push_str(block["text"].as_str().unwrap_or_default()),
            Some("tool_use") => {
                let id = block["id"]
                    .as_str()
                    .filter(|id| !id.is_empty())
                    .map_or_else(|| format!("call_{}", calls.len()), str::to_owned);
                let name = block["name"].as_str().unwrap_or_default().to_owned();
                calls.push(ModelToolCall::from_value(
                    id,
                    name,
                    block.get("input").cloned().unwrap_or(Value::Null),
                ));
            }
            _ => {}
        }
    }
    let stop = wire
        .stop_reason
        .ok_or_else(|| bad("the answer has no `stop_reason`"))?;
    let mut draft = Draft {
        id: wire.id,
        model: wire.model,
        text,
        usage: Usage::new(
            wire.usage.input().unwrap_or(0),
            wire.usage.output_tokens.unwrap_or(0),
        ),
        ..Draft::default()
    };
    Ok(draft.finish(calls, stop_reason(&stop)))
}

fn stop_reason(stop_reason: &str) -> StopReason {
    match stop_reason {
        "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "refusal" => StopReason::Refusal,
        other => StopReason::Other(other.to_owned()),
    }
}

/// An `{"type": "error", "error": {"type", "message"}}` body or stream event.
fn error_event(value: &Value, key: &Secret) -> ProviderError {
    let message = value
        .pointer("/error/message")
        .and_then(Value::as_str)
        .map(|m| key.redact(&one_line(m)));
    let reason = || message.clone().unwrap_or_else(|| "no message".into());
    match value.pointer("/error/type").and_then(Value::as_str) {
        Some("rate_limit_error") => ProviderError::RateLimited {
            retry_after: None,
            message,
        },
        Some("authentication_error") => ProviderError::Auth {
            status: 401,
            message,
        },
        Some("permission_error") => ProviderError::Auth {
            status: 403,
            message,
        },
        Some("overloaded_error") => ProviderError::Unavailable {
            status: Some(529),
            reason: reason(),
        },
        Some("invalid_request_error" | "not_found_error" | "request_too_large") => {
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

/// What a content block index of the stream is.
#[derive(Debug, Clone, Copy)]
enum Block {
    Text,
    /// The call's position among the turn's calls.
    Tool(usize),
    Other,
}

/// The reading of one streamed answer.
#[derive(Debug)]
pub(crate) struct MessagesStream {
    key: Secret,
    started: bool,
    draft: Draft,
    blocks: Vec<(u64, Block)>,
    /// By content block index.
    calls: PartialCalls<u64>,
    stop: Option<String>,
}

impl MessagesStream {
    fn new(key: &Secret) -> Self {
        Self {
            key: key.clone(),
            started: false,
            draft: Draft::default(),
            blocks: Vec::new(),
            calls: PartialCalls::default(),
            stop: None,
        }
    }

    fn block(&self, index: u64) -> Block {
        self.blocks
            .iter()
            .find(|(i, _)| *i == index)
            .map_or(Block::Other, |(_, b)| *b)
    }

    fn apply_usage(&mut self, usage: &WireUsage) {
        if let Some(input) = usage.input() {
            self.draft.usage.input_tokens = input;
        }
        if let Some(output) = usage.output_tokens {
            self.draft.usage.output_tokens = output;
        }
    }
}

impl SseHandler for MessagesStream {
    fn event(&mut self, event: SseEvent, out: &mut VecDeque<Item>) -> Result<bool, ProviderError> {
        let data = json_event(&event)?;
        let kind = data["type"].as_str().unwrap_or(event.event.as_str());
        if kind != "message_start" && kind != "ping" && kind != "error" && !self.started {
            return Err(bad(format!("`{kind}` arrived before `message_start`")));
        }
        match kind {
            "message_start" => {
                self.started = true;
                let message = &data["message"];
                self.draft.id = message["id"].as_str().map(str::to_owned);
                self.draft.model = message["model"].as_str().map(str::to_owned);
                if let Ok(usage) = WireUsage::deserialize(&message["usage"]) {
                    self.apply_usage(&usage);
                }
            }
            "content_block_start" => {
                let index = data["index"]
                    .as_u64()
                    .ok_or_else(|| bad("`content_block_start` has no `index`"))?;
                let block = &data["content_block"];
                let kind = match block["type"].as_str() {
                    Some("text") => {
                        self.draft
                            .text(block["text"].as_str().unwrap_or_default(), out);
                        Block::Text
                    }
                    Some("tool_use") => {
                        // An empty id becomes `call_<ordinal>`.
                        let id = block["id"].as_str().unwrap_or_default().to_owned();
                        let name = block["name"].as_str().unwrap_or_default().to_owned();
                        // The input arrives as `input_json_delta`s; a start that already
                        // holds a non-empty input keeps it as the first piece.
                        let arguments = match &block["input"] {
                            Value::Object(map) if !map.is_empty() => block["input"].to_string(),
                            _ => String::new(),
                        };
                        Block::Tool(self.calls.open(index, id, name, arguments, out))
                    }
                    _ => Block::Other,
                };
                self.blocks.push((index, kind));
            }
            "content_block_delta" => {
                let index = data["index"]
                    .as_u64()
                    .ok_or_else(|| bad("`content_block_delta` has no `index`"))?;
                let delta = &data["delta"];
                match (self.block(index), delta["type"].as_str()) {
                    (Block::Text, Some("text_delta")) => {
                        self.draft
                            .text(delta["text"].as_str().unwrap_or_default(), out);
                    }
                    (Block::Tool(ordinal), Some("input_json_delta")) => {
                        let piece = delta["partial_json"].as_str().unwrap_or_default();
                        self.calls.piece(ordinal, piece, out);
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(stop) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(stop.to_owned());
                }
                if let Ok(usage) = WireUsage::deserialize(&data["usage"]) {
                    self.apply_usage(&usage);
                    out.push_back(Ok(StreamEvent::Usage(self.draft.usage)));
                }
            }
            "message_stop" => return Ok(true),
            "error" => return Err(error_event(&data, &self.key)),
            // `ping`, `content_block_stop`, and events added later.
            _ => {}
        }
        Ok(false)
    }

    fn finish(&mut self, terminated: bool) -> Result<CompletionResponse, ProviderError> {
        if !terminated {
            return Err(bad("the stream was cut off before `message_stop`"));
        }
        let stop = self
            .stop
            .take()
            .ok_or_else(|| bad("the stream ended without a `stop_reason`"))?;
        let calls = self.calls.finish();
        Ok(self.draft.finish(calls, stop_reason(&stop)))
    }

    fn whole_body(&mut self, body: &[u8]) -> Result<CompletionResponse, ProviderError> {
        parse_response(body, &self.key)
    }
}
