//! [`ToolResult`]: the three faces of a call's outcome — model content, host data, files.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::ToolErrorInfo;

/// One ordered block of model-visible content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
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

/// The outcome of one tool call.
///
/// ```
/// use iris_tools_core::{ToolResult, ToolErrorInfo, codes};
///
/// let ok = ToolResult::text("call_1", "read_file", "hello");
/// assert_eq!(ok.model_content(), "hello");
///
/// let mut err = ToolResult::error("call_2", "read_file",
///     ToolErrorInfo::new(codes::INVALID_INPUT, "`file_path` is required"));
/// err.hook_feedback.push("hint: pass file_path".into());
/// assert_eq!(err.model_content(),
///     "Error[INVALID_INPUT]: `file_path` is required\nhint: pass file_path");
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolResult {
    /// The call id; the executor binds the real one.
    pub tool_use_id: String,
    /// The canonical tool name; the executor binds the real one.
    pub tool_name: String,
    /// Ordered text/image blocks.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// Whether the call failed.
    #[serde(default)]
    pub is_error: bool,
    /// The structured failure, when `is_error`.
    #[serde(default)]
    pub error: Option<ToolErrorInfo>,
    /// Structured data for the host; not automatically model content.
    #[serde(default)]
    pub data: Map<String, Value>,
    /// A file reference (saved body or published file).
    #[serde(default)]
    pub artifact: Option<ToolArtifact>,
    /// Statistics.
    #[serde(default)]
    pub stats: Map<String, Value>,
    /// Extra information.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// Text appended by `tool.after` hooks, in order.
    #[serde(default)]
    pub hook_feedback: Vec<String>,
}

impl ToolResult {
    /// A successful result with the given content.
    pub fn new(
        tool_use_id: impl Into<String>,
        tool_name: impl Into<String>,
        content: Vec<ContentBlock>,
    ) -> Self {
        Self {
            tool_use_id: tool_use_id.into(),
            tool_name: tool_name.into(),
            content,
            ..Self::default()
        }
    }

    /// A successful result with one text block (none when `text` is empty).
    pub fn text(
        tool_use_id: impl Into<String>,
        tool_name: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        let text = text.into();
        let content = if text.is_empty() {
            Vec::new()
        } else {
            vec![ContentBlock::text(text)]
        };
        Self::new(tool_use_id, tool_name, content)
    }

    /// A successful, unbound result with one text block; the executor fills the identity.
    pub fn ok_text(text: impl Into<String>) -> Self {
        Self::text("", "", text)
    }

    /// A failed result.
    pub fn error(
        tool_use_id: impl Into<String>,
        tool_name: impl Into<String>,
        error: ToolErrorInfo,
    ) -> Self {
        Self {
            tool_use_id: tool_use_id.into(),
            tool_name: tool_name.into(),
            is_error: true,
            error: Some(error),
            ..Self::default()
        }
    }

    /// A failed, unbound result; the executor fills the identity.
    pub fn err(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::error("", "", ToolErrorInfo::new(code, message))
    }

    /// Sets one `data` entry.
    #[must_use]
    pub fn with_data(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.data.insert(key.into(), value.into());
        self
    }

    /// Sets the identity (the executor calls this last).
    #[must_use]
    pub fn bind(mut self, tool_use_id: &str, tool_name: &str) -> Self {
        tool_use_id.clone_into(&mut self.tool_use_id);
        tool_name.clone_into(&mut self.tool_name);
        self
    }

    /// The error code, when the call failed.
    pub fn error_code(&self) -> Option<&str> {
        self.error.as_ref().map(|e| e.code.as_str())
    }

    /// The model's view: errors as `Error[CODE]: message` text, images kept, hook
    /// feedback appended last.
    pub fn model_blocks(&self) -> Vec<ContentBlock> {
        let mut blocks = Vec::with_capacity(self.content.len() + 1 + self.hook_feedback.len());
        if self.is_error {
            let (code, message) = match &self.error {
                Some(e) => (e.code.as_str(), e.message.as_str()),
                None => (crate::codes::TOOL_FAILED, "tool failed"),
            };
            blocks.push(ContentBlock::text(format!("Error[{code}]: {message}")));
        }
        blocks.extend(self.content.iter().cloned());
        blocks.extend(
            self.hook_feedback
                .iter()
                .map(|f| ContentBlock::text(f.clone())),
        );
        blocks
    }

    /// The text of [`ToolResult::model_blocks`], joined with newlines.
    pub fn model_content(&self) -> String {
        self.model_blocks()
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The length of [`ToolResult::model_content`] in characters.
    pub fn model_chars(&self) -> usize {
        self.model_content().chars().count()
    }

    /// A `tool` role message holding one tool-result block.
    pub fn to_msg(&self) -> ToolResultMessage {
        ToolResultMessage {
            role: ToolResultMessage::ROLE.to_owned(),
            content: vec![ToolResultBlock {
                tool_use_id: self.tool_use_id.clone(),
                tool_name: self.tool_name.clone(),
                content: self.model_blocks(),
                is_error: self.is_error,
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
