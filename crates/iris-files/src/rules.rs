//! The ignore rules of `list_files` and `grep_search` (`.ignore`, `.gitignore` and
//! `.git/info/exclude`), read through the held workspace root.
//!
//! The `ignore` crate's walker would open these files itself, by path, following
//! symlinks, blocking on FIFOs, reading them without bound and looking in every
//! directory above the walk's root (and wherever a `.git` file's `gitdir:` points). So
//! its own loading is off, and the walker's entry filter asks [`IgnoreRules`] instead:
//!
//! - only directories from the workspace root down are consulted, never one above it;
//! - each file is opened from the held root ([`WorkspaceDir::open_file`]: no symlink
//!   followed anywhere on the path, non-blocking, judged by `fstat` of the handle), so a
//!   symlink, FIFO or device is simply not a rules file;
//! - at most [`MAX_RULES_BYTES`] are read; a longer file is not applied at all;
//! - `.git/info/exclude` is read only where `.git` is a real directory (a `.git` file's
//!   `gitdir:` is never followed).
//!
//! Precedence is the crate's: for each kind of file the deepest directory with a
//! matching pattern decides, and a decision from `.ignore` files beats one from
//! `.gitignore` files, which beats one from `.git/info/exclude`.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use iris_fs::workspace::WorkspaceDir;

/// Largest ignore file applied, 1 MiB; a longer one is skipped whole.
pub(crate) const MAX_RULES_BYTES: u64 = 1 << 20;

/// The rules files of one directory, relative to it.
const IGNORE: &str = ".ignore";
const GIT_IGNORE: &str = ".gitignore";
const GIT_EXCLUDE: &str = ".git/info/exclude";

/// The matchers one directory contributes (any of them may be empty).
#[derive(Debug)]
struct DirRules {
    ignore: Gitignore,
    git_ignore: Gitignore,
    git_exclude: Gitignore,
}

/// A directory with rules and the nearest ancestor directory with rules.
#[derive(Debug)]
struct Level {
    rules: DirRules,
    parent: Chain,
}

/// The rules that apply inside a directory, deepest first (`None`: no rules at all).
type Chain = Option<Arc<Level>>;

/// The ignore rules of one walk: a cache from each directory met (by absolute path, at
/// or below the workspace root) to the chain of rules that apply inside it.
#[derive(Debug)]
pub(crate) struct IgnoreRules {
    ws: WorkspaceDir,
    chains: RwLock<HashMap<PathBuf, Chain>>,
}

impl IgnoreRules {
    /// Rules read through `ws` (a handle of the workspace root).
    pub(crate) fn new(ws: WorkspaceDir) -> Self {
        Self {
            ws,
            chains: RwLock::new(HashMap::new()),
        }
    }

    /// Whether the entry `path` (a directory when `is_dir`) is hidden by the rules of
    /// the directories from its parent up to the workspace root.
    pub(crate) fn is_ignored(&self, path: &Path, is_dir: bool) -> bool {
        let Some(dir) = path.parent() else {
            return false;
        };
        let chain = self.chain(dir);
        let (mut ignore, mut git_ignore, mut git_exclude) = (Match::None, Match::None, Match::None);
        let mut level = chain.as_deref();
        while let Some(at) = level {
            let rules = &at.rules;
            if ignore.is_none() {
                ignore = rules.ignore.matched(path, is_dir);
            }
            if git_ignore.is_none() {
                git_ignore = rules.git_ignore.matched(path, is_dir);
            }
            if git_exclude.is_none() {
                git_exclude = rules.git_exclude.matched(path, is_dir);
            }
            level = at.parent.as_deref();
        }
        ignore.or(git_ignore).or(git_exclude).is_ignore()
    }

    /// The rules that apply inside `dir`, loading the directories not met yet (from
    /// the nearest known ancestor down, the lock never held while reading).
    fn chain(&self, dir: &Path) -> Chain {
        let root = self.ws.path();
        let mut missing = Vec::new();
        let mut base: Chain = None;
        {
            let chains = self.chains.read().unwrap_or_else(PoisonError::into_inner);
            let mut at = dir;
            loop {
                if let Some(chain) = chains.get(at) {
                    base = chain.clone();
                    break;
                }
                // Nothing outside the workspace is ever read.
                if self.ws.relative(at).is_err() {
                    return base;
                }
                missing.push(at);
                if at == root {
                    break;
                }
                match at.parent() {
                    Some(parent) => at = parent,
                    None => break,
                }
            }
        }
        for at in missing.into_iter().rev() {
            let chain = match self.load(at) {
                Some(rules) => Some(Arc::new(Level {
                    rules,
                    parent: base,
                })),
                None => base,
            };
            base = self
                .chains
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(at.to_path_buf())
                .or_insert(chain)
                .clone();
        }
        base
    }

    /// The rules of the directory `dir` (`None` when it has none).
    fn load(&self, dir: &Path) -> Option<DirRules> {
        let rel = self.ws.relative(dir).ok()?;
        let matcher = |name: &str| self.matcher(dir, &rel.join(name));
        let rules = DirRules {
            ignore: matcher(IGNORE),
            git_ignore: matcher(GIT_IGNORE),
            git_exclude: matcher(GIT_EXCLUDE),
        };
        let empty =
            rules.ignore.is_empty() && rules.git_ignore.is_empty() && rules.git_exclude.is_empty();
        (!empty).then_some(rules)
    }

    /// The patterns of the file `rel` (relative to the workspace root) for entries
    /// below `dir`: empty when it is missing, not a regular file, reached through a
    /// symlink, unreadable or over [`MAX_RULES_BYTES`].
    fn matcher(&self, dir: &Path, rel: &Path) -> Gitignore {
        let Some(bytes) = self.read_bounded(rel) else {
            return Gitignore::empty();
        };
        // As the crate reads them: lines split at `\n` without a trailing `\r`, lines
        // that are not UTF-8 and patterns that do not parse skipped, a leading BOM
        // dropped.
        let mut lines = Vec::new();
        for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let Ok(line) = std::str::from_utf8(line) else {
                continue;
            };
            let line = if i == 0 {
                line.trim_start_matches('\u{feff}')
            } else {
                line
            };
            lines.push(line);
        }
        build_rules(dir, &lines)
    }

    /// At most [`MAX_RULES_BYTES`] of the regular file `rel`, opened from the held root.
    fn read_bounded(&self, rel: &Path) -> Option<Vec<u8>> {
        let (file, meta) = self.ws.open_file(rel).ok()?;
        if meta.len() > MAX_RULES_BYTES {
            return None;
        }
        let mut bytes = Vec::new();
        file.take(MAX_RULES_BYTES + 1)
            .read_to_end(&mut bytes)
            .ok()?;
        (bytes.len() as u64 <= MAX_RULES_BYTES).then_some(bytes)
    }
}

/// The matcher of a rules file's lines. A line that parses can still fail the whole
/// set when it is compiled (one so long its automaton passes the size limit), so a
/// failure drops only such lines: each line is tried alone, and should the rest still
/// be too large together, the longest leading run of them that compiles is kept (a
/// later line may override an earlier one, so order is never shuffled).
fn build_rules(dir: &Path, lines: &[&str]) -> Gitignore {
    if let Some(all) = try_build(dir, lines) {
        return all;
    }
    let kept: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|line| try_build(dir, &[line]).is_some())
        .collect();
    if let Some(rules) = try_build(dir, &kept) {
        return rules;
    }
    // `lo` lines compile, `hi` lines do not.
    let (mut lo, mut hi) = (0, kept.len());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if try_build(dir, &kept[..mid]).is_some() {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    try_build(dir, &kept[..lo]).unwrap_or_else(Gitignore::empty)
}

/// The matcher of `lines`, or `None` when the set does not compile. Lines that do not
/// parse are skipped, as the `ignore` crate does when it reads a file.
fn try_build(dir: &Path, lines: &[&str]) -> Option<Gitignore> {
    let mut builder = GitignoreBuilder::new(dir);
    for line in lines {
        let _ = builder.add_line(None, line);
    }
    builder.build().ok()
}
