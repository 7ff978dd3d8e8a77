//! [`ToolArtifactStore`]: long results saved whole, replaced by a preview and a reference.
//!
//! The executor hands every final result to [`ToolArtifactStore::persist_if_large`]. A
//! result whose model body fits `max_chars` passes through untouched; a longer one is
//! written to `<workspace>/.iris/tool-results/<session>/<call>.txt` and the model gets a
//! preview plus one reference line telling it how to page the rest with `read_file`.
//!
//! Every write is atomic (temporary file in the same directory, `fsync`, rename), so a
//! reader never sees half a file, and every file name derived from a model-supplied id is
//! sanitized so it can neither escape the store nor collide with another id's file.
//!
//! A store inside a workspace never follows a symlink the workspace ships: the workspace
//! root is held open and `.iris/tool-results/<session>` is walked and created from that
//! handle (`mkdirat`, `openat(O_NOFOLLOW)`, see [`iris_fs::workspace::WorkspaceDir`]), and
//! the files are written relative to the held session directory. A symlinked `.iris` (or
//! any symlinked component) is an [`Error::Path`] (`INVALID_PATH`); the executor then
//! keeps the whole body and reports `ARTIFACT_ERROR` in `artifact_error`.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use iris_tools_core::definition::{DEFAULT_PREVIEW_CHARS, PreviewMode};
use iris_tools_core::{ContentBlock, ToolArtifact, ToolOutput};

use crate::error::{Error, Result};
use iris_fs::atomic::{WriteMode, write_atomic_in};
use iris_fs::workspace::{WorkspaceDir, open_trusted_file};

/// Where results land, relative to the workspace: `.iris/tool-results/<session>/`.
pub const TOOL_RESULTS_DIR: &str = ".iris/tool-results";

/// Longest file stem kept from an id before the disambiguating hash is appended.
pub const MAX_FILE_STEM_CHARS: usize = 64;

/// The session segment used when a context has no session id.
pub const DEFAULT_SESSION_DIR: &str = "default";

const MIME_TEXT: &str = "text/plain";
const MIME_JSON: &str = "application/json";
const MIME_BINARY: &str = "application/octet-stream";

/// Length of the hexadecimal hash appended to sanitized names (64 bits).
const HASH_HEX_LEN: usize = 16;

/// Longest extension [`ToolArtifactStore::persist_file`] keeps on a copied file name.
const MAX_EXTENSION_CHARS: usize = 16;

/// Longest run of combining characters a cut backs off over before giving up. Unicode's
/// stream-safe text format caps such runs at 30, so real text never reaches this.
const MAX_CLUSTER_BACKOFF: usize = 32;

/// Where [`ToolArtifactStore::save_body`] put a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedBody {
    /// The saved file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size_bytes: u64,
}

/// Saves tool artifacts under one root directory.
///
/// ```
/// use iris_executor::ToolArtifactStore;
/// use iris_tools_core::ToolOutput;
/// use iris_tools_core::definition::PreviewMode;
///
/// let workspace = std::env::temp_dir().join("iris-doc-artifact");
/// let store = ToolArtifactStore::for_session(&workspace, "s-1").with_preview(10, PreviewMode::Head);
/// assert!(store.root.ends_with(".iris/tool-results/s-1"));
///
/// // Short bodies pass through unchanged.
/// let short = ToolOutput::text("hello");
/// assert_eq!(store.persist_if_large("call_1", short.clone(), 100)?, short);
///
/// // Long bodies are saved whole and replaced by a preview plus a reference.
/// let long = ToolOutput::text("x".repeat(500));
/// let saved = store.persist_if_large("call_2", long, 100)?;
/// let artifact = saved.artifact.as_ref().unwrap();
/// assert_eq!(std::fs::read_to_string(artifact.text_path.as_ref().unwrap())?, "x".repeat(500));
/// assert!(saved.model_content().starts_with("xxxxxxxxxx\n[Truncated"));
/// # std::fs::remove_dir_all(&workspace)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolArtifactStore {
    /// The directory files are written to.
    pub root: PathBuf,
    /// Characters kept in a preview (default 8 000).
    pub preview_chars: usize,
    /// Head or head+tail preview (default head).
    pub preview_mode: PreviewMode,
}

impl ToolArtifactStore {
    /// A store writing under `root`, with the default preview sizes.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            preview_chars: DEFAULT_PREVIEW_CHARS,
            preview_mode: PreviewMode::Head,
        }
    }

    /// The store for a session: `<workspace>/.iris/tool-results/<session>/`.
    ///
    /// The session id is sanitized like a file name (see [`sanitize_file_stem`]), so an
    /// id such as `../x` cannot leave the results directory; an empty id uses
    /// [`DEFAULT_SESSION_DIR`].
    ///
    /// ```
    /// use std::path::Path;
    /// use iris_executor::ToolArtifactStore;
    ///
    /// let store = ToolArtifactStore::for_session(Path::new("/ws"), "");
    /// assert_eq!(store.root, Path::new("/ws/.iris/tool-results/default"));
    /// let store = ToolArtifactStore::for_session(Path::new("/ws"), "../escape");
    /// assert!(store.root.starts_with("/ws/.iris/tool-results"));
    /// assert_eq!(store.root.components().count(), 5);
    /// ```
    pub fn for_session(workspace_root: &Path, session_id: &str) -> Self {
        let session = if session_id.is_empty() {
            DEFAULT_SESSION_DIR.to_owned()
        } else {
            sanitize_file_stem(session_id)
        };
        Self::new(workspace_root.join(TOOL_RESULTS_DIR).join(session))
    }

    /// Sets the preview length and mode.
    #[must_use]
    pub fn with_preview(mut self, chars: usize, mode: PreviewMode) -> Self {
        self.preview_chars = chars;
        self.preview_mode = mode;
        self
    }

    /// The workspace this store lives in, when `root` is under
    /// `<workspace>/.iris/tool-results/`; references given to the model are then
    /// relative to it, as `read_file` expects.
    ///
    /// ```
    /// use std::path::Path;
    /// use iris_executor::ToolArtifactStore;
    ///
    /// let store = ToolArtifactStore::for_session(Path::new("/ws"), "s");
    /// assert_eq!(store.workspace(), Some(Path::new("/ws")));
    /// assert_eq!(ToolArtifactStore::new("/tmp/results").workspace(), None);
    /// ```
    pub fn workspace(&self) -> Option<&Path> {
        let marker = Path::new(TOOL_RESULTS_DIR);
        self.root
            .ancestors()
            .find(|dir| dir.ends_with(marker))
            .and_then(Path::parent)
            .and_then(Path::parent)
    }

    /// Copies a resolved source file into the store and returns an independent
    /// artifact for the copy (MIME type from the extension, size in bytes).
    ///
    /// The copy lands at `<root>/<call>.files/<file name>`, so later changes to the
    /// source do not change what the artifact points at. The caller resolves and
    /// confines `source` first (see [`crate::WorkspacePolicy::resolve_path`]). The
    /// `preview` is kept, cut to the store's preview length.
    pub fn persist_file(
        &self,
        tool_use_id: &str,
        source: &Path,
        preview: &str,
    ) -> Result<ToolArtifact> {
        let name = source.file_name().map_or_else(
            || "file".to_owned(),
            |n| sanitize_file_name(&n.to_string_lossy()),
        );
        let dir = self
            .root
            .join(format!("{}.files", sanitize_file_stem(tool_use_id)));
        // Non-blocking open judged by the handle: a FIFO cannot hang the copy.
        let (mut input, _) = open_trusted_file(source).map_err(|e| match e {
            iris_fs::workspace::AccessError::Io { source: err, .. } => io(source, err),
            other => io(
                source,
                std::io::Error::new(std::io::ErrorKind::InvalidInput, other.to_string()),
            ),
        })?;
        let mut bytes = Vec::new();
        input.read_to_end(&mut bytes).map_err(|e| io(source, e))?;
        let (path, size_bytes) = write_atomic(self, &dir, &name, &bytes)?;
        Ok(ToolArtifact {
            path,
            mime_type: mime_type_for_path(source).to_owned(),
            size_bytes,
            preview: self.preview(preview),
            text_path: None,
        })
    }

    /// Saves a whole native JSON result (pretty-printed, so `read_file` can page it by
    /// line) at `<root>/<call>.json`, MIME type `application/json`.
    pub fn persist_json(
        &self,
        tool_use_id: &str,
        payload: &Value,
        preview: &str,
    ) -> Result<ToolArtifact> {
        let text = serde_json::to_string_pretty(payload)?;
        let name = format!("{}.json", sanitize_file_stem(tool_use_id));
        let (path, size_bytes) = write_atomic(self, &self.root, &name, text.as_bytes())?;
        Ok(ToolArtifact {
            path,
            mime_type: MIME_JSON.to_owned(),
            size_bytes,
            preview: self.preview(preview),
            text_path: None,
        })
    }

    /// Returns an output whose model body ([`ToolOutput::model_content`]) has at most
    /// `max_chars` characters unchanged. A longer body is saved whole as UTF-8 text at
    /// `<root>/<call>.txt` and a new output is returned whose content is a preview
    /// followed by one reference line (full size, saved path, and the `read_file`
    /// `offset`/`column` to continue from).
    ///
    /// The preview keeps at most `min(preview_chars, max_chars)` characters in the
    /// store's [`PreviewMode`]; images stay as blocks after it. The outcome, `data`,
    /// `stats` and `metadata` are kept. Hook feedback is part of the saved body, so the
    /// new output has none (it would otherwise be shown twice). For an error output the
    /// `Error[CODE]: message` line, which the projection always adds, counts against the
    /// preview budget and is not repeated in the content.
    ///
    /// The artifact's `text_path` is the saved body. When the output already had an
    /// artifact (a published or native file), its `path`, `mime_type` and `size_bytes`
    /// are kept, because they describe that file; otherwise they describe the saved body.
    ///
    /// This blocks on the file system; the executor runs [`ToolArtifactStore::save_body`]
    /// on the blocking pool and [`ToolArtifactStore::replace_with_preview`] inline.
    pub fn persist_if_large(
        &self,
        call_id: &str,
        output: ToolOutput,
        max_chars: usize,
    ) -> Result<ToolOutput> {
        let body = output.model_content();
        if body.chars().count() <= max_chars {
            return Ok(output);
        }
        let saved = self.save_body(call_id, &body)?;
        Ok(self
            .with_max_chars(max_chars)
            .replace_with_preview(output, &body, saved))
    }

    /// Saves a whole model body at `<root>/<call>.txt` (the blocking half of
    /// [`ToolArtifactStore::persist_if_large`]).
    pub fn save_body(&self, call_id: &str, body: &str) -> Result<SavedBody> {
        let name = format!("{}.txt", sanitize_file_stem(call_id));
        let (path, size_bytes) = write_atomic(self, &self.root, &name, body.as_bytes())?;
        Ok(SavedBody { path, size_bytes })
    }

    /// Replaces `output`'s content by the preview of `body` (its model content) and a
    /// reference to where [`ToolArtifactStore::save_body`] saved it. The preview
    /// budget is the store's `preview_chars`.
    pub fn replace_with_preview(
        &self,
        output: ToolOutput,
        body: &str,
        saved: SavedBody,
    ) -> ToolOutput {
        let SavedBody {
            path: text_path,
            size_bytes,
        } = saved;
        // The projection re-adds the error line in front of the content, so the
        // preview is cut from what follows it, with the line counted in the budget.
        let budget = self.preview_chars;
        let lead_len = if output.is_error() {
            output
                .model_blocks()
                .first()
                .and_then(ContentBlock::as_text)
                .map_or(0, str::len)
        } else {
            0
        };
        let (lead, rest) = body.split_at(lead_len);
        let rest_offset = if rest.starts_with('\n') {
            lead_len + 1
        } else {
            lead_len
        };
        let rest = &body[rest_offset..];
        let rest_budget = if lead.is_empty() {
            budget
        } else {
            budget.saturating_sub(lead.chars().count() + 1)
        };
        let cut = Cut::new(rest, rest_budget, self.preview_mode);

        let reference = Reference {
            body,
            head_end: rest_offset + cut.head.len(),
            tail_start: rest_offset + (rest.len() - cut.tail.len()),
            mode: self.preview_mode,
            path: self.model_path(&text_path),
            size_bytes,
        }
        .render();
        let mut text = cut.render();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&reference);
        let preview = text.clone();

        let mut out = output;
        let images = out
            .content
            .drain(..)
            .filter(|block| matches!(block, ContentBlock::Image { .. }));
        let content: Vec<ContentBlock> = std::iter::once(ContentBlock::text(text))
            .chain(images)
            .collect();
        out.content = content;
        out.hook_feedback.clear();
        out.hook_context.clear();
        out.artifact = Some(Box::new(match out.artifact.take() {
            Some(existing) => ToolArtifact {
                text_path: Some(text_path),
                preview,
                ..*existing
            },
            None => ToolArtifact {
                path: text_path.clone(),
                mime_type: MIME_TEXT.to_owned(),
                size_bytes,
                preview,
                text_path: Some(text_path),
            },
        }));
        out
    }

    /// Opens (creating what is missing) the store directory `dir`, which is `root` or
    /// below it.
    ///
    /// In a workspace (see [`ToolArtifactStore::workspace`]) the workspace root is held
    /// open and the rest (`.iris/tool-results/<session>/…`) is walked and created from
    /// it without following any symlink; a symlinked component is an `INVALID_PATH`
    /// [`Error::Path`]. A store outside a workspace has a host-chosen root, which is
    /// created and opened as given.
    fn open_dir(&self, dir: &Path) -> Result<WorkspaceDir> {
        match self.workspace() {
            Some(workspace) => {
                let rel = dir.strip_prefix(workspace).unwrap_or(dir);
                // `for_session("")` names the current directory, as it always did.
                let workspace = if workspace.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    workspace
                };
                if !rel
                    .components()
                    .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
                {
                    return Err(Error::Path(crate::PathError::Invalid {
                        path: dir.to_path_buf(),
                        reason: "the store directory is not a plain path below the workspace"
                            .into(),
                    }));
                }
                // The workspace root is the host's choice: a missing one is created as
                // given (as the store always did); everything below it is confined.
                if !workspace.exists() {
                    std::fs::create_dir_all(workspace).map_err(|e| io(workspace, e))?;
                }
                let root = WorkspaceDir::open_root(workspace)?;
                // The results live in `.iris/`: making it goes through the one helper
                // that also keeps it out of version control.
                if rel.starts_with(iris_fs::state_dir::STATE_DIR) {
                    iris_fs::state_dir::create_in(&root)?;
                }
                Ok(root.create_dir_all(rel)?)
            }
            None => {
                std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
                WorkspaceDir::open_trusted(dir).map_err(|e| io(dir, e))
            }
        }
    }

    /// The store with its preview budget capped at `max_chars`.
    fn with_max_chars(&self, max_chars: usize) -> Self {
        let mut store = self.clone();
        store.preview_chars = store.preview_chars.min(max_chars);
        store
    }

    /// The store's preview of `text`.
    fn preview(&self, text: &str) -> String {
        preview(text, self.preview_chars, self.preview_mode)
    }

    /// How the model should name a saved file: relative to the workspace (with `/`)
    /// when the store lives in one, the full path otherwise.
    fn model_path(&self, path: &Path) -> String {
        match self.workspace().and_then(|ws| path.strip_prefix(ws).ok()) {
            Some(relative) => relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
            None => path.display().to_string(),
        }
    }
}

/// The preview of `text` at most `chars` characters long (plus, for
/// [`PreviewMode::HeadTail`], one omission marker line).
///
/// Text that fits is returned unchanged. `Head` keeps the first `chars` characters;
/// `HeadTail` keeps the first ⌈chars/2⌉ and the last ⌊chars/2⌋ with a
/// `[... N chars omitted ...]` line between them. Cuts are made on characters, never
/// inside a UTF-8 sequence, and back off rather than separate a combining mark, an
/// emoji modifier or joiner sequence, a flag's second half or the `\n` of a `\r\n` from
/// what precedes it, so a preview may be a few characters shorter than `chars`.
///
/// ```
/// use iris_executor::artifact::preview;
/// use iris_tools_core::definition::PreviewMode;
///
/// assert_eq!(preview("abcdef", 6, PreviewMode::Head), "abcdef");
/// assert_eq!(preview("abcdef", 3, PreviewMode::Head), "abc");
/// assert_eq!(preview("abcdefg", 3, PreviewMode::HeadTail), "ab\n[... 4 chars omitted ...]\ng");
/// assert_eq!(preview("日本語テキスト", 2, PreviewMode::Head), "日本");
/// ```
pub fn preview(text: &str, chars: usize, mode: PreviewMode) -> String {
    Cut::new(text, chars, mode).render()
}

/// Sanitizes an id into a file stem: only `[A-Za-z0-9._-]`, no leading `.`, at most
/// [`MAX_FILE_STEM_CHARS`] characters kept, plus `-` and a 16-digit hash of the original
/// id whenever sanitizing changed anything.
///
/// A clean id maps to itself, so ordinary provider ids stay readable. Two different
/// ids never share a stem: a changed id carries its hash, and a clean id that merely
/// looks like it carries one gets a hash of its own.
///
/// ```
/// use iris_executor::artifact::sanitize_file_stem;
///
/// assert_eq!(sanitize_file_stem("call_01.a-b"), "call_01.a-b");
/// let escaped = sanitize_file_stem("../etc/passwd");
/// assert!(escaped.starts_with("_._etc_passwd-"));
/// assert_ne!(sanitize_file_stem("a/b"), sanitize_file_stem("a:b"));
/// ```
pub fn sanitize_file_stem(id: &str) -> String {
    let mut out = String::with_capacity(id.len().min(MAX_FILE_STEM_CHARS) + HASH_HEX_LEN + 1);
    let mut changed = false;
    for (i, c) in id.chars().enumerate() {
        if i == MAX_FILE_STEM_CHARS {
            changed = true;
            break;
        }
        if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
            out.push(c);
        } else {
            out.push('_');
            changed = true;
        }
    }
    // A leading dot would make `.`, `..` or a hidden file.
    if out.starts_with('.') {
        out.replace_range(..1, "_");
        changed = true;
    }
    if changed || out.is_empty() || looks_hashed(&out) {
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&format!("{:016x}", fnv1a64(id.as_bytes())));
    }
    out
}

/// The MIME type of a path, guessed from its extension for common types
/// (case-insensitive); `application/octet-stream` otherwise.
///
/// ```
/// use std::path::Path;
/// use iris_executor::artifact::mime_type_for_path;
///
/// assert_eq!(mime_type_for_path(Path::new("report.PDF")), "application/pdf");
/// assert_eq!(mime_type_for_path(Path::new("notes.md")), "text/markdown");
/// assert_eq!(mime_type_for_path(Path::new("blob")), "application/octet-stream");
/// ```
pub fn mime_type_for_path(path: &Path) -> &'static str {
    let Some(ext) = path.extension().and_then(|e| e.to_str()) else {
        return MIME_BINARY;
    };
    match ext.to_ascii_lowercase().as_str() {
        "txt" | "text" | "log" => MIME_TEXT,
        "md" | "markdown" => "text/markdown",
        "csv" => "text/csv",
        "tsv" => "text/tab-separated-values",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "js" | "mjs" | "cjs" => "text/javascript",
        "xml" => "application/xml",
        "json" => MIME_JSON,
        "jsonl" | "ndjson" => "application/x-ndjson",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "py" => "text/x-python",
        "rs" => "text/x-rust",
        "sh" => "application/x-sh",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "bmp" => "image/bmp",
        "ico" => "image/x-icon",
        "tif" | "tiff" => "image/tiff",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "ogg" => "audio/ogg",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "zip" => "application/zip",
        "gz" => "application/gzip",
        "tar" => "application/x-tar",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "pptx" => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        _ => MIME_BINARY,
    }
}

/// Sanitizes a copied file's name, keeping a short alphanumeric extension so the copy
/// still opens with the right program.
fn sanitize_file_name(name: &str) -> String {
    match name.rsplit_once('.') {
        Some((stem, ext))
            if !stem.is_empty()
                && !ext.is_empty()
                && ext.len() <= MAX_EXTENSION_CHARS
                && ext.chars().all(|c| c.is_ascii_alphanumeric()) =>
        {
            format!("{}.{ext}", sanitize_file_stem(stem))
        }
        _ => sanitize_file_stem(name),
    }
}

/// Whether a clean stem ends like a sanitized one (`-` and 16 lower-case hex digits).
fn looks_hashed(stem: &str) -> bool {
    let bytes = stem.as_bytes();
    bytes.len() > HASH_HEX_LEN
        && bytes[bytes.len() - HASH_HEX_LEN - 1] == b'-'
        && bytes[bytes.len() - HASH_HEX_LEN..]
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
}

/// FNV-1a, 64 bits: stable across runs, platforms and Rust versions (unlike
/// `DefaultHasher`), which file names on disk need.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Where a preview cuts a text: the kept head, the kept tail, and what lies between.
#[derive(Debug)]
struct Cut<'a> {
    head: &'a str,
    tail: &'a str,
    omitted_chars: usize,
    mode: PreviewMode,
}

impl<'a> Cut<'a> {
    fn new(text: &'a str, chars: usize, mode: PreviewMode) -> Self {
        let total = text.chars().count();
        if total <= chars {
            return Self {
                head: text,
                tail: "",
                omitted_chars: 0,
                mode,
            };
        }
        let (head_chars, tail_chars) = match mode {
            PreviewMode::Head => (chars, 0),
            PreviewMode::HeadTail => (chars.div_ceil(2), chars / 2),
        };
        let head_end = cluster_start(text, char_to_byte(text, head_chars));
        let tail_start = if tail_chars == 0 {
            text.len()
        } else {
            cluster_end(text, char_to_byte(text, total - tail_chars))
        };
        Self {
            head: &text[..head_end],
            tail: &text[tail_start..],
            omitted_chars: text[head_end..tail_start].chars().count(),
            mode,
        }
    }

    fn render(&self) -> String {
        if self.omitted_chars == 0 {
            return self.head.to_owned();
        }
        match self.mode {
            PreviewMode::Head => self.head.to_owned(),
            PreviewMode::HeadTail => {
                let mut out = String::with_capacity(self.head.len() + self.tail.len() + 40);
                out.push_str(self.head);
                if !self.head.is_empty() && !self.head.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(&format!("[... {} chars omitted ...]", self.omitted_chars));
                if !self.tail.is_empty() && !self.tail.starts_with('\n') {
                    out.push('\n');
                }
                out.push_str(self.tail);
                out
            }
        }
    }
}

/// The reference line appended to a saved result's preview.
struct Reference<'a> {
    body: &'a str,
    /// Byte offset of the first character not shown at the start.
    head_end: usize,
    /// Byte offset of the first character of the shown tail.
    tail_start: usize,
    mode: PreviewMode,
    path: String,
    size_bytes: u64,
}

impl Reference<'_> {
    fn render(&self) -> String {
        let body = self.body;
        let total = body.chars().count();
        let lines = body.lines().count();
        let shown_head = body[..self.head_end].chars().count();
        let shown_tail = body[self.tail_start..].chars().count();
        // `read_file` counts lines and columns from 0; resume exactly at the first
        // hidden character, even when it is in the middle of a long line.
        let before = &body[..self.head_end];
        let line = before.matches('\n').count();
        let column = before
            .rfind('\n')
            .map_or(before, |nl| &before[nl + 1..])
            .chars()
            .count();
        let path = &self.path;
        let call = if column == 0 {
            format!("call read_file with file_path \"{path}\" and offset {line}")
        } else {
            format!("call read_file with file_path \"{path}\", offset {line} and column {column}")
        };
        let saved = format!(
            "The full result ({}, {}, {}) is saved at \"{path}\".",
            counted(total as u64, "char"),
            counted(lines as u64, "line"),
            counted(self.size_bytes, "byte"),
        );
        match self.mode {
            PreviewMode::HeadTail if shown_tail > 0 => {
                let hidden = &body[..self.tail_start];
                let last_line = hidden.matches('\n').count() - usize::from(hidden.ends_with('\n'));
                let span = if last_line == line {
                    format!("on line {line}")
                } else {
                    format!("lines {line}-{last_line}")
                };
                format!(
                    "[Truncated: showing the first {shown_head} and the last {shown_tail} of \
                     {total} chars. {saved} The omitted part is {span}; to read it, {call}, \
                     then follow next_offset.]"
                )
            }
            _ => format!(
                "[Truncated: showing the first {shown_head} of {total} chars. {saved} To read \
                 the rest, {call}, then follow next_offset.]"
            ),
        }
    }
}

/// `1 line`, `2 lines`: a count with its unit.
fn counted(n: u64, unit: &str) -> String {
    if n == 1 {
        format!("1 {unit}")
    } else {
        format!("{n} {unit}s")
    }
}

/// The byte offset of the `n`th character (the length when there are fewer).
fn char_to_byte(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

/// Moves a cut at byte `at` back to the start of the character cluster it falls in.
fn cluster_start(text: &str, mut at: usize) -> usize {
    for _ in 0..MAX_CLUSTER_BACKOFF {
        if !continues_cluster(text, at) {
            return at;
        }
        at -= text[..at].chars().next_back().map_or(0, char::len_utf8);
    }
    at
}

/// Moves a cut at byte `at` forward to the end of the character cluster it falls in.
fn cluster_end(text: &str, mut at: usize) -> usize {
    for _ in 0..MAX_CLUSTER_BACKOFF {
        if !continues_cluster(text, at) {
            return at;
        }
        at += text[at..].chars().next().map_or(0, char::len_utf8);
    }
    at
}

/// Whether the character at byte `at` belongs to the same user-perceived character as
/// the one before it, so a cut must not fall between them.
///
/// This is a dependency-free approximation of Unicode's grapheme rules covering the
/// common cases (combining marks of Latin, Greek, Cyrillic and kana, variation
/// selectors, emoji modifiers, tags and joiner sequences, regional-indicator flags,
/// CRLF). A mark outside these ranges may be separated from its base, but a preview is
/// always valid UTF-8.
fn continues_cluster(text: &str, at: usize) -> bool {
    let (Some(prev), Some(cur)) = (text[..at].chars().next_back(), text[at..].chars().next())
    else {
        return false;
    };
    if (prev == '\r' && cur == '\n') || prev == '\u{200D}' || is_extender(cur) {
        return true;
    }
    if is_regional_indicator(cur) && is_regional_indicator(prev) {
        // Flags are pairs; the cut is inside one when an odd number of indicators
        // precede it in the run.
        let run = text[..at]
            .chars()
            .rev()
            .take_while(|c| is_regional_indicator(*c))
            .count();
        return run % 2 == 1;
    }
    false
}

fn is_extender(c: char) -> bool {
    matches!(c,
        '\u{0300}'..='\u{036F}'     // combining diacritical marks
        | '\u{0483}'..='\u{0489}'   // Cyrillic combining marks
        | '\u{1AB0}'..='\u{1AFF}'   // combining diacritical marks extended
        | '\u{1DC0}'..='\u{1DFF}'   // combining diacritical marks supplement
        | '\u{200C}'..='\u{200D}'   // zero-width (non-)joiner
        | '\u{20D0}'..='\u{20FF}'   // combining marks for symbols (keycaps)
        | '\u{3099}'..='\u{309A}'   // kana voiced sound marks
        | '\u{FE00}'..='\u{FE0F}'   // variation selectors (emoji presentation)
        | '\u{FE20}'..='\u{FE2F}'   // combining half marks
        | '\u{1F3FB}'..='\u{1F3FF}' // emoji skin-tone modifiers
        | '\u{E0020}'..='\u{E007F}' // emoji tag sequences
        | '\u{E0100}'..='\u{E01EF}' // variation selectors supplement
    )
}

fn is_regional_indicator(c: char) -> bool {
    ('\u{1F1E6}'..='\u{1F1FF}').contains(&c)
}

/// Writes `<dir>/<name>` atomically with the shared helper, creating `dir` first
/// through [`ToolArtifactStore::open_dir`]. Returns the destination and the byte count.
fn write_atomic(
    store: &ToolArtifactStore,
    dir: &Path,
    name: &str,
    content: &[u8],
) -> Result<(PathBuf, u64)> {
    let held = store.open_dir(dir)?;
    let dest = dir.join(name);
    let shown = dest.display().to_string();
    write_atomic_in(
        &held,
        OsStr::new(name),
        &shown,
        content,
        WriteMode::Replace { verify: &|| Ok(()) },
    )
    .map_err(Error::Write)?;
    Ok((dest, content.len() as u64))
}

fn io(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}
