//! `edit_file` (`file.edit`): replace one unique snippet.

use iris_fs::atomic::{WriteMode, write_atomic_in};
use iris_tools_core::{ToolErrorInfo, ToolExecutionContext, ToolOutput};

use super::freshness::{require_fresh_bytes, still_unchanged};
use super::write::{modified_in, record_written, refuse_protected};
use crate::codes;
use crate::load::{as_text, load_in};
use crate::read_state::ContentHash;
use crate::service::{Fault, FileService, Resolved};
use crate::text::count_lines;

/// How many match positions an ambiguity error lists.
const SHOWN_MATCH_LINES: usize = 10;

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

/// The body of `edit_file`: replaces the one occurrence of `old_string` in
/// `file_path` with `new_string`.
pub(super) fn edit(
    service: &FileService,
    ctx: &ToolExecutionContext,
    file_path: &str,
    old_string: &str,
    new_string: &str,
) -> Result<ToolOutput, ToolErrorInfo> {
    if old_string == new_string {
        return Err(ToolErrorInfo::new(
            codes::EDIT_NO_CHANGE,
            "new_string is identical to old_string; nothing would change",
        ));
    }
    service.with_existing(ctx, file_path, |target| {
        edit_resolved(service, ctx, &target, old_string, new_string)
    })
}

/// [`edit`] on a resolved target: loads it through its held parent directory and writes
/// the result there atomically.
fn edit_resolved(
    service: &FileService,
    ctx: &ToolExecutionContext,
    target: &Resolved,
    old_string: &str,
    new_string: &str,
) -> Result<ToolOutput, Fault> {
    refuse_protected(service, target)?;
    let rel = target.rel.as_str();
    let (dir, name) = target.parent()?;
    let state = service.read_state(ctx);
    let _lock = service.lock_path(&target.abs);
    let loaded = load_in(&dir, &name, rel, service.config().max_text_bytes)?;
    require_fresh_bytes(&state, &target.abs, rel, &loaded.bytes)?;
    let text = as_text(&loaded.bytes, rel)?;

    let found = occurrences(text, old_string);
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
            .with_detail("matches", 0)
            .into());
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
            .with_detail("lines", lines)
            .into());
        }
    };

    let mut updated = String::with_capacity(text.len() - old_string.len() + new_string.len());
    updated.push_str(&text[..at]);
    updated.push_str(new_string);
    updated.push_str(&text[at + old_string.len()..]);
    let checked = (ContentHash::of(&loaded.bytes), loaded.bytes.len() as u64);
    let verify = || still_unchanged(&dir, &name, rel, checked);
    write_atomic_in(
        &dir,
        &name,
        rel,
        updated.as_bytes(),
        WriteMode::Replace { verify: &verify },
    )?;
    let modified = modified_in(&dir, &name);
    let hash = record_written(service, ctx, target, updated.as_bytes(), modified);
    let line = line_of(text, at);
    Ok(ToolOutput::text(format!(
        "Edited `{rel}`: replaced 1 occurrence at line {line}."
    ))
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
