//! `iris mcp serve`'s view of an assembled environment: each MCP session lists what
//! the model would see — the active tools plus the deferred tools `tool_search`
//! revealed in that session — and only those are callable.

use std::sync::Arc;

use iris_discovery::{DisclosureState, SchemaBudget};
use iris_mcp::serve::{McpToolServer, ScopeFactory, SessionScope};
use iris_tools_core::{Tool, ToolExecutionContext, ToolRegistryView, ViewFilter};

use crate::assemble::ToolEnvironment;

/// One [`DisclosureState`] per MCP session over the registry's default view (system
/// tools hidden), as the run loop keeps one per run.
#[derive(Debug, Clone)]
pub struct DisclosureScopes {
    view: ToolRegistryView,
}

impl DisclosureScopes {
    /// Scopes over `view`.
    pub fn new(view: ToolRegistryView) -> Self {
        Self { view }
    }
}

impl ScopeFactory for DisclosureScopes {
    fn session(&self) -> Arc<dyn SessionScope> {
        Arc::new(DisclosureScope {
            view: self.view.clone(),
            state: DisclosureState::new(),
        })
    }
}

/// One session's reveals.
#[derive(Debug)]
struct DisclosureScope {
    view: ToolRegistryView,
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
            .filter(|t| names.contains(&t.definition().name))
            .collect()
    }

    /// The state attached, with everything listed loaded: the discovery layer then
    /// refuses a deferred tool nobody revealed and certifies a `tool_search`'s reveals
    /// into this session.
    fn prepare(&self, ctx: ToolExecutionContext) -> ToolExecutionContext {
        self.state
            .request_specs(&self.view, SchemaBudget::UNLIMITED);
        self.state.attach(ctx)
    }
}

impl ToolEnvironment {
    /// The environment's executor served over MCP (`iris mcp serve`), each session
    /// scoped by [`DisclosureScopes`]. Close the environment when serving ends.
    pub fn mcp_server(&self) -> McpToolServer {
        let view = self.registry.view(ViewFilter::default());
        McpToolServer::new(self.executor.clone(), &self.workspace)
            .with_scopes(Arc::new(DisclosureScopes::new(view)))
    }
}
