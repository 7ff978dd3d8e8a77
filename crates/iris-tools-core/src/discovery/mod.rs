//! Tool discovery: `tool_search`, the disclosure state, and the backends behind them
//! (seed 000 "工具发现", seed 003 "延迟发现为何分两步", SPEC §4).
//!
//! With hundreds of specialist tools, sending every schema on every request wastes
//! the context and makes models choose worse. Tools published as *deferred* are
//! therefore found in two steps:
//!
//! 1. **Search.** The model calls [`ToolSearchTool`] (`tool_search`) with one or more
//!    intents in plain words. Each query selects at most one deferred tool of the
//!    static view (never eager tools, skills or subagents); the result lists the
//!    selections and a short summary of each tool.
//! 2. **Load.** The executor certifies the real search body's selections into the
//!    session's [`DisclosureState`]. Before the next model request the runtime calls
//!    [`DisclosureState::request_specs`]: the active specs plus revealed deferred
//!    specs within a schema budget. Only tools whose full schema that request carries
//!    are callable; calling any other deferred tool is refused with `TOOL_NOT_LOADED`
//!    ("call tool_search first").
//!
//! A hit is not an authorization: it does not bypass the budget (a tool that does not
//! fit stays unloaded) nor the permission policy (which still runs on the call).
//!
//! # Certification
//!
//! Revealed tools come only from a real `tool_search` body, never from what a result
//! *says*. When the executor runs a tool of the tool-discovery class it hands the
//! call a crate-private receipt; the `tool_search` body writes its selected names into
//! it, and after the call the executor reads the receipt (not the result), records
//! the names into the state on the context and writes them to the result's
//! `metadata.context_revealed_tools`. The key is reserved: the executor strips it
//! from every other result. So a middleware that rewrites a result, or a look-alike
//! tool that returns the same `data`, reveals nothing. A middleware that
//! short-circuits, or turns the search into an error, reveals nothing either: the
//! model did not see the selections.
//!
//! # Backends
//!
//! A [`DiscoveryBackend`] picks the tools. [`LocalDiscoveryBackend`] ranks locally with
//! [`crate::search::SearchIndex`] and selects a top hit only when its [`relevance`]
//! (the score on a catalog-independent scale) reaches [`DEFAULT_MIN_RELEVANCE`]; a
//! query nothing fits returns `null` rather than "the best of a bad lot". The
//! decision backend (`iris-decision`) asks a decision model one structured question
//! per query instead; its errors become the tool's errors, never a silent fallback
//! to local search.
//!
//! # Configuration
//!
//! [`ContextPolicy`] is the `context_policy` section: `enabled = true`,
//! `deferred_tools = false` by default; deferred tools need `enabled` and install
//! `tool_search`.
//!
//! ```
//! use iris_tools_core::discovery::{DisclosureState, SchemaBudget, ToolSearchTool};
//! use iris_tools_core::{FnTool, ToolDefinition, ToolExecutionContext, ToolExecutor,
//!     ToolRegistry, ToolResult, ToolUse, ViewFilter};
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let registry = ToolRegistry::new();
//! let def = ToolDefinition::new("create_issue", "Create a new issue in the tracker.",
//!     json!({"type": "object"})).with_deferred(true);
//! registry.register(FnTool::new(def, |_, _| async { ToolResult::ok_text("#1") })).unwrap();
//! let view = registry.view(ViewFilter::default());
//! registry.register(ToolSearchTool::new(view.clone())).unwrap();
//!
//! let executor = ToolExecutor::new(registry);
//! let state = DisclosureState::new();
//! let ctx = state.attach(ToolExecutionContext::new(".").session_id("s-1"));
//! state.request_specs(&view, SchemaBudget::UNLIMITED); // first request: tool_search only
//!
//! let call = ToolUse::new("c1", "create_issue", json!({}));
//! let refused = executor.execute_one(&call, &ctx, None).await;
//! assert_eq!(refused.error_code(), Some("TOOL_NOT_LOADED"));
//!
//! let search = ToolUse::new("c2", "tool_search", json!({"queries": ["open an issue"]}));
//! let found = executor.execute_one(&search, &ctx, None).await;
//! assert_eq!(found.metadata["context_revealed_tools"], json!(["create_issue"]));
//!
//! state.request_specs(&view, SchemaBudget::UNLIMITED); // next request loads its schema
//! let ok = executor.execute_one(&ToolUse::new("c3", "create_issue", json!({})), &ctx, None).await;
//! assert_eq!(ok.model_content(), "#1");
//! # });
//! ```

mod backend;
mod input;
mod policy;
mod state;
mod tool;

pub use backend::{
    DEFAULT_MIN_RELEVANCE, DiscoveryAnswer, DiscoveryBackend, DiscoveryRequest,
    LocalDiscoveryBackend, RankedCandidate, relevance,
};
pub use input::{
    SUMMARY_DESCRIPTION_CHARS, ToolSearchInput, ToolSearchOutput, ToolSelection, ToolSummary,
    summary_description,
};
pub use policy::ContextPolicy;
pub use state::{DisclosureState, RequestSpecs, SchemaBudget};
pub use tool::{
    CONTEXT_REVEALED_TOOLS_KEY, TOOL_SEARCH_NAME, ToolSearchOutcome, ToolSearchTool,
    tool_search_definition,
};

pub(crate) use state::RevealReceipt;
