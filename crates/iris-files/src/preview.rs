//! What a pending `edit_file` or `write_file` call would change, as a unified diff
//! against the file as it is now: what `iris run`'s approval prompt and `iris serve`'s
//! console show a human before they approve the call.
//!
//! The tool is recognised by **type**, never by name: the registry's entry parses the
//! call's arguments ([`Tool::validate_input`]) and the parsed value's type must be the
//! one this crate's `edit_file` or `write_file` parses into. A host's own tool that
//! happens to be called `edit_file` parses into something else and gets no diff (its
//! arguments are shown as they are).
//!
//! The file is read confined to the workspace ([`WorkspacePolicy::resolve_path`], then
//! opened below the held root without following a symlink out), at most
//! [`MAX_PREVIEW_BYTES`], as UTF-8; a path outside the workspace, a file that is too
//! large, binary or unreadable, or an edit whose `old_string` does not match exactly
//! once has no diff (the call itself will say what is wrong when it runs).

use std::any::TypeId;
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, LazyLock};

use iris_fs::workspace::{WorkspaceDir, WorkspacePolicy};
use iris_tools_core::Tool;
use serde_json::{Value, json};

use crate::service::FileService;

/// The largest file (current content or new content) a diff is computed for, in bytes.
pub const MAX_PREVIEW_BYTES: u64 = 1024 * 1024;

/// Lines of unchanged context around each change.
const CONTEXT_LINES: usize = 3;

/// Which of this crate's writing tools a registry entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Edit,
    Write,
}

/// The parsed-input type of this crate's `edit_file` and `write_file`, learnt once by
/// parsing a sample call with each.
static KINDS: LazyLock<Vec<(TypeId, Kind)>> = LazyLock::new(|| {
    let service = Arc::new(FileService::default());
    let edit: Arc<dyn Tool> = Arc::new(service.edit_file_tool());
    let write: Arc<dyn Tool> = Arc::new(service.write_file_tool());
    let samples = [
        (
            edit,
            json!({"file_path": "a", "old_string": "a", "new_string": "b"}),
            Kind::Edit,
        ),
        (write, json!({"file_path": "a", "content": ""}), Kind::Write),
    ];
    samples
        .into_iter()
        .filter_map(|(tool, sample, kind)| {
            let input = tool.validate_input(sample).ok()?;
            Some((input.parsed_type_id()?, kind))
        })
        .collect()
});

/// The unified diff `arguments` would make when `tool` (the registry's entry for the
/// call) is this crate's `edit_file` or `write_file`, against the file as it is now
/// under `workspace`; `None` for any other tool (recognised by the type its
/// [`Tool::validate_input`] parses into, never by name), and when there is no diff to
/// show: a path outside the workspace, a file over [`MAX_PREVIEW_BYTES`] or not UTF-8,
/// an `old_string` that does not match exactly once.
///
/// The headers name the path as the call gave it (`--- a/PATH`, `+++ b/PATH`; a new
/// file's old side is `/dev/null`). The text is the files' own: a caller that prints
/// it to a terminal or a page escapes it. This reads the disk: call it off the async
/// threads.
///
/// ```
/// use iris_files::{FileService, change_diff};
/// use serde_json::json;
/// use std::sync::Arc;
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("notes.txt"), "one\ntwo\n")?;
/// let edit = Arc::new(FileService::default()).edit_file_tool();
/// let args = json!({"file_path": "notes.txt", "old_string": "two", "new_string": "2"});
/// let diff = change_diff(dir.path(), &edit, &args).unwrap();
/// assert!(diff.contains("-two\n+2\n"), "{diff}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn change_diff(workspace: &Path, tool: &dyn Tool, arguments: &Value) -> Option<String> {
    let kind = kind_of(tool, arguments)?;
    let file_path = arguments.get("file_path")?.as_str()?;
    let current = read_current(workspace, file_path)?;
    let new = match kind {
        Kind::Write => arguments.get("content")?.as_str()?.to_owned(),
        Kind::Edit => {
            let old_string = arguments.get("old_string")?.as_str()?;
            let new_string = arguments.get("new_string")?.as_str()?;
            let text = current.as_deref()?;
            if old_string.is_empty() || old_string == new_string {
                return None;
            }
            // The tool refuses a snippet that is not unique (overlaps count).
            let first = text.find(old_string)?;
            if memchr::memmem::find(&text.as_bytes()[first + 1..], old_string.as_bytes()).is_some()
            {
                return None;
            }
            text.replacen(old_string, new_string, 1)
        }
    };
    if new.len() as u64 > MAX_PREVIEW_BYTES {
        return None;
    }
    let old_header = match current {
        Some(_) => format!("a/{file_path}"),
        None => "/dev/null".to_owned(),
    };
    let old = current.unwrap_or_default();
    let diff = similar::TextDiff::from_lines(&old, &new);
    let text = diff
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .header(&old_header, &format!("b/{file_path}"))
        .to_string();
    Some(text)
}

/// Which writing tool `tool` is, by the type it parses `arguments` into.
fn kind_of(tool: &dyn Tool, arguments: &Value) -> Option<Kind> {
    let parsed = tool
        .validate_input(arguments.clone())
        .ok()?
        .parsed_type_id()?;
    KINDS
        .iter()
        .find(|(id, _)| *id == parsed)
        .map(|(_, kind)| *kind)
}

/// The file's current text: `Some(None)` when it does not exist yet, `None` when it
/// cannot be shown (outside the workspace, not a regular file, too large, not UTF-8).
fn read_current(workspace: &Path, file_path: &str) -> Option<Option<String>> {
    let root = WorkspaceDir::open_root(workspace).ok()?;
    let abs = WorkspacePolicy::new()
        .resolve_path(file_path, root.path())
        .ok()?;
    let rel = root.relative(&abs).ok()?;
    let (file, meta) = match root.open_file(rel) {
        Ok(opened) => opened,
        Err(e) if e.is_not_found() => return Some(None),
        Err(_) => return None,
    };
    if meta.len() > MAX_PREVIEW_BYTES {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_PREVIEW_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > MAX_PREVIEW_BYTES {
        return None;
    }
    String::from_utf8(bytes).ok().map(Some)
}
