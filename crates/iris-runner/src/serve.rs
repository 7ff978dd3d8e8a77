//! `iris mcp serve`'s view of an assembled environment: each MCP session lists what
//! the model would see — the active tools plus the deferred tools `tool_search`
//! revealed in that session — less the tools only a run loop can answer
//! (`ask_question`, `get_goal`, …), and only those are callable. Calls run with the
//! executor attached as the script host, so `run_tool_script` works as under
//! `iris call`.

use std::sync::Arc;

use iris_discovery::{DisclosureState, SchemaBudget};
use iris_executor::ToolExecutor;
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
        })
    }
}

/// One session's reveals.
#[derive(Debug)]
struct DisclosureScope {
    view: ToolRegistryView,
    executor: ToolExecutor,
    state: DisclosureState,
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
    /// into this session.
    fn prepare(&self, ctx: ToolExecutionContext) -> ToolExecutionContext {
        self.state
            .request_specs(&self.view, SchemaBudget::UNLIMITED);
        iris_script::ScriptHost::attach(self.state.attach(ctx), &self.executor)
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
