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
use iris_executor::workspace::WorkspaceDir;

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
        let mut builder = GitignoreBuilder::new(dir);
        // As the crate reads them: lines split at `\n` without a trailing `\r`, lines
        // that are not UTF-8 and patterns that do not parse skipped, a leading BOM
        // dropped.
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
            let _ = builder.add_line(None, line);
        }
        builder.build().unwrap_or_else(|_| Gitignore::empty())
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
