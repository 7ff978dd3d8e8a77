//! The six built-in file tools, as the `#[tool]` methods of one `#[tools]` impl block
//! over the [`FileService`], and their catalog ([`CATALOG`]: YAML keys, names,
//! constructors).
//!
//! Each method's signature is the tool's input: the macro derives the published JSON
//! Schema from it (descriptions from the `///` comments, bounds from the parameter
//! types in `crate::params`) and parses every call exactly once, in
//! `validate_input`. The method bodies only convert the typed input and hand the work
//! to the blocking pool; the file work itself lives in the submodules.

use std::sync::Arc;

use iris_fs::blocking::{Stop, run_blocking};
use iris_tools_core::{Tool, ToolErrorInfo, ToolExecutionContext, ToolOutput, tools};

use crate::params::{BoundedString, NonEmptyString, UInt};
use crate::service::FileService;
use crate::text::PageRequest;

mod edit;
mod freshness;
mod grep;
mod list;
mod publish;
mod read;
mod write;

/// Default and largest `limit` of `read_file`, in lines.
pub const MAX_READ_LIMIT: u64 = 1000;
/// Default `max_results` of `list_files` and `grep_search`.
pub const DEFAULT_MAX_RESULTS: u64 = 200;
/// Largest `max_results` of `list_files` and `grep_search`.
pub const MAX_RESULTS_LIMIT: u64 = 1000;
/// Longest `list_files` glob `pattern`, in characters (the schema's `maxLength`, checked
/// again when the glob is compiled). Far longer globs can outgrow globset's regex size
/// limit; a 500 KB one used to panic inside globset.
pub const MAX_GLOB_CHARS: usize = 1000;

/// `max_results` of `list_files` and `grep_search`.
type MaxResults = UInt<MAX_RESULTS_LIMIT>;

/// The `pattern` of `list_files`.
type GlobPattern = BoundedString<MAX_GLOB_CHARS>;

/// [`DEFAULT_MAX_RESULTS`], checked against the limit at compile time.
const DEFAULT_MAX: MaxResults = match UInt::new(DEFAULT_MAX_RESULTS) {
    Some(max) => max,
    None => panic!("DEFAULT_MAX_RESULTS exceeds MAX_RESULTS_LIMIT"),
};

/// A constructor of one file tool on a shared [`FileService`] (and so its read
/// observations).
pub type MakeFileTool = fn(&Arc<FileService>) -> Arc<dyn Tool>;

/// The file tools' lines of the built-in tool catalog, in catalog order: each a
/// `tools.builtin` YAML key, the model tool name and the tool's constructor. Adding a
/// file tool is its `#[tool]` method below plus one line here; the runner's
/// `tools.builtin` is the union of every layer's catalog.
///
/// ```
/// use std::sync::Arc;
/// use iris_files::{CATALOG, FileService};
/// let service = Arc::new(FileService::default());
/// let (key, name, make) = CATALOG[2];
/// assert_eq!((key, name), ("file.grep", "grep_search"));
/// assert_eq!(make(&service).definition().name, "grep_search");
/// ```
pub const CATALOG: [(&str, &str, MakeFileTool); 6] = [
    ("file.read", "read_file", |s| Arc::new(s.read_file_tool())),
    ("file.list", "list_files", |s| Arc::new(s.list_files_tool())),
    ("file.grep", "grep_search", |s| {
        Arc::new(s.grep_search_tool())
    }),
    ("file.write", "write_file", |s| {
        Arc::new(s.write_file_tool())
    }),
    ("file.edit", "edit_file", |s| Arc::new(s.edit_file_tool())),
    ("file.publish", "publish_artifact", |s| {
        Arc::new(s.publish_artifact_tool())
    }),
];

// The tools. A method's doc comment is the model-facing description (What /
// When with alternatives / Precondition, one line each); its YAML key is its line in
// `CATALOG`. The read-only tools keep
// observation retention: their old results may be reduced to a preview, since they
// can be read again.
#[tools(vis = "pub")]
impl FileService {
    /// Read a text file by lines, or a PNG/JPEG/WebP image.
    /// Use before edit_file/write_file; list_files finds paths, grep_search text.
    /// Paged by a character budget; continue at next_offset/next_column.
    #[tool(
        normalize_input,
        capabilities(read),
        context_retention = "observation",
        tags("file", "read", "image", "page")
    )]
    async fn read_file(
        self: &Arc<Self>,
        ctx: &ToolExecutionContext,
        /// File to read, relative to the workspace root (absolute paths must stay inside it), e.g. `src/main.rs`.
        file_path: NonEmptyString,
        /// 0-based line to start at (line N is offset N-1); null starts at the top. To continue, pass the previous next_offset.
        #[default]
        offset: Option<UInt>,
        /// 0-based character within the offset line to start at; pass next_column to continue a long line cut by the budget, e.g. 40000.
        #[default]
        column: UInt,
        /// Most lines to return, 0-1000; null means 1000. Use a small value for a quick look, e.g. 50.
        #[default]
        limit: Option<UInt<MAX_READ_LIMIT>>,
        /// Prefix each line with its 1-based number and a tab, like `cat -n`; use when you will cite lines.
        #[default]
        with_line_numbers: bool,
    ) -> ToolOutput {
        let request = PageRequest {
            offset: offset.unwrap_or_default().to_usize(),
            column: column.to_usize(),
            limit: limit.map_or(MAX_READ_LIMIT as usize, UInt::to_usize),
            budget: self.config().read_char_budget,
            line_numbers: with_line_numbers,
        };
        self.run_on_service(ctx, move |service, ctx, _| {
            read::read(service, ctx, file_path.as_str(), &request)
        })
        .await
    }

    /// List files under a directory recursively, sorted by path, optionally by glob.
    /// Use to find files by name; grep_search finds text inside files.
    /// Skips .git, .iris and gitignored files.
    #[tool(
        normalize_input,
        capabilities(read),
        context_retention = "observation",
        tags("file", "list", "find", "glob", "directory")
    )]
    async fn list_files(
        self: &Arc<Self>,
        ctx: &ToolExecutionContext,
        /// Directory to list, relative to the workspace root; `.` is the whole workspace, e.g. `src`.
        #[default = NonEmptyString::workspace_root()]
        path: NonEmptyString,
        /// Glob filter. Without `/` it matches file names (`*.rs`); with `/` the path below `path` (`src/**/*.rs`). null lists all.
        #[default]
        pattern: Option<GlobPattern>,
        /// Most paths to return, 0-1000; the first ones in sorted order. 0 returns only the count, e.g. 50 for a sample.
        #[default = DEFAULT_MAX]
        max_results: MaxResults,
    ) -> ToolOutput {
        self.run_on_service(ctx, move |service, ctx, stop| {
            let k = max_results.to_usize();
            let pattern = pattern.as_ref().map(GlobPattern::as_str);
            list::list(service, ctx, path.as_str(), pattern, k, stop)
        })
        .await
    }

    /// Search file contents line by line with a Rust regex (regex crate syntax).
    /// Use to find code or text; list_files finds names, read_file shows context.
    /// Skips .git, .iris, gitignored and binary files.
    #[tool(
        normalize_input,
        capabilities(read),
        context_retention = "observation",
        tags("file", "search", "grep", "regex", "text")
    )]
    async fn grep_search(
        self: &Arc<Self>,
        ctx: &ToolExecutionContext,
        /// Rust regex matched against each line: no look-around or backreferences; `(?i)` ignores case. E.g. `fn\s+main`.
        pattern: String,
        /// File or directory to search, relative to the workspace root; `.` searches everything, e.g. `src`.
        #[default = NonEmptyString::workspace_root()]
        path: NonEmptyString,
        /// Most matching lines to return, 0-1000, first by path then line. 0 returns only the counts, e.g. 20 for a sample.
        #[default = DEFAULT_MAX]
        max_results: MaxResults,
    ) -> ToolOutput {
        self.run_on_service(ctx, move |service, ctx, stop| {
            let k = max_results.to_usize();
            grep::grep(service, ctx, &pattern, path.as_str(), k, stop)
        })
        .await
    }

    /// Create a file or replace its whole content, atomically.
    /// Use for new files or full rewrites; edit_file changes one snippet.
    /// Overwriting an existing file needs a fresh read_file of it first.
    //
    // Two writes may touch the same file, and read-before-edit assumes the order the
    // model chose: never run concurrently.
    #[tool(
        normalize_input,
        capabilities(write),
        concurrency_safe = false,
        tags("file", "write", "create", "overwrite")
    )]
    async fn write_file(
        self: &Arc<Self>,
        ctx: &ToolExecutionContext,
        /// File to create or replace, relative to the workspace root; missing directories are created, e.g. `docs/notes.md`.
        file_path: NonEmptyString,
        /// The complete new content, written exactly as given (UTF-8); an empty string empties the file.
        content: String,
    ) -> ToolOutput {
        self.run_on_service(ctx, move |service, ctx, _| {
            write::write(service, ctx, file_path.as_str(), &content)
        })
        .await
    }

    /// Replace one exact snippet of a text file with new text.
    /// Use for targeted changes; write_file rewrites a whole file.
    /// Needs a fresh read_file; old_string must match exactly once.
    //
    // Edits depend on what the model read last: never run concurrently.
    #[tool(
        normalize_input,
        capabilities(write),
        concurrency_safe = false,
        tags("file", "edit", "replace", "patch")
    )]
    async fn edit_file(
        self: &Arc<Self>,
        ctx: &ToolExecutionContext,
        /// Existing text file to change, relative to the workspace root, e.g. `src/config.toml`.
        file_path: NonEmptyString,
        /// Exact text to replace, copied from read_file output without line numbers; include nearby lines until it is unique.
        old_string: NonEmptyString,
        /// Replacement text, exact (may be empty to delete old_string), e.g. `level = "INFO"`.
        new_string: String,
    ) -> ToolOutput {
        self.run_on_service(ctx, move |service, ctx, _| {
            edit::edit(
                service,
                ctx,
                file_path.as_str(),
                old_string.as_str(),
                &new_string,
            )
        })
        .await
    }

    /// Publish a copy of a workspace file as a downloadable artifact.
    /// Use when a result file is final; later edits do not change the published copy.
    /// The file must already exist in the workspace.
    #[tool(
        normalize_input,
        capabilities(write),
        tags("file", "publish", "artifact", "download", "share")
    )]
    async fn publish_artifact(
        self: &Arc<Self>,
        ctx: &ToolExecutionContext,
        /// Existing file to publish, relative to the workspace root, e.g. `out/report.pdf`.
        file_path: NonEmptyString,
    ) -> ToolOutput {
        self.run_on_service(ctx, move |service, ctx, _| {
            publish::publish(service, ctx, file_path.as_str())
        })
        .await
    }
}

impl FileService {
    /// The one body path of every file tool: `work` on the blocking pool with the
    /// service, the call's context and its stop flag; an error becomes an error
    /// output.
    async fn run_on_service<F>(self: &Arc<Self>, ctx: &ToolExecutionContext, work: F) -> ToolOutput
    where
        F: FnOnce(&FileService, &ToolExecutionContext, &Stop) -> Result<ToolOutput, ToolErrorInfo>
            + Send
            + 'static,
    {
        let service = Arc::clone(self);
        let task_ctx = ctx.clone();
        run_blocking(ctx, move |stop| work(&service, &task_ctx, stop))
            .await
            .unwrap_or_else(ToolOutput::error)
    }
}

/// Names the generated type of one tool method and keeps its `new` constructor.
macro_rules! tool_type {
    ($(#[$doc:meta])* $alias:ident = $generated:ident, $make:ident) => {
        $(#[$doc])*
        pub type $alias = $generated;

        impl $generated {
            /// The tool on `service`.
            pub fn new(service: Arc<FileService>) -> Self {
                service.$make()
            }
        }
    };
}

tool_type! {
    /// `read_file`: reads UTF-8 text by lines (0-based `offset` and `column`, `limit`
    /// 0–1000, default 1000) within a per-call character budget, reporting
    /// `data.next_offset` / `data.next_column` to continue; imports PNG/JPEG/WebP files
    /// as image content (paging ignored); refuses binary files. Every successful read
    /// records this session's observation of the file.
    ReadFileTool = FileServiceReadFileTool, read_file_tool
}

tool_type! {
    /// `list_files`: lists the files under `path` (default `.`) recursively, sorted by
    /// path, filtered by an optional glob `pattern`, at most `max_results` (0–1000,
    /// default 200) with the exact total. `.git` and `.iris` are never entered and
    /// gitignored files are skipped by default; symlinks are not followed.
    ListFilesTool = FileServiceListFilesTool, list_files_tool
}

tool_type! {
    /// `grep_search`: searches `path` (default `.`, a file or a directory) for lines
    /// matching `pattern` in the Rust `regex` crate's syntax, returning at most
    /// `max_results` (0–1000, default 200) as path, 1-based line number and text,
    /// sorted by path then line, with exact totals. Long lines are clipped around the
    /// match; `.git`, `.iris`, gitignored and binary files are skipped, and so are files
    /// with a line over `grep_max_line_bytes` (`data.skipped_long_lines`).
    GrepSearchTool = FileServiceGrepSearchTool, grep_search_tool
}

tool_type! {
    /// `write_file`: creates a file (and missing parent directories) or replaces a
    /// whole file, atomically. Replacing an existing file requires this session's read
    /// observation to still match it (`READ_REQUIRED` / `STALE_READ` otherwise);
    /// permissions are kept. A successful write becomes the session's new observation.
    WriteFileTool = FileServiceWriteFileTool, write_file_tool
}

tool_type! {
    /// `edit_file`: replaces the single occurrence of a non-empty `old_string` with
    /// `new_string`. The file must have been read in this session and be unchanged
    /// since (`READ_REQUIRED` / `STALE_READ`); zero matches is `EDIT_NO_MATCH`, several
    /// is `EDIT_AMBIGUOUS` with the count. The write is atomic and keeps permissions.
    EditFileTool = FileServiceEditFileTool, edit_file_tool
}

tool_type! {
    /// `publish_artifact`: copies an existing file to
    /// `<workspace>/.iris/published/<session>/<call id>-<name>` (never overwriting an
    /// earlier publication), marks the copy read-only and returns it as the output's
    /// [`ToolArtifact`](iris_tools_core::ToolArtifact). Files over `max_publish_bytes`
    /// are `FILE_TOO_LARGE`, holes stay holes, and a symlinked `.iris` is refused
    /// (`ARTIFACT_ERROR`). It does not refresh read observations: publishing is not
    /// reading.
    PublishArtifactTool = FileServicePublishArtifactTool, publish_artifact_tool
}

/// The tool for one YAML key, or `None` for a key that is not a file tool.
///
/// ```
/// use std::sync::Arc;
/// use iris_files::{builtin_tool, FileService};
/// let service = Arc::new(FileService::default());
/// assert_eq!(builtin_tool("file.edit", &service).unwrap().definition().name, "edit_file");
/// assert!(builtin_tool("exec.command", &service).is_none());
/// ```
pub fn builtin_tool(key: &str, service: &Arc<FileService>) -> Option<Arc<dyn Tool>> {
    CATALOG
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|(_, _, make)| make(service))
}

/// All six file tools sharing `service` (and so its read observations), in catalog
/// order: `service.tools()`.
pub fn builtin_tools_with(service: &Arc<FileService>) -> Vec<Arc<dyn Tool>> {
    service.tools()
}

/// All six file tools on one new [`FileService`] with the default configuration.
///
/// ```
/// let tools = iris_files::builtin_tools();
/// let names: Vec<_> = tools.iter().map(|t| t.definition().name.as_str()).collect();
/// assert_eq!(names, ["read_file", "list_files", "grep_search", "write_file", "edit_file", "publish_artifact"]);
/// ```
pub fn builtin_tools() -> Vec<Arc<dyn Tool>> {
    builtin_tools_with(&Arc::new(FileService::default()))
}
