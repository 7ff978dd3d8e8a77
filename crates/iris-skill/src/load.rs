//! [`LoadSkillTool`]: the `load_skill` tool, which hands the model one skill's current
//! instructions and the list of its bundled files: the `#[tool]` method of a `#[tools]`
//! impl block over [`SkillTools`] (the registry and the listing cap), so each call's
//! input is parsed once, into a checked skill name.

use std::borrow::Cow;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use iris_fs::bounded_read::{ReadError, read_regular_text};
use iris_fs::workspace::WorkspacePolicy;
use iris_tools_core::{ToolDefinition, ToolErrorInfo, ToolOutput, tools};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::error::{Error, INVALID_INPUT, Result};
use crate::frontmatter;
use crate::metadata::{MAX_SKILL_FILE_BYTES, SKILL_FILE};
use crate::name::{MAX_NAME_LEN, NAME_PATTERN, check_kebab_name, close_matches};
use crate::registry::SkillRegistry;

/// Default cap on the number of bundled files `load_skill` lists.
pub const DEFAULT_MAX_LISTED_FILES: usize = 100;
/// How deep below the skill folder bundled files are looked for.
const MAX_LIST_DEPTH: usize = 8;
/// How many directory entries one listing may visit, so a huge folder cannot stall a
/// call. Past it the listing stops and says so.
const MAX_VISITED_ENTRIES: usize = 10_000;
/// How many close matches an unknown name suggests.
const MAX_SUGGESTIONS: usize = 3;

/// One skill as `load_skill` returns it: the body read just now, and the bundled
/// files next to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedSkill {
    /// The skill name.
    pub name: String,
    /// The skill directory relative to the workspace, with `/` separators.
    pub directory: String,
    /// The current `SKILL.md` body, frontmatter removed.
    pub body: String,
    /// Bundled files relative to the workspace (so `read_file` accepts them as they
    /// are), sorted, hidden files left out, at most the tool's listing cap.
    pub files: Vec<String>,
    /// How many more files exist than are listed (a lower bound when the listing hit
    /// its visiting limit).
    pub files_omitted: usize,
}

impl LoadedSkill {
    /// The text the model receives: a header naming the skill and its directory, the
    /// body, then the bundled-file list when there is one.
    pub fn to_text(&self) -> String {
        let mut text = format!(
            "Skill `{}` (directory `{}`)\n\n{}",
            self.name, self.directory, self.body
        );
        if !self.files.is_empty() {
            text.push_str(
                "\n\nBundled files (paths relative to the workspace; open them with \
                 read_file when the instructions refer to them):",
            );
            for file in &self.files {
                text.push_str("\n- ");
                text.push_str(file);
            }
            if self.files_omitted > 0 {
                text.push_str(&format!("\n({} more files not listed)", self.files_omitted));
            }
        }
        text
    }
}

/// What the `load_skill` tool runs over: the skill registry, how many bundled files a
/// result lists, and the result size past which the executor saves the body as an
/// artifact.
///
/// `Arc<SkillTools>::load_skill_tool()` (or [`LoadSkillTool::new`]) builds the tool;
/// [`SkillTools::tools`] builds every tool of the state (just `load_skill`).
#[derive(Debug, Clone)]
pub struct SkillTools {
    registry: Arc<SkillRegistry>,
    max_listed_files: usize,
    max_result_chars: Option<usize>,
}

impl SkillTools {
    /// The state over a registry, listing at most [`DEFAULT_MAX_LISTED_FILES`] files.
    pub fn new(registry: impl Into<Arc<SkillRegistry>>) -> Self {
        Self {
            registry: registry.into(),
            max_listed_files: DEFAULT_MAX_LISTED_FILES,
            max_result_chars: None,
        }
    }

    /// Sets the result size past which the executor saves the body as an artifact
    /// (the definition's `max_result_chars`, 50 000 unless set).
    #[must_use]
    pub fn with_max_result_chars(mut self, max: usize) -> Self {
        self.max_result_chars = Some(max);
        self
    }

    /// Sets how many bundled files are listed at most.
    #[must_use]
    pub fn with_max_listed_files(mut self, max: usize) -> Self {
        self.max_listed_files = max;
        self
    }

    /// The registry skills are loaded from.
    pub fn registry(&self) -> &SkillRegistry {
        &self.registry
    }

    /// Loads a skill by name, reading its `SKILL.md` now.
    ///
    /// # Errors
    /// `SKILL_NOT_FOUND` for a name discovery did not find (with close matches),
    /// `SKILL_UNAVAILABLE` when the file is gone, unreadable or no longer a regular file,
    /// `SKILL_TOO_LARGE` past [`MAX_SKILL_FILE_BYTES`], `SKILL_INVALID` when
    /// its frontmatter block is no longer well-formed, and `PATH_OUTSIDE_WORKSPACE`
    /// when the folder now resolves outside the workspace.
    pub fn load(&self, name: &str) -> Result<LoadedSkill> {
        let Some(skill) = self.registry.get(name) else {
            return Err(Error::SkillNotFound {
                name: name.to_owned(),
                suggestions: close_matches(name, self.registry.names(), MAX_SUGGESTIONS),
            });
        };
        let file = skill.skill_file();
        let unavailable = |source| Error::SkillUnavailable {
            name: name.to_owned(),
            path: file.clone(),
            source,
        };
        // Checking existence first turns "the folder disappeared" into a clear
        // SKILL_UNAVAILABLE instead of a path-resolution error.
        std::fs::symlink_metadata(&file).map_err(unavailable)?;
        let root = self.registry.workspace_root();
        let resolved = WorkspacePolicy::new().resolve_path(&file, root)?;
        // Bounded and checked on the handle: a FIFO or device swapped in since discovery
        // cannot block the call, and a file grown past the cap is not read.
        let text = read_regular_text(&resolved, MAX_SKILL_FILE_BYTES).map_err(|e| match e {
            ReadError::TooLarge { .. } | ReadError::NotRegular { .. } => Error::SkillFileRefused {
                name: name.to_owned(),
                path: resolved.clone(),
                reason: e,
            },
            e => unavailable(e.into()),
        })?;
        let (_, body) = frontmatter::split(&text).map_err(|e| Error::SkillInvalid {
            name: name.to_owned(),
            reason: e.message().to_owned(),
        })?;
        let dir = resolved.parent().unwrap_or(root);
        let (files, files_omitted) = list_files(dir, root, self.max_listed_files);
        Ok(LoadedSkill {
            name: name.to_owned(),
            directory: relative(dir, root),
            body: body.to_owned(),
            files,
            files_omitted,
        })
    }

    /// What the definition takes from the state: the artifact threshold, when set.
    fn finish_definition(&self, definition: &mut ToolDefinition) {
        if let Some(max) = self.max_result_chars {
            definition.max_result_chars = max;
        }
    }
}

// The tool. The doc comment is the model-facing description (What / When /
// Precondition, one line each). The method stays private; the tool is public.
#[tools(vis = "pub", map_definition = "Self::finish_definition")]
impl SkillTools {
    /// Load the full instructions of one skill from the skill catalog, with its bundled files.
    /// Use when a task matches a skill's description, before doing the task.
    /// The name must be a catalog skill name.
    #[tool(
        capabilities(read),
        input_error = "refine_input_error",
        execution_mode = "thread"
    )]
    fn load_skill(
        &self,
        /// Skill name exactly as the skill catalog lists it, lower kebab-case, e.g. `pdf-forms`.
        name: SkillName,
    ) -> ToolOutput {
        // The reads block (up to 1 MiB of SKILL.md and a listing of up to 10 000
        // entries), so the body runs on a thread of its own, never on an async worker.
        match self.load(&name.0) {
            Ok(skill) => ToolOutput::text(skill.to_text())
                .with_data("name", skill.name.as_str())
                .with_data("directory", skill.directory.as_str())
                .with_data("files", skill.files.clone())
                .with_data("files_omitted", skill.files_omitted),
            Err(e) => ToolOutput::error(e.to_info()),
        }
    }
}

/// The `load_skill` tool: `{"name": "kebab-name"}` → the current instructions of a
/// discovered skill: the name of the tool type `#[tools]` generates from
/// [`SkillTools`]' `load_skill` method ([`SkillToolsLoadSkillTool`]).
///
/// Only names in the registry can be loaded, and every call reads `SKILL.md` again, so
/// an edit shows up on the next call. The read is re-confined to the workspace the
/// skills were discovered in. An unknown name fails with `SKILL_NOT_FOUND` and
/// suggests close matches; a skill whose folder disappeared fails with
/// `SKILL_UNAVAILABLE`; a name that is not lower kebab-case is `INVALID_INPUT`. The
/// tool is read-only and declares the `read` capability; results longer than
/// `max_result_chars` (50 000) are saved as an artifact by the executor.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use iris_skill::{discover_skills, LoadSkillTool, SkillDiscoveryOptions, SkillRegistry};
/// use iris_tools_core::{Tool, ToolExecutionContext, ToolInput};
/// use serde_json::json;
///
/// let ws = tempfile::tempdir()?;
/// let dir = ws.path().join(".agents/skills/hello");
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("SKILL.md"), "---\ndescription: Greet.\n---\nSay hello.\n")?;
/// let registry = SkillRegistry::new(discover_skills(&SkillDiscoveryOptions::new(ws.path()))?);
///
/// let tool = LoadSkillTool::new(registry);
/// assert_eq!(tool.definition().name, "load_skill");
/// let ctx = ToolExecutionContext::new(ws.path());
/// let rt = tokio::runtime::Builder::new_current_thread().build()?;
/// let input = tool.validate_input(json!({"name": "hello"}))?;
/// let result = rt.block_on(tool.run(input, &ctx));
/// assert!(result.model_content().contains("Say hello."));
///
/// let result = rt.block_on(tool.run(ToolInput::new(json!({"name": "helo"})), &ctx));
/// assert_eq!(result.error_code(), Some("SKILL_NOT_FOUND"));
/// # Ok(()) }
/// ```
pub type LoadSkillTool = SkillToolsLoadSkillTool;

impl LoadSkillTool {
    /// The tool's name.
    pub const NAME: &'static str = "load_skill";

    /// The tool over a registry (its own [`SkillTools`] state).
    pub fn new(registry: impl Into<Arc<SkillRegistry>>) -> Self {
        Arc::new(SkillTools::new(registry)).load_skill_tool()
    }

    /// Sets the result size past which the executor saves the body as an artifact.
    #[must_use]
    pub fn with_max_result_chars(self, max: usize) -> Self {
        Arc::new(self.state().as_ref().clone().with_max_result_chars(max)).load_skill_tool()
    }

    /// Sets how many bundled files are listed at most.
    #[must_use]
    pub fn with_max_listed_files(self, max: usize) -> Self {
        Arc::new(self.state().as_ref().clone().with_max_listed_files(max)).load_skill_tool()
    }

    /// The registry the tool loads from.
    pub fn registry(&self) -> &SkillRegistry {
        self.state().registry()
    }

    /// Loads a skill by name, reading its `SKILL.md` now; see [`SkillTools::load`].
    ///
    /// # Errors
    /// As [`SkillTools::load`].
    pub fn load(&self, name: &str) -> Result<LoadedSkill> {
        self.state().load(name)
    }
}

/// The `name` parameter: a lower kebab-case skill name, checked while it is parsed.
struct SkillName(String);

impl<'de> Deserialize<'de> for SkillName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(name) => match check_kebab_name(&name) {
                Ok(()) => Ok(Self(name)),
                Err(reason) => Err(D::Error::custom(format!("skill name `{name}` {reason}"))),
            },
            _ => Err(D::Error::custom("`name` must be a string")),
        }
    }
}

impl JsonSchema for SkillName {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("SkillName")
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": NAME_PATTERN,
            "maxLength": MAX_NAME_LEN,
        })
    }
}

/// The `input_error` of `load_skill`: the messages the model has always read, without
/// the typed parse's prefix. `{"name": "…"}` is the only shape the tool takes.
fn refine_input_error(
    definition: &ToolDefinition,
    raw: &Value,
    error: ToolErrorInfo,
) -> ToolErrorInfo {
    let invalid = |message: String| ToolErrorInfo::new(INVALID_INPUT, message);
    if error.code != INVALID_INPUT {
        return error;
    }
    if !raw.is_object() {
        return invalid("input must be an object like {\"name\": \"pdf\"}".into());
    }
    let prefix = format!("invalid input for `{}`: ", definition.name);
    let Some(message) = error.message.strip_prefix(&prefix) else {
        return error;
    };
    if message.starts_with("missing field `") {
        return invalid("`name` is required".into());
    }
    if let Some((extra, _)) = message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.rsplit_once("`, expected "))
    {
        return invalid(format!(
            "unknown field `{extra}`; load_skill takes only `name`"
        ));
    }
    invalid(message.to_owned())
}

/// Lists the files under `dir` (depth-first, entries sorted, hidden entries and
/// `SKILL.md` itself skipped, symlinked directories not followed so a link cannot
/// loop or leave the skill) and returns at most `max` of them relative to `root`,
/// with the number left out.
fn list_files(dir: &Path, root: &Path, max: usize) -> (Vec<String>, usize) {
    let mut found = Vec::new();
    let mut visited = 0_usize;
    let mut stopped_early = false;
    walk(dir, 0, &mut found, &mut visited, &mut stopped_early);
    found.retain(|p| p.parent() != Some(dir) || p.file_name() != Some(SKILL_FILE.as_ref()));
    found.sort();
    let total = found.len();
    let listed = found.iter().take(max).map(|p| relative(p, root)).collect();
    // When the walk stopped early the true count is unknown; report at least one
    // omitted file so the model knows the list is incomplete.
    let omitted = total.saturating_sub(max).max(usize::from(stopped_early));
    (listed, omitted)
}

fn walk(
    dir: &Path,
    depth: usize,
    found: &mut Vec<PathBuf>,
    visited: &mut usize,
    stopped: &mut bool,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(std::result::Result::ok).collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        if *visited >= MAX_VISITED_ENTRIES {
            *stopped = true;
            return;
        }
        *visited += 1;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if depth + 1 < MAX_LIST_DEPTH {
                walk(&entry.path(), depth + 1, found, visited, stopped);
            } else {
                *stopped = true;
            }
        } else if kind.is_file() || (kind.is_symlink() && entry.path().is_file()) {
            found.push(entry.path());
        }
    }
}

/// `path` relative to `root` with `/` separators, or `path` as it is when it is not
/// under `root`.
fn relative(path: &Path, root: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Ok(rel) => rel
            .components()
            .filter_map(|c| match c {
                Component::Normal(part) => Some(part.to_string_lossy()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("/"),
        Err(_) => path.display().to_string(),
    }
}
