//! Workspace tools: the call context is injected, and results depend on it.

use std::sync::atomic::{AtomicUsize, Ordering};

use iris_tools_core::{ToolExecutionContext, tool};

/// List the entries of a workspace directory, sorted, directories with a trailing `/`.
///
/// Use to explore the workspace; use `read_file` to open a file.
///
/// # Arguments
/// * `path` - directory relative to the workspace root
#[tool(capabilities(read), group = "files")]
pub async fn list_directory(
    ctx: &ToolExecutionContext,
    #[default = "."] path: String,
) -> std::io::Result<Vec<String>> {
    let dir = ctx.workspace_root.join(path);
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let mut name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type()?.is_dir() {
            name.push('/');
        }
        names.push(name);
    }
    names.sort();
    Ok(names)
}

/// Save a Markdown note in the workspace's `notes/` directory.
///
/// Use to keep findings between steps; overwrites a note with the same title.
///
/// # Arguments
/// * `title` - note title; letters, digits and `-` become the file name
/// * `body` - Markdown text
#[tool(capabilities(write), group = "files", concurrency_safe = false)]
pub fn write_note(
    title: String,
    body: String,
    ctx: &ToolExecutionContext,
) -> std::io::Result<String> {
    let file: String = title
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let dir = ctx.workspace_root.join("notes");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{file}.md"));
    std::fs::write(&path, format!("# {title}\n\n{body}\n"))?;
    Ok(format!("saved notes/{file}.md"))
}

/// Describe the current session: its id, agent and run.
#[tool(group = "session")]
pub fn session_info(ctx: &ToolExecutionContext) -> String {
    format!(
        "session={} agent={} run={}",
        ctx.session_id, ctx.agent_id, ctx.run_id
    )
}

/// How many times `clear_cache` ran in this process.
pub static CACHE_CLEARS: AtomicUsize = AtomicUsize::new(0);

/// Drop every cached response so the next calls fetch fresh data.
#[tool(capabilities(write), group = "session", concurrency_safe = false)]
pub async fn clear_cache() {
    CACHE_CLEARS.fetch_add(1, Ordering::SeqCst);
}
