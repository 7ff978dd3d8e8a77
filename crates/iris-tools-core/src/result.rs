//! What a call produces: a tool's [`ToolOutput`] and the executor's [`ToolResult`].
//!
//! A tool body returns a [`ToolOutput`]: an [`Outcome`] plus the three faces of a result
//! (model content, host data, files). It has no identity. Only the executor turns it
//! into a [`ToolResult`], binding the call id and the canonical tool name once, at the
//! end of the call's path.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{ToolErrorInfo, codes};

/// One ordered block of model-visible content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// MIME type, e.g. `image/png`.
        mime_type: String,
        /// Base64 data (standard alphabet, padded).
        data: String,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    /// An image block from base64 data.
    pub fn image(mime_type: impl Into<String>, base64_data: impl Into<String>) -> Self {
        ContentBlock::Image {
            mime_type: mime_type.into(),
            data: base64_data.into(),
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text { text } => Some(text),
            ContentBlock::Image { .. } => None,
        }
    }
}

/// A reference to a local file a result produced or was saved to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolArtifact {
    /// The native or published file.
    pub path: PathBuf,
    /// Its MIME type.
    pub mime_type: String,
    /// Its size in bytes.
    pub size_bytes: u64,
    /// A short preview of the content.
    pub preview: String,
    /// When the final model body was saved: the file holding the whole body.
    pub text_path: Option<PathBuf>,
}

/// Arguments `tool.before` hooks rewrote: what the call was made with and what the body
/// received (validated and permission-checked again), and which hooks rewrote them.
///
/// ```
/// use iris_tools_core::InputRewrite;
/// use serde_json::json;
/// let r = InputRewrite::new(["pin-path"], json!({"path": "a"}), json!({"path": "src/a"}));
/// assert_eq!(r.hooks, ["pin-path"]);
/// assert_eq!(r.model_note(), r#"[hook `pin-path` rewrote this call's input to {"path":"src/a"}]"#);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct InputRewrite {
    /// The hooks that returned `updated_input`, in the order they ran.
    pub hooks: Vec<String>,
    /// The validated arguments the call was made with.
    pub original: Value,
    /// The arguments the body ran with.
    pub updated: Value,
}

/// The most characters of the rewritten input [`InputRewrite::model_note`] quotes.
pub const REWRITE_NOTE_INPUT_CHARS: usize = 1_000;

impl InputRewrite {
    /// The line the model's view of the result carries ([`ToolOutput::model_blocks`]),
    /// so the model (and the run's history) knows the call ran with other arguments:
    /// the hooks and the rewritten input, cut at [`REWRITE_NOTE_INPUT_CHARS`].
    pub fn model_note(&self) -> String {
        let hooks: Vec<String> = self.hooks.iter().map(|h| format!("`{h}`")).collect();
        let who = match hooks.len() {
            1 => format!("hook {}", hooks[0]),
            _ => format!("hooks {}", hooks.join(", ")),
        };
        let input = self.updated.to_string();
        let input = if input.chars().count() > REWRITE_NOTE_INPUT_CHARS {
            let mut cut: String = input.chars().take(REWRITE_NOTE_INPUT_CHARS).collect();
            cut.push('…');
            cut
        } else {
            input
        };
        format!("[{who} rewrote this call's input to {input}]")
    }

    /// A rewrite record.
    pub fn new<S: Into<String>>(
        hooks: impl IntoIterator<Item = S>,
        original: Value,
        updated: Value,
    ) -> Self {
        Self {
            hooks: hooks.into_iter().map(Into::into).collect(),
            original,
            updated,
        }
    }
}

/// A call that waits for a human: the policy's reason and the validated arguments the
/// human is asked about. The runner turns it into a WAITING run; the call runs only
/// when it is executed again with its id approved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Approval {
    /// What the human is asked about, in one line naming the tool.
    pub reason: String,
    /// The validated arguments of the waiting call.
    pub arguments: Value,
}

impl Approval {
    /// An approval request.
    pub fn new(reason: impl Into<String>, arguments: Value) -> Self {
        Self {
            reason: reason.into(),
            arguments,
        }
    }

    /// The error the model sees for a call that waits: `APPROVAL_REQUIRED` with the
    /// reason as message and detail.
    pub fn to_error(&self) -> ToolErrorInfo {
        ToolErrorInfo::new(codes::APPROVAL_REQUIRED, self.reason.clone())
            .with_detail("reason", self.reason.clone())
    }
}

/// The approval a human gave a waiting call, attached by the host to the context of
/// the approved re-run (`ctx.with_extension(grant)`), so a tool whose approval request
/// described work of its own (a script's inner call) can tell what the human saw.
///
/// The executor itself needs only the call id (`approved_tool_call_id`); this carries
/// the [`Approval::arguments`] the human was shown.
///
/// ```
/// use iris_tools_core::{ApprovalGrant, ToolExecutionContext};
/// use serde_json::json;
/// let grant = ApprovalGrant::new("call_1", json!({"path": "a.txt"}));
/// let mut ctx = ToolExecutionContext::new(".").with_extension(grant);
/// ctx.call_id = "call_1".into();
/// assert_eq!(ApprovalGrant::of(&ctx).map(|g| &g.arguments), Some(&json!({"path": "a.txt"})));
/// ctx.call_id = "call_2".into();
/// assert!(ApprovalGrant::of(&ctx).is_none());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ApprovalGrant {
    /// The approved call.
    pub call_id: String,
    /// The arguments of the approval request the human approved.
    pub arguments: Value,
}

impl ApprovalGrant {
    /// A grant for one call.
    pub fn new(call_id: impl Into<String>, arguments: Value) -> Self {
        Self {
            call_id: call_id.into(),
            arguments,
        }
    }

    /// The grant on `ctx` for the context's own call, if any. A grant for another
    /// call (an outer call whose context an inner call inherited) does not count.
    pub fn of(ctx: &crate::ToolExecutionContext) -> Option<&ApprovalGrant> {
        ctx.extensions
            .get::<ApprovalGrant>()
            .filter(|g| g.call_id == ctx.call_id)
    }
}

/// How a call ended.
///
/// ```
/// use iris_tools_core::{Outcome, ToolErrorInfo, codes};
/// assert!(!Outcome::Ok.is_error());
/// let failed = Outcome::Failed(Box::new(ToolErrorInfo::new(codes::TOOL_FAILED, "disk full")));
/// assert_eq!(failed.error_code(), Some("TOOL_FAILED"));
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub enum Outcome {
    /// The call succeeded.
    #[default]
    Ok,
    /// The call failed with a structured error. Boxed, like the approval: an outcome
    /// travels through every stage of a call, and the common `Ok` stays one word.
    Failed(Box<ToolErrorInfo>),
    /// The call did not run: a human must approve it first.
    AwaitingApproval(Box<Approval>),
}

impl Outcome {
    /// Whether the model sees this as an error (a failure or a wait).
    pub fn is_error(&self) -> bool {
        !matches!(self, Outcome::Ok)
    }

    /// The stable code of a failure (`APPROVAL_REQUIRED` for a wait).
    pub fn error_code(&self) -> Option<&str> {
        match self {
            Outcome::Ok => None,
            Outcome::Failed(info) => Some(&info.code),
            Outcome::AwaitingApproval(_) => Some(codes::APPROVAL_REQUIRED),
        }
    }
}

/// The serialized form of an [`Outcome`]: the `is_error` / `error` / `approval` keys a
/// result carries on the wire (hook events, `--json` output). Kept apart so the Rust
/// type stays an enum while the wire stays flat.
#[derive(Serialize, Deserialize)]
struct OutcomeWire {
    #[serde(default)]
    is_error: bool,
    #[serde(default)]
    error: Option<ToolErrorInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    approval: Option<Approval>,
}

impl Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let wire = match self {
            Outcome::Ok => OutcomeWire {
                is_error: false,
                error: None,
                approval: None,
            },
            Outcome::Failed(info) => OutcomeWire {
                is_error: true,
                error: Some((**info).clone()),
                approval: None,
            },
            Outcome::AwaitingApproval(approval) => OutcomeWire {
                is_error: true,
                error: Some(approval.to_error()),
                approval: Some((**approval).clone()),
            },
        };
        wire.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Outcome {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = OutcomeWire::deserialize(d)?;
        Ok(match (wire.approval, wire.error, wire.is_error) {
            (Some(approval), _, _) => Outcome::AwaitingApproval(Box::new(approval)),
            (None, Some(info), _) => Outcome::Failed(Box::new(info)),
            (None, None, true) => Outcome::Failed(Box::new(ToolErrorInfo::new(
                codes::TOOL_FAILED,
                "tool failed",
            ))),
            (None, None, false) => Outcome::Ok,
        })
    }
}

/// What a tool body returns: the outcome and the result's content, without identity.
///
/// ```
/// use iris_tools_core::{ToolOutput, ToolErrorInfo, codes};
///
/// let ok = ToolOutput::text("hello");
/// assert_eq!(ok.model_content(), "hello");
///
/// let mut err = ToolOutput::error(ToolErrorInfo::new(codes::INVALID_INPUT, "`file_path` is required"));
/// err.hook_feedback.push("hint: pass file_path".into());
/// assert_eq!(err.model_content(),
///     "Error[INVALID_INPUT]: `file_path` is required\nhint: pass file_path");
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolOutput {
    /// How the call ended.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// Ordered text/image blocks.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// Structured data for the host; not automatically model content.
    #[serde(default)]
    pub data: Map<String, Value>,
    /// A file reference (saved body or published file).
    #[serde(default)]
    pub artifact: Option<Box<ToolArtifact>>,
    /// Statistics.
    #[serde(default)]
    pub stats: Map<String, Value>,
    /// Extra information.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// Text appended by `tool.after` hooks, in order.
    #[serde(default)]
    pub hook_feedback: Vec<String>,
    /// Additional context `tool.after` hooks gave the model (bounded by the hook
    /// dispatcher), shown after the feedback; kept apart from it so a host tells a
    /// hook's remark on the result from context it adds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hook_context: Vec<String>,
    /// The input `tool.before` hooks rewrote: the body ran with
    /// [`InputRewrite::updated`], not the arguments the call was made with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_rewrite: Option<Box<InputRewrite>>,
    /// Why a long body could not be saved as an artifact. The body is then kept whole:
    /// the side effects already happened, so nothing is thrown away.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_error: Option<Box<ToolErrorInfo>>,
    /// Deferred tools a real `tool_search` body revealed, as certified by the discovery
    /// layer (never what a body or a middleware claims).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revealed_tools: Vec<String>,
}

impl ToolOutput {
    /// A successful output with the given content.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }

    /// A successful output with one text block (none when `text` is empty).
    pub fn text(text: impl Into<String>) -> Self {
        let text = text.into();
        if text.is_empty() {
            Self::default()
        } else {
            Self::new(vec![ContentBlock::text(text)])
        }
    }

    /// A failed output.
    pub fn error(error: ToolErrorInfo) -> Self {
        Self {
            outcome: Outcome::Failed(Box::new(error)),
            ..Self::default()
        }
    }

    /// A failed output from a code and a message.
    pub fn err(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::error(ToolErrorInfo::new(code, message))
    }

    /// An output that waits for a human approval.
    pub fn awaiting_approval(approval: Approval) -> Self {
        Self {
            outcome: Outcome::AwaitingApproval(Box::new(approval)),
            ..Self::default()
        }
    }

    /// Sets one `data` entry.
    #[must_use]
    pub fn with_data(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.data.insert(key.into(), value.into());
        self
    }

    /// Whether the call failed or waits.
    pub fn is_error(&self) -> bool {
        self.outcome.is_error()
    }

    /// The structured failure, for a failed call.
    pub fn error_info(&self) -> Option<&ToolErrorInfo> {
        match &self.outcome {
            Outcome::Failed(info) => Some(info),
            _ => None,
        }
    }

    /// The error code, when the call failed or waits.
    pub fn error_code(&self) -> Option<&str> {
        self.outcome.error_code()
    }

    /// The approval request, when the call waits for a human.
    pub fn approval(&self) -> Option<&Approval> {
        match &self.outcome {
            Outcome::AwaitingApproval(approval) => Some(approval),
            _ => None,
        }
    }

    /// The model's view: errors as `Error[CODE]: message` text, images kept, the note
    /// of a hook's input rewrite ([`InputRewrite::model_note`]), hook feedback, then
    /// hook context, appended last.
    pub fn model_blocks(&self) -> Vec<ContentBlock> {
        let mut blocks = Vec::with_capacity(
            self.content.len() + 2 + self.hook_feedback.len() + self.hook_context.len(),
        );
        match &self.outcome {
            Outcome::Ok => {}
            Outcome::Failed(e) => {
                blocks.push(ContentBlock::text(format!(
                    "Error[{}]: {}",
                    e.code, e.message
                )));
            }
            Outcome::AwaitingApproval(a) => blocks.push(ContentBlock::text(format!(
                "Error[{}]: {}",
                codes::APPROVAL_REQUIRED,
                a.reason
            ))),
        }
        blocks.extend(self.content.iter().cloned());
        if let Some(rewrite) = &self.input_rewrite {
            blocks.push(ContentBlock::text(rewrite.model_note()));
        }
        blocks.extend(
            self.hook_feedback
                .iter()
                .chain(&self.hook_context)
                .map(|f| ContentBlock::text(f.clone())),
        );
        blocks
    }

    /// The text of [`ToolOutput::model_blocks`], joined with newlines.
    pub fn model_content(&self) -> String {
        self.model_blocks()
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The length of [`ToolOutput::model_content`] in characters.
    pub fn model_chars(&self) -> usize {
        self.model_content().chars().count()
    }

    /// Binds the output to a call: what the executor does once, last.
    pub fn into_result(self, tool_use_id: &str, tool_name: &str) -> ToolResult {
        ToolResult {
            tool_use_id: tool_use_id.to_owned(),
            tool_name: tool_name.to_owned(),
            approved: false,
            output: self,
        }
    }
}

/// The outcome of one tool call as the model and host receive it: a [`ToolOutput`]
/// bound to the call's identity by the executor.
///
/// ```
/// use iris_tools_core::ToolOutput;
///
/// let result = ToolOutput::text("hello").into_result("call_1", "read_file");
/// assert_eq!(result.tool_use_id, "call_1");
/// assert_eq!(result.model_content(), "hello");
/// assert!(!result.is_error());
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolResult {
    /// The provider's call id.
    pub tool_use_id: String,
    /// The canonical tool name.
    pub tool_name: String,
    /// Whether this call ran on a human approval of its id.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approved: bool,
    /// What the call produced.
    #[serde(flatten)]
    pub output: ToolOutput,
}

impl ToolResult {
    /// Whether the call failed or waits.
    pub fn is_error(&self) -> bool {
        self.output.is_error()
    }

    /// The error code, when the call failed or waits.
    pub fn error_code(&self) -> Option<&str> {
        self.output.error_code()
    }

    /// See [`ToolOutput::model_blocks`].
    pub fn model_blocks(&self) -> Vec<ContentBlock> {
        self.output.model_blocks()
    }

    /// See [`ToolOutput::model_content`].
    pub fn model_content(&self) -> String {
        self.output.model_content()
    }

    /// A `tool` role message holding one tool-result block.
    pub fn to_msg(&self) -> ToolResultMessage {
        ToolResultMessage {
            role: ToolResultMessage::ROLE.to_owned(),
            content: vec![ToolResultBlock {
                tool_use_id: self.tool_use_id.clone(),
                tool_name: self.tool_name.clone(),
                content: self.model_blocks(),
                is_error: self.is_error(),
            }],
        }
    }
}

/// A provider-neutral tool-result content block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultBlock {
    /// The call this answers.
    pub tool_use_id: String,
    /// The tool that ran.
    pub tool_name: String,
    /// The model projection of the result.
    pub content: Vec<ContentBlock>,
    /// Whether the call failed.
    pub is_error: bool,
}

/// A provider-neutral message carrying tool results (see [`ToolResult::to_msg`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultMessage {
    /// Always `"tool"`.
    pub role: String,
    /// The result blocks.
    pub content: Vec<ToolResultBlock>,
}

impl ToolResultMessage {
    /// The role of a tool-result message.
    pub const ROLE: &'static str = "tool";
}
