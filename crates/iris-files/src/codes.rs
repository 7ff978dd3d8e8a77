//! Stable error codes of the file tools.
//!
//! These extend [`iris_tools_core::codes`] (which the file tools also use for
//! `INVALID_INPUT`, `PATH_OUTSIDE_WORKSPACE`, `INVALID_PATH`, `IO_ERROR` and
//! `CANCELLED`). Codes are part of the public contract: models, hosts and tests match on
//! them, so they are never renamed.

/// The path is inside the workspace but nothing exists there.
pub const FILE_NOT_FOUND: &str = "FILE_NOT_FOUND";
/// The path names a directory (or another non-regular file) where a file is needed.
pub const NOT_A_FILE: &str = "NOT_A_FILE";
/// The path names a file where a directory is needed.
pub const NOT_A_DIRECTORY: &str = "NOT_A_DIRECTORY";
/// The file is not UTF-8 text (it contains NUL bytes or invalid UTF-8) and not a
/// supported image.
pub const BINARY_FILE: &str = "BINARY_FILE";
/// The file is larger than the configured limit for this operation.
pub const FILE_TOO_LARGE: &str = "FILE_TOO_LARGE";
/// `offset` or `column` points past the end of the file or line.
pub const READ_OUT_OF_RANGE: &str = "READ_OUT_OF_RANGE";
/// Editing or overwriting an existing file that was not read in this session.
pub const READ_REQUIRED: &str = "READ_REQUIRED";
/// The file changed on disk since this session last read it.
pub const STALE_READ: &str = "STALE_READ";
/// `old_string` does not occur in the file.
pub const EDIT_NO_MATCH: &str = "EDIT_NO_MATCH";
/// `old_string` occurs more than once in the file.
pub const EDIT_AMBIGUOUS: &str = "EDIT_AMBIGUOUS";
/// `new_string` equals `old_string`, so the edit would change nothing.
pub const EDIT_NO_CHANGE: &str = "EDIT_NO_CHANGE";
/// The `grep_search` pattern is not a valid Rust regex.
pub const INVALID_REGEX: &str = "INVALID_REGEX";
/// The `list_files` pattern is not a valid glob.
pub const INVALID_GLOB: &str = "INVALID_GLOB";
/// The path is protected: published copies under `.iris/published/` are immutable, and
/// the workspace policy's protected paths (`.iris`, `.git`, the agent YAML and the files
/// it references) may be read but not changed.
pub const PROTECTED_PATH: &str = "PROTECTED_PATH";
