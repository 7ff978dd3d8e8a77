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
//! The check is a snapshot; a concurrent process that swaps a directory for a symlink
//! after the check is outside what a path resolver can prevent.
//!
//! ```
//! use iris_executor::WorkspacePolicy;
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
use std::ffi::OsString;
use std::fs;
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
    /// use iris_executor::WorkspacePolicy;
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

/// Confines file paths to a workspace. See the [module docs](self) for the rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkspacePolicy {}

impl WorkspacePolicy {
    /// A policy confining paths to the workspace root.
    pub fn new() -> Self {
        Self {}
    }

    /// Resolves `path` (relative to `workspace_root`, or absolute) to a canonical
    /// absolute path inside the canonical workspace root.
    ///
    /// Symlinks (dangling ones included) and `..` are resolved before the check; the
    /// path need not exist. An escape is [`PathError::OutsideWorkspace`], unusable
    /// input or a missing root is [`PathError::Invalid`]. The root itself is allowed.
    ///
    /// ```
    /// use iris_executor::WorkspacePolicy;
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
