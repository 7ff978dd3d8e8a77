//! The six built-in file tools and their YAML keys.

use std::sync::Arc;

use iris_tools_core::{
    BoxFuture, ContextRetention, Tool, ToolCapability, ToolDefinition, ToolErrorInfo,
    ToolExecutionContext, ToolResult,
};
use serde_json::Value;

use crate::blocking::{Stop, run_blocking};
use crate::service::FileService;

mod edit;
mod freshness;
mod grep;
mod list;
mod publish;
mod read;
mod write;

pub use edit::EditFileTool;
pub use grep::GrepSearchTool;
pub use list::ListFilesTool;
pub use publish::PublishArtifactTool;
pub use read::ReadFileTool;
pub use write::WriteFileTool;

/// Default and largest `limit` of `read_file`, in lines.
pub const MAX_READ_LIMIT: u64 = 1000;
/// Default `max_results` of `list_files` and `grep_search`.
pub const DEFAULT_MAX_RESULTS: u64 = 200;
/// Largest `max_results` of `list_files` and `grep_search`.
pub const MAX_RESULTS_LIMIT: u64 = 1000;

/// The YAML keys of the built-in file tools (`tools.builtin` in agent YAML) and the
/// model-facing names they map to.
pub mod keys {
    /// `file.read` → `read_file`.
    pub const FILE_READ: &str = "file.read";
    /// `file.list` → `list_files`.
    pub const FILE_LIST: &str = "file.list";
    /// `file.grep` → `grep_search`.
    pub const FILE_GREP: &str = "file.grep";
    /// `file.write` → `write_file`.
    pub const FILE_WRITE: &str = "file.write";
    /// `file.edit` → `edit_file`.
    pub const FILE_EDIT: &str = "file.edit";
    /// `file.publish` → `publish_artifact`.
    pub const FILE_PUBLISH: &str = "file.publish";

    /// Every key with its model tool name, in the seed's order.
    pub const ALL: [(&str, &str); 6] = [
        (FILE_READ, "read_file"),
        (FILE_LIST, "list_files"),
        (FILE_GREP, "grep_search"),
        (FILE_WRITE, "write_file"),
        (FILE_EDIT, "edit_file"),
        (FILE_PUBLISH, "publish_artifact"),
    ];

    /// The model tool name for a YAML key.
    ///
    /// ```
    /// assert_eq!(iris_files::keys::model_name("file.grep"), Some("grep_search"));
    /// assert_eq!(iris_files::keys::model_name("file.nope"), None);
    /// ```
    pub fn model_name(key: &str) -> Option<&'static str> {
        ALL.iter().find(|(k, _)| *k == key).map(|(_, name)| *name)
    }
}

/// `file.read`: a [`ReadFileTool`] on `service`.
pub fn file_read(service: &Arc<FileService>) -> Arc<dyn Tool> {
    Arc::new(ReadFileTool::new(Arc::clone(service)))
}

/// `file.list`: a [`ListFilesTool`] on `service`.
pub fn file_list(service: &Arc<FileService>) -> Arc<dyn Tool> {
    Arc::new(ListFilesTool::new(Arc::clone(service)))
}

/// `file.grep`: a [`GrepSearchTool`] on `service`.
pub fn file_grep(service: &Arc<FileService>) -> Arc<dyn Tool> {
    Arc::new(GrepSearchTool::new(Arc::clone(service)))
}

/// `file.write`: a [`WriteFileTool`] on `service`.
pub fn file_write(service: &Arc<FileService>) -> Arc<dyn Tool> {
    Arc::new(WriteFileTool::new(Arc::clone(service)))
}

/// `file.edit`: an [`EditFileTool`] on `service`.
pub fn file_edit(service: &Arc<FileService>) -> Arc<dyn Tool> {
    Arc::new(EditFileTool::new(Arc::clone(service)))
}

/// `file.publish`: a [`PublishArtifactTool`] on `service`.
pub fn file_publish(service: &Arc<FileService>) -> Arc<dyn Tool> {
    Arc::new(PublishArtifactTool::new(Arc::clone(service)))
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
    let make: fn(&Arc<FileService>) -> Arc<dyn Tool> = match key {
        keys::FILE_READ => file_read,
        keys::FILE_LIST => file_list,
        keys::FILE_GREP => file_grep,
        keys::FILE_WRITE => file_write,
        keys::FILE_EDIT => file_edit,
        keys::FILE_PUBLISH => file_publish,
        _ => return None,
    };
    Some(make(service))
}

/// All six file tools sharing `service` (and so its read observations).
pub fn builtin_tools_with(service: &Arc<FileService>) -> Vec<Arc<dyn Tool>> {
    vec![
        file_read(service),
        file_list(service),
        file_grep(service),
        file_write(service),
        file_edit(service),
        file_publish(service),
    ]
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

/// Builds a file tool's definition: schema, capabilities, the YAML key in metadata,
/// and observation retention for the read-only tools (their old results may be
/// reduced to a preview; they can be read again).
fn definition(
    name: &str,
    key: &str,
    description: &str,
    schema: Value,
    capability: ToolCapability,
    tags: &[&str],
) -> ToolDefinition {
    let def = ToolDefinition::new(name, description, schema)
        .with_capabilities([capability])
        .with_metadata("yaml_key", key)
        .with_metadata("tags", tags.to_vec());
    if capability == ToolCapability::Read {
        def.with_context_retention(ContextRetention::Observation)
    } else {
        def
    }
}

/// An unbound error result; the executor binds the call identity.
fn failed(error: ToolErrorInfo) -> ToolResult {
    ToolResult::error("", "", error)
}

/// Turns a body outcome into a result.
fn finish(outcome: Result<ToolResult, ToolErrorInfo>) -> ToolResult {
    outcome.unwrap_or_else(failed)
}

/// The one `run` path of every file tool: a typed parse of the (already
/// schema-checked) input, then `work` on the blocking pool with the service, the call's
/// context and its stop flag, an error at any step becoming an error result.
fn run_on_service<'a, I, F>(
    service: &Arc<FileService>,
    ctx: &'a ToolExecutionContext,
    input: Result<I, ToolErrorInfo>,
    work: F,
) -> BoxFuture<'a, ToolResult>
where
    I: Send + 'static,
    F: FnOnce(&FileService, &ToolExecutionContext, I, &Stop) -> Result<ToolResult, ToolErrorInfo>
        + Send
        + 'static,
{
    let service = Arc::clone(service);
    Box::pin(async move {
        let input = match input {
            Ok(input) => input,
            Err(e) => return failed(e),
        };
        let task_ctx = ctx.clone();
        finish(run_blocking(ctx, move |stop| work(&service, &task_ctx, input, stop)).await)
    })
}
