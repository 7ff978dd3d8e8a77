//! `edit_file` (`file.edit`): replace one unique snippet.

use std::sync::Arc;

use iris_tools_core::{
    BoxFuture, Tool, ToolCapability, ToolDefinition, ToolErrorInfo, ToolExecutionContext,
    ToolResult,
};
use serde_json::{Value, json};

use super::freshness::{require_fresh_bytes, still_unchanged};
use super::write::{record_written, refuse_protected};
use super::{definition, run_on_service};
use crate::atomic::{WriteMode, write_atomic};
use crate::codes;
use crate::input::Fields;
use crate::load::{as_text, load};
use crate::read_state::ContentHash;
use crate::service::FileService;
use crate::text::count_lines;

const DESCRIPTION: &str = "Replace one exact snippet of a text file with new text.
Use for targeted changes; write_file rewrites a whole file.
Needs a fresh read_file; old_string must match exactly once.";

/// How many match positions an ambiguity error lists.
const SHOWN_MATCH_LINES: usize = 10;

#[derive(Debug, Clone, PartialEq, Eq)]
struct EditInput {
    file_path: String,
    old_string: String,
    new_string: String,
}

impl EditInput {
    const FIELDS: [&'static str; 3] = ["file_path", "old_string", "new_string"];

    fn parse(raw: &Value) -> Result<Self, ToolErrorInfo> {
        let f = Fields::new(raw, &Self::FIELDS)?;
        Ok(Self {
            file_path: f.required_str("file_path", true)?,
            old_string: f.required_str("old_string", true)?,
            new_string: f.required_str("new_string", false)?,
        })
    }

    fn to_value(&self) -> Value {
        json!({"file_path": self.file_path, "old_string": self.old_string, "new_string": self.new_string})
    }
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "file_path": {
                "type": "string",
                "minLength": 1,
                "description": "Existing text file to change, relative to the workspace root, e.g. `src/config.toml`."
            },
            "old_string": {
                "type": "string",
                "minLength": 1,
                "description": "Exact text to replace, copied from read_file output without line numbers; include nearby lines until it is unique."
            },
            "new_string": {
                "type": "string",
                "description": "Replacement text, exact (may be empty to delete old_string), e.g. `level = \"INFO\"`."
            }
        },
        "required": ["file_path", "old_string", "new_string"],
        "additionalProperties": false
    })
}

/// `edit_file`: replaces the single occurrence of a non-empty `old_string` with
/// `new_string`. The file must have been read in this session and be unchanged
/// since (`READ_REQUIRED` / `STALE_READ`); zero matches is `EDIT_NO_MATCH`, several
/// is `EDIT_AMBIGUOUS` with the count. The write is atomic and keeps permissions.
#[derive(Debug)]
pub struct EditFileTool {
    definition: ToolDefinition,
    service: Arc<FileService>,
}

impl EditFileTool {
    /// The tool on `service`.
    pub fn new(service: Arc<FileService>) -> Self {
        Self {
            definition: definition(
                "edit_file",
                super::keys::FILE_EDIT,
                DESCRIPTION,
                schema(),
                ToolCapability::Write,
                &["file", "edit", "replace", "patch"],
            ),
            service,
        }
    }
}

impl Tool for EditFileTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn validate_input(&self, raw: Value) -> Result<Value, ToolErrorInfo> {
        EditInput::parse(&raw).map(|i| i.to_value())
    }

    /// Edits depend on what the model read last: never run concurrently.
    fn is_concurrency_safe(&self) -> bool {
        false
    }

    fn run<'a>(&'a self, input: Value, ctx: &'a ToolExecutionContext) -> BoxFuture<'a, ToolResult> {
        run_on_service(
            &self.service,
            ctx,
            EditInput::parse(&input),
            |service, ctx, input, _| edit(service, ctx, &input),
        )
    }
}

/// Byte offsets of every occurrence of `needle`, overlapping ones included (for
/// `aa` in `aaa` both positions count: the snippet is not unique).
fn occurrences(haystack: &str, needle: &str) -> Vec<usize> {
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    let bytes = haystack.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = finder.find(&bytes[from..]) {
        found.push(from + i);
        from += i + 1;
    }
    found
}

fn line_of(text: &str, byte: usize) -> usize {
    memchr::memchr_iter(b'\n', &text.as_bytes()[..byte]).count() + 1
}

fn edit(
    service: &FileService,
    ctx: &ToolExecutionContext,
    input: &EditInput,
) -> Result<ToolResult, ToolErrorInfo> {
    if input.old_string == input.new_string {
        return Err(ToolErrorInfo::new(
            codes::EDIT_NO_CHANGE,
            "new_string is identical to old_string; nothing would change",
        ));
    }
    let target = service.resolve_existing(ctx, &input.file_path)?;
    refuse_protected(&target)?;
    let rel = target.rel.as_str();
    let state = service.read_state(ctx);
    let _lock = service.lock_path(&target.abs);
    let loaded = load(&target.abs, rel, service.config().max_text_bytes)?;
    require_fresh_bytes(&state, &target.abs, rel, &loaded.bytes)?;
    let text = as_text(&loaded.bytes, rel)?;

    let found = occurrences(text, &input.old_string);
    let at = match found.as_slice() {
        [at] => *at,
        [] => {
            return Err(ToolErrorInfo::new(
                codes::EDIT_NO_MATCH,
                format!(
                    "old_string matches 0 times in `{rel}`; copy the exact text from read_file (whitespace included)"
                ),
            )
            .with_detail("path", rel)
            .with_detail("matches", 0));
        }
        many => {
            let lines: Vec<usize> = many
                .iter()
                .take(SHOWN_MATCH_LINES)
                .map(|&b| line_of(text, b))
                .collect();
            return Err(ToolErrorInfo::new(
                codes::EDIT_AMBIGUOUS,
                format!(
                    "old_string matches {} times in `{rel}` (lines {}); include more surrounding text so it matches exactly once",
                    many.len(),
                    lines
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .with_detail("path", rel)
            .with_detail("matches", many.len())
            .with_detail("lines", lines));
        }
    };

    let mut updated =
        String::with_capacity(text.len() - input.old_string.len() + input.new_string.len());
    updated.push_str(&text[..at]);
    updated.push_str(&input.new_string);
    updated.push_str(&text[at + input.old_string.len()..]);
    let checked = (ContentHash::of(&loaded.bytes), loaded.bytes.len() as u64);
    let verify = || still_unchanged(&target.abs, rel, checked);
    write_atomic(
        &target.abs,
        rel,
        updated.as_bytes(),
        WriteMode::Replace { verify: &verify },
    )?;
    let hash = record_written(service, ctx, &target, updated.as_bytes());
    let line = line_of(text, at);
    Ok(ToolResult::text(
        "",
        "",
        format!("Edited `{rel}`: replaced 1 occurrence at line {line}."),
    )
    .with_data("path", rel)
    .with_data("line", line)
    .with_data("size_bytes", updated.len() as u64)
    .with_data("lines", count_lines(&updated))
    .with_data("sha256", hash.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occurrences_table() {
        for (hay, needle, expect) in [
            ("abc", "b", vec![1]),
            ("aaa", "aa", vec![0, 1]),
            ("abab", "ab", vec![0, 2]),
            ("héllo héllo", "é", vec![1, 8]),
            ("abc", "x", vec![]),
        ] {
            assert_eq!(occurrences(hay, needle), expect, "{hay:?} {needle:?}");
        }
    }
}
