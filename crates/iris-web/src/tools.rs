//! The two web tools, as the `#[tool]` methods of one `#[tools]` impl block over the
//! shared [`Web`] state: one Tavily client.
//!
//! Each method's signature is the tool's input: the macro derives the JSON Schema from
//! it (descriptions from the `///` comments, bounds from the parameter types in
//! [`crate::params`]) and parses every call once, in `validate_input`. The bodies only
//! build the request and hand it to [`crate::search`] or [`crate::fetch`].

use std::sync::Arc;

use iris_tools_core::{Tool, ToolDefinition, ToolExecutionContext, ToolOutput, tools};

use crate::call::TOOL_TIMEOUT_MARGIN;
use crate::client::TavilyClient;
use crate::params::{Domains, Exclude, Include, MaxResults, Period, Query, Urls};
use crate::wire::{ExtractRequest, SearchRequest};
use crate::{fetch, search};

/// The state the two web tools share: one [`TavilyClient`].
///
/// [`Web::tools`] (on an `Arc<Web>`) builds both tools in catalog order, ready for
/// `ToolRegistry::register_many`; [`Web::search_tool`] and [`Web::fetch_tool`] build
/// one each, as do [`WebSearchTool::new`] and [`WebFetchTool::new`].
///
/// Both tools always use Tavily's `basic` depth, declare the `network` capability and
/// [`ToolDefinition::auto_allow`], so the default permission policy allows them without
/// asking; under the default rule they are not read-only (network), so the executor
/// runs them as barriers rather than in a parallel batch. Their definition timeout is
/// the client's deadline plus five seconds, so the executor's cap never cuts a request
/// the client would still report as `WEB_TIMEOUT`. Old results may be reduced to a
/// preview in a run's context view (observation retention).
///
/// # `web_search`
///
/// A Tavily `basic` search that returns sources, never a generated answer. Input
/// (every bound is also in the JSON Schema, so the executor's schema check catches it
/// first; the typed parse in `validate_input` checks again):
///
/// | field | default and bounds |
/// |---|---|
/// | `query` | required; not blank (trimmed before sending) |
/// | `max_results` | 10; strict integer 1–20 (`5.0` and `"5"` are refused) |
/// | `time_range` | `null`, or `day` / `week` / `month` / `year` |
/// | `include_domains` | `[]`; at most 300 non-blank strings |
/// | `exclude_domains` | `[]`; at most 150 non-blank strings |
///
/// The model sees one compact entry per hit (title, URL, snippet); `data` holds
/// `query`, `results` (`title`, `url`, `content`, `score`) and Tavily's `request_id`.
///
/// # `web_fetch`
///
/// Tavily `basic` extraction of 1–20 pages, whole or as the excerpts relevant to a
/// query.
///
/// | field | default and bounds |
/// |---|---|
/// | `urls` | required; 1–20 distinct `http`/`https` URLs with a host |
/// | `query` | `null` extracts whole pages; a non-blank string returns the excerpts relevant to it |
///
/// Partial failure keeps both sides: the model sees the extracted pages and a list of
/// the URLs that failed with their reasons, and `data` holds `results` (`url`,
/// `raw_content`) and `failed` (`url`, `error`). A requested URL the server mentions in
/// neither list is reported as failed. When nothing could be extracted the call is a
/// `WEB_FETCH_FAILED` error whose `details.failed` (and `data.failed`) lists every
/// reason.
///
/// # Input
///
/// A broken field is an `INVALID_INPUT` error whose `details.field` names it
/// (`urls[2]` for one bad URL). The validated input the executor hands on (to
/// permission checks, hooks and the body) is normalized: strings trimmed, every
/// default filled in.
///
/// ```
/// use std::sync::Arc;
/// use iris_tools_core::Tool;
/// use iris_web::{TavilyClient, Web};
/// use serde_json::json;
///
/// let web = Arc::new(Web::new(Arc::new(TavilyClient::from_env())));
/// let search = web.search_tool();
/// assert_eq!(search.definition().name, "web_search");
/// let input = search.validate_input(json!({"query": "  rust async  "})).unwrap();
/// assert_eq!(input.value(), &json!({
///     "query": "rust async", "max_results": 10, "time_range": null,
///     "include_domains": [], "exclude_domains": [],
/// }));
/// assert_eq!(
///     search.validate_input(json!({"query": "x", "max_results": 21})).unwrap_err().details["field"],
///     "max_results",
/// );
///
/// let fetch = web.fetch_tool();
/// let input = fetch.validate_input(json!({"urls": ["https://example.com/a"]})).unwrap();
/// assert_eq!(input.value(), &json!({"urls": ["https://example.com/a"], "query": null}));
/// let err = fetch.validate_input(json!({"urls": ["ftp://example.com/a"]})).unwrap_err();
/// assert_eq!(err.details["field"], "urls[0]");
/// ```
#[derive(Debug)]
pub struct Web {
    client: Arc<TavilyClient>,
}

impl Web {
    /// The state over a shared client.
    pub fn new(client: Arc<TavilyClient>) -> Self {
        Self { client }
    }

    /// The client the tools send requests with.
    pub fn client(&self) -> &Arc<TavilyClient> {
        &self.client
    }

    /// What each tool's definition takes from the state: a timeout that leaves room
    /// for the client's own deadline.
    fn finish_definition(&self, definition: &mut ToolDefinition) {
        definition.timeout = Some(self.client.timeout().saturating_add(TOOL_TIMEOUT_MARGIN));
    }
}

// The tools. A method's doc comment is the model-facing description (What /
// When with alternatives / Precondition, one line each). The methods stay private;
// the tools they become are public.
#[tools(vis = "pub", map_definition = "Self::finish_definition")]
impl Web {
    /// Search the web and return the title, URL and a snippet of each matching page.
    /// Use for current or outside facts; use web_fetch to read a page whose URL you have.
    /// Needs a Tavily API key.
    #[tool(
        name = "web_search",
        capabilities(network),
        auto_allow,
        context_retention = "observation",
        tags("web", "search", "internet", "tavily"),
        normalize_input,
        input_error = "crate::input::refine"
    )]
    async fn search(
        &self,
        ctx: &ToolExecutionContext,
        /// What to search for, in plain words or keywords, e.g. `tokio 1.0 release date`.
        query: Query,
        /// How many results to return; raise it for broad research, e.g. 20.
        #[default]
        max_results: MaxResults,
        /// Only pages from this recent period, for news or fast-moving topics, e.g. `week`; null searches any time.
        #[default]
        time_range: Period,
        /// Search only these sites, when the user names a source, e.g. ["docs.rs", "github.com"].
        #[default]
        include_domains: Domains<Include>,
        /// Leave these sites out, e.g. to skip a mirror or a forum: ["pinterest.com"].
        #[default]
        exclude_domains: Domains<Exclude>,
    ) -> ToolOutput {
        let mut request = SearchRequest::new(query.into_string())
            .max_results(max_results.get())
            .include_domains(include_domains.into_vec())
            .exclude_domains(exclude_domains.into_vec());
        request.time_range = time_range.get();
        search::run(&self.client, request, ctx).await
    }

    /// Extract the readable text of up to 20 web pages, whole or as excerpts.
    /// Use to read pages you have URLs for, e.g. from web_search; pass query for relevant parts.
    /// Needs a Tavily API key.
    #[tool(
        name = "web_fetch",
        capabilities(network),
        auto_allow,
        context_retention = "observation",
        tags("web", "fetch", "extract", "url", "tavily"),
        normalize_input,
        input_error = "crate::input::refine"
    )]
    async fn fetch(
        &self,
        ctx: &ToolExecutionContext,
        /// The http(s) pages to read, each listed once, e.g. ["https://doc.rust-lang.org/book/ch16-00-concurrency.html"].
        urls: Urls,
        /// What you look for in the pages, to get only the relevant excerpts of long pages, e.g. `pricing`; null returns whole pages.
        #[default]
        query: Option<Query>,
    ) -> ToolOutput {
        let mut request = ExtractRequest::new(urls.into_vec());
        request.query = query.map(Query::into_string);
        fetch::run(&self.client, request, ctx).await
    }
}

/// The name and the one-client constructor of a web tool type.
macro_rules! web_tool_type {
    ($tool:ident, $build:ident, $name:literal) => {
        impl $tool {
            /// The model-facing name.
            pub const NAME: &'static str = $name;

            /// The tool over a shared client (its own [`Web`] state).
            pub fn new(client: Arc<TavilyClient>) -> Self {
                Arc::new(Web::new(client)).$build()
            }

            /// The client the tool sends requests with.
            pub fn client(&self) -> &Arc<TavilyClient> {
                self.state().client()
            }
        }
    };
}

web_tool_type!(WebSearchTool, search_tool, "web_search");
web_tool_type!(WebFetchTool, fetch_tool, "web_fetch");

/// A constructor of one web tool over a shared client.
pub type MakeWebTool = fn(&Arc<TavilyClient>) -> Arc<dyn Tool>;

/// The web tools' lines of the built-in tool catalog, in catalog order: each a
/// `tools.builtin` YAML key, the model tool name and the tool's constructor over a
/// shared client. Adding a web tool is its `#[tool]` method, its `web_tool_type!`
/// line and one line here; the runner's `tools.builtin` is the union of every
/// layer's catalog.
///
/// ```
/// use std::sync::Arc;
/// use iris_web::{CATALOG, TavilyClient};
/// let (key, name, make) = CATALOG[0];
/// assert_eq!((key, name), ("web.search", "web_search"));
/// let tool = make(&Arc::new(TavilyClient::from_env()));
/// assert_eq!(tool.definition().name, "web_search");
/// ```
pub const CATALOG: [(&str, &str, MakeWebTool); 2] = [
    ("web.search", WebSearchTool::NAME, |client| {
        Arc::new(WebSearchTool::new(Arc::clone(client)))
    }),
    ("web.fetch", WebFetchTool::NAME, |client| {
        Arc::new(WebFetchTool::new(Arc::clone(client)))
    }),
];
