//! `grep_search` (`file.grep`): regex search over file contents, line by line.

use std::sync::Arc;

use iris_tools_core::{
    BoxFuture, Tool, ToolCapability, ToolDefinition, ToolErrorInfo, ToolExecutionContext,
    ToolResult,
};
use serde_json::{Value, json};

use super::{DEFAULT_MAX_RESULTS, MAX_RESULTS_LIMIT, definition, run_on_service};
use crate::input::{Fields, to_usize};
use crate::service::FileService;
use crate::walk::{LineMatch, Tally, compile_regex, grep};

const DESCRIPTION: &str =
    "Search file contents line by line with a Rust regex (regex crate syntax).
Use to find code or text; list_files finds names, read_file shows context.
Skips .git, .iris, gitignored and binary files.";

#[derive(Debug, Clone, PartialEq, Eq)]
struct GrepInput {
    pattern: String,
    path: String,
    max_results: u64,
}

impl GrepInput {
    const FIELDS: [&'static str; 3] = ["pattern", "path", "max_results"];

    fn parse(raw: &Value) -> Result<Self, ToolErrorInfo> {
        let f = Fields::new(raw, &Self::FIELDS)?;
        let path = f.optional_str("path", false)?.unwrap_or_else(|| ".".into());
        if path.is_empty() {
            return Err(crate::input::invalid("`path` must not be empty"));
        }
        Ok(Self {
            pattern: f.required_str("pattern", false)?,
            path,
            max_results: f
                .optional_int("max_results", 0, MAX_RESULTS_LIMIT, false)?
                .unwrap_or(DEFAULT_MAX_RESULTS),
        })
    }

    fn to_value(&self) -> Value {
        json!({"pattern": self.pattern, "path": self.path, "max_results": self.max_results})
    }
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "pattern": {
                "type": "string",
                "description": "Rust regex matched against each line: no look-around or backreferences; `(?i)` ignores case. E.g. `fn\\s+main`."
            },
            "path": {
                "type": "string",
                "minLength": 1,
                "default": ".",
                "description": "File or directory to search, relative to the workspace root; `.` searches everything, e.g. `src`."
            },
            "max_results": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_RESULTS_LIMIT,
                "default": DEFAULT_MAX_RESULTS,
                "description": "Most matching lines to return, 0-1000, first by path then line. 0 returns only the counts, e.g. 20 for a sample."
            }
        },
        "required": ["pattern"],
        "additionalProperties": false
    })
}

/// `grep_search`: searches `path` (default `.`, a file or a directory) for lines
/// matching `pattern` in the Rust `regex` crate's syntax, returning at most
/// `max_results` (0–1000, default 200) as path, 1-based line number and text, sorted by
/// path then line, with exact totals. Long lines are clipped around the match;
/// `.git`, `.iris`, gitignored and binary files are skipped.
#[derive(Debug)]
pub struct GrepSearchTool {
    definition: ToolDefinition,
    service: Arc<FileService>,
}

impl GrepSearchTool {
    /// The tool on `service`.
    pub fn new(service: Arc<FileService>) -> Self {
        Self {
            definition: definition(
                "grep_search",
                super::keys::FILE_GREP,
                DESCRIPTION,
                schema(),
                ToolCapability::Read,
                &["file", "search", "grep", "regex", "text"],
            ),
            service,
        }
    }
}

impl Tool for GrepSearchTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn validate_input(&self, raw: Value) -> Result<Value, ToolErrorInfo> {
        GrepInput::parse(&raw).map(|i| i.to_value())
    }

    fn run<'a>(&'a self, input: Value, ctx: &'a ToolExecutionContext) -> BoxFuture<'a, ToolResult> {
        run_on_service(
            &self.service,
            ctx,
            GrepInput::parse(&input),
            |service, ctx, input, stop| {
                let matcher = compile_regex(&input.pattern)?;
                let target = service.resolve_existing(ctx, &input.path)?;
                let k = to_usize(input.max_results);
                let tally = grep(
                    &target.abs,
                    &target.root,
                    &matcher,
                    k,
                    service.config(),
                    stop,
                )?;
                Ok(render(&target.rel, &input.pattern, k, tally))
            },
        )
    }
}

fn render(rel: &str, pattern: &str, k: usize, tally: Tally<LineMatch>) -> ToolResult {
    let total = tally.total;
    let files_matched = tally.files_matched;
    let files_searched = tally.files;
    let errors = tally.errors;
    let matches = tally.top.into_sorted_vec();
    let truncated = (matches.len() as u64) < total;
    let mut text = String::new();
    if total == 0 {
        text.push_str(&format!(
            "No matches for `{pattern}` under `{rel}` ({files_searched} files searched)."
        ));
    } else if k == 0 {
        text.push_str(&format!(
            "{total} matching lines in {files_matched} files under `{rel}`."
        ));
    } else {
        for m in &matches {
            text.push_str(&format!("{}:{}:{}\n", m.path, m.line, m.text));
        }
        if truncated {
            text.push_str(&format!(
                "[{} of {total} matching lines shown ({files_matched} files); narrow the pattern or path to see the rest.]",
                matches.len()
            ));
        } else {
            text.pop();
        }
    }
    let rows: Vec<Value> = matches
        .into_iter()
        .map(|m| json!({"path": m.path, "line": m.line, "text": m.text}))
        .collect();
    ToolResult::text("", "", text)
        .with_data("path", rel)
        .with_data("matches", rows)
        .with_data("total_matches", total)
        .with_data("files_matched", files_matched)
        .with_data("files_searched", files_searched)
        .with_data("truncated", truncated)
        .with_data("skipped_unreadable", errors)
}
