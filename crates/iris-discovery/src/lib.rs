#![doc = include_str!("../README.md")]
//! Tool discovery: `tool_search`, the disclosure state and layer, local search, and the
//! backends behind them (the "工具发现" and "Local deferred search" rows of
//! `docs/seed-coverage.md`, SPEC §4).
//!
//! With hundreds of specialist tools, sending every schema on every request wastes
//! the context and makes models choose worse. Tools published as *deferred* are
//! therefore found in two steps:
//!
//! 1. **Search.** The model calls [`ToolSearchTool`] (`tool_search`) with one or more
//!    intents in plain words. Each query selects at most one deferred tool of the
//!    static view (never eager tools, skills or subagents); the result lists the
//!    selections and a short summary of each tool.
//! 2. **Load.** The [`DisclosureLayer`] in the executor certifies the real search
//!    body's selections into the session's [`DisclosureState`]. Before the next model request the runtime calls
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
//! *says*. When the [`DisclosureLayer`] passes a `tool_search` call on, it hands the
//! call a crate-private receipt; the `tool_search` body writes its selected names into
//! it, and after the call the layer reads the receipt (not the output), records the
//! names into the state on the context and writes them to the output's typed
//! `revealed_tools`, which it clears on every other output. So a middleware that
//! rewrites an output, or a look-alike tool that returns the same `data`, reveals
//! nothing. A middleware that short-circuits, or turns the search into an error,
//! reveals nothing either: the model did not see the selections.
//!
//! # Backends
//!
//! A [`DiscoveryBackend`] picks the tools. [`LocalDiscoveryBackend`] ranks locally with
//! [`search::SearchIndex`] and selects a top hit only when its [`relevance`]
//! (the score on a catalog-independent scale) reaches [`DEFAULT_MIN_RELEVANCE`]; a
//! query nothing fits returns `null` rather than "the best of a bad lot". With the
//! `embed` feature, `HybridDiscoveryBackend` (module `hybrid`) fuses that ranking with
//! one by sentence embeddings of a model run on CPU (module `embed`), by reciprocal
//! rank, and selects on a mixed score of similarity and relevance. The decision backend (`iris-decision`) asks a decision model one structured
//! question per query instead; its errors become the tool's errors, never a silent
//! fallback to local search.
//!
//! # Configuration
//!
//! The agent YAML's `context_policy` section is `iris-runner`'s (`enabled`,
//! `deferred_tools`, which installs `tool_search`, `retention`, `discovery`).
//! [`DiscoveryConfig`] is its `discovery` part, `{backend: local | hybrid |
//! decision, model_path}`: [`DiscoveryConfig::check`] says what is wrong (a missing model
//! file is `MODEL_MISSING`) and [`DiscoveryConfig::build`] makes the backend.
//!
//! ```
//! use iris_discovery::{DisclosureLayer, DisclosureState, SchemaBudget, ToolSearchTool};
//! use iris_executor::ToolExecutor;
//! use iris_tools_core::{FnTool, ToolDefinition, ToolExecutionContext, ToolOutput, ToolRegistry, ToolUse, ViewFilter};
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let registry = ToolRegistry::new();
//! let def = ToolDefinition::new("create_issue", "Create a new issue in the tracker.",
//!     json!({"type": "object"})).with_deferred(true);
//! registry.register(FnTool::new(def, |_, _| async { ToolOutput::text("#1") })).unwrap();
//! let view = registry.view(ViewFilter::default());
//! registry.register(ToolSearchTool::new(view.clone())).unwrap();
//!
//! let executor = ToolExecutor::new(registry).with_layer(DisclosureLayer);
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
//! assert_eq!(found.output.revealed_tools, ["create_issue"]);
//!
//! state.request_specs(&view, SchemaBudget::UNLIMITED); // next request loads its schema
//! let ok = executor.execute_one(&ToolUse::new("c3", "create_issue", json!({})), &ctx, None).await;
//! assert_eq!(ok.model_content(), "#1");
//! # });
//! ```

// The shared test scaffolding (`tests/eval`) names this crate by its name; the unit
// tests include it too.
#[cfg(test)]
extern crate self as iris_discovery;

mod backend;
#[cfg(feature = "embed")]
mod bert;
mod config;
#[cfg(feature = "embed")]
pub mod embed;
mod error;
#[cfg(feature = "embed")]
pub mod fetch;
#[cfg(feature = "embed")]
pub mod hybrid;
mod input;
mod layer;
#[cfg(feature = "embed")]
mod product;
pub mod search;
mod state;
mod tool;
#[cfg(feature = "embed")]
pub mod vectors;

pub use backend::{
    DEFAULT_MIN_RELEVANCE, DiscoveryAnswer, DiscoveryBackend, DiscoveryRequest,
    LocalDiscoveryBackend, RankedCandidate, relevance,
};
pub use config::{
    BackendKind, BuiltBackend, DEFAULT_MODEL_NAME, DiscoveryConfig, MODEL_FILES, check_model_dir,
    default_model_dir, default_vector_dir, model_cache_dir, vector_cache_dir,
};
pub use error::{
    EMBEDDING_FAILED, Error, MODEL_CACHE_UNAVAILABLE, MODEL_CHECKSUM_MISMATCH,
    MODEL_DOWNLOAD_FAILED, MODEL_LOAD_FAILED, MODEL_MISSING, MODEL_PACKAGE_INVALID,
    MODEL_WRITE_FAILED, Result,
};
#[cfg(feature = "embed")]
pub use hybrid::HybridDiscoveryBackend;
pub use input::{
    SUMMARY_DESCRIPTION_CHARS, ToolSearchInput, ToolSearchOutput, ToolSelection, ToolSummary,
    summary_description,
};
pub use layer::DisclosureLayer;
pub use search::SearchDeferred;
pub use state::{DisclosureState, RequestSpecs, SchemaBudget};
pub use tool::{TOOL_SEARCH_NAME, ToolSearchOutcome, ToolSearchTool, tool_search_definition};
