//! Provider-neutral conversation types: what a run loop sends to a model and what it
//! gets back, whatever the wire format.
//!
//! * A [`CompletionRequest`] carries the model name, the instructions, the history as
//!   a [`History`] of shared [`Message`]s, the tools as [`ToolSpec`]s and a few sampling limits.
//! * A [`Message`] is a [`Role`] and ordered [`Part`]s: text, images, the assistant's tool
//!   calls, and tool results (the [`ToolResultBlock`]s that
//!   [`ToolResult::to_msg`] builds, images included).
//! * A [`CompletionResponse`] is the model's turn: text, [`ModelToolCall`]s, a
//!   [`StopReason`] and [`Usage`]. A tool call whose arguments are not a JSON object is
//!   still a call: it carries the raw text and a [`ModelToolCall::problem`], which
//!   [`ModelToolCall::problem_result`] turns into a tool error the model can correct.
//! * A streamed turn is a sequence of [`StreamEvent`]s ending in
//!   [`StreamEvent::Completed`].
//!
//! ```
//! use iris_providers::chat::{CompletionRequest, CompletionResponse, Message, ModelToolCall, Part, Role};
//! use iris_tools_core::ToolOutput;
//! use serde_json::json;
//!
//! // A model turn with one good and one malformed call.
//! let mut turn = CompletionResponse::default();
//! turn.tool_calls.push(ModelToolCall::parse("call_1", "read_file", r#"{"file_path":"a.txt"}"#));
//! turn.tool_calls.push(ModelToolCall::parse("call_2", "read_file", r#"{"file_path":"#));
//! assert_eq!(turn.tool_calls[0].arguments, json!({"file_path": "a.txt"}));
//! assert!(turn.tool_calls[1].problem.is_some());
//!
//! // The history the next request carries: the assistant turn, then the results.
//! let good = ToolOutput::text("hello").into_result("call_1", "read_file");
//! let bad = turn.tool_calls[1].problem_result().expect("malformed call");
//! assert_eq!(bad.error_code(), Some("INVALID_INPUT"));
//! let request = CompletionRequest::new("gpt-4.1-mini")
//!     .with_message(Message::user("Read a.txt"))
//!     .with_message(turn.to_message())
//!     .with_message(Message::tool_results([&good, &bad]));
//! assert_eq!(request.messages[2].role, Role::Tool);
//! assert!(matches!(request.messages[2].content[0], Part::ToolResult(_)));
//! ```

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use iris_tools_core::{
    ToolOutput, ToolResult, ToolResultBlock, ToolResultMessage, ToolSpec, ToolUse, codes,
};

use crate::adapters::Strict;
pub use crate::history::History;

/// Who wrote a [`Message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions from the host (in addition to [`CompletionRequest::instructions`]).
    System,
    /// The user (or the host speaking for them).
    User,
    /// The model.
    Assistant,
    /// Tool results answering the assistant's calls.
    Tool,
}

/// One ordered piece of a [`Message`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Part {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded (standard alphabet, padded).
    Image {
        /// MIME type, e.g. `image/png`.
        mime_type: String,
        /// The base64 data.
        data: String,
    },
    /// A tool call the assistant made.
    ToolCall {
        /// The provider's call id, which the tool result answers.
        id: String,
        /// The tool name the model called.
        name: String,
        /// The arguments: a JSON object, or a JSON string holding the raw text of
        /// arguments that were not valid JSON (see [`ModelToolCall::to_part`]).
        arguments: Value,
        /// The provider's opaque token for this call, sent back verbatim when the call
        /// is replayed ([`ModelToolCall::signature`]: Gemini's `thoughtSignature`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// The result of one tool call, as [`ToolResult::to_msg`] builds it: the model
    /// projection of the output (errors as `Error[CODE]: …` text, images kept).
    ToolResult(ToolResultBlock),
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text { text: text.into() }
    }

    /// An image part from base64 data.
    pub fn image(mime_type: impl Into<String>, base64_data: impl Into<String>) -> Self {
        Part::Image {
            mime_type: mime_type.into(),
            data: base64_data.into(),
        }
    }

    /// An assistant tool-call part.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Part::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            signature: None,
        }
    }

    /// The text of a text part.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Part::Text { text } => Some(text),
            _ => None,
        }
    }
}

impl From<ToolResultBlock> for Part {
    fn from(block: ToolResultBlock) -> Self {
        Part::ToolResult(block)
    }
}

/// One message of the conversation.
///
/// ```
/// use iris_providers::chat::{Message, Role};
/// let m = Message::user("What is in src/?");
/// assert_eq!(m.role, Role::User);
/// assert_eq!(m.text(), "What is in src/?");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its parts, in order.
    pub content: Vec<Part>,
}

impl Message {
    /// A message with any parts.
    pub fn new(role: Role, content: Vec<Part>) -> Self {
        Self { role, content }
    }

    /// A system message holding one text part.
    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, vec![Part::text(text)])
    }

    /// A user message holding one text part.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![Part::text(text)])
    }

    /// An assistant message holding one text part.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, vec![Part::text(text)])
    }

    /// One `tool` message answering a turn's calls: each result's
    /// [`ToolResult::to_msg`] block, in the given order.
    pub fn tool_results<'a>(results: impl IntoIterator<Item = &'a ToolResult>) -> Self {
        let content = results
            .into_iter()
            .flat_map(|r| r.to_msg().content)
            .map(Part::ToolResult)
            .collect();
        Self::new(Role::Tool, content)
    }

    /// The text parts joined with newlines.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(Part::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl From<ToolResultMessage> for Message {
    fn from(message: ToolResultMessage) -> Self {
        Self::new(
            Role::Tool,
            message.content.into_iter().map(Part::ToolResult).collect(),
        )
    }
}

/// What a [`crate::CompletionProvider`] is asked for: one model turn.
///
/// ```
/// use iris_providers::Strict;
/// use iris_providers::chat::{CompletionRequest, Message};
///
/// let request = CompletionRequest::new("gpt-4.1-mini")
///     .with_instructions("You are terse.")
///     .with_message(Message::user("Hi"))
///     .with_max_output_tokens(256)
///     .with_temperature(0.0)
///     .with_strict(Strict::Yes);
/// assert_eq!(request.messages.len(), 1);
/// assert_eq!(request.max_output_tokens, Some(256));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CompletionRequest {
    /// The provider's model name, e.g. `gpt-4.1-mini` or `claude-sonnet-4-5`.
    pub model: String,
    /// The system prompt, sent the way the provider expects (a leading `system`
    /// message, Anthropic's `system` field, …).
    pub instructions: Option<String>,
    /// The history, oldest first, shared: a run loop builds each request from its
    /// [`History`] without copying the messages.
    pub messages: History,
    /// The tools this request carries; only these may be called.
    pub tools: Vec<ToolSpec>,
    /// The output token cap (`None`: the provider's default, or the client's where the
    /// wire requires one).
    pub max_output_tokens: Option<u32>,
    /// The sampling temperature (`None`: the provider's default).
    pub temperature: Option<f64>,
    /// Whether tool schemas are sent in OpenAI strict mode (others ignore it). Calls
    /// answering a strict request should run with
    /// [`StrictModeCall`](crate::StrictModeCall) in their context, so the
    /// [`StrictNullsLayer`](crate::StrictNullsLayer) undoes strict mode's nulls.
    pub strict: Strict,
}

impl CompletionRequest {
    /// A request for `model` with no history and no tools.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            instructions: None,
            messages: History::new(),
            tools: Vec::new(),
            max_output_tokens: None,
            temperature: None,
            strict: Strict::No,
        }
    }

    /// Sets the instructions.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Appends one message (owned, or a shared `Arc<Message>`).
    pub fn with_message(mut self, message: impl Into<Arc<Message>>) -> Self {
        self.messages.push(message);
        self
    }

    /// Appends messages (owned, or shared `Arc<Message>`s).
    pub fn with_messages<M: Into<Arc<Message>>>(
        mut self,
        messages: impl IntoIterator<Item = M>,
    ) -> Self {
        self.messages.extend(messages);
        self
    }

    /// Sets the whole history: a clone of a run's [`History`] shares its messages, so
    /// this costs the same whatever the conversation's length.
    pub fn with_history(mut self, history: History) -> Self {
        self.messages = history;
        self
    }

    /// Sets the tools.
    pub fn with_tools(mut self, tools: Vec<ToolSpec>) -> Self {
        self.tools = tools;
        self
    }

    /// Sets the output token cap.
    pub fn with_max_output_tokens(mut self, max: u32) -> Self {
        self.max_output_tokens = Some(max);
        self
    }

    /// Sets the temperature.
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets strict mode.
    pub fn with_strict(mut self, strict: Strict) -> Self {
        self.strict = strict;
        self
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// A final answer (OpenAI `stop` / Responses `completed`, Anthropic `end_turn` /
    /// `stop_sequence`, Gemini `STOP`).
    #[default]
    EndTurn,
    /// The model wants its tool calls run (OpenAI `tool_calls`, Anthropic `tool_use`).
    ToolUse,
    /// The output token cap was hit (`length`, `max_tokens`, Responses
    /// `max_output_tokens`, Gemini `MAX_TOKENS`).
    MaxTokens,
    /// The model or the provider's filter declined (OpenAI `refusal` /
    /// `content_filter`, Anthropic `refusal`, Gemini `SAFETY`… or a blocked prompt);
    /// see [`CompletionResponse::refusal`].
    Refusal,
    /// Any other reason, as the provider named it.
    Other(String),
}

/// Token counts of one model request.
///
/// `input_tokens` counts every prompt token, cached or not (Anthropic's cache reads and
/// writes are added in, so the number compares to OpenAI's `prompt_tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Usage with both counts.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
        }
    }

    /// Input plus output.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

impl std::ops::Add for Usage {
    type Output = Usage;
    fn add(self, other: Usage) -> Usage {
        Usage::new(
            self.input_tokens.saturating_add(other.input_tokens),
            self.output_tokens.saturating_add(other.output_tokens),
        )
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        *self = *self + other;
    }
}

/// One tool call of a model turn.
///
/// Malformed arguments are data, not a failure: when the model's text is not a JSON
/// object, [`problem`](Self::problem) says why, [`arguments`](Self::arguments) is
/// `null`, and [`raw_arguments`](Self::raw_arguments) keeps what the model sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModelToolCall {
    /// The provider's call id (generated when a server sends none: `call_<n>`, or
    /// `call_<turn>_<n>` for Gemini, whose calls usually carry no id).
    pub id: String,
    /// The tool name the model called.
    pub name: String,
    /// The parsed arguments (a JSON object), or `null` when there is a problem.
    pub arguments: Value,
    /// The arguments exactly as the model produced them.
    pub raw_arguments: String,
    /// Why the arguments could not be used, e.g. `not valid JSON (EOF while parsing…)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// An opaque token the provider attached to the call and requires back, verbatim,
    /// when the call is replayed in the history: Gemini's `thoughtSignature` (Gemini 3
    /// rejects a replayed call without it). Carried into the history by
    /// [`ModelToolCall::to_part`]; other formats ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

impl ModelToolCall {
    /// A call from the raw argument text the model produced, parsed once here.
    ///
    /// Empty text means no arguments (`{}`), which some servers send for tools without
    /// parameters. Anything that is not a JSON object is a problem.
    ///
    /// ```
    /// use iris_providers::chat::ModelToolCall;
    /// use serde_json::json;
    ///
    /// let ok = ModelToolCall::parse("c1", "now", "");
    /// assert_eq!((ok.arguments, ok.problem), (json!({}), None));
    /// let bad = ModelToolCall::parse("c2", "read_file", "[1, 2]");
    /// assert_eq!(bad.arguments, json!(null));
    /// assert_eq!(bad.problem.as_deref(), Some("not a JSON object (an array)"));
    /// ```
    pub fn parse(
        id: impl Into<String>,
        name: impl Into<String>,
        raw_arguments: impl Into<String>,
    ) -> Self {
        let raw_arguments = raw_arguments.into();
        let (arguments, problem) = parse_arguments(&raw_arguments);
        let name = name.into();
        let problem = if name.trim().is_empty() {
            Some("the call names no tool".to_owned())
        } else {
            problem
        };
        Self {
            id: id.into(),
            name,
            arguments,
            raw_arguments,
            problem,
            signature: None,
        }
    }

    /// A call whose arguments arrived as JSON already (Anthropic's `input`, a script).
    pub fn from_value(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        let raw = arguments.to_string();
        match arguments {
            Value::Object(_) => Self {
                id: id.into(),
                name: name.into(),
                arguments,
                raw_arguments: raw,
                problem: None,
                signature: None,
            },
            _ => Self::parse(id, name, raw),
        }
    }

    /// The call for the executor, or `None` when it has a problem (use
    /// [`ModelToolCall::problem_result`] for those).
    pub fn to_tool_use(&self) -> Option<ToolUse> {
        self.problem
            .is_none()
            .then(|| ToolUse::new(self.id.clone(), self.name.clone(), self.arguments.clone()))
    }

    /// For a call with a problem: the `INVALID_INPUT` tool result to send back in its
    /// place, telling the model what was wrong so it can call again.
    pub fn problem_result(&self) -> Option<ToolResult> {
        let problem = self.problem.as_ref()?;
        let message = format!(
            "the arguments of this `{}` call could not be used: {problem}; call the tool \
             again with the arguments as one JSON object",
            self.name
        );
        Some(ToolOutput::err(codes::INVALID_INPUT, message).into_result(&self.id, &self.name))
    }

    /// The assistant-message part that records this call in the history. A call with a
    /// problem is recorded with its raw text as a JSON string, so a provider that takes
    /// argument text (OpenAI) replays exactly what the model sent.
    pub fn to_part(&self) -> Part {
        let arguments = match self.problem {
            None => self.arguments.clone(),
            Some(_) => Value::String(self.raw_arguments.clone()),
        };
        Part::ToolCall {
            id: self.id.clone(),
            name: self.name.clone(),
            arguments,
            signature: self.signature.clone(),
        }
    }

    /// The call with the provider's opaque [`signature`](Self::signature).
    pub fn with_signature(mut self, signature: impl Into<String>) -> Self {
        self.signature = Some(signature.into());
        self
    }
}

/// Parses argument text into a JSON object, or says why it is not one.
pub(crate) fn parse_arguments(raw: &str) -> (Value, Option<String>) {
    if raw.trim().is_empty() {
        return (Value::Object(Map::new()), None);
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(value @ Value::Object(_)) => (value, None),
        Ok(other) => {
            let kind = match other {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                Value::Bool(_) => "a boolean",
                _ => "null",
            };
            (Value::Null, Some(format!("not a JSON object ({kind})")))
        }
        Err(e) => (Value::Null, Some(format!("not valid JSON ({e})"))),
    }
}

/// One model turn, complete.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompletionResponse {
    /// The answer text (all text parts, concatenated).
    pub text: String,
    /// The tool calls, in the order the model made them.
    pub tool_calls: Vec<ModelToolCall>,
    /// Why the model stopped.
    pub stop: StopReason,
    /// Token counts.
    pub usage: Usage,
    /// The model's refusal message, when the provider sends one apart from the text
    /// (OpenAI's `refusal`; for Gemini, what was blocked and why); `stop` is then
    /// [`StopReason::Refusal`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// The provider's response id, when it sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The model that answered, as the provider named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl CompletionResponse {
    /// A final text answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    /// The assistant message recording this turn in the history: the text (when not
    /// empty), then one [`Part::ToolCall`] per call ([`ModelToolCall::to_part`]).
    pub fn to_message(&self) -> Message {
        let mut content = Vec::with_capacity(self.tool_calls.len() + 1);
        if !self.text.is_empty() {
            content.push(Part::text(self.text.clone()));
        }
        content.extend(self.tool_calls.iter().map(ModelToolCall::to_part));
        Message::new(Role::Assistant, content)
    }

    /// Whether the model refused.
    pub fn is_refusal(&self) -> bool {
        self.stop == StopReason::Refusal
    }

    /// The response, or [`ProviderError::Refused`](crate::ProviderError::Refused)
    /// (`PROVIDER_REFUSED`) when the model refused — for callers that treat a refusal
    /// as a failed request rather than as an answer.
    ///
    /// ```
    /// use iris_providers::chat::{CompletionResponse, StopReason};
    /// let mut turn = CompletionResponse::text("");
    /// turn.stop = StopReason::Refusal;
    /// turn.refusal = Some("I can't help with that.".into());
    /// let err = turn.check_refusal().unwrap_err();
    /// assert_eq!(err.code(), "PROVIDER_REFUSED");
    /// assert!(err.to_string().contains("I can't help with that."));
    /// ```
    pub fn check_refusal(self) -> Result<Self, crate::ProviderError> {
        if !self.is_refusal() {
            return Ok(self);
        }
        let message = self
            .refusal
            .clone()
            .filter(|m| !m.trim().is_empty())
            .or_else(|| (!self.text.trim().is_empty()).then(|| self.text.clone()));
        Err(crate::ProviderError::Refused { message })
    }
}

/// One event of a streamed model turn.
///
/// A well-formed stream yields any number of deltas and exactly one
/// [`StreamEvent::Completed`], last. A stream that fails yields one `Err` and ends.
/// `index` is the call's position in the final
/// [`CompletionResponse::tool_calls`] (0-based, in the order calls started).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// More answer text.
    TextDelta(String),
    /// More of the model's refusal message (OpenAI's `refusal` deltas, Gemini's block).
    RefusalDelta(String),
    /// A tool call began.
    ToolCallStarted {
        /// Its position among the turn's calls.
        index: usize,
        /// The provider's call id.
        id: String,
        /// The tool name.
        name: String,
    },
    /// More argument text of a started call.
    ToolCallArgumentsDelta {
        /// The call's position among the turn's calls.
        index: usize,
        /// The next piece of the raw argument text.
        delta: String,
    },
    /// Token counts, when the provider reports them (possibly more than once; the last
    /// is the total).
    Usage(Usage),
    /// The whole turn, assembled.
    Completed(CompletionResponse),
}
