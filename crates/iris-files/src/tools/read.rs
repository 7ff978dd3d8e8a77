//! `read_file` (`file.read`): text by lines and characters, or an image.

use std::sync::Arc;

use base64::Engine as _;
use iris_tools_core::{
    BoxFuture, ContentBlock, Tool, ToolCapability, ToolDefinition, ToolErrorInfo,
    ToolExecutionContext, ToolResult,
};
use serde_json::{Value, json};

use super::{MAX_READ_LIMIT, definition, run_on_service};
use crate::codes;
use crate::input::{Fields, to_usize};
use crate::load::{as_text, load};
use crate::media::sniff_image;
use crate::read_state::Observation;
use crate::service::FileService;
use crate::text::{PageError, PageRequest, page};

const DESCRIPTION: &str = "Read a text file by lines, or a PNG/JPEG/WebP image.
Use before edit_file/write_file; list_files finds paths, grep_search text.
Paged by a character budget; continue at next_offset/next_column.";

/// The validated input of `read_file`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ReadInput {
    file_path: String,
    offset: Option<u64>,
    column: u64,
    limit: Option<u64>,
    with_line_numbers: bool,
}

impl ReadInput {
    const FIELDS: [&'static str; 5] = [
        "file_path",
        "offset",
        "column",
        "limit",
        "with_line_numbers",
    ];

    fn parse(raw: &Value) -> Result<Self, ToolErrorInfo> {
        let f = Fields::new(raw, &Self::FIELDS)?;
        Ok(Self {
            file_path: f.required_str("file_path", true)?,
            offset: f.optional_int("offset", 0, u64::MAX, true)?,
            column: f.optional_int("column", 0, u64::MAX, false)?.unwrap_or(0),
            limit: f.optional_int("limit", 0, MAX_READ_LIMIT, true)?,
            with_line_numbers: f.optional_bool("with_line_numbers")?.unwrap_or(false),
        })
    }

    fn to_value(&self) -> Value {
        json!({
            "file_path": self.file_path,
            "offset": self.offset,
            "column": self.column,
            "limit": self.limit,
            "with_line_numbers": self.with_line_numbers,
        })
    }
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "file_path": {
                "type": "string",
                "minLength": 1,
                "description": "File to read, relative to the workspace root (absolute paths must stay inside it), e.g. `src/main.rs`."
            },
            "offset": {
                "type": ["integer", "null"],
                "minimum": 0,
                "default": null,
                "description": "0-based line to start at (line N is offset N-1); null starts at the top. To continue, pass the previous next_offset."
            },
            "column": {
                "type": "integer",
                "minimum": 0,
                "default": 0,
                "description": "0-based character within the offset line to start at; pass next_column to continue a long line cut by the budget, e.g. 40000."
            },
            "limit": {
                "type": ["integer", "null"],
                "minimum": 0,
                "maximum": MAX_READ_LIMIT,
                "default": null,
                "description": "Most lines to return, 0-1000; null means 1000. Use a small value for a quick look, e.g. 50."
            },
            "with_line_numbers": {
                "type": "boolean",
                "default": false,
                "description": "Prefix each line with its 1-based number and a tab, like `cat -n`; use when you will cite lines."
            }
        },
        "required": ["file_path"],
        "additionalProperties": false
    })
}

/// `read_file`: reads UTF-8 text by lines (0-based `offset` and `column`, `limit`
/// 0–1000, default 1000) within a per-call character budget, reporting
/// `data.next_offset` / `data.next_column` to continue; imports PNG/JPEG/WebP files as
/// image content (paging ignored); refuses binary files. Every successful read
/// records this session's observation of the file.
#[derive(Debug)]
pub struct ReadFileTool {
    definition: ToolDefinition,
    service: Arc<FileService>,
}

impl ReadFileTool {
    /// The tool on `service`.
    pub fn new(service: Arc<FileService>) -> Self {
        Self {
            definition: definition(
                "read_file",
                super::keys::FILE_READ,
                DESCRIPTION,
                schema(),
                ToolCapability::Read,
                &["file", "read", "image", "page"],
            ),
            service,
        }
    }
}

impl Tool for ReadFileTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn validate_input(&self, raw: Value) -> Result<Value, ToolErrorInfo> {
        ReadInput::parse(&raw).map(|i| i.to_value())
    }

    fn run<'a>(&'a self, input: Value, ctx: &'a ToolExecutionContext) -> BoxFuture<'a, ToolResult> {
        run_on_service(
            &self.service,
            ctx,
            ReadInput::parse(&input),
            |service, ctx, input, _| read(service, ctx, &input),
        )
    }
}

fn read(
    service: &FileService,
    ctx: &ToolExecutionContext,
    input: &ReadInput,
) -> Result<ToolResult, ToolErrorInfo> {
    let config = service.config();
    let target = service.resolve_existing(ctx, &input.file_path)?;
    let rel = target.rel.as_str();
    let limit_bytes = config.max_text_bytes.max(config.max_image_bytes);
    let loaded = load(&target.abs, rel, limit_bytes)?;
    let bytes = &loaded.bytes;
    let state = service.read_state(ctx);
    let size = bytes.len() as u64;

    if let Some(mime) = sniff_image(bytes) {
        if size > config.max_image_bytes {
            return Err(crate::load::too_large(
                rel,
                size,
                config.max_image_bytes,
                "images must be smaller to be sent to the model",
            ));
        }
        state.record(target.abs.clone(), Observation::of(bytes, &loaded.meta));
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        let mut result = ToolResult::new(
            "",
            "",
            vec![
                ContentBlock::text(format!("Image `{rel}` ({mime}, {size} bytes).")),
                ContentBlock::image(mime, data),
            ],
        );
        result.data.insert("path".into(), rel.into());
        result.data.insert("kind".into(), "image".into());
        result.data.insert("mime_type".into(), mime.into());
        result.data.insert("size_bytes".into(), size.into());
        return Ok(result);
    }

    if size > config.max_text_bytes {
        return Err(crate::load::too_large(
            rel,
            size,
            config.max_text_bytes,
            "use grep_search to find the part you need",
        ));
    }
    let text = match as_text(bytes, rel) {
        Ok(t) => t,
        Err(e) => {
            // The model now knows the file exists and what it is; recording the
            // observation lets it replace the file with write_file deliberately.
            state.record(target.abs.clone(), Observation::of(bytes, &loaded.meta));
            return Err(e);
        }
    };
    let req = PageRequest {
        offset: to_usize(input.offset.unwrap_or(0)),
        column: to_usize(input.column),
        limit: to_usize(input.limit.unwrap_or(MAX_READ_LIMIT)),
        budget: config.read_char_budget,
        line_numbers: input.with_line_numbers,
    };
    let page = page(text, &req).map_err(|e| out_of_range(rel, &e))?;
    state.record(target.abs.clone(), Observation::of(bytes, &loaded.meta));

    let mut content = Vec::with_capacity(2);
    if !page.body.is_empty() {
        content.push(ContentBlock::text(page.body.clone()));
    }
    if let Some(notice) = notice(&page, &req) {
        content.push(ContentBlock::text(notice));
    }
    let (next_offset, next_column) = match page.next {
        Some((o, c)) => (json!(o), json!(c)),
        None => (Value::Null, Value::Null),
    };
    let mut result = ToolResult::new("", "", content);
    let data = &mut result.data;
    data.insert("path".into(), rel.into());
    data.insert("kind".into(), "text".into());
    data.insert("size_bytes".into(), size.into());
    data.insert("total_lines".into(), page.total_lines.into());
    data.insert("offset".into(), req.offset.into());
    data.insert("column".into(), req.column.into());
    data.insert("lines".into(), page.lines.into());
    data.insert("chars".into(), page.content_chars.into());
    data.insert("truncated".into(), page.budget_hit.into());
    data.insert("next_offset".into(), next_offset);
    data.insert("next_column".into(), next_column);
    Ok(result)
}

/// The model-facing note after a page: how to continue, or why it is empty.
fn notice(page: &crate::text::Page, req: &PageRequest) -> Option<String> {
    match page.next {
        Some((line, column)) if page.budget_hit && column > 0 => Some(format!(
            "[Stopped at the {}-character budget inside line {}; continue with offset={line}, column={column}.]",
            req.budget,
            line + 1
        )),
        Some((line, _)) if page.budget_hit => Some(format!(
            "[Stopped at the {}-character budget; continue with offset={line}.]",
            req.budget
        )),
        Some((line, column)) if page.lines == 0 => Some(format!(
            "[No lines requested; the file has {} lines. Read from offset={line}{}.]",
            page.total_lines,
            if column > 0 {
                format!(", column={column}")
            } else {
                String::new()
            }
        )),
        Some((line, _)) => Some(format!(
            "[Showing lines {}-{line} of {}; continue with offset={line}.]",
            req.offset + 1,
            page.total_lines
        )),
        None if page.body.is_empty() && page.total_lines == 0 => {
            Some("[The file is empty.]".into())
        }
        None if page.body.is_empty() => {
            Some(format!("[End of file: it has {} lines.]", page.total_lines))
        }
        None => None,
    }
}

fn out_of_range(rel: &str, e: &PageError) -> ToolErrorInfo {
    let message = match e {
        PageError::OffsetPastEnd {
            offset,
            total_lines,
        } => format!(
            "offset {offset} is past the end of `{rel}`, which has {total_lines} lines (offsets 0-{total_lines})"
        ),
        PageError::ColumnPastEnd {
            offset,
            column,
            line_chars,
        } => format!(
            "column {column} is past the end of line {} of `{rel}`, which has {line_chars} characters",
            offset + 1
        ),
    };
    ToolErrorInfo::new(codes::READ_OUT_OF_RANGE, message).with_detail("path", rel)
}
