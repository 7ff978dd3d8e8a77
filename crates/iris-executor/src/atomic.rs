//! Atomic file writes, the one helper every workspace write uses (the file tools, the
//! artifact store, publishing): a temporary file in the same directory, then one
//! rename.
//!
//! A reader opening the path sees either the old file or the new one, never a
//! partial write. Replacing keeps the old file's permissions (and, where allowed,
//! its owner); creating never overwrites a file that appeared in the meantime. The
//! functions block: call them inside [`crate::blocking::run_blocking`].

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use iris_tools_core::{ToolErrorInfo, codes as core_codes};

/// How the target is treated.
#[allow(missing_debug_implementations)] // Holds callbacks; nothing to show.
pub enum WriteMode<'a> {
    /// Replace an existing file. `verify` runs once the new content is durable and
    /// right before the rename; an error there (a concurrent change) aborts the write
    /// and leaves the target untouched.
    Replace {
        /// Checks, right before the rename, that the target did not change meanwhile.
        verify: &'a dyn Fn() -> Result<(), ToolErrorInfo>,
    },
    /// Create a file that must not exist yet; `exists` makes the error for a file that
    /// appeared during the write (the caller knows what the model should do then).
    CreateNew {
        /// The error for a target that appeared during the write.
        exists: &'a dyn Fn() -> ToolErrorInfo,
    },
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Removes the temporary file unless it was renamed into place.
struct TempFile {
    path: PathBuf,
    armed: bool,
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if self.armed {
            // Best effort: a leftover temporary file is harmless and hidden.
            let _ = fs::remove_file(&self.path);
        }
    }
}

fn io_error(rel: &str, what: &str, e: &std::io::Error) -> ToolErrorInfo {
    ToolErrorInfo::new(core_codes::IO_ERROR, format!("cannot {what} `{rel}`: {e}"))
        .with_detail("path", rel)
}

/// Creates a fresh temporary file next to `target`.
fn create_temp(target: &Path, rel: &str) -> Result<(TempFile, File), ToolErrorInfo> {
    let dir = target.parent().unwrap_or_else(|| Path::new("."));
    // Keep the temporary name well below the usual 255-byte name limit.
    let name: String = target
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned())
        .chars()
        .take(64)
        .collect();
    for _ in 0..16 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(".{name}.iris-{}-{n}.tmp", std::process::id()));
        // create_new never follows or reuses an existing name, and the default mode
        // (0666 minus the umask) is what a new file should get.
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => return Ok((TempFile { path, armed: true }, file)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_error(rel, "create a temporary file for", &e)),
        }
    }
    Err(ToolErrorInfo::new(
        core_codes::IO_ERROR,
        format!("cannot create a temporary file for `{rel}`: names are taken"),
    ))
}

/// Writes `content` to `target` atomically. `rel` names the target in error messages
/// (the path as the model wrote it, never a host path the model did not give).
pub fn write_atomic(
    target: &Path,
    rel: &str,
    content: &[u8],
    mode: WriteMode<'_>,
) -> Result<(), ToolErrorInfo> {
    let (mut temp, mut file) = create_temp(target, rel)?;
    file.write_all(content)
        .and_then(|()| file.sync_all())
        .map_err(|e| io_error(rel, "write", &e))?;
    drop(file);
    match mode {
        WriteMode::Replace { verify } => {
            if let Ok(meta) = fs::metadata(target) {
                fs::set_permissions(&temp.path, meta.permissions())
                    .map_err(|e| io_error(rel, "keep the permissions of", &e))?;
                keep_owner(&temp.path, &meta);
            }
            verify()?;
            fs::rename(&temp.path, target).map_err(|e| io_error(rel, "replace", &e))?;
            temp.armed = false;
        }
        WriteMode::CreateNew { exists } => {
            // A hard link fails if the name exists, so a file created concurrently
            // is never overwritten; the link appears with the full content at once.
            match fs::hard_link(&temp.path, target) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    return Err(exists());
                }
                // Filesystems without hard links: fall back to a rename after a
                // last existence check.
                Err(_) => {
                    if target.symlink_metadata().is_ok() {
                        return Err(exists());
                    }
                    fs::rename(&temp.path, target).map_err(|e| io_error(rel, "create", &e))?;
                    temp.armed = false;
                }
            }
        }
    }
    sync_parent(target);
    Ok(())
}

#[cfg(unix)]
fn keep_owner(path: &Path, meta: &fs::Metadata) {
    use std::os::unix::fs::MetadataExt;
    // Only a privileged process may give a file away; otherwise the new file keeps
    // the writer's owner, which is the best that can be done.
    let _ = std::os::unix::fs::chown(path, Some(meta.uid()), Some(meta.gid()));
}

#[cfg(not(unix))]
fn keep_owner(_path: &Path, _meta: &fs::Metadata) {}

/// Makes the rename durable where the platform allows syncing a directory.
fn sync_parent(target: &Path) {
    if let Some(dir) = target.parent()
        && let Ok(d) = File::open(dir)
    {
        let _ = d.sync_all();
    }
}
