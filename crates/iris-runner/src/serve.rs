//! `iris mcp serve`'s view of an assembled environment: each MCP session lists what
//! the model would see — the active tools plus the deferred tools `tool_search`
//! revealed in that session — less the tools only a run loop can answer
//! (`ask_question`, `get_goal`, …), and only those are callable. Calls run with the
//! executor attached as the script host, so `run_tool_script` works as under
//! `iris call`. A session's read observations (the file tools' read-before-write
//! state) live in its scope, as a run's live in its record, so they go when the
//! session ends instead of staying in the file service for the server's lifetime.

use std::sync::Arc;

use iris_discovery::{DisclosureState, SchemaBudget};
use iris_executor::ToolExecutor;
use iris_files::ReadState;
use iris_mcp::serve::{McpToolServer, ScopeFactory, SessionScope};
use iris_tools_core::{Tool, ToolExecutionContext, ToolRegistryView, ViewFilter};

use crate::assemble::ToolEnvironment;
use crate::loop_tool::loop_tool_of;

/// One [`DisclosureState`] per MCP session over the registry's default view (system
/// tools hidden), as the run loop keeps one per run.
#[derive(Debug, Clone)]
pub struct DisclosureScopes {
    view: ToolRegistryView,
    executor: ToolExecutor,
}

impl DisclosureScopes {
    /// Scopes over `view`, whose calls run through `executor` (a `run_tool_script`
    /// program's inner calls too).
    pub fn new(view: ToolRegistryView, executor: ToolExecutor) -> Self {
        Self { view, executor }
    }
}

impl ScopeFactory for DisclosureScopes {
    fn session(&self) -> Arc<dyn SessionScope> {
        Arc::new(DisclosureScope {
            view: self.view.clone(),
            executor: self.executor.clone(),
            state: DisclosureState::new(),
            reads: Arc::new(ReadState::new()),
        })
    }
}

/// One session's reveals and read observations.
#[derive(Debug)]
struct DisclosureScope {
    view: ToolRegistryView,
    executor: ToolExecutor,
    state: DisclosureState,
    /// What this session's file tools read; attached to each call, so the file
    /// service keeps nothing per session.
    reads: Arc<ReadState>,
}

impl SessionScope for DisclosureScope {
    /// Active tools and every tool revealed so far, in registration order. An MCP
    /// client holds the whole list, so no schema budget applies.
    fn listed(&self) -> Vec<Arc<dyn Tool>> {
        let sent = self
            .state
            .request_specs(&self.view, SchemaBudget::UNLIMITED);
        let names: std::collections::BTreeSet<String> =
            sent.specs.into_iter().map(|s| s.name).collect();
        self.view
            .available_tools()
            .into_iter()
            .filter(|t| names.contains(&t.definition().name) && loop_tool_of(t.as_ref()).is_none())
            .collect()
    }

    /// The state attached, with everything listed loaded: the discovery layer then
    /// refuses a deferred tool nobody revealed and certifies a `tool_search`'s reveals
    /// into this session. The session's read observations go with it.
    fn prepare(&self, ctx: ToolExecutionContext) -> ToolExecutionContext {
        self.state
            .request_specs(&self.view, SchemaBudget::UNLIMITED);
        let mut ctx = self.state.attach(ctx);
        ctx.extensions.insert_arc(Arc::clone(&self.reads));
        iris_script::ScriptHost::attach(ctx, &self.executor)
    }
}

impl ToolEnvironment {
    /// The environment's executor served over MCP (`iris mcp serve`), each session
    /// scoped by [`DisclosureScopes`]. Close the environment when serving ends.
    pub fn mcp_server(&self) -> McpToolServer {
        let view = self.registry.view(ViewFilter::default());
        let scopes = DisclosureScopes::new(view, self.executor.clone());
        McpToolServer::new(self.executor.clone(), &self.workspace).with_scopes(Arc::new(scopes))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use iris_files::{FileService, FileToolsConfig};
    use iris_tools_core::{ToolRegistry, ToolUse};
    use serde_json::json;

    use super::*;

    /// A session's `read_file` is observed in the session's scope, not in the file
    /// service: when the session ends (its scope dropped), nothing of it remains.
    #[tokio::test]
    async fn a_sessions_reads_go_with_its_scope() {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(workspace.path().join("notes.txt"), "hello\n").unwrap();
        let service = Arc::new(FileService::new(FileToolsConfig::default()).unwrap());
        let registry = ToolRegistry::new();
        for tool in iris_files::builtin_tools_with(&service) {
            registry.register_arc(tool).unwrap();
        }
        let executor = ToolExecutor::new(registry.clone());
        let scopes = DisclosureScopes::new(registry.view(ViewFilter::default()), executor.clone());

        let scope = scopes.session();
        let ctx = scope.prepare(ToolExecutionContext::new(workspace.path()).session_id("mcp-1"));
        let call = ToolUse::new("c1", "read_file", json!({"file_path": "notes.txt"}));
        let result = executor.execute_one(&call, &ctx, None).await;
        assert!(!result.is_error(), "{result:?}");

        assert!(
            service.session_state("mcp-1").is_empty(),
            "the file service keeps the session's reads for the server's lifetime"
        );
        let reads = ctx.extensions.get_arc::<ReadState>().unwrap();
        assert_eq!(reads.len(), 1, "the session's scope holds the read");
        let weak = Arc::downgrade(&reads);
        // The session ends: its call contexts and its scope go.
        drop((reads, ctx, scope));
        assert!(weak.upgrade().is_none(), "the reads ended with the session");
    }
}
