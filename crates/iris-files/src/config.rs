//! [`FileToolsConfig`]: limits and walking rules shared by the six file tools.

use iris_fs::workspace::WorkspacePolicy;

use crate::error::Error;

/// Default per-call character budget of `read_file` (model-visible body, line-number
/// prefixes included). It stays below the default `max_result_chars` of 50,000 so a
/// page is never turned into an artifact.
pub const DEFAULT_READ_CHAR_BUDGET: usize = 40_000;
/// Smallest allowed read budget: a page must always fit a line-number prefix and at
/// least one character, or paging could not make progress.
pub const MIN_READ_CHAR_BUDGET: usize = 64;
/// Default largest text file `read_file` / `edit_file` load (64 MiB).
pub const DEFAULT_MAX_TEXT_BYTES: u64 = 64 * 1024 * 1024;
/// Default largest image `read_file` imports (5 MiB, the common provider limit).
pub const DEFAULT_MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;
/// Default number of characters `grep_search` keeps of one matching line.
pub const DEFAULT_GREP_LINE_CHARS: usize = 300;
/// Smallest allowed `grep_line_chars`.
pub const MIN_GREP_LINE_CHARS: usize = 20;
/// Default longest line `grep_search` searches (1 MiB): a file with a longer line is
/// skipped and counted in `skipped_long_lines`. One line is the unit a regex search
/// cannot be interrupted in, so this bounds how long a cancelled or timed-out search
/// keeps running.
pub const DEFAULT_GREP_MAX_LINE_BYTES: usize = 1 << 20;
/// Smallest allowed `grep_max_line_bytes` (4 KiB).
pub const MIN_GREP_MAX_LINE_BYTES: usize = 4 << 10;
/// Default largest file `publish_artifact` copies (256 MiB, apparent size: a sparse
/// file counts with its holes).
pub const DEFAULT_MAX_PUBLISH_BYTES: u64 = 256 * 1024 * 1024;
/// Directory names `list_files` and `grep_search` never descend into by default:
/// version-control internals and Iris's own tool-result and published-copy store.
pub const DEFAULT_SKIP_DIRS: [&str; 2] = [".git", ".iris"];

/// Limits and walking rules of the file tools.
///
/// ```
/// use iris_files::FileToolsConfig;
/// let config = FileToolsConfig::default().with_read_char_budget(10_000);
/// assert_eq!(config.read_char_budget, 10_000);
/// assert!(config.respect_ignore_files);
/// assert!(config.validate().is_ok());
/// assert!(FileToolsConfig::default().with_read_char_budget(3).validate().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileToolsConfig {
    /// Confines every path to the workspace.
    pub workspace_policy: WorkspacePolicy,
    /// Characters one `read_file` call returns at most (at least
    /// [`MIN_READ_CHAR_BUDGET`]).
    pub read_char_budget: usize,
    /// Largest text file `read_file` and `edit_file` load, in bytes.
    pub max_text_bytes: u64,
    /// Largest image `read_file` imports, in bytes.
    pub max_image_bytes: u64,
    /// Characters of one matching line `grep_search` keeps (longer lines are clipped
    /// around the match).
    pub grep_line_chars: usize,
    /// Longest line, in bytes, `grep_search` searches (at least
    /// [`MIN_GREP_MAX_LINE_BYTES`]); a file with a longer line is skipped and counted in
    /// `data.skipped_long_lines`.
    pub grep_max_line_bytes: usize,
    /// Largest file `publish_artifact` copies, in bytes of apparent size (a sparse
    /// file's holes count, but are not expanded in the copy); a larger one is
    /// `FILE_TOO_LARGE`.
    pub max_publish_bytes: u64,
    /// Whether `.gitignore`, `.ignore` and `.git/info/exclude` rules hide files from
    /// `list_files` and `grep_search` (they apply also outside git repositories).
    pub respect_ignore_files: bool,
    /// Directory names `list_files` and `grep_search` never descend into below the path
    /// they walk (a `path` argument naming one is walked as asked).
    pub skip_dirs: Vec<String>,
    /// Walker threads; 0 picks the number of available cores.
    pub threads: usize,
}

impl Default for FileToolsConfig {
    fn default() -> Self {
        Self {
            workspace_policy: WorkspacePolicy::default(),
            read_char_budget: DEFAULT_READ_CHAR_BUDGET,
            max_text_bytes: DEFAULT_MAX_TEXT_BYTES,
            max_image_bytes: DEFAULT_MAX_IMAGE_BYTES,
            grep_line_chars: DEFAULT_GREP_LINE_CHARS,
            grep_max_line_bytes: DEFAULT_GREP_MAX_LINE_BYTES,
            max_publish_bytes: DEFAULT_MAX_PUBLISH_BYTES,
            respect_ignore_files: true,
            skip_dirs: DEFAULT_SKIP_DIRS.iter().map(|s| (*s).to_owned()).collect(),
            threads: 0,
        }
    }
}

impl FileToolsConfig {
    /// Sets the per-call character budget of `read_file`.
    #[must_use]
    pub fn with_read_char_budget(mut self, chars: usize) -> Self {
        self.read_char_budget = chars;
        self
    }

    /// Sets the largest text file `read_file` and `edit_file` load.
    #[must_use]
    pub fn with_max_text_bytes(mut self, bytes: u64) -> Self {
        self.max_text_bytes = bytes;
        self
    }

    /// Sets the largest image `read_file` imports.
    #[must_use]
    pub fn with_max_image_bytes(mut self, bytes: u64) -> Self {
        self.max_image_bytes = bytes;
        self
    }

    /// Sets how many characters of a matching line `grep_search` keeps.
    #[must_use]
    pub fn with_grep_line_chars(mut self, chars: usize) -> Self {
        self.grep_line_chars = chars;
        self
    }

    /// Sets the longest line `grep_search` searches, in bytes.
    #[must_use]
    pub fn with_grep_max_line_bytes(mut self, bytes: usize) -> Self {
        self.grep_max_line_bytes = bytes;
        self
    }

    /// Sets the largest file `publish_artifact` copies, in bytes.
    #[must_use]
    pub fn with_max_publish_bytes(mut self, bytes: u64) -> Self {
        self.max_publish_bytes = bytes;
        self
    }

    /// Turns ignore-file handling on or off.
    #[must_use]
    pub fn with_respect_ignore_files(mut self, yes: bool) -> Self {
        self.respect_ignore_files = yes;
        self
    }

    /// Replaces the directory names the walkers skip.
    #[must_use]
    pub fn with_skip_dirs<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.skip_dirs = names.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the walker thread count (0 = number of cores).
    #[must_use]
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Sets the workspace policy.
    #[must_use]
    pub fn with_workspace_policy(mut self, policy: WorkspacePolicy) -> Self {
        self.workspace_policy = policy;
        self
    }

    /// Checks every limit; returns the first broken rule.
    pub fn validate(&self) -> Result<(), Error> {
        if self.read_char_budget < MIN_READ_CHAR_BUDGET {
            return Err(Error::InvalidConfig(format!(
                "read_char_budget must be at least {MIN_READ_CHAR_BUDGET}, got {}",
                self.read_char_budget
            )));
        }
        if self.grep_line_chars < MIN_GREP_LINE_CHARS {
            return Err(Error::InvalidConfig(format!(
                "grep_line_chars must be at least {MIN_GREP_LINE_CHARS}, got {}",
                self.grep_line_chars
            )));
        }
        if self.grep_max_line_bytes < MIN_GREP_MAX_LINE_BYTES {
            return Err(Error::InvalidConfig(format!(
                "grep_max_line_bytes must be at least {MIN_GREP_MAX_LINE_BYTES}, got {}",
                self.grep_max_line_bytes
            )));
        }
        if self.max_text_bytes == 0 || self.max_image_bytes == 0 || self.max_publish_bytes == 0 {
            return Err(Error::InvalidConfig(
                "max_text_bytes, max_image_bytes and max_publish_bytes must be positive".into(),
            ));
        }
        Ok(())
    }
}
