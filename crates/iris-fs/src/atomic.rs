//! Atomic file writes, the one helper every workspace write uses (the file tools, the
//! artifact store, publishing): a temporary file in the same directory, then one
//! rename.
//!
//! A reader opening the path sees either the old file or the new one, never a
//! partial write. Replacing keeps the old file's permissions (and, where allowed,
//! its owner); creating never overwrites a file that appeared in the meantime. The
//! functions block: call them inside [`crate::blocking::run_blocking`].
//!
//! [`write_atomic_in`] works relative to a held directory handle (a
//! [`WorkspaceDir`]): the temporary file is created with `openat(O_CREAT | O_EXCL |
//! O_NOFOLLOW)` in that directory and renamed or linked into place with
//! `renameat` / `linkat` relative to the same handle, so a directory swapped for a
//! symlink after the target was resolved cannot redirect the write. Workspace writes
//! use it; [`write_atomic`] is the same for a host-chosen path.

use std::ffi::{OsStr, OsString};
use std::io::{ErrorKind, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use iris_tools_core::{ToolErrorInfo, codes as core_codes};

use crate::workspace::WorkspaceDir;

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

/// Removes the temporary file unless it was put in place.
struct TempFile<'d> {
    dir: &'d WorkspaceDir,
    name: OsString,
    armed: bool,
}

impl Drop for TempFile<'_> {
    fn drop(&mut self) {
        if self.armed {
            // Best effort: a leftover temporary file is harmless and hidden.
            let _ = self.dir.remove_file(&self.name);
        }
    }
}

fn io_error(rel: &str, what: &str, e: &std::io::Error) -> ToolErrorInfo {
    ToolErrorInfo::new(core_codes::IO_ERROR, format!("cannot {what} `{rel}`: {e}"))
        .with_detail("path", rel)
}

/// Creates a fresh temporary file for the entry `name` of `dir`, in `dir`.
fn create_temp<'d>(
    dir: &'d WorkspaceDir,
    name: &OsStr,
    rel: &str,
) -> Result<(TempFile<'d>, std::fs::File), ToolErrorInfo> {
    // Keep the temporary name well below the usual 255-byte name limit: at most 64
    // bytes of the name, cut on a character boundary (64 characters of a non-Latin
    // name would be up to 256 bytes).
    let lossy = name.to_string_lossy();
    let mut end = lossy.len().min(64);
    while !lossy.is_char_boundary(end) {
        end -= 1;
    }
    let stem = &lossy[..end];
    for _ in 0..16 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = OsString::from(format!(".{stem}.iris-{}-{n}.tmp", std::process::id()));
        // O_EXCL never follows or reuses an existing name, and the default mode (0666
        // minus the umask) is what a new file should get.
        match dir.create_new(&temp) {
            Ok(file) => {
                let guard = TempFile {
                    dir,
                    name: temp,
                    armed: true,
                };
                return Ok((guard, file));
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_error(rel, "create a temporary file for", &e)),
        }
    }
    Err(ToolErrorInfo::new(
        core_codes::IO_ERROR,
        format!("cannot create a temporary file for `{rel}`: names are taken"),
    ))
}

/// Writes `content` to the entry `name` of the held directory `dir` atomically. `rel`
/// names the target in error messages (the path as the model wrote it, never a host
/// path the model did not give).
///
/// ```
/// # #[cfg(unix)] {
/// use std::ffi::OsStr;
/// use iris_fs::atomic::{WriteMode, write_atomic_in};
/// use iris_fs::workspace::WorkspaceDir;
///
/// let ws = tempfile::tempdir()?;
/// let root = WorkspaceDir::open_root(ws.path())?;
/// let notes = root.create_dir_all("notes".as_ref())?;
/// let exists = || iris_tools_core::ToolErrorInfo::new("EXISTS", "taken");
/// write_atomic_in(&notes, OsStr::new("a.md"), "notes/a.md", b"hi", WriteMode::CreateNew { exists: &exists })?;
/// assert_eq!(std::fs::read_to_string(ws.path().join("notes/a.md"))?, "hi");
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_atomic_in(
    dir: &WorkspaceDir,
    name: &OsStr,
    rel: &str,
    content: &[u8],
    mode: WriteMode<'_>,
) -> Result<(), ToolErrorInfo> {
    let (mut temp, mut file) = create_temp(dir, name, rel)?;
    file.write_all(content)
        .and_then(|()| file.sync_all())
        .map_err(|e| io_error(rel, "write", &e))?;
    match mode {
        WriteMode::Replace { verify } => {
            dir.copy_attributes(name, &file)
                .map_err(|e| io_error(rel, "keep the permissions of", &e))?;
            drop(file);
            verify()?;
            dir.rename(&temp.name, name)
                .map_err(|e| io_error(rel, "replace", &e))?;
            temp.armed = false;
        }
        WriteMode::CreateNew { exists } => {
            drop(file);
            // A hard link (or a no-replace rename) fails if the name exists, so a file
            // created concurrently is never overwritten; the name appears with the
            // full content at once.
            match dir.place_new(&temp.name, name) {
                Ok(()) => temp.armed = false,
                Err(e) if e.kind() == ErrorKind::AlreadyExists => return Err(exists()),
                Err(e) => return Err(io_error(rel, "create", &e)),
            }
        }
    }
    sync_dir(dir, rel)
}

/// Makes the renames and links in `dir` durable (`fsync` of the directory, where the
/// platform can sync one) after a write of `rel` put a new name there.
///
/// A failure is the write's failure (`IO_ERROR` naming `rel`): the content is in place,
/// but its name may not survive a crash, so the caller must not report the write as
/// done.
///
/// # Errors
/// `IO_ERROR` when the directory cannot be synced.
pub fn sync_dir(dir: &WorkspaceDir, rel: &str) -> Result<(), ToolErrorInfo> {
    #[cfg(test)]
    if tests::FAIL_SYNC.with(std::cell::Cell::get) {
        return Err(io_error(
            rel,
            "make durable the directory of",
            &std::io::Error::other("injected fault"),
        ));
    }
    dir.sync()
        .map_err(|e| io_error(rel, "make durable the directory of", &e))
}

/// Writes `content` to `target` atomically, for a host-chosen path: its parent
/// directory is opened as given (symlinks in it followed), then [`write_atomic_in`]
/// does the rest relative to that handle. Workspace paths must use
/// [`write_atomic_in`] with a directory from [`WorkspaceDir::open_root`].
pub fn write_atomic(
    target: &Path,
    rel: &str,
    content: &[u8],
    mode: WriteMode<'_>,
) -> Result<(), ToolErrorInfo> {
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = target.file_name().ok_or_else(|| {
        ToolErrorInfo::new(
            core_codes::INVALID_PATH,
            format!("`{rel}` does not name a file"),
        )
        .with_detail("path", rel)
    })?;
    let dir = WorkspaceDir::open_trusted(parent)
        .map_err(|e| io_error(rel, "open the directory of", &e))?;
    write_atomic_in(&dir, name, rel, content, mode)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    thread_local! {
        /// Makes [`sync_dir`] fail on this thread: a directory `fsync` error cannot be
        /// provoked on an ordinary file system.
        pub(super) static FAIL_SYNC: Cell<bool> = const { Cell::new(false) };
    }

    #[test]
    fn a_failed_directory_sync_fails_the_write() {
        let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = WorkspaceDir::open_root(ws.path()).unwrap_or_else(|e| panic!("{e}"));
        let exists = || ToolErrorInfo::new("EXISTS", "taken");
        FAIL_SYNC.with(|f| f.set(true));
        let err = write_atomic_in(
            &root,
            OsStr::new("a.txt"),
            "a.txt",
            b"hi",
            WriteMode::CreateNew { exists: &exists },
        );
        FAIL_SYNC.with(|f| f.set(false));
        let err = err
            .err()
            .unwrap_or_else(|| panic!("the write reported success"));
        assert_eq!(err.code, core_codes::IO_ERROR);
        assert_eq!(
            err.message,
            "cannot make durable the directory of `a.txt`: injected fault"
        );
        assert_eq!(err.details["path"], "a.txt");
        let ok = write_atomic_in(
            &root,
            OsStr::new("b.txt"),
            "b.txt",
            b"hi",
            WriteMode::CreateNew { exists: &exists },
        );
        assert!(ok.is_ok(), "{ok:?}");
    }
}
