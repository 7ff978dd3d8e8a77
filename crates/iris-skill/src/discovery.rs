//! Skill discovery: [`resolve_skills_root`], [`discover_skills`] and their options and
//! result.
//!
//! The scan rules: each root is relative to the workspace; only its
//! direct children are candidate skills (nothing deeper is searched); a candidate's
//! directory name is lower kebab-case and holds a `SKILL.md` whose frontmatter has a
//! non-empty `description`. Hidden entries (names starting with `.`) and plain files
//! in a root are ignored silently; every other problem becomes a
//! [`SkillDiagnostic`].

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use iris_fs::bounded_read::{ReadError, read_regular_text};
use iris_fs::workspace::{PathError, WorkspacePolicy};
use serde::Serialize;

use crate::diagnostic::{SkillDiagnostic, SkillDiagnosticCode};
use crate::error::{Error, Result};
use crate::metadata::{MAX_SKILL_FILE_BYTES, SKILL_FILE, SkillMetadata, parse_skill_file};
use crate::name::check_kebab_name;

/// The default skills root, relative to the workspace.
pub const DEFAULT_SKILLS_ROOT: &str = ".agents/skills";
/// The default cap on a catalog description, in characters.
pub const DEFAULT_MAX_DESCRIPTION_CHARS: usize = 1024;

/// Where a skills root comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SkillScope {
    /// A root inside the project workspace (the only scope defined).
    Project,
}

/// What [`discover_skills`] scans.
///
/// ```
/// use iris_skill::{SkillDiscoveryOptions, SkillScope};
/// let options = SkillDiscoveryOptions::new("/srv/workspace");
/// assert_eq!(options.roots, vec![(SkillScope::Project, ".agents/skills".into())]);
/// assert_eq!(options.max_description_chars, 1024);
///
/// let options = options
///     .with_roots([(SkillScope::Project, "skills")])
///     .with_max_description_chars(200);
/// assert_eq!(options.roots.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDiscoveryOptions {
    /// The workspace; every root and skill folder must resolve inside it.
    pub workspace_root: PathBuf,
    /// The roots to scan, in order. A relative root is relative to the workspace.
    /// When two roots hold the same name, the first one wins.
    pub roots: Vec<(SkillScope, PathBuf)>,
    /// Cap on a catalog description, in characters (at least 1). Longer ones are
    /// truncated as [`SkillDiagnosticCode::DescriptionTruncated`] describes.
    pub max_description_chars: usize,
}

impl SkillDiscoveryOptions {
    /// Options for a workspace with the default root (`.agents/skills`, project
    /// scope) and the default description cap (1024).
    pub fn new(workspace_root: impl Into<PathBuf>) -> Self {
        Self {
            workspace_root: workspace_root.into(),
            roots: vec![(SkillScope::Project, PathBuf::from(DEFAULT_SKILLS_ROOT))],
            max_description_chars: DEFAULT_MAX_DESCRIPTION_CHARS,
        }
    }

    /// Replaces the roots.
    #[must_use]
    pub fn with_roots<P: Into<PathBuf>>(
        mut self,
        roots: impl IntoIterator<Item = (SkillScope, P)>,
    ) -> Self {
        self.roots = roots.into_iter().map(|(s, p)| (s, p.into())).collect();
        self
    }

    /// Sets the description cap.
    #[must_use]
    pub fn with_max_description_chars(mut self, max: usize) -> Self {
        self.max_description_chars = max;
        self
    }
}

/// What [`discover_skills`] found: the usable skills, sorted by name, and a
/// diagnostic for every root or folder that was skipped or kept with a warning.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillDiscoveryResult {
    /// The canonical workspace root the scan was confined to.
    pub workspace_root: PathBuf,
    /// The usable skills, sorted by name.
    pub skills: Vec<SkillMetadata>,
    /// Problems, in scan order (roots in order, entries sorted by file name).
    pub diagnostics: Vec<SkillDiagnostic>,
}

/// Resolves a skills root against the workspace and confines it there.
///
/// A relative `root` is relative to `workspace_root`; an absolute one must lie inside
/// it. Symlinks are resolved before the check. Returns the canonical directory.
///
/// # Errors
/// [`Error::RootNotFound`] when nothing is there, [`Error::Path`] when it resolves
/// outside the workspace (`PATH_OUTSIDE_WORKSPACE`) or cannot be resolved, and
/// [`Error::RootNotDirectory`] when it is a file.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let ws = tempfile::tempdir()?;
/// std::fs::create_dir_all(ws.path().join(".agents/skills"))?;
/// let root = iris_skill::resolve_skills_root(ws.path(), ".agents/skills".as_ref())?;
/// assert!(root.ends_with(".agents/skills"));
///
/// let err = iris_skill::resolve_skills_root(ws.path(), "missing".as_ref()).unwrap_err();
/// assert_eq!(err.code(), "SKILL_ROOT_NOT_FOUND");
/// # Ok(()) }
/// ```
pub fn resolve_skills_root(workspace_root: &Path, root: &Path) -> Result<PathBuf> {
    let joined = workspace_root.join(root);
    // `try_exists` follows symlinks: a dangling link is "not found", like a missing
    // directory. An error while checking falls through to the policy, which reports it.
    if matches!(joined.try_exists(), Ok(false)) {
        return Err(Error::RootNotFound { path: joined });
    }
    let resolved = WorkspacePolicy::new().resolve_path(root, workspace_root)?;
    if !resolved.is_dir() {
        return Err(Error::RootNotDirectory { path: resolved });
    }
    Ok(resolved)
}

/// Scans the roots for skills.
///
/// Never fails because of one skill or one root: those problems become diagnostics.
///
/// # Errors
/// [`Error::Config`] when `max_description_chars` is 0, and [`Error::Path`] when the
/// workspace root itself cannot be resolved.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use iris_skill::{discover_skills, SkillDiscoveryOptions};
/// let ws = tempfile::tempdir()?;
/// let dir = ws.path().join(".agents/skills/hello");
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("SKILL.md"), "---\ndescription: Say hello.\n---\nSay hello.\n")?;
///
/// let found = discover_skills(&SkillDiscoveryOptions::new(ws.path()))?;
/// assert_eq!(found.skills[0].name, "hello");
/// assert!(found.diagnostics.is_empty());
/// # Ok(()) }
/// ```
pub fn discover_skills(options: &SkillDiscoveryOptions) -> Result<SkillDiscoveryResult> {
    if options.max_description_chars == 0 {
        return Err(Error::Config {
            field: "max_description_chars".into(),
            reason: "must be at least 1".into(),
        });
    }
    let workspace_root = WorkspacePolicy::new().resolve_path(".", &options.workspace_root)?;
    let mut scan = Scan {
        workspace_root,
        max_description_chars: options.max_description_chars,
        skills: Vec::new(),
        seen: BTreeSet::new(),
        diagnostics: Vec::new(),
    };
    for (scope, root) in &options.roots {
        scan.root(*scope, root);
    }
    let Scan {
        workspace_root,
        mut skills,
        diagnostics,
        ..
    } = scan;
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(SkillDiscoveryResult {
        workspace_root,
        skills,
        diagnostics,
    })
}

struct Scan {
    workspace_root: PathBuf,
    max_description_chars: usize,
    skills: Vec<SkillMetadata>,
    seen: BTreeSet<String>,
    diagnostics: Vec<SkillDiagnostic>,
}

impl Scan {
    fn report(
        &mut self,
        path: impl Into<PathBuf>,
        skill: Option<&str>,
        code: SkillDiagnosticCode,
        message: impl Into<String>,
    ) {
        self.diagnostics.push(SkillDiagnostic {
            path: path.into(),
            skill: skill.map(str::to_owned),
            code,
            message: message.into(),
        });
    }

    fn root(&mut self, scope: SkillScope, root: &Path) {
        let shown = self.workspace_root.join(root);
        let dir = match resolve_skills_root(&self.workspace_root, root) {
            Ok(dir) => dir,
            Err(e) => {
                let code = match e {
                    Error::RootNotFound { .. } => SkillDiagnosticCode::RootNotFound,
                    _ => SkillDiagnosticCode::RootInvalid,
                };
                self.report(shown, None, code, e.to_string());
                return;
            }
        };
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) => {
                let message = format!("skills root cannot be listed: {e}");
                self.report(dir, None, SkillDiagnosticCode::RootInvalid, message);
                return;
            }
        };
        // Sorting makes the diagnostics order, and so snapshots, independent of the
        // file system's listing order.
        let mut names: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect();
        names.sort();
        for name in names {
            self.entry(scope, root, &dir.join(&name));
        }
    }

    /// Examines one direct child of a root; `root` is the root as configured, for
    /// messages.
    fn entry(&mut self, scope: SkillScope, root: &Path, path: &Path) {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            let message = "directory name is not valid UTF-8";
            self.report(path, None, SkillDiagnosticCode::InvalidName, message);
            return;
        };
        if name.starts_with('.') {
            return;
        }
        let Ok(link_meta) = path.symlink_metadata() else {
            return; // Removed while scanning: nothing to report.
        };
        let is_dir = if link_meta.file_type().is_symlink() {
            match path.metadata() {
                Ok(target) => target.is_dir(),
                Err(_) => {
                    let message = "symbolic link points to nothing";
                    let skill = check_kebab_name(name).ok().map(|()| name);
                    self.report(path, skill, SkillDiagnosticCode::FileMissing, message);
                    return;
                }
            }
        } else {
            link_meta.is_dir()
        };
        if !is_dir {
            return; // A README or other file next to the skills.
        }
        if let Err(reason) = check_kebab_name(name) {
            let message = format!("directory name `{name}` {reason}; the folder is skipped");
            self.report(path, None, SkillDiagnosticCode::InvalidName, message);
            return;
        }
        let skill = Some(name);
        let dir = match self.confine(path) {
            Ok(dir) => dir,
            Err(e) => {
                self.report_path_error(path, name, "skill folder", &e);
                return;
            }
        };
        let file = dir.join(SKILL_FILE);
        if file.symlink_metadata().is_err() {
            let message = format!("no {SKILL_FILE} in the skill folder; the folder is skipped");
            self.report(path, skill, SkillDiagnosticCode::FileMissing, message);
            return;
        }
        let file = match self.confine(&file) {
            Ok(file) if file.is_file() => file,
            Ok(_) => {
                let message = format!("{SKILL_FILE} is not a regular file");
                self.report(path, skill, SkillDiagnosticCode::FileMissing, message);
                return;
            }
            Err(e) => {
                self.report_path_error(&dir.join(SKILL_FILE), name, SKILL_FILE, &e);
                return;
            }
        };
        // Bounded and checked on the handle: a file swapped for a FIFO or a device
        // since the check above is refused, and an oversized one is never read.
        let text = match read_regular_text(&file, MAX_SKILL_FILE_BYTES) {
            Ok(text) => text,
            Err(e) => {
                let (code, message) = match e {
                    ReadError::TooLarge { .. } => (
                        SkillDiagnosticCode::TooLarge,
                        format!("{SKILL_FILE} {e}; the skill is skipped"),
                    ),
                    ReadError::NotRegular { .. } => (
                        SkillDiagnosticCode::FileMissing,
                        format!("{SKILL_FILE} {e}"),
                    ),
                    ReadError::Io(e) => (
                        SkillDiagnosticCode::ReadFailed,
                        format!("{SKILL_FILE} cannot be read as UTF-8 text: {e}"),
                    ),
                    ReadError::NotUtf8 => {
                        (SkillDiagnosticCode::ReadFailed, format!("{SKILL_FILE} {e}"))
                    }
                };
                self.report(file, skill, code, message);
                return;
            }
        };
        let (frontmatter, findings) = parse_skill_file(name, &text, self.max_description_chars);
        for (code, message) in findings {
            self.report(&file, skill, code, message);
        }
        let Some(fm) = frontmatter else {
            return;
        };
        if !self.seen.insert(name.to_owned()) {
            let message = format!(
                "a skill named `{name}` was already found in an earlier root; this one \
                 (under `{}`) is skipped",
                root.display()
            );
            self.report(path, skill, SkillDiagnosticCode::Duplicate, message);
            return;
        }
        self.skills.push(SkillMetadata {
            name: name.to_owned(),
            description: fm.description,
            path: dir,
            scope,
            license: fm.license,
            compatibility: fm.compatibility,
            allowed_tools: fm.allowed_tools,
            metadata: fm.metadata,
        });
    }

    fn confine(&self, path: &Path) -> std::result::Result<PathBuf, PathError> {
        WorkspacePolicy::new().resolve_path(path, &self.workspace_root)
    }

    fn report_path_error(&mut self, path: &Path, name: &str, what: &str, e: &PathError) {
        let (code, message) = match e {
            PathError::OutsideWorkspace { .. } => (
                SkillDiagnosticCode::OutsideWorkspace,
                format!("{what} resolves outside the workspace; it is skipped"),
            ),
            _ => (
                SkillDiagnosticCode::ReadFailed,
                format!("{what} cannot be resolved: {e}"),
            ),
        };
        self.report(path, Some(name), code, message);
    }
}
