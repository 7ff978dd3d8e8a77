//! The read-before-edit rule shared by `write_file` and `edit_file`.

use std::ffi::OsStr;
use std::fs::File;
use std::path::Path;

use iris_fs::workspace::WorkspaceDir;
use iris_tools_core::{ToolErrorInfo, codes as core_codes};

use crate::codes;
use crate::read_state::{ContentHash, Observation, ReadState};

fn read_required(rel: &str) -> ToolErrorInfo {
    ToolErrorInfo::new(
        codes::READ_REQUIRED,
        format!(
            "`{rel}` already exists and was not read in this session; call read_file on it, then retry"
        ),
    )
    .with_detail("path", rel)
}

fn stale(rel: &str, observed: &Observation, current: (ContentHash, u64)) -> ToolErrorInfo {
    ToolErrorInfo::new(
        codes::STALE_READ,
        format!("`{rel}` changed on disk since it was last read; call read_file again, then retry"),
    )
    .with_detail("path", rel)
    .with_detail("observed_sha256", observed.content_hash.to_string())
    .with_detail("observed_size", observed.size)
    .with_detail("current_sha256", current.0.to_string())
    .with_detail("current_size", current.1)
}

/// Checks that this session's observation of `path` matches `current` (the bytes
/// just loaded from disk).
pub(super) fn require_fresh_bytes(
    state: &ReadState,
    path: &Path,
    rel: &str,
    current: &[u8],
) -> Result<(), ToolErrorInfo> {
    let observed = state.get(path).ok_or_else(|| read_required(rel))?;
    if observed.matches(current) {
        Ok(())
    } else {
        Err(stale(
            rel,
            &observed,
            (ContentHash::of(current), current.len() as u64),
        ))
    }
}

/// Checks that this session's observation of `path` matches `file`, the target opened
/// through its held parent, streaming it (the caller does not need its content).
pub(super) fn require_fresh_file(
    state: &ReadState,
    path: &Path,
    rel: &str,
    file: File,
) -> Result<(ContentHash, u64), ToolErrorInfo> {
    let observed = state.get(path).ok_or_else(|| read_required(rel))?;
    let current = ContentHash::of_reader(file).map_err(|e| {
        ToolErrorInfo::new(core_codes::IO_ERROR, format!("cannot read `{rel}`: {e}"))
            .with_detail("path", rel)
    })?;
    if observed.size == current.1 && observed.content_hash == current.0 {
        Ok(current)
    } else {
        Err(stale(rel, &observed, current))
    }
}

/// Verifies, right before an atomic rename, that the entry `name` of the held
/// directory `dir` still holds the content that was checked: a change by someone else
/// in between is reported, never overwritten.
pub(super) fn still_unchanged(
    dir: &WorkspaceDir,
    name: &OsStr,
    rel: &str,
    expected: (ContentHash, u64),
) -> Result<(), ToolErrorInfo> {
    let now = dir
        .open_file(Path::new(name))
        .map_err(|e| crate::service::access_reason(&e))
        .and_then(|(file, _)| ContentHash::of_reader(file).map_err(|e| e.to_string()));
    match now {
        Ok(now) if now == expected => Ok(()),
        Ok(now) => Err(ToolErrorInfo::new(
            codes::STALE_READ,
            format!("`{rel}` changed on disk during this write; call read_file again, then retry"),
        )
        .with_detail("path", rel)
        .with_detail("current_sha256", now.0.to_string())),
        Err(e) => Err(ToolErrorInfo::new(
            core_codes::IO_ERROR,
            format!("cannot re-check `{rel}` before replacing it: {e}"),
        )
        .with_detail("path", rel)),
    }
}

/// The error for a file that someone else created while `write_file` was creating it:
/// the write is abandoned, never overwriting that file.
pub(super) fn created_meanwhile(rel: &str) -> ToolErrorInfo {
    ToolErrorInfo::new(
        codes::STALE_READ,
        format!("`{rel}` was created by someone else during this write; read_file it, then retry"),
    )
    .with_detail("path", rel)
}
