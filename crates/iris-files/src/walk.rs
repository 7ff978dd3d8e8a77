//! Tree walking and searching on the ripgrep crates (`ignore`, `globset`,
//! `grep-searcher`, `grep-regex`): parallel, gitignore-aware, and bounded in memory.
//!
//! Results are deterministic although the walk is parallel: every thread keeps the
//! smallest `k` results in a bounded heap, the heaps are merged at the end and the
//! survivors sorted, so the answer is "the first `k` in path order" plus an exact
//! total.

use std::collections::BinaryHeap;
use std::io;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkState};

use iris_fs::blocking::Stop;
use iris_fs::workspace::{EntryKind, WorkspaceDir};
use iris_tools_core::{ToolErrorInfo, codes as core_codes};

use crate::codes;
use crate::config::FileToolsConfig;
use crate::rules::IgnoreRules;
use crate::text::clip_line;
use crate::tools::MAX_GLOB_CHARS;

/// Keeps the `k` smallest items pushed into it.
#[derive(Debug)]
pub(crate) struct TopK<T: Ord> {
    k: usize,
    // A max-heap of the kept items: the root is the first to drop.
    heap: BinaryHeap<T>,
}

impl<T: Ord> TopK<T> {
    pub(crate) fn new(k: usize) -> Self {
        Self {
            k,
            heap: BinaryHeap::with_capacity(k.min(4096) + 1),
        }
    }

    pub(crate) fn push(&mut self, item: T) {
        if self.k == 0 {
            return;
        }
        if self.heap.len() < self.k {
            self.heap.push(item);
        } else if self.heap.peek().is_some_and(|max| item < *max) {
            self.heap.pop();
            self.heap.push(item);
        }
    }

    fn merge(&mut self, other: TopK<T>) {
        for item in other.heap {
            self.push(item);
        }
    }

    pub(crate) fn into_sorted_vec(self) -> Vec<T> {
        self.heap.into_sorted_vec()
    }
}

/// What one walker thread (or the whole walk) found.
#[derive(Debug)]
pub(crate) struct Tally<T: Ord> {
    pub(crate) top: TopK<T>,
    /// Matching items (files for a listing, lines for a search).
    pub(crate) total: u64,
    /// Files visited.
    pub(crate) files: u64,
    /// Files with at least one match (searches only).
    pub(crate) files_matched: u64,
    /// Entries that could not be read and were skipped.
    pub(crate) errors: u64,
    /// Files skipped because a line is longer than the search's line bound.
    pub(crate) long_lines: u64,
}

impl<T: Ord> Tally<T> {
    fn new(k: usize) -> Self {
        Self {
            top: TopK::new(k),
            total: 0,
            files: 0,
            files_matched: 0,
            errors: 0,
            long_lines: 0,
        }
    }

    fn merge(&mut self, other: Tally<T>) {
        self.top.merge(other.top);
        self.total += other.total;
        self.files += other.files;
        self.files_matched += other.files_matched;
        self.errors += other.errors;
        self.long_lines += other.long_lines;
    }
}

/// The walker both tools use: hidden files included, `.gitignore` / `.ignore` /
/// `.git/info/exclude` honoured (also outside git repositories) unless disabled, the
/// host's global git excludes not read (results must not depend on who runs the
/// agent), symlinks not followed, and the configured directory names skipped.
///
/// The `ignore` crate's own loading of ignore files is off: it opens them by path
/// (following symlinks, blocking on a FIFO, without a size bound, in every directory
/// above the root too). The rules are applied by the entry filter instead, from files
/// read through the held workspace root `ws` ([`IgnoreRules`]).
fn walker(
    root: &Path,
    ws: &WorkspaceDir,
    config: &FileToolsConfig,
) -> Result<ignore::WalkParallel, ToolErrorInfo> {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .parents(false)
        .ignore(false)
        .git_ignore(false)
        .git_exclude(false)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .threads(config.threads);
    let rules = if config.respect_ignore_files {
        let handle = ws.open_dir(Path::new("")).map_err(|e| {
            ToolErrorInfo::new(
                core_codes::IO_ERROR,
                format!("cannot open the workspace root: {e}"),
            )
        })?;
        Some(IgnoreRules::new(handle))
    } else {
        None
    };
    let skip = config.skip_dirs.clone();
    if rules.is_some() || !skip.is_empty() {
        builder.filter_entry(move |entry| {
            if entry.depth() == 0 {
                return true;
            }
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            if is_dir && skip.iter().any(|s| entry.file_name() == s.as_str()) {
                return false;
            }
            !rules
                .as_ref()
                .is_some_and(|rules| rules.is_ignored(entry.path(), is_dir))
        });
    }
    Ok(builder.build_parallel())
}

/// `path` relative to `base` with `/` separators.
fn rel_string(base: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(base).unwrap_or(path);
    let s = rel.to_string_lossy();
    if std::path::MAIN_SEPARATOR == '/' {
        s.into_owned()
    } else {
        s.replace(std::path::MAIN_SEPARATOR, "/")
    }
}

/// A visitor that merges its thread-local tally into the shared one when dropped.
struct Visitor<'s, T: Ord + Send, F> {
    local: Option<Tally<T>>,
    shared: &'s Mutex<Tally<T>>,
    stop: &'s Stop,
    visit: F,
}

impl<T: Ord + Send, F> Drop for Visitor<'_, T, F> {
    fn drop(&mut self) {
        if let Some(local) = self.local.take() {
            self.shared
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .merge(local);
        }
    }
}

impl<T, F> ParallelVisitor for Visitor<'_, T, F>
where
    T: Ord + Send,
    F: FnMut(&DirEntry, &mut Tally<T>) + Send,
{
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.stop.requested() {
            return WalkState::Quit;
        }
        let Some(tally) = self.local.as_mut() else {
            return WalkState::Quit;
        };
        match entry {
            Ok(entry) => {
                if entry.file_type().is_some_and(|t| t.is_file()) {
                    tally.files += 1;
                    (self.visit)(&entry, tally);
                }
            }
            Err(_) => tally.errors += 1,
        }
        WalkState::Continue
    }
}

struct Builder<'s, T: Ord, M> {
    k: usize,
    shared: &'s Mutex<Tally<T>>,
    stop: &'s Stop,
    make: M,
}

impl<'s, T, M, F> ParallelVisitorBuilder<'s> for Builder<'s, T, M>
where
    T: Ord + Send + 's,
    M: FnMut() -> F,
    F: FnMut(&DirEntry, &mut Tally<T>) + Send + 's,
{
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            local: Some(Tally::new(self.k)),
            shared: self.shared,
            stop: self.stop,
            visit: (self.make)(),
        })
    }
}

/// Walks `root` in parallel; `make` builds one per-thread visit function.
fn walk<T, M, F>(
    root: &Path,
    ws: &WorkspaceDir,
    config: &FileToolsConfig,
    k: usize,
    stop: &Stop,
    make: M,
) -> Result<Tally<T>, ToolErrorInfo>
where
    T: Ord + Send,
    M: FnMut() -> F,
    F: FnMut(&DirEntry, &mut Tally<T>) + Send,
{
    let shared = Mutex::new(Tally::new(k));
    walker(root, ws, config)?.visit(&mut Builder {
        k,
        shared: &shared,
        stop,
        make,
    });
    stop.check()?;
    Ok(shared.into_inner().unwrap_or_else(PoisonError::into_inner))
}

/// A compiled `list_files` pattern.
#[derive(Debug, Clone)]
pub(crate) struct NameFilter {
    matcher: GlobSet,
    /// Patterns without `/` match the file name; others the path below the root.
    whole_path: bool,
}

impl NameFilter {
    /// Compiles a glob. Too long is `INVALID_INPUT`; a glob that does not parse is
    /// `INVALID_GLOB`; one whose regex cannot be built (too large) is `INVALID_INPUT`.
    /// It goes through `GlobSetBuilder::build`, which reports regex failures as errors
    /// (`Glob::compile_matcher` panics on them).
    pub(crate) fn new(pattern: &str) -> Result<Self, ToolErrorInfo> {
        let chars = pattern.chars().count();
        if chars > MAX_GLOB_CHARS {
            return Err(ToolErrorInfo::new(
                core_codes::INVALID_INPUT,
                format!(
                    "the glob pattern is {chars} characters long; at most {MAX_GLOB_CHARS} are allowed"
                ),
            )
            .with_detail("pattern_chars", chars));
        }
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| {
                ToolErrorInfo::new(
                    codes::INVALID_GLOB,
                    format!("invalid glob pattern: {}", one_line(&e.to_string())),
                )
                .with_detail("pattern", pattern)
            })?;
        let matcher = GlobSetBuilder::new().add(glob).build().map_err(|e| {
            let code = match e.kind() {
                globset::ErrorKind::Regex(_) => core_codes::INVALID_INPUT,
                _ => codes::INVALID_GLOB,
            };
            ToolErrorInfo::new(
                code,
                format!(
                    "the glob pattern cannot be compiled: {}",
                    one_line(&e.to_string())
                ),
            )
            .with_detail("pattern", pattern)
        })?;
        Ok(Self {
            matcher,
            whole_path: pattern.contains('/'),
        })
    }

    fn is_match(&self, rel_to_root: &str, name: &std::ffi::OsStr) -> bool {
        if self.whole_path {
            self.matcher.is_match(rel_to_root)
        } else {
            self.matcher.is_match(name)
        }
    }
}

/// Files under `root`, as paths relative to the workspace `ws`, the first `k` in
/// order.
///
/// The walk itself goes by path, so every file it reports is checked through the held
/// workspace root before it is listed: a file reached through a directory that was
/// swapped for a symlink meanwhile (its name is then not a real entry below the root)
/// is skipped, never shown.
pub(crate) fn list_files(
    root: &Path,
    ws: &WorkspaceDir,
    filter: Option<&NameFilter>,
    k: usize,
    config: &FileToolsConfig,
    stop: &Stop,
) -> Result<Tally<String>, ToolErrorInfo> {
    let workspace = ws.path();
    walk(root, ws, config, k, stop, || {
        move |entry: &DirEntry, tally: &mut Tally<String>| {
            let path = entry.path();
            if let Some(f) = filter
                && !f.is_match(&rel_string(root, path), entry.file_name())
            {
                return;
            }
            let confined = ws
                .relative(path)
                .and_then(|rel| ws.entry_kind(rel))
                .is_ok_and(|kind| kind == EntryKind::File);
            if !confined {
                tally.errors += 1;
                return;
            }
            tally.total += 1;
            tally.top.push(rel_string(workspace, path));
        }
    })
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct LineMatch {
    /// Path relative to the workspace.
    pub(crate) path: String,
    /// 1-based line number.
    pub(crate) line: u64,
    /// The line, without its terminator, clipped around the match when long.
    pub(crate) text: String,
}

/// Largest compiled form of a `grep_search` pattern (the regex NFA), 1 MiB: it bounds
/// the work per searched byte. (The `regex` crate allows 10 MiB, grep-regex 100 MiB.)
pub(crate) const GREP_REGEX_SIZE_LIMIT: usize = 1 << 20;
/// Cache of the lazy DFA per search thread, 2 MiB (grep-regex's default of 1000 MiB
/// let one pathological pattern take a gigabyte).
pub(crate) const GREP_DFA_SIZE_LIMIT: usize = 2 << 20;
/// Longest library error message passed on (an error may quote the whole pattern).
const MAX_ERROR_CHARS: usize = 500;

/// Compiles a `grep_search` pattern (Rust `regex` syntax, line by line), with bounded
/// compiled size and DFA cache.
pub(crate) fn compile_regex(pattern: &str) -> Result<RegexMatcher, ToolErrorInfo> {
    RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .size_limit(GREP_REGEX_SIZE_LIMIT)
        .dfa_size_limit(GREP_DFA_SIZE_LIMIT)
        .build(pattern)
        .map_err(|e| {
            let message = one_line(&e.to_string());
            let hint = if message.contains("size limit") {
                " (the pattern is too large once compiled: use smaller repetition counts, or ASCII classes such as [A-Za-z0-9_] instead of \\w)"
            } else {
                ""
            };
            ToolErrorInfo::new(
                codes::INVALID_REGEX,
                format!("invalid regex (Rust regex syntax): {message}{hint}"),
            )
            .with_detail("pattern", pattern)
        })
}

/// Why a file's search was cut short by [`SearchReader`].
#[derive(Debug)]
enum Cut {
    /// The call was cancelled or abandoned.
    Stopped,
    /// A line is longer than the bound.
    LongLine,
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Cut::Stopped => "the search was stopped",
            Cut::LongLine => "a line is longer than the search's line bound",
        })
    }
}

impl std::error::Error for Cut {}

/// The reader a file is searched through: it checks the stop flag before every read
/// (the searcher reads at most a buffer's worth, 64 KiB, between regex runs) and ends
/// the search once a line grows past `max_line` bytes, so no single regex run covers
/// more than one bounded line.
struct SearchReader<'a, R> {
    inner: R,
    stop: &'a Stop,
    max_line: usize,
    /// Bytes since the last line terminator.
    line: usize,
}

impl<R: io::Read> io::Read for SearchReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.stop.requested() {
            return Err(io::Error::other(Cut::Stopped));
        }
        let n = self.inner.read(buf)?;
        let read = &buf[..n];
        // Every line that ends in this read is measured, not only the last one: a line
        // shorter than the read buffer but over the bound must not reach the regex.
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', read) {
            if self.line + (end - start) > self.max_line {
                return Err(io::Error::other(Cut::LongLine));
            }
            self.line = 0;
            start = end + 1;
        }
        self.line += n - start;
        if self.line > self.max_line {
            return Err(io::Error::other(Cut::LongLine));
        }
        Ok(n)
    }
}

/// The [`Cut`] behind a search error, if it was one.
fn cut_of(err: &io::Error) -> Option<&Cut> {
    err.get_ref().and_then(|e| e.downcast_ref::<Cut>())
}

/// Collects the matches of one file.
struct LineSink<'a> {
    matcher: &'a RegexMatcher,
    path: &'a str,
    keep: usize,
    line_chars: usize,
    kept: Vec<LineMatch>,
    count: u64,
    stop: &'a Stop,
}

impl Sink for LineSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.count += 1;
        if self.kept.len() < self.keep {
            let mut bytes = mat.bytes();
            if let Some(rest) = bytes.strip_suffix(b"\n") {
                bytes = rest.strip_suffix(b"\r").unwrap_or(rest);
            }
            let line = String::from_utf8_lossy(bytes);
            let focus = match self.matcher.find(bytes) {
                Ok(Some(m)) => String::from_utf8_lossy(&bytes[..m.start()]).chars().count(),
                _ => 0,
            };
            let (text, _) = clip_line(&line, focus, self.line_chars);
            self.kept.push(LineMatch {
                path: self.path.to_owned(),
                line: mat.line_number().unwrap_or(0),
                text,
            });
        }
        Ok(!self.stop.requested())
    }
}

/// Lines matching `matcher` under `root` (a directory or one file), the first `k`
/// in (path, line) order, with exact totals. Binary files (a NUL byte) are skipped, and
/// so are files with a line over `grep_max_line_bytes` (counted in `long_lines`).
///
/// Every file is opened through the held workspace root `ws` (no symlink followed,
/// non-blocking, judged by its handle), so a directory swapped for a symlink during
/// the walk cannot make the search read outside. The stop flag is checked before every
/// read and at every match, so a cancelled or abandoned search ends within one bounded
/// line.
pub(crate) fn grep(
    root: &Path,
    ws: &WorkspaceDir,
    matcher: &RegexMatcher,
    k: usize,
    config: &FileToolsConfig,
    stop: &Stop,
) -> Result<Tally<LineMatch>, ToolErrorInfo> {
    let line_chars = config.grep_line_chars;
    let max_line = config.grep_max_line_bytes;
    let workspace = ws.path();
    walk(root, ws, config, k, stop, || {
        let matcher = matcher.clone();
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(0))
            .build();
        move |entry: &DirEntry, tally: &mut Tally<LineMatch>| {
            let Ok((file, _)) = ws.relative(entry.path()).and_then(|rel| ws.open_file(rel)) else {
                tally.errors += 1;
                return;
            };
            let path = rel_string(workspace, entry.path());
            let mut sink = LineSink {
                matcher: &matcher,
                path: &path,
                keep: k,
                line_chars,
                kept: Vec::new(),
                count: 0,
                stop,
            };
            let reader = SearchReader {
                inner: file,
                stop,
                max_line,
                line: 0,
            };
            if let Err(e) = searcher.search_reader(&matcher, reader, &mut sink) {
                match cut_of(&e) {
                    // The walk ends at the next entry; `walk` reports the stop.
                    Some(Cut::Stopped) => {}
                    Some(Cut::LongLine) => tally.long_lines += 1,
                    None => tally.errors += 1,
                }
                return;
            }
            if sink.count > 0 {
                tally.files_matched += 1;
                tally.total += sink.count;
                for m in sink.kept {
                    tally.top.push(m);
                }
            }
        }
    })
}

/// Collapses a multi-line library error into one line of at most
/// [`MAX_ERROR_CHARS`] characters (errors may quote the whole, model-sized, pattern).
fn one_line(message: &str) -> String {
    let line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= MAX_ERROR_CHARS {
        return line;
    }
    let mut clipped: String = line.chars().take(MAX_ERROR_CHARS).collect();
    clipped.push('…');
    clipped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_keeps_smallest_sorted() {
        for (k, items, expect) in [
            (3, vec![5, 1, 4, 2, 3], vec![1, 2, 3]),
            (0, vec![1, 2], vec![]),
            (10, vec![2, 1], vec![1, 2]),
            (1, vec![3, 3, 1, 1], vec![1]),
        ] {
            let mut top = TopK::new(k);
            for i in items {
                top.push(i);
            }
            assert_eq!(top.into_sorted_vec(), expect, "k={k}");
        }
    }

    #[test]
    fn merged_top_k_equals_global() {
        let mut a = TopK::new(2);
        let mut b = TopK::new(2);
        for i in [9, 3, 7] {
            a.push(i);
        }
        for i in [1, 8, 2] {
            b.push(i);
        }
        a.merge(b);
        assert_eq!(a.into_sorted_vec(), vec![1, 2]);
    }

    #[test]
    fn matches_sort_by_path_then_line() {
        let m = |p: &str, l| LineMatch {
            path: p.into(),
            line: l,
            text: String::new(),
        };
        let mut v = [m("b", 1), m("a", 10), m("a", 2)];
        v.sort();
        assert_eq!(
            v.iter()
                .map(|x| (x.path.as_str(), x.line))
                .collect::<Vec<_>>(),
            vec![("a", 2), ("a", 10), ("b", 1)]
        );
    }
}
