//! `publish_artifact` (`file.publish`): an independent, immutable copy of a file.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use iris_fs::workspace::{AccessError, WorkspaceDir};
use iris_tools_core::{
    ToolArtifact, ToolErrorInfo, ToolExecutionContext, ToolOutput, codes as core_codes,
};

use crate::load::too_large;
use crate::media::guess_mime;
use crate::read_state::ContentHash;
use crate::service::{FileService, PUBLISHED_DIR, relative_display};

/// Characters of a text file kept as the artifact preview.
const PREVIEW_CHARS: usize = 500;

/// A directory or file-name component made safe: characters outside
/// `[A-Za-z0-9._-]` become `_`, and `.`/`..`/empty become `fallback`.
fn safe_component(raw: &str, fallback: &str) -> String {
    // Bounded so that `<call>-<name>` stays below the usual 255-byte name limit.
    let cleaned: String = raw
        .chars()
        .take(100)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() || cleaned == "." || cleaned == ".." {
        fallback.to_owned()
    } else {
        cleaned
    }
}

fn io_err(what: &str, e: &std::io::Error) -> ToolErrorInfo {
    ToolErrorInfo::new(core_codes::ARTIFACT_ERROR, format!("cannot {what}: {e}"))
}

/// `name`, then `stem-2.ext`, `stem-3.ext`, …
fn candidate(name: &str, n: usize) -> String {
    if n == 1 {
        return name.to_owned();
    }
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => format!("{stem}-{n}.{ext}"),
        _ => format!("{name}-{n}"),
    }
}

/// Gives the finished temporary copy the first free name in the held store directory
/// (a hard link, or a rename that never replaces).
fn link_unique(dir: &WorkspaceDir, temp: &OsStr, name: &str) -> Result<String, ToolErrorInfo> {
    for n in 1..=10_000 {
        let dest = candidate(name, n);
        match dir.place_new(temp, OsStr::new(&dest)) {
            Ok(()) => return Ok(dest),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_err("store the published copy", &e)),
        }
    }
    Err(ToolErrorInfo::new(
        core_codes::ARTIFACT_ERROR,
        format!("cannot find a free name for `{name}` among published copies"),
    ))
}

/// The error for a store directory that cannot be used: a symlinked `.iris` (or any
/// symlinked component) is refused, never followed.
fn store_error(root: &Path, err: &AccessError) -> ToolErrorInfo {
    let shown = relative_display(root, err.path());
    let message = match err {
        AccessError::Symlink { .. } => format!(
            "cannot store the published copy: `{shown}` in the workspace is a symbolic link, and published copies are only written to real directories under `{PUBLISHED_DIR}`"
        ),
        AccessError::NotADirectory { .. } => format!(
            "cannot store the published copy: `{shown}` in the workspace is not a directory"
        ),
        other => format!(
            "cannot create the published directory `{shown}`: {}",
            crate::service::access_reason(other)
        ),
    };
    ToolErrorInfo::new(core_codes::ARTIFACT_ERROR, message).with_detail("path", shown)
}

/// The body of `publish_artifact`: an independent, read-only copy of `file_path`, of
/// at most `max_publish_bytes` (apparent size; holes are kept where the platform
/// reports them, so a sparse file is not expanded).
///
/// The source is opened through the held workspace root (non-blocking, judged by its
/// handle), and `.iris/published/<session>/` is walked and created from that root
/// without following a symlink; the copy is written in the held store directory.
pub(super) fn publish(
    service: &FileService,
    ctx: &ToolExecutionContext,
    file_path: &str,
) -> Result<ToolOutput, ToolErrorInfo> {
    let cap = service.config().max_publish_bytes;
    let (source, mut input, meta) = service.with_existing(ctx, file_path, |source| {
        let (input, meta) = source.open_file()?;
        Ok((source, input, meta))
    })?;
    let over_cap = |size: u64, hint: &str| too_large(&source.rel, size, cap, hint);
    if meta.len() > cap {
        return Err(over_cap(
            meta.len(),
            "only files up to the publish limit can be published",
        ));
    }
    let session = safe_component(&ctx.session_id, "default");
    // Publishing may be what first makes `.iris/`: the one helper that makes it also
    // keeps it out of version control.
    iris_fs::state_dir::create_in(&source.ws).map_err(|e| store_error(&source.root, &e))?;
    let dir = source
        .ws
        .create_dir_all(&Path::new(PUBLISHED_DIR).join(&session))
        .map_err(|e| store_error(&source.root, &e))?;

    let file_name = source
        .abs
        .file_name()
        .map_or_else(|| "file".to_owned(), |n| n.to_string_lossy().into_owned());
    let name = if ctx.call_id.is_empty() {
        safe_component(&file_name, "file")
    } else {
        format!(
            "{}-{}",
            safe_component(&ctx.call_id, "call"),
            safe_component(&file_name, "file")
        )
    };
    // Copy into a private temporary name first, so the published name appears only
    // with its full content.
    let (temp, mut copy) = create_temp(&dir)?;
    let size = match copy_capped(&mut input, &mut copy, cap) {
        Ok(Some(size)) => size,
        Ok(None) => {
            let now = input.metadata().map_or(0, |m| m.len());
            return Err(over_cap(
                now.max(cap.saturating_add(1)),
                "the file grew past the publish limit while it was copied",
            ));
        }
        Err(e) => return Err(io_err(&format!("copy `{}`", source.rel), &e)),
    };
    let mut perms = copy
        .metadata()
        .map_err(|e| io_err("inspect the published copy", &e))?
        .permissions();
    perms.set_readonly(true);
    copy.set_permissions(perms)
        .map_err(|e| io_err("protect the published copy", &e))?;
    copy.sync_all()
        .map_err(|e| io_err("store the published copy", &e))?;

    // Hash the copy and read its head through the handle it was written with; only the
    // head is needed for the type and preview, so a large file is never loaded whole.
    let reread = |e: std::io::Error| io_err("read the published copy", &e);
    copy.seek(SeekFrom::Start(0)).map_err(reread)?;
    let (hash, _) = ContentHash::of_reader(&mut copy).map_err(reread)?;
    copy.seek(SeekFrom::Start(0)).map_err(reread)?;
    let mut head = Vec::with_capacity(HEAD_BYTES);
    (&mut copy)
        .take(HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(reread)?;
    drop(copy);
    let final_name = link_unique(&dir, &temp.name, &name)?;
    drop(temp);
    let dest = dir.path().join(&final_name);
    let published_rel = relative_display(&source.root, &dest);
    // A copy whose name may not survive a crash is not published.
    iris_fs::atomic::sync_dir(&dir, &published_rel)?;

    let mime = guess_mime(&dest, &head);
    let preview = text_preview(&head);
    let mut result = ToolOutput::text(format!(
        "Published `{}` as `{published_rel}` ({size} bytes, {mime}).",
        source.rel
    ))
    .with_data("source_path", source.rel.clone())
    .with_data("published_path", published_rel)
    .with_data("size_bytes", size)
    .with_data("mime_type", mime)
    .with_data("sha256", hash.to_string());
    result.artifact = Some(Box::new(ToolArtifact {
        path: dest,
        mime_type: mime.to_owned(),
        size_bytes: size,
        preview,
        text_path: None,
    }));
    Ok(result)
}

/// Bytes of the copy read for the MIME type and the preview.
const HEAD_BYTES: usize = 8192;

/// Creates the temporary copy in the held store directory (`O_CREAT | O_EXCL`).
fn create_temp(dir: &WorkspaceDir) -> Result<(TempGuard<'_>, File), ToolErrorInfo> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    for _ in 0..16 {
        let name = OsString::from(format!(
            ".publish-{}-{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        match dir.create_new(&name) {
            Ok(file) => return Ok((TempGuard { dir, name }, file)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_err("create the published copy", &e)),
        }
    }
    Err(ToolErrorInfo::new(
        core_codes::ARTIFACT_ERROR,
        "cannot create the published copy: temporary names are taken",
    ))
}

/// Copies `src` to the empty file `dst`, at most `cap` bytes of apparent size:
/// `Ok(Some(size))`, or `Ok(None)` when `src` holds more than `cap` bytes (nothing
/// past the cap is copied). Where the platform reports holes (`SEEK_DATA` /
/// `SEEK_HOLE`), only the data runs are copied and the holes stay holes.
fn copy_capped(src: &mut File, dst: &mut File, cap: u64) -> std::io::Result<Option<u64>> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if let Some(outcome) = copy_sparse(src, dst, cap)? {
        return Ok(outcome);
    }
    src.seek(SeekFrom::Start(0))?;
    dst.seek(SeekFrom::Start(0))?;
    dst.set_len(0)?;
    let copied = std::io::copy(&mut src.take(cap.saturating_add(1)), dst)?;
    Ok((copied <= cap).then_some(copied))
}

/// The hole-keeping copy; `Ok(None)` when the filesystem cannot report holes (the
/// caller then copies densely, still capped).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn copy_sparse(src: &mut File, dst: &mut File, cap: u64) -> std::io::Result<Option<Option<u64>>> {
    use rustix::fs::{SeekFrom as RawSeek, seek};
    use rustix::io::Errno;

    let mut end = 0u64;
    loop {
        let data = match seek(&*src, RawSeek::Data(end)) {
            Ok(data) => data,
            // No data at or after `end`: the rest is a hole up to the end of the file.
            Err(Errno::NXIO) => break,
            Err(Errno::INVAL | Errno::OPNOTSUPP) if end == 0 => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let hole = seek(&*src, RawSeek::Hole(data))?;
        if hole > cap {
            return Ok(Some(None));
        }
        src.seek(SeekFrom::Start(data))?;
        dst.seek(SeekFrom::Start(data))?;
        let run = hole - data;
        let copied = std::io::copy(&mut (&mut *src).take(run), dst)?;
        end = data + copied;
        if copied < run {
            // The file shrank meanwhile: what was read is what is published.
            break;
        }
    }
    let size = src.metadata()?.len();
    if size > cap {
        return Ok(Some(None));
    }
    // A trailing hole stays a hole: extending the length allocates nothing.
    let size = size.max(end);
    dst.set_len(size)?;
    Ok(Some(Some(size)))
}

/// The first characters of a UTF-8 text head (ignoring a sequence cut at its end),
/// or nothing for binary content.
fn text_preview(head: &[u8]) -> String {
    if head.contains(&0) {
        return String::new();
    }
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return String::new(),
    };
    text.chars().take(PREVIEW_CHARS).collect()
}

/// Removes the temporary copy (after linking, or on failure).
struct TempGuard<'d> {
    dir: &'d WorkspaceDir,
    name: OsString,
}

impl Drop for TempGuard<'_> {
    fn drop(&mut self) {
        // Best effort (after a link it is already gone): a read-only leftover is
        // removable by its directory's owner.
        let _ = self.dir.remove_file(&self.name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_component_table() {
        for (raw, expect) in [
            ("s-1", "s-1"),
            ("../x", ".._x"),
            ("..", "default"),
            ("", "default"),
            ("a/b c", "a_b_c"),
            ("会话", "__"),
        ] {
            assert_eq!(safe_component(raw, "default"), expect, "{raw:?}");
        }
    }

    #[test]
    fn text_preview_table() {
        for (head, expect) in [
            (&b"hello"[..], "hello"),
            (&b"caf\xc3"[..], "caf"),
            (&b"bin\0ary"[..], ""),
            (&b"\xff\xfe"[..], ""),
        ] {
            assert_eq!(text_preview(head), expect, "{head:?}");
        }
    }

    #[test]
    fn candidate_table() {
        for (name, n, expect) in [
            ("r.md", 1, "r.md"),
            ("r.md", 2, "r-2.md"),
            ("r", 3, "r-3"),
            (".env", 2, ".env-2"),
        ] {
            assert_eq!(candidate(name, n), expect);
        }
    }
}
