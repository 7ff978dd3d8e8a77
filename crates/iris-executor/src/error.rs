//! [`Error`]: what the executor's file-backed parts (artifacts, workspace paths) fail with.

use std::path::PathBuf;

use iris_tools_core::{ToolErrorInfo, codes};

use iris_fs::workspace::{AccessError, PathError};

/// Errors of the artifact store and the workspace policy.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A path escaped the workspace or could not be resolved.
    #[error(transparent)]
    Path(#[from] PathError),
    /// Reading or writing a file failed.
    #[error("I/O error at {path}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// An atomic write failed (see [`iris_fs::atomic::write_atomic`]).
    #[error("{}", .0.message)]
    Write(ToolErrorInfo),
    /// JSON serialization failed.
    #[error("JSON error")]
    Json(#[from] serde_json::Error),
}

impl Error {
    /// The stable error code for this error.
    pub fn code(&self) -> &str {
        match self {
            Error::Path(e) => e.code(),
            Error::Io { .. } => codes::IO_ERROR,
            Error::Write(info) => &info.code,
            Error::Json(_) => codes::INVALID_INPUT,
        }
    }

    /// The structured form a tool output carries: the whole error chain as message.
    pub fn to_info(&self) -> ToolErrorInfo {
        ToolErrorInfo::from_error(self.code(), self)
    }

    /// The `ARTIFACT_ERROR` an output carries when saving its body failed: the whole
    /// error chain as message, the underlying code and, for I/O failures, the path in
    /// `details`.
    ///
    /// ```
    /// use iris_executor::Error;
    ///
    /// let err = Error::Io {
    ///     path: "/ro/out.txt".into(),
    ///     source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
    /// };
    /// let info = err.to_artifact_info();
    /// assert_eq!(info.code, "ARTIFACT_ERROR");
    /// assert_eq!(info.details["cause_code"], "IO_ERROR");
    /// assert_eq!(info.details["path"], "/ro/out.txt");
    /// ```
    pub fn to_artifact_info(&self) -> ToolErrorInfo {
        let info = ToolErrorInfo::new(codes::ARTIFACT_ERROR, self.to_info().message)
            .with_detail("cause_code", self.code().to_owned());
        match self {
            Error::Io { path, .. } => info.with_detail("path", path.display().to_string()),
            Error::Write(w) => match w.details.get("path") {
                Some(path) => info.with_detail("path", path.clone()),
                None => info,
            },
            _ => info,
        }
    }
}

impl From<AccessError> for Error {
    /// An I/O failure stays [`Error::Io`]; a path the held-handle walk refused (a
    /// symlink, a non-directory, a non-file) is [`PathError::Invalid`] (`INVALID_PATH`).
    fn from(err: AccessError) -> Self {
        match err {
            AccessError::Io { path, source } => Error::Io { path, source },
            other => Error::Path(PathError::Invalid {
                path: other.path().to_path_buf(),
                reason: other.reason(),
            }),
        }
    }
}

/// Shorthand result type for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
