//! `list_files` (`file.list`): recursive, sorted, gitignore-aware file listing.

use iris_fs::blocking::Stop;
use iris_tools_core::{ToolErrorInfo, ToolExecutionContext, ToolOutput};

use iris_fs::workspace::EntryKind;

use crate::codes;
use crate::service::{Fault, FileService, access_fault};
use crate::walk::{NameFilter, list_files};

/// The body of `list_files`: the first `k` files under `path`, optionally filtered by
/// a glob `pattern`, with the exact total.
pub(super) fn list(
    service: &FileService,
    ctx: &ToolExecutionContext,
    path: &str,
    pattern: Option<&str>,
    k: usize,
    stop: &Stop,
) -> Result<ToolOutput, ToolErrorInfo> {
    let filter = pattern.map(NameFilter::new).transpose()?;
    let target = service.with_existing(ctx, path, |target| {
        // Judged through the held root: the walk below starts only at a directory.
        match target.ws.entry_kind(target.below()) {
            Ok(EntryKind::Dir) => Ok(target),
            // The canonical answer holds no symlink: one now means the tree changed.
            Ok(EntryKind::Symlink) => Err(Fault::Changed),
            Ok(_) => Err(Fault::Fail(
                ToolErrorInfo::new(
                    codes::NOT_A_DIRECTORY,
                    format!(
                        "`{}` is a file, not a directory; use read_file to open it",
                        target.rel
                    ),
                )
                .with_detail("path", target.rel),
            )),
            Err(e) => Err(access_fault(&target.rel, e)),
        }
    })?;
    let tally = list_files(
        &target.abs,
        &target.ws,
        filter.as_ref(),
        k,
        service.config(),
        stop,
    )?;
    Ok(render(&target.rel, pattern, k, tally))
}

fn render(
    rel: &str,
    pattern: Option<&str>,
    k: usize,
    tally: crate::walk::Tally<String>,
) -> ToolOutput {
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
    ToolOutput::text(text)
        .with_data("path", rel)
        .with_data("files", files)
        .with_data("total", total)
        .with_data("truncated", truncated)
        .with_data("skipped_unreadable", errors)
}
