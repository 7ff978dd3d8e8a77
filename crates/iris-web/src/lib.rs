#![doc = include_str!("../README.md")]

mod call;
mod client;
mod credential;
mod error;
mod fetch;
mod input;
mod params;
mod search;
mod tools;
pub mod wire;

use std::sync::Arc;

use iris_tools_core::Tool;

pub use client::TavilyClient;
pub use credential::{ApiKey, TAVILY_API_KEY_ENV};
pub use error::{AuthFailure, Error, Result, codes};
pub use fetch::{MAX_URLS, MIN_URLS, NO_RESULT_REASON};
pub use search::{
    DEFAULT_MAX_RESULTS, MAX_EXCLUDE_DOMAINS, MAX_INCLUDE_DOMAINS, MAX_MAX_RESULTS, MIN_MAX_RESULTS,
};
pub use tools::{CATALOG, MakeWebTool, Web, WebFetchTool, WebSearchTool};
pub use wire::{
    ExtractRequest, ExtractResponse, ExtractedPage, FailedUrl, SearchHit, SearchRequest,
    SearchResponse, TimeRange,
};

/// Both web tools over one shared client, in catalog order (`web_search`, `web_fetch`),
/// ready for `ToolRegistry::register_many`.
///
/// ```
/// use std::sync::Arc;
/// use iris_web::TavilyClient;
///
/// let tools = iris_web::builtin_tools(Arc::new(TavilyClient::from_env()));
/// let names: Vec<&str> = tools.iter().map(|t| t.definition().name.as_str()).collect();
/// assert_eq!(names, ["web_search", "web_fetch"]);
/// ```
pub fn builtin_tools(client: Arc<TavilyClient>) -> Vec<Arc<dyn Tool>> {
    Arc::new(Web::new(client)).tools()
}
