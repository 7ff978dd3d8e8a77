//! [`ToolArtifactStore`]: long results saved whole, replaced by a preview + reference.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::definition::{DEFAULT_PREVIEW_CHARS, PreviewMode};
use crate::error::{Error, Result};
use crate::result::{ToolArtifact, ToolResult};

/// Where results land, relative to the workspace: `.iris/tool-results/<session>/`.
pub const TOOL_RESULTS_DIR: &str = ".iris/tool-results";

/// Saves artifacts under one root directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolArtifactStore {
    /// The directory files are written to.
    pub root: PathBuf,
    /// Characters kept in a preview.
    pub preview_chars: usize,
    /// Head or head+tail.
    pub preview_mode: PreviewMode,
}

impl ToolArtifactStore {
    /// A store writing under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            preview_chars: DEFAULT_PREVIEW_CHARS,
            preview_mode: PreviewMode::Head,
        }
    }

    /// The store for a session: `<workspace>/.iris/tool-results/<session>/`.
    pub fn for_session(workspace_root: &Path, session_id: &str) -> Self {
        let session = if session_id.is_empty() {
            "default"
        } else {
            session_id
        };
        Self::new(workspace_root.join(TOOL_RESULTS_DIR).join(session))
    }

    /// Sets the preview length and mode.
    #[must_use]
    pub fn with_preview(mut self, chars: usize, mode: PreviewMode) -> Self {
        self.preview_chars = chars;
        self.preview_mode = mode;
        self
    }

    /// Copies a resolved source file into the store.
    pub fn persist_file(
        &self,
        tool_use_id: &str,
        source: &Path,
        preview: &str,
    ) -> Result<ToolArtifact> {
        let name = source
            .file_name()
            .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
        let dest = self.root.join(format!("{tool_use_id}-{name}"));
        std::fs::create_dir_all(&self.root).map_err(|e| io(&self.root, e))?;
        let size = std::fs::copy(source, &dest).map_err(|e| io(source, e))?;
        Ok(ToolArtifact {
            path: dest,
            mime_type: "application/octet-stream".into(),
            size_bytes: size,
            preview: preview.to_owned(),
            text_path: None,
        })
    }

    /// Saves a JSON payload.
    pub fn persist_json(
        &self,
        tool_use_id: &str,
        payload: &Value,
        preview: &str,
    ) -> Result<ToolArtifact> {
        let dest = self.root.join(format!("{tool_use_id}.json"));
        let text = serde_json::to_string_pretty(payload)?;
        std::fs::create_dir_all(&self.root).map_err(|e| io(&self.root, e))?;
        std::fs::write(&dest, &text).map_err(|e| io(&dest, e))?;
        Ok(ToolArtifact {
            path: dest,
            mime_type: "application/json".into(),
            size_bytes: text.len() as u64,
            preview: preview.to_owned(),
            text_path: None,
        })
    }

    /// Returns short results unchanged; saves a long model body and returns a new
    /// result holding a preview and a reference to the saved file.
    pub fn persist_if_large(&self, result: ToolResult, max_chars: usize) -> Result<ToolResult> {
        let body = result.model_content();
        if body.chars().count() <= max_chars {
            return Ok(result);
        }
        let dest = self.root.join(format!("{}.txt", result.tool_use_id));
        std::fs::create_dir_all(&self.root).map_err(|e| io(&self.root, e))?;
        std::fs::write(&dest, &body).map_err(|e| io(&dest, e))?;
        let preview: String = body.chars().take(self.preview_chars).collect();
        let mut out = result;
        out.content = vec![crate::result::ContentBlock::text(preview.clone())];
        out.artifact = Some(ToolArtifact {
            path: dest.clone(),
            mime_type: "text/plain".into(),
            size_bytes: body.len() as u64,
            preview,
            text_path: Some(dest),
        });
        Ok(out)
    }
}

fn io(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}
