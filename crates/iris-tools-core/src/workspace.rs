//! [`WorkspacePolicy`]: resolves paths and confines them to the workspace.

use std::path::{Path, PathBuf};

use crate::error::codes;

/// Why a path was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// The path resolves outside the workspace.
    #[error("path `{path}` resolves outside the workspace `{workspace}`")]
    OutsideWorkspace {
        /// The path as given.
        path: PathBuf,
        /// The workspace root.
        workspace: PathBuf,
    },
    /// The path cannot be used (empty, NUL byte, workspace missing, …).
    #[error("invalid path `{path}`: {reason}")]
    Invalid {
        /// The path as given.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

impl PathError {
    /// The stable code: `PATH_OUTSIDE_WORKSPACE` or `INVALID_PATH`.
    pub fn code(&self) -> &'static str {
        match self {
            PathError::OutsideWorkspace { .. } => codes::PATH_OUTSIDE_WORKSPACE,
            PathError::Invalid { .. } => codes::INVALID_PATH,
        }
    }
}

/// Confines file paths to a workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkspacePolicy {}

impl WorkspacePolicy {
    /// A policy confining paths to the workspace root.
    pub fn new() -> Self {
        Self {}
    }

    /// Resolves `path` (relative to `workspace_root`, or absolute) to a canonical path
    /// inside the workspace. Symlinks and `..` are resolved before the check; an
    /// escape is an error, never a read.
    pub fn resolve_path(
        &self,
        path: impl AsRef<Path>,
        workspace_root: &Path,
    ) -> Result<PathBuf, PathError> {
        let path = path.as_ref();
        let root = workspace_root
            .canonicalize()
            .map_err(|e| PathError::Invalid {
                path: workspace_root.to_path_buf(),
                reason: format!("workspace root cannot be resolved: {e}"),
            })?;
        let joined = root.join(path);
        let resolved = joined.canonicalize().map_err(|e| PathError::Invalid {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        if resolved.starts_with(&root) {
            Ok(resolved)
        } else {
            Err(PathError::OutsideWorkspace {
                path: path.to_path_buf(),
                workspace: root,
            })
        }
    }
}
