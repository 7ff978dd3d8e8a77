//! `grep_search` (`file.grep`): regex search over file contents, line by line.

use iris_fs::blocking::Stop;
use iris_tools_core::{ToolErrorInfo, ToolExecutionContext, ToolOutput};
use serde_json::{Value, json};

use crate::service::FileService;
use crate::walk::{LineMatch, Tally, compile_regex, grep as search};

/// The body of `grep_search`: the first `k` lines under `path` matching `pattern`,
/// with exact totals.
pub(super) fn grep(
    service: &FileService,
    ctx: &ToolExecutionContext,
    pattern: &str,
    path: &str,
    k: usize,
    stop: &Stop,
) -> Result<ToolOutput, ToolErrorInfo> {
    let matcher = compile_regex(pattern)?;
    let target = service.with_existing(ctx, path, Ok)?;
    let tally = search(&target.abs, &target.ws, &matcher, k, service.config(), stop)?;
    Ok(render(
        &target.rel,
        pattern,
        k,
        service.config().grep_max_line_bytes,
        tally,
    ))
}

fn render(
    rel: &str,
    pattern: &str,
    k: usize,
    max_line: usize,
    tally: Tally<LineMatch>,
) -> ToolOutput {
    let total = tally.total;
    let files_matched = tally.files_matched;
    let files_searched = tally.files;
    let errors = tally.errors;
    let long_lines = tally.long_lines;
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
    if long_lines > 0 {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!(
            "[{long_lines} files not searched: they have a line longer than {max_line} bytes; use read_file to page them.]"
        ));
    }
    let rows: Vec<Value> = matches
        .into_iter()
        .map(|m| json!({"path": m.path, "line": m.line, "text": m.text}))
        .collect();
    ToolOutput::text(text)
        .with_data("path", rel)
        .with_data("matches", rows)
        .with_data("total_matches", total)
        .with_data("files_matched", files_matched)
        .with_data("files_searched", files_searched)
        .with_data("truncated", truncated)
        .with_data("skipped_unreadable", errors)
        .with_data("skipped_long_lines", long_lines)
}
