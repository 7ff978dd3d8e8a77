//! `write_file` (`file.write`): create a file or replace its whole content.

use std::sync::Arc;

use iris_tools_core::{
    BoxFuture, Tool, ToolCapability, ToolDefinition, ToolErrorInfo, ToolExecutionContext,
    ToolResult, codes as core_codes,
};
use serde_json::{Value, json};

use super::freshness::{require_fresh_file, still_unchanged};
use super::{definition, run_on_service};
use crate::atomic::{WriteMode, write_atomic};
use crate::codes;
use crate::input::Fields;
use crate::read_state::{ContentHash, Observation};
use crate::service::{FileService, Resolved, Target};
use crate::text::count_lines;

const DESCRIPTION: &str = "Create a file or replace its whole content, atomically.
Use for new files or full rewrites; edit_file changes one snippet.
Overwriting an existing file needs a fresh read_file of it first.";

#[derive(Debug, Clone, PartialEq, Eq)]
struct WriteInput {
    file_path: String,
    content: String,
}

impl WriteInput {
    const FIELDS: [&'static str; 2] = ["file_path", "content"];

    fn parse(raw: &Value) -> Result<Self, ToolErrorInfo> {
        let f = Fields::new(raw, &Self::FIELDS)?;
        Ok(Self {
            file_path: f.required_str("file_path", true)?,
            content: f.required_str("content", false)?,
        })
    }

    fn to_value(&self) -> Value {
        json!({"file_path": self.file_path, "content": self.content})
    }
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "file_path": {
                "type": "string",
                "minLength": 1,
                "description": "File to create or replace, relative to the workspace root; missing directories are created, e.g. `docs/notes.md`."
            },
            "content": {
                "type": "string",
                "description": "The complete new content, written exactly as given (UTF-8); an empty string empties the file."
            }
        },
        "required": ["file_path", "content"],
        "additionalProperties": false
    })
}

/// `write_file`: creates a file (and missing parent directories) or replaces a whole
/// file, atomically. Replacing an existing file requires this session's read
/// observation to still match it (`READ_REQUIRED` / `STALE_READ` otherwise);
/// permissions are kept. A successful write becomes the session's new observation.
#[derive(Debug)]
pub struct WriteFileTool {
    definition: ToolDefinition,
    service: Arc<FileService>,
}

impl WriteFileTool {
    /// The tool on `service`.
    pub fn new(service: Arc<FileService>) -> Self {
        Self {
            definition: definition(
                "write_file",
                super::keys::FILE_WRITE,
                DESCRIPTION,
                schema(),
                ToolCapability::Write,
                &["file", "write", "create", "overwrite"],
            ),
            service,
        }
    }
}

impl Tool for WriteFileTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn validate_input(&self, raw: Value) -> Result<Value, ToolErrorInfo> {
        WriteInput::parse(&raw).map(|i| i.to_value())
    }

    /// Two writes may touch the same file, and read-before-edit assumes the order
    /// the model chose: never run concurrently.
    fn is_concurrency_safe(&self) -> bool {
        false
    }

    fn run<'a>(&'a self, input: Value, ctx: &'a ToolExecutionContext) -> BoxFuture<'a, ToolResult> {
        run_on_service(
            &self.service,
            ctx,
            WriteInput::parse(&input),
            |service, ctx, input, _| write(service, ctx, &input),
        )
    }
}

/// Refuses writes into the published-copies store: a published copy must stay what
/// it was when published.
pub(super) fn refuse_protected(target: &Resolved) -> Result<(), ToolErrorInfo> {
    let rel = target.rel.as_str();
    let published = crate::service::PUBLISHED_DIR;
    if rel == published || rel.starts_with(&format!("{published}/")) {
        return Err(ToolErrorInfo::new(
            codes::PROTECTED_PATH,
            format!("`{rel}` is a published copy and cannot be changed; write to the original file instead"),
        )
        .with_detail("path", rel));
    }
    Ok(())
}

fn write(
    service: &FileService,
    ctx: &ToolExecutionContext,
    input: &WriteInput,
) -> Result<ToolResult, ToolErrorInfo> {
    let content = input.content.as_bytes();
    let (target, created) = match service.resolve(ctx, &input.file_path)? {
        Target::Existing(target) => {
            refuse_protected(&target)?;
            crate::load::regular_file(&target.abs, &target.rel)?;
            let state = service.read_state(ctx);
            let _lock = service.lock_path(&target.abs);
            let checked = require_fresh_file(&state, &target.abs, &target.rel)?;
            let verify = || still_unchanged(&target.abs, &target.rel, checked);
            write_atomic(
                &target.abs,
                &target.rel,
                content,
                WriteMode::Replace { verify: &verify },
            )?;
            (target, false)
        }
        Target::Missing {
            resolved,
            parent_ok,
        } => {
            refuse_protected(&resolved)?;
            if !parent_ok {
                return Err(ToolErrorInfo::new(
                    codes::NOT_A_DIRECTORY,
                    format!(
                        "cannot create `{}`: a part of its parent path is a file",
                        resolved.rel
                    ),
                )
                .with_detail("path", resolved.rel));
            }
            if let Some(parent) = resolved.abs.parent() {
                std::fs::create_dir_all(parent).map_err(|e| {
                    ToolErrorInfo::new(
                        core_codes::IO_ERROR,
                        format!("cannot create the directories of `{}`: {e}", resolved.rel),
                    )
                    .with_detail("path", resolved.rel.clone())
                })?;
            }
            let _lock = service.lock_path(&resolved.abs);
            write_atomic(&resolved.abs, &resolved.rel, content, WriteMode::CreateNew)?;
            (resolved, true)
        }
    };
    let hash = record_written(service, ctx, &target, content);
    let lines = std::str::from_utf8(content).map_or(0, count_lines);
    let verb = if created { "Created" } else { "Wrote" };
    Ok(ToolResult::text(
        "",
        "",
        format!(
            "{verb} `{}` ({} bytes, {lines} lines).",
            target.rel,
            content.len()
        ),
    )
    .with_data("path", target.rel.clone())
    .with_data("created", created)
    .with_data("size_bytes", content.len() as u64)
    .with_data("lines", lines)
    .with_data("sha256", hash.to_string()))
}

/// After our own write the model knows the content exactly, so the written bytes
/// become this session's observation (a later edit needs no extra read). Returns
/// the content hash.
pub(super) fn record_written(
    service: &FileService,
    ctx: &ToolExecutionContext,
    target: &Resolved,
    content: &[u8],
) -> ContentHash {
    let observation = Observation {
        content_hash: ContentHash::of(content),
        size: content.len() as u64,
        modified: target.abs.metadata().and_then(|m| m.modified()).ok(),
    };
    let hash = observation.content_hash;
    service
        .read_state(ctx)
        .record(target.abs.clone(), observation);
    hash
}
