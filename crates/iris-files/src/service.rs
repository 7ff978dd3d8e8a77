//! [`FileService`]: per-session read observations, path confinement and write locks
//! shared by the six file tools.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::{File, Metadata};
use std::hash::{Hash, Hasher};
use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use iris_fs::workspace::PathError;
use iris_fs::workspace::{AccessError, EntryKind, WorkspaceDir};
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
/// // When the session ends, the host forgets it: its observations go.
/// assert!(service.forget_session("s-1"));
/// assert!(!service.forget_session("s-1"));
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

/// How many times a call resolves its path again when the tree changed between the
/// resolution and the use (a directory on the path became a symlink, the file vanished).
const MAX_ATTEMPTS: usize = 8;

/// A path resolved inside the workspace.
///
/// `abs` is only a name for messages, read observations and locks: the file itself is
/// always reached through [`Resolved::ws`], the workspace root held open, by a walk of
/// the canonical relative path that never follows a symlink (see
/// [`iris_fs::workspace`]).
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    /// The canonical absolute path (for a missing target: its would-be path under a
    /// canonical, existing ancestor).
    pub(crate) abs: PathBuf,
    /// The path relative to the workspace root, `/`-separated (`.` for the root).
    pub(crate) rel: String,
    /// The canonical workspace root.
    pub(crate) root: PathBuf,
    /// The workspace root, held open.
    pub(crate) ws: Arc<WorkspaceDir>,
}

/// Why an operation on a resolved path did not complete.
#[derive(Debug)]
pub(crate) enum Fault {
    /// The tree changed since the resolution (a component is now a symlink, or gone):
    /// resolve again.
    Changed,
    /// A final answer for the model.
    Fail(ToolErrorInfo),
}

impl From<ToolErrorInfo> for Fault {
    fn from(info: ToolErrorInfo) -> Self {
        Fault::Fail(info)
    }
}

impl Resolved {
    /// The path below the workspace root (`""` for the root itself).
    pub(crate) fn below(&self) -> &Path {
        self.abs.strip_prefix(&self.root).unwrap_or(Path::new(""))
    }

    /// Opens the target as a regular file for reading (non-blocking open, judged by the
    /// handle).
    pub(crate) fn open_file(&self) -> Result<(File, Metadata), Fault> {
        self.ws
            .open_file(self.below())
            .map_err(|e| access_fault(&self.rel, e))
    }

    /// The target's parent directory, held open, and the target's name in it.
    pub(crate) fn parent(&self) -> Result<(WorkspaceDir, OsString), Fault> {
        let (parent, name) = self.split()?;
        let dir = self
            .ws
            .open_dir(parent)
            .map_err(|e| access_fault(&self.rel, e))?;
        Ok((dir, name))
    }

    /// Like [`Resolved::parent`], making the missing parent directories first (with
    /// `mkdirat`, relative to each held parent).
    pub(crate) fn create_parent(&self) -> Result<(WorkspaceDir, OsString), Fault> {
        let (parent, name) = self.split()?;
        let dir = self.ws.create_dir_all(parent).map_err(|e| match e {
            AccessError::Io { source, .. } if source.kind() != ErrorKind::NotFound => Fault::Fail(
                ToolErrorInfo::new(
                    core_codes::IO_ERROR,
                    format!("cannot create the directories of `{}`: {source}", self.rel),
                )
                .with_detail("path", self.rel.clone()),
            ),
            other => access_fault(&self.rel, other),
        })?;
        Ok((dir, name))
    }

    fn split(&self) -> Result<(&Path, OsString), Fault> {
        let below = self.below();
        match (below.parent(), below.file_name()) {
            (Some(parent), Some(name)) => Ok((parent, name.to_owned())),
            _ => Err(Fault::Fail(crate::load::not_a_file(&self.rel))),
        }
    }
}

/// What a failed confined operation means for a call on `rel`.
pub(crate) fn access_fault(rel: &str, err: AccessError) -> Fault {
    match err {
        AccessError::Symlink { .. } | AccessError::NotADirectory { .. } => Fault::Changed,
        e if e.is_not_found() => Fault::Changed,
        AccessError::NotAFile { .. } => Fault::Fail(crate::load::not_a_file(rel)),
        AccessError::Io { source, .. } => Fault::Fail(crate::load::io_error(rel, &source)),
        other => Fault::Fail(invalid_path(rel, &access_reason(&other))),
    }
}

/// Why a confined operation failed, without the host paths the error carries (file tool
/// messages name paths as the model wrote them).
pub(crate) fn access_reason(err: &AccessError) -> String {
    match err {
        AccessError::Symlink { .. } => "a part of it was replaced by a symbolic link".into(),
        AccessError::NotADirectory { .. } => "a directory on it was replaced".into(),
        AccessError::NotAFile { .. } => "it is not a regular file".into(),
        AccessError::Io { source, .. } => source.to_string(),
        _ => "it is not a plain path below the workspace".into(),
    }
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

    /// Resolves `raw` and runs `op` on the answer; when `op` finds the tree changed
    /// under it ([`Fault::Changed`]), resolves again (a bounded number of times), so
    /// every operation is judged against a fresh resolution and never follows a link
    /// the resolution did not see.
    pub(crate) fn with_target<T>(
        &self,
        ctx: &ToolExecutionContext,
        raw: &str,
        mut op: impl FnMut(Target) -> Result<T, Fault>,
    ) -> Result<T, ToolErrorInfo> {
        for _ in 0..MAX_ATTEMPTS {
            match op(self.resolve(ctx, raw)?) {
                Ok(value) => return Ok(value),
                Err(Fault::Fail(info)) => return Err(info),
                Err(Fault::Changed) => {}
            }
        }
        Err(invalid_path(
            raw,
            "the path kept changing while it was used (a directory on it was replaced, for example by a symbolic link); try again",
        ))
    }

    /// [`FileService::with_target`] for a path that must exist.
    pub(crate) fn with_existing<T>(
        &self,
        ctx: &ToolExecutionContext,
        raw: &str,
        mut op: impl FnMut(Resolved) -> Result<T, Fault>,
    ) -> Result<T, ToolErrorInfo> {
        self.with_target(ctx, raw, |target| match target {
            Target::Existing(r) => op(r),
            Target::Missing { resolved, .. } => Err(Fault::Fail(not_found(&resolved.rel))),
        })
    }

    /// Resolves `raw` through [`iris_fs::workspace::WorkspacePolicy::resolve_path`].
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
        let ws = WorkspaceDir::open_root(&ctx.workspace_root).map_err(|e| {
            let reason = match e {
                PathError::Invalid { reason, .. } => reason,
                other => other.to_string(),
            };
            ToolErrorInfo::new(core_codes::INVALID_PATH, reason)
        })?;
        let ws = Arc::new(ws);
        let root = ws.path().to_path_buf();
        let policy = &self.config.workspace_policy;
        match policy.resolve_path(raw, &root) {
            Ok(abs) => {
                let resolved = make_resolved(&ws, abs);
                // Existence is judged through the held root, never by the path.
                return match ws.entry_kind(resolved.below()) {
                    Err(e) if e.is_not_found() => Ok(Target::Missing {
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
        let parent_ok = ws
            .relative(&canonical_ancestor)
            .and_then(|rel| ws.entry_kind(rel))
            .is_ok_and(|kind| kind == EntryKind::Dir);
        let mut abs = canonical_ancestor;
        for name in tail.iter().rev() {
            abs.push(name);
        }
        Ok(Target::Missing {
            resolved: make_resolved(&ws, abs),
            parent_ok,
        })
    }
}

fn make_resolved(ws: &Arc<WorkspaceDir>, abs: PathBuf) -> Resolved {
    let root = ws.path().to_path_buf();
    let rel = relative_display(&root, &abs);
    Resolved {
        abs,
        rel,
        root,
        ws: Arc::clone(ws),
    }
}

/// `FILE_NOT_FOUND` for `rel`.
pub(crate) fn not_found(rel: &str) -> ToolErrorInfo {
    ToolErrorInfo::new(
        codes::FILE_NOT_FOUND,
        format!("`{rel}` does not exist in the workspace; use list_files to find the right path"),
    )
    .with_detail("path", rel)
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

pub(crate) fn invalid_path(raw: &str, reason: &str) -> ToolErrorInfo {
    ToolErrorInfo::new(
        core_codes::INVALID_PATH,
        format!("`{}` cannot be used: {reason}", raw.escape_debug()),
    )
    .with_detail("path", raw)
}
