//! The workspace's `.iris/` folder, where Iris keeps what calls and runs leave behind:
//! long tool results, published copies, session read observations, run stores. Those
//! hold whole conversations, so whoever first makes the folder also writes
//! `.iris/.gitignore` holding `*`: nothing in it is committed by accident.
//!
//! A folder that already exists is left as it is — a user who keeps a committed
//! `.iris/agent.yaml` made it, and decides what is ignored there.
//!
//! Every place that may create `.iris/` goes through one of the two functions here:
//! [`create_in`] for a held workspace root (the artifact store, publishing), and
//! [`create_at`] for a host-chosen workspace path (run stores, session files, sockets).
//! Both block: call them on the blocking pool.
//!
//! ```
//! use iris_fs::state_dir;
//!
//! let ws = tempfile::tempdir()?;
//! let dir = state_dir::create_at(ws.path())?;
//! assert_eq!(dir, ws.path().join(".iris"));
//! assert_eq!(std::fs::read_to_string(dir.join(".gitignore"))?, "*\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

use crate::atomic::{WriteMode, write_atomic, write_atomic_in};
use crate::workspace::{AccessError, WorkspaceDir};

/// The folder's name, relative to the workspace root.
pub const STATE_DIR: &str = ".iris";

/// The ignore file written into a new state folder.
pub const GITIGNORE: &str = ".gitignore";

/// What that ignore file holds: everything in the folder, itself included.
pub const GITIGNORE_CONTENT: &str = "*\n";

/// Makes `<root>/.iris/` (never following a symlink) and returns it held open; when
/// this call made the folder, it also writes `.iris/.gitignore` ([`GITIGNORE_CONTENT`]).
///
/// # Errors
/// What [`WorkspaceDir::create_dir_all`] reports (a symlinked `.iris` is
/// [`AccessError::Symlink`]), or [`AccessError::Io`] when the ignore file cannot be
/// written.
pub fn create_in(root: &WorkspaceDir) -> Result<WorkspaceDir, AccessError> {
    let name = OsStr::new(STATE_DIR);
    let is_new = match root.kind_of(name) {
        Ok(_) => false,
        Err(e) if e.kind() == io::ErrorKind::NotFound => true,
        Err(source) => {
            return Err(AccessError::Io {
                path: root.path().join(STATE_DIR),
                source,
            });
        }
    };
    let dir = root.create_dir_all(Path::new(STATE_DIR))?;
    if is_new {
        let rel = format!("{STATE_DIR}/{GITIGNORE}");
        write_atomic_in(
            &dir,
            OsStr::new(GITIGNORE),
            &rel,
            GITIGNORE_CONTENT.as_bytes(),
            create_new(),
        )
        .or_else(ignore_exists)
        .map_err(|info| AccessError::Io {
            path: dir.path().join(GITIGNORE),
            source: io::Error::other(info.message),
        })?;
    }
    Ok(dir)
}

/// Makes `<workspace>/.iris/` for a host-chosen workspace path (creating the workspace
/// too when it is missing) and returns the folder's path; when this call made the
/// folder, it also writes `.iris/.gitignore` ([`GITIGNORE_CONTENT`]).
///
/// # Errors
/// The I/O error of creating a directory or writing the ignore file.
pub fn create_at(workspace: &Path) -> io::Result<PathBuf> {
    let dir = workspace.join(STATE_DIR);
    match std::fs::symlink_metadata(&dir) {
        Ok(_) => return Ok(dir),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::fs::create_dir_all(workspace)?;
    match std::fs::create_dir(&dir) {
        Ok(()) => {}
        // Made by someone else meanwhile: theirs to finish.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(dir),
        Err(e) => return Err(e),
    }
    let rel = format!("{STATE_DIR}/{GITIGNORE}");
    write_atomic(
        &dir.join(GITIGNORE),
        &rel,
        GITIGNORE_CONTENT.as_bytes(),
        create_new(),
    )
    .or_else(ignore_exists)
    .map_err(|info| io::Error::other(info.message))?;
    Ok(dir)
}

/// Makes the state folder that `path` lies in, if any: when some ancestor of `path`
/// (or `path` itself) is named [`STATE_DIR`], [`create_at`] its parent, so a host that
/// creates `<workspace>/.iris/runs/…` with `create_dir_all` afterwards still gets the
/// ignore file. A path outside any `.iris/` folder is left alone. Returns whether a
/// state folder was found.
///
/// ```
/// use iris_fs::state_dir;
///
/// let ws = tempfile::tempdir()?;
/// assert!(state_dir::create_for(&ws.path().join(".iris/sessions/a.json"))?);
/// assert!(ws.path().join(".iris/.gitignore").is_file());
/// assert!(!state_dir::create_for(&ws.path().join("other/runs.db"))?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// What [`create_at`] reports.
pub fn create_for(path: &Path) -> io::Result<bool> {
    for ancestor in path.ancestors() {
        if ancestor.file_name() == Some(OsStr::new(STATE_DIR))
            && let Some(workspace) = ancestor.parent()
        {
            create_at(workspace)?;
            return Ok(true);
        }
    }
    Ok(false)
}

/// The error code a concurrent creator's ignore file produces (see [`create_new`]).
const EXISTS: &str = "STATE_IGNORE_EXISTS";

fn create_new() -> WriteMode<'static> {
    WriteMode::CreateNew { exists: &exists }
}

fn exists() -> iris_tools_core::ToolErrorInfo {
    iris_tools_core::ToolErrorInfo::new(EXISTS, "exists")
}

/// Someone else wrote the ignore file first: the folder is ignored either way.
fn ignore_exists(
    info: iris_tools_core::ToolErrorInfo,
) -> Result<(), iris_tools_core::ToolErrorInfo> {
    if info.code == EXISTS {
        Ok(())
    } else {
        Err(info)
    }
}
