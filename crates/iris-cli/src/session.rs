//! `iris call --session ID`: one-shot calls that share the file tools' read
//! observations, so `iris call read_file …` then `iris call edit_file …` with the same
//! session succeeds (without a session every process starts with nothing read, and an
//! edit is refused: read before you edit).
//!
//! The observations live in `<workspace>/.iris/sessions/<ID>.reads.json` (a JSON list
//! of `[path, observation]`, [`ReadState::snapshot`]): read before the call, put into
//! the call context's extensions as the session's `Arc<ReadState>`, and written back
//! atomically after it (a reader sees the old file or the new one, never a part).
//! Two calls of one session at the same time: the later write wins.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use iris_files::{Observation, ReadState};
use iris_fs::atomic::{WriteMode, write_atomic};
use iris_tools_core::{ToolErrorInfo, codes};

use crate::{Failure, cli_codes};

/// The longest session id, in bytes.
pub(crate) const MAX_ID_LEN: usize = 128;
/// The largest session file read back (bytes): far above any real session's.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Checks a session id: 1 to [`MAX_ID_LEN`] ASCII letters, digits, `_`, `-` and `.`,
/// not starting with `.` — so it names one file in the sessions folder, never a path.
///
/// # Errors
/// `SESSION_ID_INVALID` (exit 2).
pub(crate) fn check_id(id: &str) -> Result<(), Failure> {
    let bad = |why: &str| {
        Failure::new(
            2,
            cli_codes::SESSION_ID_INVALID,
            format!("--session `{}`: {why}", id.escape_debug()),
        )
    };
    if id.is_empty() || id.len() > MAX_ID_LEN {
        return Err(bad(&format!("must be 1 to {MAX_ID_LEN} characters")));
    }
    if let Some(c) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(bad(&format!(
            "`{}` is not allowed: use letters, digits, `_`, `-` and `.` (no path separators)",
            c.escape_debug()
        )));
    }
    if id.starts_with('.') {
        return Err(bad("must not start with `.`"));
    }
    Ok(())
}

/// The session's file: `<workspace>/.iris/sessions/<ID>.reads.json`.
pub(crate) fn file(workspace: &Path, id: &str) -> PathBuf {
    workspace
        .join(".iris")
        .join("sessions")
        .join(format!("{id}.reads.json"))
}

/// The session's observations; empty when the session has no file yet.
///
/// # Errors
/// `SESSION_STATE_INVALID` (exit 3) for a file that cannot be read or is not a
/// snapshot.
pub(crate) fn load(path: &Path) -> Result<Arc<ReadState>, Failure> {
    let invalid = |why: String| {
        Failure::new(
            3,
            cli_codes::SESSION_STATE_INVALID,
            format!("the session file {}: {why}", path.display()),
        )
    };
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Arc::new(ReadState::new()));
        }
        Err(e) => return Err(invalid(e.to_string())),
    };
    if !meta.is_file() {
        return Err(invalid("not a regular file".into()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(invalid(format!("larger than {MAX_FILE_BYTES} bytes")));
    }
    let bytes = std::fs::read(path).map_err(|e| invalid(e.to_string()))?;
    let observations: Vec<(PathBuf, Observation)> = serde_json::from_slice(&bytes)
        .map_err(|e| invalid(format!("not a list of read observations: {e}")))?;
    Ok(Arc::new(ReadState::restore(observations)))
}

/// Writes the session's observations back, atomically.
///
/// # Errors
/// `IO_ERROR` (exit 3) when the folder or the file cannot be written.
pub(crate) fn save(path: &Path, state: &ReadState) -> Result<(), Failure> {
    let failed = |e: ToolErrorInfo| {
        Failure::new(
            3,
            codes::IO_ERROR,
            format!("cannot save the session: {}", e.message),
        )
    };
    if let Some(dir) = path.parent() {
        // Session files live in `<workspace>/.iris/sessions/`: that folder is made with
        // its ignore file first.
        let made = iris_fs::state_dir::create_for(dir).map(|_| ());
        made.and_then(|()| std::fs::create_dir_all(dir))
            .map_err(|e| {
                Failure::new(
                    3,
                    codes::IO_ERROR,
                    format!("cannot create {}: {e}", dir.display()),
                )
            })?;
    }
    let mut json = serde_json::to_vec_pretty(&state.snapshot()).unwrap_or_default();
    json.push(b'\n');
    let rel = path.display().to_string();
    let replace = || write_atomic(path, &rel, &json, WriteMode::Replace { verify: &|| Ok(()) });
    if path.exists() {
        return replace().map_err(failed);
    }
    let exists = || ToolErrorInfo::new(codes::IO_ERROR, "the session file appeared meanwhile");
    match write_atomic(path, &rel, &json, WriteMode::CreateNew { exists: &exists }) {
        Ok(()) => Ok(()),
        // Another call of the session created it meanwhile: this one's is newer.
        Err(_) if path.exists() => replace().map_err(failed),
        Err(e) => Err(failed(e)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_one_file() {
        for ok in ["s1", "task-42", "a.b_c", &"x".repeat(MAX_ID_LEN)] {
            assert!(check_id(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "../x",
            "a/b",
            "a\\b",
            ".hidden",
            "..",
            "sp ace",
            "nul\0",
            "é",
            &"x".repeat(MAX_ID_LEN + 1),
        ] {
            let failure = check_id(bad).unwrap_err();
            assert_eq!(failure.code, cli_codes::SESSION_ID_INVALID, "{bad:?}");
            assert_eq!(failure.exit, 2);
        }
    }

    #[test]
    fn observations_round_trip_through_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(dir.path(), "s1");
        assert!(load(&path).unwrap().is_empty());
        let state = ReadState::new();
        let seen = Observation {
            content_hash: iris_files::ContentHash::of(b"hi"),
            size: 2,
            modified: None,
        };
        state.record(dir.path().join("a.txt"), seen.clone());
        save(&path, &state).unwrap();
        save(&path, &state).unwrap();
        let back = load(&path).unwrap();
        assert_eq!(back.get(&dir.path().join("a.txt")), Some(seen));
        std::fs::write(&path, "{not json").unwrap();
        let failure = load(&path).unwrap_err();
        assert_eq!(failure.code, cli_codes::SESSION_STATE_INVALID);
    }
}
