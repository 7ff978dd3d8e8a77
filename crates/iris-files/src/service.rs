//! [`FileService`]: per-session read observations, path confinement and write locks
//! shared by the six file tools.

use std::collections::HashMap;
use std::ffi::OsString;
use std::hash::{Hash, Hasher};
use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use iris_executor::PathError;
use iris_tools_core::{ToolErrorInfo, ToolExecutionContext, codes as core_codes};

use crate::codes;
use crate::config::FileToolsConfig;
use crate::error::Error;
use crate::read_state::ReadState;

/// Number of striped write locks; two writes to different files rarely share one.
const LOCK_STRIPES: usize = 64;

/// Where published copies live, relative to the workspace root.
pub const PUBLISHED_DIR: &str = ".iris/published";

/// The file tools' shared service: configuration, read observations per session and
/// per-path write serialization.
///
/// Read observations live in the `Arc<ReadState>` a host puts into the context's
/// [`extensions`](ToolExecutionContext::extensions); when the context carries none, the
/// service keeps one `ReadState` per `session_id` itself, separate from any run state.
///
/// The six tools are methods of the service (see [`crate::builtin_tools_with`]): on an
/// `Arc<FileService>`, `service.tools()` builds all of them and
/// `service.read_file_tool()` (and so on) one, all sharing the service.
///
/// ```
/// use std::sync::Arc;
/// use iris_files::{FileService, FileToolsConfig};
/// use iris_tools_core::ToolExecutionContext;
///
/// let service = Arc::new(FileService::new(FileToolsConfig::default())?);
/// let ctx = ToolExecutionContext::new("/srv/ws").session_id("s-1");
/// // Without a host-provided ReadState, the service keeps one per session.
/// assert!(Arc::ptr_eq(&service.read_state(&ctx), &service.session_state("s-1")));
/// # Ok::<(), iris_files::Error>(())
/// ```
#[derive(Debug)]
pub struct FileService {
    config: FileToolsConfig,
    sessions: Mutex<HashMap<String, Arc<ReadState>>>,
    write_locks: Vec<Mutex<()>>,
}

impl Default for FileService {
    fn default() -> Self {
        Self::with_valid_config(FileToolsConfig::default())
    }
}

/// A path resolved inside the workspace.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    /// The canonical absolute path (for a missing target: its would-be path under a
    /// canonical, existing ancestor).
    pub(crate) abs: PathBuf,
    /// The path relative to the workspace root, `/`-separated (`.` for the root).
    pub(crate) rel: String,
    /// The canonical workspace root.
    pub(crate) root: PathBuf,
}

/// What a resolution found.
#[derive(Debug)]
pub(crate) enum Target {
    /// Something exists at the path.
    Existing(Resolved),
    /// Nothing exists there yet; the nearest existing ancestor is inside the
    /// workspace. `parent_ok` is false when that ancestor is not a directory.
    Missing { resolved: Resolved, parent_ok: bool },
}

impl FileService {
    /// A service with a checked configuration.
    pub fn new(config: FileToolsConfig) -> Result<Self, Error> {
        config.validate()?;
        Ok(Self::with_valid_config(config))
    }

    fn with_valid_config(config: FileToolsConfig) -> Self {
        Self {
            config,
            sessions: Mutex::new(HashMap::new()),
            write_locks: (0..LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &FileToolsConfig {
        &self.config
    }

    /// The read observations a call uses: the host's `Arc<ReadState>` from the
    /// context's extensions (`ctx.extensions.insert_arc(state)`) when present,
    /// otherwise the service's own state for `ctx.session_id`.
    pub fn read_state(&self, ctx: &ToolExecutionContext) -> Arc<ReadState> {
        ctx.extensions
            .get_arc::<ReadState>()
            .unwrap_or_else(|| self.session_state(&ctx.session_id))
    }

    /// The service's own read state for a session (created on first use).
    pub fn session_state(&self, session_id: &str) -> Arc<ReadState> {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(sessions.entry(session_id.to_owned()).or_default())
    }

    /// Drops the service's own read state of a session (for example when it ends).
    pub fn forget_session(&self, session_id: &str) -> bool {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(session_id)
            .is_some()
    }

    /// Serializes writes to one canonical path within this process.
    pub(crate) fn lock_path(&self, path: &Path) -> MutexGuard<'_, ()> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        path.hash(&mut hasher);
        // Truncating the hash on 32-bit targets is fine: any bits pick a stripe.
        let idx = hasher.finish() as usize % LOCK_STRIPES;
        self.write_locks[idx]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Resolves a path that must exist.
    pub(crate) fn resolve_existing(
        &self,
        ctx: &ToolExecutionContext,
        raw: &str,
    ) -> Result<Resolved, ToolErrorInfo> {
        match self.resolve(ctx, raw)? {
            Target::Existing(r) => Ok(r),
            Target::Missing { resolved, .. } => Err(ToolErrorInfo::new(
                codes::FILE_NOT_FOUND,
                format!(
                    "`{}` does not exist in the workspace; use list_files to find the right path",
                    resolved.rel
                ),
            )
            .with_detail("path", resolved.rel)),
        }
    }

    /// Resolves `raw` through [`iris_executor::WorkspacePolicy::resolve_path`].
    ///
    /// The policy canonicalizes, so a path that does not exist yet fails there; then
    /// the nearest existing ancestor is resolved through the policy instead and the
    /// missing tail (plain names only) is appended. Either way every answer is
    /// decided by the policy, and an escape is a denial that says nothing about what
    /// exists outside the workspace.
    pub(crate) fn resolve(
        &self,
        ctx: &ToolExecutionContext,
        raw: &str,
    ) -> Result<Target, ToolErrorInfo> {
        if raw.is_empty() {
            return Err(ToolErrorInfo::new(
                core_codes::INVALID_INPUT,
                "the path must not be empty",
            ));
        }
        if raw.contains('\0') {
            return Err(invalid_path(raw, "the path contains a NUL byte"));
        }
        let root = ctx.workspace_root.canonicalize().map_err(|e| {
            ToolErrorInfo::new(
                core_codes::INVALID_PATH,
                format!("the workspace root cannot be resolved: {e}"),
            )
        })?;
        let policy = &self.config.workspace_policy;
        match policy.resolve_path(raw, &root) {
            Ok(abs) => {
                let resolved = make_resolved(&root, abs);
                return match resolved.abs.symlink_metadata() {
                    Err(e) if e.kind() == ErrorKind::NotFound => Ok(Target::Missing {
                        resolved,
                        parent_ok: true,
                    }),
                    _ => Ok(Target::Existing(resolved)),
                };
            }
            Err(PathError::OutsideWorkspace { .. }) => return Err(outside(raw)),
            Err(_) => {}
        }
        // The policy could not canonicalize the path. Find the nearest ancestor that
        // exists, collecting the missing tail.
        let mut ancestor = root.join(raw);
        let mut tail: Vec<OsString> = Vec::new();
        loop {
            match ancestor.symlink_metadata() {
                Ok(_) => break,
                Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                    let Some(name) = ancestor.file_name().map(ToOwned::to_owned) else {
                        return Err(invalid_path(
                            raw,
                            "`..` follows a directory that does not exist",
                        ));
                    };
                    tail.push(name);
                    if !ancestor.pop() {
                        return Err(invalid_path(raw, "no part of the path exists"));
                    }
                }
                Err(e) => return Err(invalid_path(raw, &e.to_string())),
            }
        }
        if tail.is_empty() {
            // The path exists, yet the policy refused it (a dangling symlink, an
            // unreadable directory, ...): report the policy's reason.
            return Err(match policy.resolve_path(raw, &root) {
                Err(PathError::OutsideWorkspace { .. }) => outside(raw),
                Err(e) => invalid_path(raw, &e.to_string()),
                Ok(_) => invalid_path(raw, "the path changed while it was resolved"),
            });
        }
        let canonical_ancestor = match policy.resolve_path(&ancestor, &root) {
            Ok(p) => p,
            Err(PathError::OutsideWorkspace { .. }) => return Err(outside(raw)),
            Err(e) => return Err(invalid_path(raw, &e.to_string())),
        };
        let parent_ok = canonical_ancestor.is_dir();
        let mut abs = canonical_ancestor;
        for name in tail.iter().rev() {
            abs.push(name);
        }
        Ok(Target::Missing {
            resolved: make_resolved(&root, abs),
            parent_ok,
        })
    }
}

fn make_resolved(root: &Path, abs: PathBuf) -> Resolved {
    let rel = relative_display(root, &abs);
    Resolved {
        abs,
        rel,
        root: root.to_path_buf(),
    }
}

/// `abs` relative to `root`, with `/` separators; `.` for the root itself.
pub(crate) fn relative_display(root: &Path, abs: &Path) -> String {
    let rel = abs.strip_prefix(root).unwrap_or(abs);
    let mut out = String::new();
    for comp in rel.components() {
        if let Component::Normal(name) = comp {
            if !out.is_empty() {
                out.push('/');
            }
            out.push_str(&name.to_string_lossy());
        }
    }
    if out.is_empty() { ".".to_owned() } else { out }
}

fn outside(raw: &str) -> ToolErrorInfo {
    ToolErrorInfo::new(
        core_codes::PATH_OUTSIDE_WORKSPACE,
        format!("`{raw}` resolves outside the workspace; only workspace paths can be used"),
    )
    .with_detail("path", raw)
}

fn invalid_path(raw: &str, reason: &str) -> ToolErrorInfo {
    ToolErrorInfo::new(
        core_codes::INVALID_PATH,
        format!("`{}` cannot be used: {reason}", raw.escape_debug()),
    )
    .with_detail("path", raw)
}
