//! `publish_artifact` (`file.publish`): an independent, immutable copy of a file.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use iris_tools_core::{
    ToolArtifact, ToolErrorInfo, ToolExecutionContext, ToolOutput, codes as core_codes,
};

use crate::load::regular_file;
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

/// Links the finished temporary copy under the first free name.
fn link_unique(temp: &Path, dir: &Path, name: &str) -> Result<PathBuf, ToolErrorInfo> {
    for n in 1..=10_000 {
        let dest = dir.join(candidate(name, n));
        match fs::hard_link(temp, &dest) {
            Ok(()) => return Ok(dest),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(_) => {
                // No hard links on this filesystem: rename after an existence check.
                if dest.symlink_metadata().is_ok() {
                    continue;
                }
                fs::rename(temp, &dest).map_err(|e| io_err("store the published copy", &e))?;
                return Ok(dest);
            }
        }
    }
    Err(ToolErrorInfo::new(
        core_codes::ARTIFACT_ERROR,
        format!("cannot find a free name for `{name}` among published copies"),
    ))
}

/// The body of `publish_artifact`: an independent, read-only copy of `file_path`.
pub(super) fn publish(
    service: &FileService,
    ctx: &ToolExecutionContext,
    file_path: &str,
) -> Result<ToolOutput, ToolErrorInfo> {
    let source = service.resolve_existing(ctx, file_path)?;
    regular_file(&source.abs, &source.rel)?;
    let session = safe_component(&ctx.session_id, "default");
    let dir = source.root.join(PUBLISHED_DIR).join(&session);
    fs::create_dir_all(&dir).map_err(|e| io_err("create the published directory", &e))?;

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
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let temp = dir.join(format!(
        ".publish-{}-{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let cleanup = TempGuard(temp.clone());
    fs::copy(&source.abs, &temp).map_err(|e| io_err(&format!("copy `{}`", source.rel), &e))?;
    let mut perms = fs::metadata(&temp)
        .map_err(|e| io_err("inspect the published copy", &e))?
        .permissions();
    perms.set_readonly(true);
    fs::set_permissions(&temp, perms).map_err(|e| io_err("protect the published copy", &e))?;
    let dest = link_unique(&temp, &dir, &name)?;
    drop(cleanup);

    // Stream the copy for its hash; only the head is needed for the type and preview,
    // so a large file is never loaded whole.
    let (hash, size) =
        ContentHash::of_file(&dest).map_err(|e| io_err("read the published copy", &e))?;
    let head = read_head(&dest).map_err(|e| io_err("read the published copy", &e))?;
    let mime = guess_mime(&dest, &head);
    let preview = text_preview(&head);
    let published_rel = relative_display(&source.root, &dest);
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

/// The first 8 KiB of a file.
fn read_head(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut head = Vec::with_capacity(8192);
    fs::File::open(path)?.take(8192).read_to_end(&mut head)?;
    Ok(head)
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
struct TempGuard(PathBuf);

impl Drop for TempGuard {
    fn drop(&mut self) {
        if self.0.exists() {
            // Best effort: a read-only leftover is removable by its directory's owner.
            let _ = fs::remove_file(&self.0);
        }
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
