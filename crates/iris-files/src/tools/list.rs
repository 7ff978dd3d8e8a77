//! `list_files` (`file.list`): recursive, sorted, gitignore-aware file listing.

use std::sync::Arc;

use iris_tools_core::{
    BoxFuture, Tool, ToolCapability, ToolDefinition, ToolErrorInfo, ToolExecutionContext,
    ToolResult,
};
use serde_json::{Value, json};

use super::{DEFAULT_MAX_RESULTS, MAX_RESULTS_LIMIT, definition, run_on_service};
use crate::codes;
use crate::input::{Fields, to_usize};
use crate::service::FileService;
use crate::walk::{NameFilter, list_files};

const DESCRIPTION: &str =
    "List files under a directory recursively, sorted by path, optionally by glob.
Use to find files by name; grep_search finds text inside files.
Skips .git, .iris and gitignored files.";

#[derive(Debug, Clone, PartialEq, Eq)]
struct ListInput {
    path: String,
    pattern: Option<String>,
    max_results: u64,
}

impl ListInput {
    const FIELDS: [&'static str; 3] = ["path", "pattern", "max_results"];

    fn parse(raw: &Value) -> Result<Self, ToolErrorInfo> {
        let f = Fields::new(raw, &Self::FIELDS)?;
        let path = f.optional_str("path", false)?.unwrap_or_else(|| ".".into());
        if path.is_empty() {
            return Err(crate::input::invalid("`path` must not be empty"));
        }
        Ok(Self {
            path,
            pattern: f.optional_str("pattern", true)?,
            max_results: f
                .optional_int("max_results", 0, MAX_RESULTS_LIMIT, false)?
                .unwrap_or(DEFAULT_MAX_RESULTS),
        })
    }

    fn to_value(&self) -> Value {
        json!({"path": self.path, "pattern": self.pattern, "max_results": self.max_results})
    }
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "default": ".",
                "description": "Directory to list, relative to the workspace root; `.` is the whole workspace, e.g. `src`."
            },
            "pattern": {
                "type": ["string", "null"],
                "default": null,
                "description": "Glob filter. Without `/` it matches file names (`*.rs`); with `/` the path below `path` (`src/**/*.rs`). null lists all."
            },
            "max_results": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_RESULTS_LIMIT,
                "default": DEFAULT_MAX_RESULTS,
                "description": "Most paths to return, 0-1000; the first ones in sorted order. 0 returns only the count, e.g. 50 for a sample."
            }
        },
        "additionalProperties": false
    })
}

/// `list_files`: lists the files under `path` (default `.`) recursively, sorted by
/// path, filtered by an optional glob `pattern`, at most `max_results` (0–1000,
/// default 200) with the exact total. `.git` and `.iris` are never entered and
/// gitignored files are skipped by default; symlinks are not followed.
#[derive(Debug)]
pub struct ListFilesTool {
    definition: ToolDefinition,
    service: Arc<FileService>,
}

impl ListFilesTool {
    /// The tool on `service`.
    pub fn new(service: Arc<FileService>) -> Self {
        Self {
            definition: definition(
                "list_files",
                super::keys::FILE_LIST,
                DESCRIPTION,
                schema(),
                ToolCapability::Read,
                &["file", "list", "find", "glob", "directory"],
            ),
            service,
        }
    }
}

impl Tool for ListFilesTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn validate_input(&self, raw: Value) -> Result<Value, ToolErrorInfo> {
        ListInput::parse(&raw).map(|i| i.to_value())
    }

    fn run<'a>(&'a self, input: Value, ctx: &'a ToolExecutionContext) -> BoxFuture<'a, ToolResult> {
        run_on_service(
            &self.service,
            ctx,
            ListInput::parse(&input),
            |service, ctx, input, stop| {
                let filter = input.pattern.as_deref().map(NameFilter::new).transpose()?;
                let target = service.resolve_existing(ctx, &input.path)?;
                if !target.abs.is_dir() {
                    return Err(ToolErrorInfo::new(
                        codes::NOT_A_DIRECTORY,
                        format!(
                            "`{}` is a file, not a directory; use read_file to open it",
                            target.rel
                        ),
                    )
                    .with_detail("path", target.rel));
                }
                let k = to_usize(input.max_results);
                let tally = list_files(
                    &target.abs,
                    &target.root,
                    filter.as_ref(),
                    k,
                    service.config(),
                    stop,
                )?;
                Ok(render(&target.rel, input.pattern.as_deref(), k, tally))
            },
        )
    }
}

fn render(
    rel: &str,
    pattern: Option<&str>,
    k: usize,
    tally: crate::walk::Tally<String>,
) -> ToolResult {
    let total = tally.total;
    let errors = tally.errors;
    let files = tally.top.into_sorted_vec();
    let truncated = (files.len() as u64) < total;
    let filter = pattern
        .map(|p| format!(" matching `{p}`"))
        .unwrap_or_default();
    let mut text = String::new();
    if total == 0 {
        text.push_str(&format!("No files{filter} under `{rel}`."));
    } else if k == 0 {
        text.push_str(&format!("{total} files{filter} under `{rel}`."));
    } else {
        text.push_str(&files.join("\n"));
        if truncated {
            text.push_str(&format!(
                "\n[{} of {total} files shown; narrow the pattern or path to see the rest.]",
                files.len()
            ));
        }
    }
    ToolResult::text("", "", text)
        .with_data("path", rel)
        .with_data("files", files)
        .with_data("total", total)
        .with_data("truncated", truncated)
        .with_data("skipped_unreadable", errors)
}
