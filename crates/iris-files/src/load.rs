//! Loading a file for the tools: size limits, and the text-or-binary decision.

use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::io::Read;
use std::path::Path;

use iris_fs::workspace::WorkspaceDir;
use iris_tools_core::{ToolErrorInfo, codes as core_codes};

use crate::codes;
use crate::service::{Fault, Resolved, access_fault};

/// A file's bytes with the metadata of the handle they were read from.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) bytes: Vec<u8>,
    pub(crate) meta: Metadata,
}

pub(crate) fn io_error(rel: &str, e: &std::io::Error) -> ToolErrorInfo {
    ToolErrorInfo::new(core_codes::IO_ERROR, format!("cannot read `{rel}`: {e}"))
        .with_detail("path", rel)
}

pub(crate) fn not_a_file(rel: &str) -> ToolErrorInfo {
    ToolErrorInfo::new(
        codes::NOT_A_FILE,
        format!("`{rel}` is a directory or special file, not a regular file; use list_files for directories"),
    )
    .with_detail("path", rel)
}

pub(crate) fn too_large(rel: &str, size: u64, limit: u64, hint: &str) -> ToolErrorInfo {
    ToolErrorInfo::new(
        codes::FILE_TOO_LARGE,
        format!("`{rel}` is {size} bytes, over the {limit}-byte limit; {hint}"),
    )
    .with_detail("path", rel)
    .with_detail("size_bytes", size)
    .with_detail("limit_bytes", limit)
}

/// Reads at most `limit` bytes of the regular file `name` of the held directory `dir`
/// (opened without following a symlink, non-blocking and judged by its handle, so a
/// FIFO swapped in cannot block the call); a longer file is `FILE_TOO_LARGE`. The size
/// is judged by what was read, not by an earlier stat, so a file growing meanwhile
/// cannot slip past the limit.
pub(crate) fn load_in(
    dir: &WorkspaceDir,
    name: &OsStr,
    rel: &str,
    limit: u64,
) -> Result<Loaded, Fault> {
    let (file, meta) = dir
        .open_file(Path::new(name))
        .map_err(|e| access_fault(rel, e))?;
    read_limited(file, meta, rel, limit).map_err(Fault::Fail)
}

/// [`load_in`] for a resolved target, walked from the held workspace root.
pub(crate) fn load(target: &Resolved, limit: u64) -> Result<Loaded, Fault> {
    let (file, meta) = target.open_file()?;
    read_limited(file, meta, &target.rel, limit).map_err(Fault::Fail)
}

fn read_limited(
    file: File,
    meta: Metadata,
    rel: &str,
    limit: u64,
) -> Result<Loaded, ToolErrorInfo> {
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len().min(limit)).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(rel, &e))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(
            rel,
            meta.len().max(bytes.len() as u64),
            limit,
            "use grep_search to find the part you need",
        ));
    }
    Ok(Loaded { bytes, meta })
}

/// The bytes as UTF-8 text, or `BINARY_FILE` when they hold a NUL byte or invalid
/// UTF-8 (the same NUL rule `grep_search` uses to skip binary files).
pub(crate) fn as_text<'a>(bytes: &'a [u8], rel: &str) -> Result<&'a str, ToolErrorInfo> {
    let binary = |reason: String| {
        ToolErrorInfo::new(
            codes::BINARY_FILE,
            format!("`{rel}` is a binary file ({reason}); only UTF-8 text and PNG/JPEG/WebP images can be read"),
        )
        .with_detail("path", rel)
        .with_detail("size_bytes", bytes.len() as u64)
    };
    if let Some(at) = memchr::memchr(0, bytes) {
        return Err(binary(format!("NUL byte at offset {at}")));
    }
    std::str::from_utf8(bytes)
        .map_err(|e| binary(format!("invalid UTF-8 at byte {}", e.valid_up_to())))
}
