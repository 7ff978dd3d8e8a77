//! The unified diff `GET /v1/runs/{id}` adds to a waiting run's approval of an
//! `edit_file` / `write_file` call: what the call would change in the file as it is now,
//! computed by [`iris_files::change_diff`] (which recognises the two tools by type, so a
//! host's own tool that is also called `edit_file` gets none). A top-level approval
//! ([`add_diff`]) uses the served agent's tools and workspace; an approval a subagent's
//! child run waits for, relayed by its parent (`interaction.kind: subagent`, the
//! child's approval in `inner`, [`add_child_diff`]), uses the child agent's own tools
//! and workspace — the child's YAML narrowed under its parent, as the `subagent` call
//! assembles it ([`AgentRunner::subagent_runner`](iris_runner::AgentRunner::subagent_runner)).
//!
//! A child agent is assembled once per server and agent, on the first approval that
//! needs it; its tools are kept (only to recognise them) and what it started is closed
//! at once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use iris_tools_core::ToolRegistry;
use serde_json::Value;
use tokio::sync::Mutex;

use crate::api::RunView;
use crate::host::Host;

/// A child agent's tools and workspace.
#[derive(Debug)]
struct ChildTools {
    registry: ToolRegistry,
    workspace: PathBuf,
}

/// The child agents assembled so far, by (served agent, catalog selector).
#[derive(Debug, Default)]
pub(crate) struct Children {
    assembled: Mutex<HashMap<(String, String), Arc<ChildTools>>>,
}

impl Children {
    /// The tools of the child `selector` of the served agent `agent`, assembled on
    /// first use; `None` when the agent is not served or the child cannot be
    /// assembled.
    async fn of(&self, host: &Host, agent: &str, selector: &str) -> Option<Arc<ChildTools>> {
        let key = (agent.to_owned(), selector.to_owned());
        let mut assembled = self.assembled.lock().await;
        if let Some(tools) = assembled.get(&key) {
            return Some(Arc::clone(tools));
        }
        let runner = host.agents().runners.get(agent)?;
        let child = match runner.subagent_runner(selector).await {
            Ok(child) => child,
            Err(e) => {
                tracing::debug!(agent, selector, error = %e.message, "cannot assemble a subagent for its diff");
                return None;
            }
        };
        let tools = child.environment().map(|env| ChildTools {
            registry: child.executor().registry().clone(),
            workspace: env.workspace.clone(),
        });
        // Only its tools' types are needed: what it started stops now.
        if let Err(e) = child.close().await {
            tracing::warn!(agent, selector, error = %e, "cannot close a subagent's tools");
        }
        let tools = Arc::new(tools?);
        assembled.insert(key, Arc::clone(&tools));
        Some(tools)
    }
}

/// Adds `diff` to a waiting run's own approval, with the served agent's tools and
/// workspace. Other interactions, other tools and calls with nothing to show are left
/// as they are.
pub(crate) async fn add_diff(host: &Host, view: &mut RunView) {
    let Some(interaction) = view.interaction.as_mut() else {
        return;
    };
    if interaction.get("kind").and_then(Value::as_str) != Some("approval") {
        return;
    }
    let Some(runner) = host.agents().runners.get(&view.agent) else {
        return;
    };
    let Some(environment) = runner.environment() else {
        return;
    };
    insert_diff(
        interaction,
        runner.executor().registry(),
        &environment.workspace,
    )
    .await;
}

/// Adds `diff` to the child's approval a waiting run relays (`interaction.inner`),
/// when it is an `edit_file` / `write_file` call with something to show, against the
/// file as it is now in the child's workspace (read on the blocking pool).
pub(crate) async fn add_child_diff(host: &Host, view: &mut RunView) {
    let Some(interaction) = view.interaction.as_mut() else {
        return;
    };
    if interaction.get("kind").and_then(Value::as_str) != Some("subagent") {
        return;
    }
    let Some(selector) = interaction
        .get("agent_selector")
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        return;
    };
    let Some(inner) = interaction.get_mut("inner") else {
        return;
    };
    if inner.get("kind").and_then(Value::as_str) != Some("approval") {
        return;
    }
    let Some(tools) = host.children.of(host, &view.agent, &selector).await else {
        return;
    };
    insert_diff(inner, &tools.registry, &tools.workspace).await;
}

/// Adds `diff` to `approval` (an approval interaction's JSON) when its tool, looked up
/// in `registry`, is `edit_file` / `write_file` and the call has something to show
/// against the file as it is now under `workspace` (read on the blocking pool).
pub(crate) async fn insert_diff(approval: &mut Value, registry: &ToolRegistry, workspace: &Path) {
    let Some(tool) = approval
        .get("tool_name")
        .and_then(Value::as_str)
        .and_then(|name| registry.get(name).ok())
    else {
        return;
    };
    let arguments = approval.get("arguments").cloned().unwrap_or(Value::Null);
    let workspace = workspace.to_path_buf();
    let diff = tokio::task::spawn_blocking(move || {
        iris_files::change_diff(&workspace, tool.as_ref(), &arguments)
    })
    .await
    .ok()
    .flatten();
    if let (Some(diff), Some(object)) = (diff, approval.as_object_mut()) {
        object.insert("diff".to_owned(), Value::String(diff));
    }
}
