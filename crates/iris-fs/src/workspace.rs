//! [`WorkspacePolicy`]: resolves file paths and confines them to the workspace.
//!
//! Every file a tool touches goes through [`WorkspacePolicy::resolve_path`] first. It
//! turns what the model wrote into one canonical absolute path inside the workspace, or
//! refuses. The rules:
//!
//! - **The reference is the canonical workspace root.** The root is canonicalized first
//!   (so a symlinked root is followed); a root that does not exist or is not a
//!   directory is [`PathError::Invalid`] (`INVALID_PATH`).
//! - **Relative paths start at the root, absolute paths stand alone.** An absolute path
//!   is accepted only when it resolves inside the root, through whatever spelling of
//!   the root it uses (the symlinked form or the canonical one).
//! - **Resolution is physical, one component at a time.** Existing components are
//!   looked at on disk: a symlink is followed (relative targets from the directory that
//!   holds the link, chains included, at most 40 hops, then `INVALID_PATH`), and `..`
//!   after an existing component means the parent of what that component *really* is,
//!   exactly as the operating system would see it. `.` components, repeated separators
//!   and trailing slashes are ignored.
//! - **Paths that do not exist yet are write targets.** From the first missing
//!   component on, the rest is appended lexically: a name is pushed, a `..` pops one
//!   missing name. A `..` that pops back into existing directories resumes physical
//!   resolution, so `new/../link_to_etc/x` is still caught.
//! - **Dangling symlinks are followed too.** A later write would follow the link, so
//!   its target is resolved like any other path; a dangling link that points outside
//!   the root is refused.
//! - **Only the final answer is judged.** A path may pass outside the root on its way
//!   (`../ws/file` where the root is `ws`); what matters is where it lands. Landing
//!   outside the root is [`PathError::OutsideWorkspace`] (`PATH_OUTSIDE_WORKSPACE`) and
//!   nothing outside is ever read: resolution only inspects directory entries with
//!   `lstat`/`readlink`, never file contents.
//! - **Bad input is a typed error, never a panic.** An empty path, a NUL byte, a
//!   component below a regular file (`file.txt/x`), a symlink loop or an I/O error while
//!   looking is `INVALID_PATH`. Names that are not UTF-8 are fine: on Unix they are
//!   handled as the raw bytes of the `OsStr`.
//!
//! Callers must use the returned path, never the original string: the check is about
//! the returned path, and the two can differ (`new/../file` becomes `<root>/file`).
//!
//! # Using a resolved path: held directory handles
//!
//! The resolution is a snapshot: a concurrent process could swap a directory on the
//! returned path for a symlink to outside (`renameat2(RENAME_EXCHANGE)`) before the path
//! is opened, and the kernel would follow it. So nothing in Iris opens a resolved path by
//! name. [`WorkspaceDir::open_root`] holds the canonical root open, and every operation
//! walks the *canonical* answer from that handle, relative to held directory handles,
//! with no symlink followed by the kernel:
//!
//! - on Linux, one `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//!   RESOLVE_NO_MAGICLINKS`; where the kernel lacks it (`ENOSYS`, or `EPERM` under a
//!   seccomp filter) and on the other Unix systems, a walk one component at a time with
//!   `openat(O_NOFOLLOW | O_DIRECTORY)`, and `O_NOFOLLOW` on the last component;
//! - missing directories are made with `mkdirat` relative to the held parent, files are
//!   written as `openat(O_CREAT | O_EXCL | O_NOFOLLOW)` temporaries in the held parent and
//!   put in place with `renameat` / `linkat` relative to that same handle;
//! - files are opened with `O_NONBLOCK` and judged by `fstat` of the handle (a FIFO
//!   swapped in cannot block the open, and the type seen is the type read).
//!
//! The canonical answer contains no symlink, so the resolver's semantics above (links
//! inside the workspace are followed by the resolver itself, checking where they land)
//! are kept; a component that is a symlink *when it is used* means the tree changed
//! under the call, and the operation fails with [`AccessError::Symlink`] instead of
//! following it (callers re-resolve and retry, or report it). Everything an operation
//! touches is therefore a real directory entry beneath the root. What a handle cannot
//! stop is someone with write access *outside* the workspace moving a directory out of
//! it while it is in use; such a process needs no help from Iris to write there.
//!
//! On non-Unix platforms [`WorkspaceDir`] falls back to paths: the same checks are made
//! component by component (a symlink is refused), but a swap between a check and its use
//! is not prevented there.
//!
//! ```
//! use iris_fs::workspace::WorkspacePolicy;
//!
//! let dir = tempfile::tempdir()?;
//! let root = dir.path().join("ws");
//! std::fs::create_dir(&root)?;
//! let policy = WorkspacePolicy::new();
//!
//! let target = policy.resolve_path("notes/today.md", &root)?; // need not exist yet
//! assert!(target.ends_with("notes/today.md"));
//!
//! let escape = policy.resolve_path("notes/../../secret", &root).unwrap_err();
//! assert_eq!(escape.code(), "PATH_OUTSIDE_WORKSPACE");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io;
use std::path::{Component, Path, PathBuf};

use iris_tools_core::{ToolErrorInfo, codes};

/// How many symlinks one resolution may follow before it is called a loop (the
/// `MAXSYMLINKS` of Linux).
const MAX_SYMLINK_HOPS: usize = 40;

/// Why a path was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// The path resolves outside the workspace.
    #[error(
        "path `{}` resolves outside the workspace `{}`",
        shown(path),
        shown(workspace)
    )]
    OutsideWorkspace {
        /// The path as given.
        path: PathBuf,
        /// The canonical workspace root.
        workspace: PathBuf,
    },
    /// The path cannot be used (empty, NUL byte, workspace missing, symlink loop, …).
    #[error("invalid path `{}`: {reason}", shown(path))]
    Invalid {
        /// The path as given (or the workspace root, when the root is the problem).
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

    /// The path the error is about, as given.
    pub fn path(&self) -> &Path {
        match self {
            PathError::OutsideWorkspace { path, .. } | PathError::Invalid { path, .. } => path,
        }
    }

    /// The structured form a tool result carries: the code, this error's message, and
    /// the offending path under `details.path`.
    ///
    /// ```
    /// use iris_fs::workspace::WorkspacePolicy;
    /// let err = WorkspacePolicy::new().resolve_path("", &std::env::temp_dir()).unwrap_err();
    /// let info = err.to_info();
    /// assert_eq!(info.code, "INVALID_PATH");
    /// assert_eq!(info.details["path"], "");
    /// ```
    pub fn to_info(&self) -> ToolErrorInfo {
        ToolErrorInfo::new(self.code(), self.to_string())
            .with_detail("path", self.path().to_string_lossy().into_owned())
    }
}

/// A path for a one-line message: lossy UTF-8 with control characters (NUL, newlines)
/// escaped, so a hostile name cannot break the line or smuggle a terminator.
fn shown(path: &Path) -> String {
    path.to_string_lossy().escape_debug().to_string()
}

/// The workspace paths every policy protects: Iris's own state (`.iris`: runs,
/// artifacts, published copies) and the repository's metadata (`.git`: hooks, config).
pub const DEFAULT_PROTECTED: [&str; 2] = [".iris", ".git"];

/// Confines file paths to a workspace and names the paths in it that tools may read but
/// never change. See the [module docs](self) for the resolution rules.
///
/// Protected paths are [`DEFAULT_PROTECTED`] plus what the host adds (the runner adds
/// the agent YAML and every file it references): a model must not rewrite its own
/// policy. The file tools refuse to write them (`PROTECTED_PATH`); the command sandbox
/// mounts the same paths read-only.
///
/// ```
/// use iris_fs::workspace::WorkspacePolicy;
/// let dir = tempfile::tempdir()?;
/// let root = dir.path().canonicalize()?;
/// let policy = WorkspacePolicy::new().with_protected_paths(["agents/iris.yaml"]);
/// assert!(policy.protects(&root.join(".git/hooks/pre-commit"), &root).is_some());
/// assert!(policy.protects(&root.join("agents/iris.yaml"), &root).is_some());
/// assert!(policy.protects(&root.join("agents/other.yaml"), &root).is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspacePolicy {
    protected: Vec<PathBuf>,
}

impl Default for WorkspacePolicy {
    fn default() -> Self {
        Self::new()
    }
}

impl WorkspacePolicy {
    /// A policy confining paths to the workspace root and protecting
    /// [`DEFAULT_PROTECTED`].
    pub fn new() -> Self {
        Self {
            protected: DEFAULT_PROTECTED.iter().map(PathBuf::from).collect(),
        }
    }

    /// Adds protected paths: relative to the workspace root, or absolute.
    #[must_use]
    pub fn with_protected_paths<I, P>(mut self, paths: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        self.protected.extend(paths.into_iter().map(Into::into));
        self
    }

    /// The protected paths, as given (relative ones are relative to the workspace).
    pub fn protected_paths(&self) -> &[PathBuf] {
        &self.protected
    }

    /// The protected path that covers `resolved` (a path [`Self::resolve_path`]
    /// returned for the canonical `workspace_root`): the path itself or one of its
    /// ancestors; `None` when writing it is allowed.
    pub fn protects(&self, resolved: &Path, workspace_root: &Path) -> Option<&Path> {
        self.protected
            .iter()
            .find(|p| {
                let full = if p.is_absolute() {
                    p.to_path_buf()
                } else {
                    workspace_root.join(p)
                };
                resolved.starts_with(&full)
            })
            .map(PathBuf::as_path)
    }

    /// Resolves `path` (relative to `workspace_root`, or absolute) to a canonical
    /// absolute path inside the canonical workspace root.
    ///
    /// Symlinks (dangling ones included) and `..` are resolved before the check; the
    /// path need not exist. An escape is [`PathError::OutsideWorkspace`], unusable
    /// input or a missing root is [`PathError::Invalid`]. The root itself is allowed.
    ///
    /// ```
    /// use iris_fs::workspace::WorkspacePolicy;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let root = dir.path().canonicalize()?;
    /// let policy = WorkspacePolicy::new();
    /// assert_eq!(policy.resolve_path(".", &root)?, root);
    /// assert_eq!(policy.resolve_path("a/./b/", &root)?, root.join("a/b"));
    /// assert_eq!(policy.resolve_path("/", &root).unwrap_err().code(), "PATH_OUTSIDE_WORKSPACE");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resolve_path(
        &self,
        path: impl AsRef<Path>,
        workspace_root: &Path,
    ) -> Result<PathBuf, PathError> {
        let path = path.as_ref();
        let invalid = |reason: String| PathError::Invalid {
            path: path.to_path_buf(),
            reason,
        };
        if path.as_os_str().is_empty() {
            return Err(invalid("the path is empty".into()));
        }
        // `as_encoded_bytes` is the raw byte form on every platform; NUL is 0 in all.
        if path.as_os_str().as_encoded_bytes().contains(&0) {
            return Err(invalid("the path contains a NUL byte".into()));
        }
        let root = canonical_root(workspace_root)?;

        let mut walk = Walk::starting_at(root.clone());
        walk.push_front(path);
        walk.run().map_err(invalid)?;

        if walk.resolved.starts_with(&root) {
            Ok(walk.resolved)
        } else {
            Err(PathError::OutsideWorkspace {
                path: path.to_path_buf(),
                workspace: root,
            })
        }
    }
}

/// Canonicalizes the workspace root and checks it is a directory.
fn canonical_root(workspace_root: &Path) -> Result<PathBuf, PathError> {
    let invalid = |reason: String| PathError::Invalid {
        path: workspace_root.to_path_buf(),
        reason,
    };
    if workspace_root.as_os_str().is_empty() {
        return Err(invalid("the workspace root is empty".into()));
    }
    let root = fs::canonicalize(workspace_root)
        .map_err(|e| invalid(format!("the workspace root cannot be resolved: {e}")))?;
    if !root.is_dir() {
        return Err(invalid("the workspace root is not a directory".into()));
    }
    Ok(root)
}

/// One step still to take, owned so symlink targets can be spliced in.
#[derive(Debug)]
enum Step {
    /// Restart from this filesystem root (`/`, or a Windows prefix plus root).
    Root(PathBuf),
    /// `..`.
    Parent,
    /// A plain name.
    Name(OsString),
}

/// The state of one component-by-component resolution.
#[derive(Debug)]
struct Walk {
    /// Where the walk is. Its first `resolved_len - missing` components exist on disk
    /// and contain no symlink; the last `missing` components do not exist.
    resolved: PathBuf,
    /// How many trailing components of `resolved` do not exist (the write target part).
    missing: usize,
    /// Whether the existing part of `resolved` ends in a directory.
    at_dir: bool,
    /// Steps still to take, front first.
    pending: VecDeque<Step>,
    /// Symlinks followed so far.
    hops: usize,
}

impl Walk {
    fn starting_at(start: PathBuf) -> Self {
        Self {
            resolved: start,
            missing: 0,
            at_dir: true,
            pending: VecDeque::new(),
            hops: 0,
        }
    }

    /// Puts the components of `path` in front of the pending steps, in order.
    fn push_front(&mut self, path: &Path) {
        let mut steps = Vec::new();
        let mut root = PathBuf::new();
        for component in path.components() {
            match component {
                Component::Prefix(p) => root.push(p.as_os_str()),
                Component::RootDir => {
                    root.push(component.as_os_str());
                    steps.push(Step::Root(std::mem::take(&mut root)));
                }
                Component::CurDir => {}
                Component::ParentDir => steps.push(Step::Parent),
                Component::Normal(name) => steps.push(Step::Name(name.to_os_string())),
            }
        }
        // A Windows prefix without a root (`C:foo`) is drive-relative; treating the
        // prefix as a root keeps it absolute, which can only make the check stricter.
        if !root.as_os_str().is_empty() {
            steps.insert(0, Step::Root(root));
        }
        for step in steps.into_iter().rev() {
            self.pending.push_front(step);
        }
    }

    /// Takes every pending step. `Err` carries the reason the path is unusable.
    fn run(&mut self) -> Result<(), String> {
        while let Some(step) = self.pending.pop_front() {
            match step {
                Step::Root(root) => {
                    self.resolved = root;
                    self.missing = 0;
                    self.at_dir = true;
                }
                Step::Parent => self.parent()?,
                Step::Name(name) => self.name(name)?,
            }
        }
        Ok(())
    }

    fn parent(&mut self) -> Result<(), String> {
        if self.missing > 0 {
            // Popping a name that does not exist is purely lexical: it cannot be a
            // symlink, so the OS would end up in the same place.
            self.resolved.pop();
            self.missing -= 1;
            return Ok(());
        }
        if !self.at_dir {
            return Err(self.not_a_directory());
        }
        // The existing part is canonical, so its lexical parent is its real parent.
        // At the filesystem root `pop` is a no-op, as `/..` is `/`.
        self.resolved.pop();
        Ok(())
    }

    fn name(&mut self, name: OsString) -> Result<(), String> {
        if self.missing > 0 {
            self.resolved.push(name);
            self.missing += 1;
            return Ok(());
        }
        if !self.at_dir {
            return Err(self.not_a_directory());
        }
        let candidate = self.resolved.join(&name);
        match fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() => self.follow(candidate),
            Ok(meta) => {
                self.resolved = candidate;
                self.at_dir = meta.is_dir();
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.resolved = candidate;
                self.missing = 1;
                Ok(())
            }
            Err(e) => Err(format!("cannot inspect `{}`: {e}", candidate.display())),
        }
    }

    /// Follows the symlink at `link`, whose parent is the current `resolved`.
    fn follow(&mut self, link: PathBuf) -> Result<(), String> {
        self.hops += 1;
        if self.hops > MAX_SYMLINK_HOPS {
            return Err(format!(
                "more than {MAX_SYMLINK_HOPS} symbolic links to follow (a symlink loop?)"
            ));
        }
        // The operating system's own answer is preferred when the link resolves: it
        // follows chains in one go and spells the result the way `canonicalize` spelled
        // the workspace root (this matters on Windows).
        match fs::canonicalize(&link) {
            Ok(real) => {
                self.at_dir = real.is_dir();
                self.resolved = real;
                Ok(())
            }
            Err(_) => {
                // Dangling (or otherwise unresolvable) link: walk its target ourselves
                // so a write that would follow it is judged by where it would land.
                let target = fs::read_link(&link)
                    .map_err(|e| format!("cannot read symlink `{}`: {e}", link.display()))?;
                // A relative target starts from the directory holding the link, which
                // is the current `resolved`; an absolute one restarts via `Step::Root`.
                self.push_front(&target);
                Ok(())
            }
        }
    }

    fn not_a_directory(&self) -> String {
        format!("`{}` is not a directory", self.resolved.display())
    }
}

// ---------------------------------------------------------------------------------------
// Confined access through held directory handles (see "Using a resolved path" above).
// ---------------------------------------------------------------------------------------

/// Why an operation through a [`WorkspaceDir`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AccessError {
    /// A component of the path is a symbolic link. Confined operations never follow
    /// one; for a path that was resolved just before, this means the tree changed.
    #[error("`{}` is a symbolic link, which is never followed here", shown(path))]
    Symlink {
        /// The link.
        path: PathBuf,
    },
    /// A component that must be a directory is something else.
    #[error("`{}` is not a directory", shown(path))]
    NotADirectory {
        /// The component.
        path: PathBuf,
    },
    /// The file is not a regular file (a directory, FIFO, socket or device), judged by
    /// the opened handle.
    #[error("`{}` is not a regular file", shown(path))]
    NotAFile {
        /// The file.
        path: PathBuf,
    },
    /// The path is not a plain relative path below the handle (it is absolute, has a
    /// `..`, or lies outside the handle's directory).
    #[error("`{}` is not a plain path below `{}`", shown(path), shown(base))]
    NotBeneath {
        /// The path as given.
        path: PathBuf,
        /// The directory it should be below.
        base: PathBuf,
    },
    /// Any other failure; a missing component is an [`io::ErrorKind::NotFound`] here.
    #[error("cannot access `{}`: {source}", shown(path))]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl AccessError {
    /// The stable code: `IO_ERROR` for [`AccessError::Io`], `INVALID_PATH` otherwise.
    pub fn code(&self) -> &'static str {
        match self {
            AccessError::Io { .. } => codes::IO_ERROR,
            _ => codes::INVALID_PATH,
        }
    }

    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            AccessError::Symlink { path }
            | AccessError::NotADirectory { path }
            | AccessError::NotAFile { path }
            | AccessError::NotBeneath { path, .. }
            | AccessError::Io { path, .. } => path,
        }
    }

    /// Whether a component (or the file itself) does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, AccessError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }

    /// Why the path cannot be used, as the reason of a [`PathError::Invalid`] (the
    /// executor's errors report a refused path that way).
    ///
    /// ```
    /// use iris_fs::workspace::AccessError;
    /// let err = AccessError::Symlink { path: "ws/link".into() };
    /// assert_eq!(err.reason(), "it is a symbolic link, which is never followed here");
    /// ```
    pub fn reason(&self) -> String {
        match self {
            AccessError::Symlink { .. } => {
                "it is a symbolic link, which is never followed here".to_owned()
            }
            AccessError::NotADirectory { .. } => "it is not a directory".to_owned(),
            AccessError::NotAFile { .. } => "it is not a regular file".to_owned(),
            AccessError::NotBeneath { base, .. } => {
                format!("it is not a plain path below `{}`", shown(base))
            }
            AccessError::Io { source, .. } => source.to_string(),
        }
    }
}

/// What an entry is, as `lstat` sees it (a symlink is reported, never followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

/// A directory held open by handle (on Unix, an open file descriptor).
///
/// Paths given to its methods are relative to it and made of plain names only, and no
/// operation lets the kernel follow a symbolic link (see the [module docs](self)):
///
/// ```
/// # #[cfg(unix)] {
/// use std::path::Path;
/// use iris_fs::workspace::{AccessError, WorkspaceDir};
///
/// let dir = tempfile::tempdir()?;
/// std::fs::create_dir(dir.path().join("outside"))?;
/// let ws = dir.path().join("ws");
/// std::fs::create_dir_all(ws.join("notes"))?;
/// std::os::unix::fs::symlink("../outside", ws.join("escape"))?;
///
/// let root = WorkspaceDir::open_root(&ws)?;
/// let notes = root.create_dir_all(Path::new("notes/2024"))?;
/// assert!(notes.path().ends_with("ws/notes/2024"));
/// let refused = root.create_dir_all(Path::new("escape/x")).unwrap_err();
/// assert!(matches!(refused, AccessError::Symlink { .. }));
/// assert!(!dir.path().join("outside/x").exists());
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct WorkspaceDir {
    /// The path the directory was opened as (canonical for [`WorkspaceDir::open_root`]).
    path: PathBuf,
    handle: sys::Handle,
}

impl WorkspaceDir {
    /// Opens the canonical form of a workspace root (a symlinked root is followed: the
    /// root is the host's choice). A root that does not exist or is not a directory is
    /// [`PathError::Invalid`].
    pub fn open_root(workspace_root: &Path) -> Result<Self, PathError> {
        let root = canonical_root(workspace_root)?;
        Self::open_trusted(&root).map_err(|e| PathError::Invalid {
            path: workspace_root.to_path_buf(),
            reason: format!("the workspace root cannot be opened: {e}"),
        })
    }

    /// Opens a directory the host chose, following any symlink in `path`. Use it only
    /// for paths no model or workspace content decided; workspace paths go through
    /// [`WorkspaceDir::open_root`] and the confined methods.
    pub fn open_trusted(path: &Path) -> io::Result<Self> {
        Ok(Self {
            path: path.to_path_buf(),
            handle: sys::open_trusted_dir(path)?,
        })
    }

    /// The path this directory was opened as (for messages and returned paths; it is
    /// never opened by name again).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The part of `abs` below this directory, for the confined methods: `abs` must
    /// start with [`WorkspaceDir::path`] and continue with plain names only (what
    /// [`WorkspacePolicy::resolve_path`] returns for a root opened by
    /// [`WorkspaceDir::open_root`]).
    pub fn relative<'p>(&self, abs: &'p Path) -> Result<&'p Path, AccessError> {
        let not_beneath = || AccessError::NotBeneath {
            path: abs.to_path_buf(),
            base: self.path.clone(),
        };
        let rel = abs.strip_prefix(&self.path).map_err(|_| not_beneath())?;
        names(rel).map_err(|_| not_beneath())?;
        Ok(rel)
    }

    /// Opens the directory `rel` below this one (`""` is this directory again).
    pub fn open_dir(&self, rel: &Path) -> Result<WorkspaceDir, AccessError> {
        let names = self.names(rel)?;
        let path = self.path.join(rel);
        if names.is_empty() {
            let handle = sys::duplicate(&self.handle).map_err(|source| AccessError::Io {
                path: path.clone(),
                source,
            })?;
            return Ok(WorkspaceDir { path, handle });
        }
        if let Some(handle) = sys::beneath_dir(&self.handle, rel) {
            return Ok(WorkspaceDir { path, handle });
        }
        let handle = self.walk(&names, false)?;
        Ok(WorkspaceDir { path, handle })
    }

    /// [`WorkspaceDir::open_dir`] by the component walk alone (no `openat2`).
    #[cfg(test)]
    fn open_dir_walked(&self, rel: &Path) -> Result<WorkspaceDir, AccessError> {
        let names = self.names(rel)?;
        let handle = self.walk(&names, false)?;
        Ok(WorkspaceDir {
            path: self.path.join(rel),
            handle,
        })
    }

    /// Opens the directory `rel` below this one, making every missing component with
    /// `mkdirat` relative to its held parent (mode `0777` minus the umask). A component
    /// that exists as a symlink is [`AccessError::Symlink`], never followed.
    pub fn create_dir_all(&self, rel: &Path) -> Result<WorkspaceDir, AccessError> {
        let names = self.names(rel)?;
        if names.is_empty() {
            return self.open_dir(rel);
        }
        let path = self.path.join(rel);
        if let Some(handle) = sys::beneath_dir(&self.handle, rel) {
            return Ok(WorkspaceDir { path, handle });
        }
        let handle = self.walk(&names, true)?;
        Ok(WorkspaceDir { path, handle })
    }

    /// Opens the regular file `rel` below this one for reading.
    ///
    /// The open is non-blocking (a FIFO cannot block it) and the type is judged by
    /// `fstat` of the opened handle: anything but a regular file is
    /// [`AccessError::NotAFile`]. The returned file is blocking again, with the
    /// metadata of that same handle.
    pub fn open_file(&self, rel: &Path) -> Result<(File, fs::Metadata), AccessError> {
        let names = self.names(rel)?;
        let path = self.path.join(rel);
        let Some((last, parents)) = names.split_last() else {
            return Err(AccessError::NotAFile { path });
        };
        let file = match sys::beneath_file(&self.handle, rel) {
            Some(file) => file,
            None => self.walk_to_file(parents, last, &path)?,
        };
        finish_regular(file, path)
    }

    /// Opens the file `last` below the directories `parents` by the component walk.
    fn walk_to_file(
        &self,
        parents: &[&OsStr],
        last: &OsStr,
        path: &Path,
    ) -> Result<File, AccessError> {
        let parent;
        let dir = if parents.is_empty() {
            &self.handle
        } else {
            parent = self.walk(parents, false)?;
            &parent
        };
        sys::child_file(dir, last)
            .map_err(|e| classify(dir, last, e, path.to_path_buf(), Want::File))
    }

    /// [`WorkspaceDir::open_file`] by the component walk alone (no `openat2`).
    #[cfg(test)]
    fn open_file_walked(&self, rel: &Path) -> Result<(File, fs::Metadata), AccessError> {
        let names = self.names(rel)?;
        let path = self.path.join(rel);
        let Some((last, parents)) = names.split_last() else {
            return Err(AccessError::NotAFile { path });
        };
        let file = self.walk_to_file(parents, last, &path)?;
        finish_regular(file, path)
    }

    /// What the entry `rel` below this one is, without following it (its parent
    /// directories are walked like [`WorkspaceDir::open_dir`] does). A missing entry is
    /// an error for which [`AccessError::is_not_found`] holds.
    pub fn entry_kind(&self, rel: &Path) -> Result<EntryKind, AccessError> {
        let names = self.names(rel)?;
        let path = self.path.join(rel);
        let Some((last, _)) = names.split_last() else {
            return Ok(EntryKind::Dir);
        };
        let parent_rel = rel.parent().unwrap_or(Path::new(""));
        let parent = self.open_dir(parent_rel)?;
        sys::entry_kind(&parent.handle, last).map_err(|source| AccessError::Io { path, source })
    }

    /// Creates the new file `name` in this directory (`O_CREAT | O_EXCL | O_NOFOLLOW`,
    /// mode `0666` minus the umask), open for reading and writing. An existing entry of
    /// that name (a symlink included) is [`io::ErrorKind::AlreadyExists`].
    pub fn create_new(&self, name: &OsStr) -> io::Result<File> {
        check_name(name)?;
        sys::create_new(&self.handle, name)
    }

    /// Renames the entry `from` of this directory to `to`, replacing what `to` names
    /// (a symlink there is replaced, not followed).
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        check_name(from)?;
        check_name(to)?;
        sys::rename(&self.handle, from, to)
    }

    /// Gives the finished file `temp` of this directory the name `name`, unless `name`
    /// exists ([`io::ErrorKind::AlreadyExists`]): a hard link (then `temp` is removed),
    /// or where the filesystem has none, a rename that refuses to replace
    /// (`RENAME_NOREPLACE`; elsewhere a last existence check, then a rename). On
    /// success `temp` no longer exists.
    pub fn place_new(&self, temp: &OsStr, name: &OsStr) -> io::Result<()> {
        check_name(temp)?;
        check_name(name)?;
        match sys::hard_link(&self.handle, temp, name) {
            Ok(()) => {
                // Best effort: a leftover temporary name is harmless and hidden.
                let _ = sys::remove_file(&self.handle, temp);
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
            Err(_) => match sys::rename_noreplace(&self.handle, temp, name) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
                Err(_) => {
                    if sys::entry_kind(&self.handle, name).is_ok() {
                        return Err(io::Error::from(io::ErrorKind::AlreadyExists));
                    }
                    sys::rename(&self.handle, temp, name)
                }
            },
        }
    }

    /// Removes the entry `name` (not a directory) of this directory.
    pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        check_name(name)?;
        sys::remove_file(&self.handle, name)
    }

    /// What the entry `name` of this directory is, without following it.
    pub fn kind_of(&self, name: &OsStr) -> io::Result<EntryKind> {
        check_name(name)?;
        sys::entry_kind(&self.handle, name)
    }

    /// Makes renames and links in this directory durable where the platform can sync
    /// a directory (best effort elsewhere).
    pub fn sync(&self) -> io::Result<()> {
        sys::sync(&self.handle)
    }

    /// Copies the permissions (and, where allowed, the owner) of the entry `name` of
    /// this directory onto `file`; `Ok(false)` when `name` does not exist.
    pub(crate) fn copy_attributes(&self, name: &OsStr, file: &File) -> io::Result<bool> {
        check_name(name)?;
        sys::copy_attributes(&self.handle, name, file)
    }

    /// The plain names of `rel`, or `NotBeneath`.
    fn names<'p>(&self, rel: &'p Path) -> Result<Vec<&'p OsStr>, AccessError> {
        names(rel).map_err(|()| AccessError::NotBeneath {
            path: rel.to_path_buf(),
            base: self.path.clone(),
        })
    }

    /// Walks `names` from this directory one component at a time, never following a
    /// symlink, optionally making missing directories.
    fn walk(&self, names: &[&OsStr], create: bool) -> Result<sys::Handle, AccessError> {
        let mut path = self.path.clone();
        let mut current: Option<sys::Handle> = None;
        for name in names {
            path.push(name);
            let dir = current.as_ref().unwrap_or(&self.handle);
            let next = match sys::child_dir(dir, name) {
                Ok(next) => next,
                Err(e) if create && e.kind() == io::ErrorKind::NotFound => {
                    match sys::mkdir(dir, name) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                        Err(e) => return Err(classify(dir, name, e, path, Want::Dir)),
                    }
                    sys::child_dir(dir, name)
                        .map_err(|e| classify(dir, name, e, path.clone(), Want::Dir))?
                }
                Err(e) => return Err(classify(dir, name, e, path, Want::Dir)),
            };
            current = Some(next);
        }
        match current {
            Some(handle) => Ok(handle),
            None => sys::duplicate(&self.handle).map_err(|source| AccessError::Io { path, source }),
        }
    }
}

/// Opens a host-chosen regular file (following symlinks in `path`) the way
/// [`WorkspaceDir::open_file`] opens workspace files: non-blocking, judged by `fstat`
/// of the handle, returned blocking.
pub fn open_trusted_file(path: &Path) -> Result<(File, fs::Metadata), AccessError> {
    let file = sys::open_trusted_file(path).map_err(|source| AccessError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    finish_regular(file, path.to_path_buf())
}

/// What a walk expected to find at a component, for error classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Dir,
    File,
}

/// Turns a failed open of the entry `name` of `dir` into an [`AccessError`], looking at
/// the entry with `lstat` to tell a symlink or a wrong type from other failures.
fn classify(
    dir: &sys::Handle,
    name: &OsStr,
    err: io::Error,
    path: PathBuf,
    want: Want,
) -> AccessError {
    match sys::entry_kind(dir, name) {
        Ok(EntryKind::Symlink) => AccessError::Symlink { path },
        Ok(EntryKind::Dir) if want == Want::File => AccessError::NotAFile { path },
        Ok(EntryKind::File | EntryKind::Other) if want == Want::Dir => {
            AccessError::NotADirectory { path }
        }
        Ok(EntryKind::Other) => AccessError::NotAFile { path },
        _ => AccessError::Io { path, source: err },
    }
}

/// Checks the opened handle is a regular file and makes it blocking again.
fn finish_regular(file: File, path: PathBuf) -> Result<(File, fs::Metadata), AccessError> {
    let meta = file.metadata().map_err(|source| AccessError::Io {
        path: path.clone(),
        source,
    })?;
    if !meta.is_file() {
        return Err(AccessError::NotAFile { path });
    }
    sys::clear_nonblocking(&file).map_err(|source| AccessError::Io { path, source })?;
    Ok((file, meta))
}

/// The plain names of a relative path (`.` components skipped); `Err` for anything
/// else (a root, a prefix, `..`).
fn names(rel: &Path) -> Result<Vec<&OsStr>, ()> {
    let mut out = Vec::new();
    for component in rel.components() {
        match component {
            Component::Normal(name) => out.push(name),
            Component::CurDir => {}
            _ => return Err(()),
        }
    }
    Ok(out)
}

/// Checks that `name` is one plain directory entry name.
fn check_name(name: &OsStr) -> io::Result<()> {
    let mut components = Path::new(name).components();
    match (components.next(), components.next()) {
        (Some(Component::Normal(n)), None) if n == name => Ok(()),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "`{}` is not a plain file name",
                name.to_string_lossy().escape_debug()
            ),
        )),
    }
}

/// The Unix implementation: file descriptors and `*at` calls through rustix.
#[cfg(unix)]
mod sys {
    use std::ffi::OsStr;
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsFd, OwnedFd};
    use std::path::Path;

    use rustix::fs::{AtFlags, FileType, Mode, OFlags};

    use super::EntryKind;

    /// A held directory.
    pub(super) type Handle = OwnedFd;

    /// Flags for a directory handle.
    const DIR: OFlags = OFlags::RDONLY
        .union(OFlags::DIRECTORY)
        .union(OFlags::CLOEXEC);
    /// Flags for reading a file: never blocks in `open` (FIFOs), never becomes a
    /// controlling terminal.
    const READ: OFlags = OFlags::RDONLY
        .union(OFlags::NONBLOCK)
        .union(OFlags::NOCTTY)
        .union(OFlags::CLOEXEC);

    pub(super) fn open_trusted_dir(path: &Path) -> io::Result<Handle> {
        Ok(rustix::fs::open(path, DIR, Mode::empty())?)
    }

    pub(super) fn open_trusted_file(path: &Path) -> io::Result<File> {
        Ok(File::from(rustix::fs::open(path, READ, Mode::empty())?))
    }

    pub(super) fn duplicate(dir: &Handle) -> io::Result<Handle> {
        dir.try_clone()
    }

    pub(super) fn child_dir(dir: &Handle, name: &OsStr) -> io::Result<Handle> {
        Ok(rustix::fs::openat(
            dir,
            name,
            DIR | OFlags::NOFOLLOW,
            Mode::empty(),
        )?)
    }

    pub(super) fn child_file(dir: &Handle, name: &OsStr) -> io::Result<File> {
        Ok(File::from(rustix::fs::openat(
            dir,
            name,
            READ | OFlags::NOFOLLOW,
            Mode::empty(),
        )?))
    }

    pub(super) fn mkdir(dir: &Handle, name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o777))?)
    }

    pub(super) fn entry_kind(dir: &Handle, name: &OsStr) -> io::Result<EntryKind> {
        let stat = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => EntryKind::File,
            FileType::Directory => EntryKind::Dir,
            FileType::Symlink => EntryKind::Symlink,
            _ => EntryKind::Other,
        })
    }

    pub(super) fn create_new(dir: &Handle, name: &OsStr) -> io::Result<File> {
        let flags = OFlags::RDWR
            | OFlags::CREATE
            | OFlags::EXCL
            | OFlags::NOFOLLOW
            | OFlags::NOCTTY
            | OFlags::CLOEXEC;
        Ok(File::from(rustix::fs::openat(
            dir,
            name,
            flags,
            Mode::from_raw_mode(0o666),
        )?))
    }

    pub(super) fn rename(dir: &Handle, from: &OsStr, to: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::renameat(dir, from, dir, to)?)
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub(super) fn rename_noreplace(dir: &Handle, from: &OsStr, to: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::renameat_with(
            dir,
            from,
            dir,
            to,
            rustix::fs::RenameFlags::NOREPLACE,
        )?)
    }

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    pub(super) fn rename_noreplace(_dir: &Handle, _from: &OsStr, _to: &OsStr) -> io::Result<()> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }

    pub(super) fn hard_link(dir: &Handle, from: &OsStr, to: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::linkat(dir, from, dir, to, AtFlags::empty())?)
    }

    pub(super) fn remove_file(dir: &Handle, name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(dir, name, AtFlags::empty())?)
    }

    pub(super) fn sync(dir: &Handle) -> io::Result<()> {
        Ok(rustix::fs::fsync(dir)?)
    }

    pub(super) fn clear_nonblocking(file: &File) -> io::Result<()> {
        let flags = rustix::fs::fcntl_getfl(file)?;
        Ok(rustix::fs::fcntl_setfl(file, flags - OFlags::NONBLOCK)?)
    }

    pub(super) fn copy_attributes(dir: &Handle, name: &OsStr, file: &File) -> io::Result<bool> {
        let stat = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(rustix::io::Errno::NOENT) => return Ok(false),
            Err(e) => return Err(e.into()),
        };
        rustix::fs::fchmod(file, Mode::from_raw_mode(stat.st_mode & 0o7777))?;
        // Only a privileged process may give a file away; otherwise the new file keeps
        // the writer's owner, which is the best that can be done.
        let _ = std::os::unix::fs::fchown(file.as_fd(), Some(stat.st_uid), Some(stat.st_gid));
        Ok(true)
    }

    /// `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`: one call for the whole
    /// path. `None` asks for the component walk: the kernel lacks `openat2`, a filter
    /// refuses it, or it failed (the walk then says precisely why).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn beneath(dir: &Handle, rel: &Path, flags: OFlags) -> Option<OwnedFd> {
        use std::sync::atomic::{AtomicBool, Ordering};

        use rustix::fs::ResolveFlags;
        use rustix::io::Errno;

        static MISSING: AtomicBool = AtomicBool::new(false);
        if MISSING.load(Ordering::Relaxed) {
            return None;
        }
        let resolve =
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        match rustix::fs::openat2(dir, rel, flags | OFlags::NOFOLLOW, Mode::empty(), resolve) {
            Ok(fd) => Some(fd),
            Err(Errno::NOSYS) => {
                MISSING.store(true, Ordering::Relaxed);
                None
            }
            Err(_) => None,
        }
    }

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    fn beneath(_dir: &Handle, _rel: &Path, _flags: OFlags) -> Option<OwnedFd> {
        None
    }

    pub(super) fn beneath_dir(dir: &Handle, rel: &Path) -> Option<Handle> {
        beneath(dir, rel, DIR)
    }

    pub(super) fn beneath_file(dir: &Handle, rel: &Path) -> Option<File> {
        beneath(dir, rel, READ).map(File::from)
    }
}

/// The fallback for platforms without `openat`: paths, checked component by component
/// with `symlink_metadata` (a symlink is refused), but not protected against a swap
/// between a check and its use.
#[cfg(not(unix))]
mod sys {
    use std::ffi::OsStr;
    use std::fs::{self, File, OpenOptions};
    use std::io;
    use std::path::{Path, PathBuf};

    use super::EntryKind;

    /// A "held" directory: its path.
    pub(super) type Handle = PathBuf;

    pub(super) fn open_trusted_dir(path: &Path) -> io::Result<Handle> {
        if fs::metadata(path)?.is_dir() {
            Ok(path.to_path_buf())
        } else {
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a directory",
            ))
        }
    }

    pub(super) fn open_trusted_file(path: &Path) -> io::Result<File> {
        File::open(path)
    }

    pub(super) fn duplicate(dir: &Handle) -> io::Result<Handle> {
        Ok(dir.clone())
    }

    pub(super) fn child_dir(dir: &Handle, name: &OsStr) -> io::Result<Handle> {
        let path = dir.join(name);
        match entry_kind(dir, name)? {
            EntryKind::Dir => Ok(path),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a plain directory",
            )),
        }
    }

    pub(super) fn child_file(dir: &Handle, name: &OsStr) -> io::Result<File> {
        match entry_kind(dir, name)? {
            EntryKind::Symlink => Err(io::Error::new(io::ErrorKind::InvalidInput, "a symlink")),
            _ => File::open(dir.join(name)),
        }
    }

    pub(super) fn mkdir(dir: &Handle, name: &OsStr) -> io::Result<()> {
        fs::create_dir(dir.join(name))
    }

    pub(super) fn entry_kind(dir: &Handle, name: &OsStr) -> io::Result<EntryKind> {
        let file_type = fs::symlink_metadata(dir.join(name))?.file_type();
        Ok(if file_type.is_symlink() {
            EntryKind::Symlink
        } else if file_type.is_dir() {
            EntryKind::Dir
        } else if file_type.is_file() {
            EntryKind::File
        } else {
            EntryKind::Other
        })
    }

    pub(super) fn create_new(dir: &Handle, name: &OsStr) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(dir.join(name))
    }

    pub(super) fn rename(dir: &Handle, from: &OsStr, to: &OsStr) -> io::Result<()> {
        fs::rename(dir.join(from), dir.join(to))
    }

    pub(super) fn rename_noreplace(_dir: &Handle, _from: &OsStr, _to: &OsStr) -> io::Result<()> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }

    pub(super) fn hard_link(dir: &Handle, from: &OsStr, to: &OsStr) -> io::Result<()> {
        fs::hard_link(dir.join(from), dir.join(to))
    }

    pub(super) fn remove_file(dir: &Handle, name: &OsStr) -> io::Result<()> {
        fs::remove_file(dir.join(name))
    }

    pub(super) fn sync(_dir: &Handle) -> io::Result<()> {
        Ok(())
    }

    pub(super) fn clear_nonblocking(_file: &File) -> io::Result<()> {
        Ok(())
    }

    pub(super) fn copy_attributes(dir: &Handle, name: &OsStr, file: &File) -> io::Result<bool> {
        match fs::symlink_metadata(dir.join(name)) {
            Ok(meta) => {
                file.set_permissions(meta.permissions())?;
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    pub(super) fn beneath_dir(_dir: &Handle, _rel: &Path) -> Option<Handle> {
        None
    }

    pub(super) fn beneath_file(_dir: &Handle, _rel: &Path) -> Option<File> {
        None
    }
}

#[cfg(all(test, unix))]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::os::unix::fs::symlink;

    use super::*;

    /// `<tmp>/ws` with a file, a directory, symlinks inside and out, and a FIFO.
    fn fixture() -> (tempfile::TempDir, WorkspaceDir) {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        fs::create_dir_all(ws.join("dir/sub")).unwrap();
        fs::create_dir_all(tmp.path().join("outside")).unwrap();
        fs::write(ws.join("dir/file.txt"), "inside\n").unwrap();
        fs::write(tmp.path().join("outside/x"), "outside\n").unwrap();
        symlink("dir", ws.join("link_dir")).unwrap();
        symlink("dir/file.txt", ws.join("link_file")).unwrap();
        symlink("../outside", ws.join("out")).unwrap();
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            ws.join("fifo"),
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let root = WorkspaceDir::open_root(&ws).unwrap();
        (tmp, root)
    }

    fn verdict<T>(result: &Result<T, AccessError>) -> &'static str {
        match result {
            Ok(_) => "ok",
            Err(AccessError::Symlink { .. }) => "symlink",
            Err(AccessError::NotADirectory { .. }) => "not a directory",
            Err(AccessError::NotAFile { .. }) => "not a file",
            Err(AccessError::NotBeneath { .. }) => "not beneath",
            Err(e) if e.is_not_found() => "not found",
            Err(AccessError::Io { .. }) => "io",
        }
    }

    /// (path, open_file, open_dir): `openat2` and the component walk agree, and
    /// neither ever follows a symlink.
    const TABLE: [(&str, &str, &str); 14] = [
        ("dir/file.txt", "ok", "not a directory"),
        ("dir", "not a file", "ok"),
        ("dir/sub", "not a file", "ok"),
        ("./dir/./file.txt", "ok", "not a directory"),
        ("", "not a file", "ok"),
        ("link_dir/file.txt", "symlink", "symlink"),
        ("link_file", "symlink", "symlink"),
        ("out/x", "symlink", "symlink"),
        ("fifo", "not a file", "not a directory"),
        ("missing", "not found", "not found"),
        ("dir/missing/x", "not found", "not found"),
        ("dir/file.txt/x", "not a directory", "not a directory"),
        ("../outside/x", "not beneath", "not beneath"),
        ("/etc/passwd", "not beneath", "not beneath"),
    ];

    #[test]
    fn open_table_with_openat2_and_with_the_walk() {
        let (_tmp, root) = fixture();
        for (rel, file, dir) in TABLE {
            let rel_path = Path::new(rel);
            assert_eq!(
                verdict(&root.open_file(rel_path)),
                file,
                "open_file {rel:?}"
            );
            assert_eq!(
                verdict(&root.open_file_walked(rel_path)),
                file,
                "walked open_file {rel:?}"
            );
            assert_eq!(verdict(&root.open_dir(rel_path)), dir, "open_dir {rel:?}");
            assert_eq!(
                verdict(&root.open_dir_walked(rel_path)),
                dir,
                "walked open_dir {rel:?}"
            );
        }
        let (mut file, meta) = root.open_file(Path::new("dir/file.txt")).unwrap();
        assert!(meta.is_file());
        let mut text = String::new();
        io::Read::read_to_string(&mut file, &mut text).unwrap();
        assert_eq!(text, "inside\n");
        // The handle is blocking again after the non-blocking open.
        let flags = rustix::fs::fcntl_getfl(&file).unwrap();
        assert!(!flags.contains(rustix::fs::OFlags::NONBLOCK));
    }

    #[test]
    fn create_dir_all_never_follows_a_link() {
        let (tmp, root) = fixture();
        let made = root.create_dir_all(Path::new("new/a/b")).unwrap();
        assert_eq!(made.path(), root.path().join("new/a/b"));
        assert!(root.path().join("new/a/b").is_dir());
        for (rel, expect) in [
            ("out/new", "symlink"),
            ("link_dir/new", "symlink"),
            ("dir/file.txt/new", "not a directory"),
            ("../escape", "not beneath"),
            ("dir/sub", "ok"),
        ] {
            assert_eq!(
                verdict(&root.create_dir_all(Path::new(rel))),
                expect,
                "{rel}"
            );
        }
        assert_eq!(
            fs::read_dir(tmp.path().join("outside")).unwrap().count(),
            1,
            "nothing was created outside"
        );
        assert!(!root.path().join("dir/new").exists());
    }

    #[test]
    fn single_name_operations() {
        let (_tmp, root) = fixture();
        let dir = root.open_dir(Path::new("dir")).unwrap();
        let mut temp = dir.create_new(OsStr::new("t.tmp")).unwrap();
        io::Write::write_all(&mut temp, b"new").unwrap();
        drop(temp);
        // An existing name is never replaced, a symlink included.
        let taken = dir.create_new(OsStr::new("file.txt")).unwrap_err();
        assert_eq!(taken.kind(), io::ErrorKind::AlreadyExists);
        let placed = dir.place_new(OsStr::new("t.tmp"), OsStr::new("file.txt"));
        assert_eq!(placed.unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        dir.place_new(OsStr::new("t.tmp"), OsStr::new("fresh.txt"))
            .unwrap();
        assert_eq!(
            dir.kind_of(OsStr::new("t.tmp")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("fresh.txt")).unwrap(),
            "new"
        );
        assert_eq!(root.kind_of(OsStr::new("out")).unwrap(), EntryKind::Symlink);
        assert_eq!(root.kind_of(OsStr::new("fifo")).unwrap(), EntryKind::Other);
        assert_eq!(
            root.entry_kind(Path::new("dir/fresh.txt")).unwrap(),
            EntryKind::File
        );
        assert_eq!(verdict(&root.entry_kind(Path::new("out/x"))), "symlink");
        // Names with a separator or `..` are refused.
        for bad in ["a/b", "..", ".", ""] {
            let err = dir.create_new(OsStr::new(bad)).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
        assert_eq!(
            root.relative(&root.path().join("dir/x")).unwrap(),
            Path::new("dir/x")
        );
        assert_eq!(
            verdict(&root.relative(Path::new("/etc/passwd"))),
            "not beneath"
        );
    }
}
