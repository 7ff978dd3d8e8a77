//! [`WebSearchTool`]: the `web_search` built-in (YAML key `web.search`).

use std::sync::Arc;

use iris_tools_core::permission::{PERMISSION_CLASS_KEY, PermissionClass};
use iris_tools_core::{
    BoxFuture, ContextRetention, Tool, ToolCapability, ToolDefinition, ToolErrorInfo,
    ToolExecutionContext, ToolResult,
};
use serde_json::{Value, json};

use crate::call::{TOOL_TIMEOUT_MARGIN, deadline, until_cancelled};
use crate::client::TavilyClient;
use crate::error::one_line;
use crate::input::{integer_in, invalid, non_blank_string, object, string_list};
use crate::wire::{SearchRequest, SearchResponse, TimeRange};

/// Default `max_results`.
pub const DEFAULT_MAX_RESULTS: u32 = 10;
/// Smallest `max_results`.
pub const MIN_MAX_RESULTS: u32 = 1;
/// Largest `max_results`.
pub const MAX_MAX_RESULTS: u32 = 20;
/// Most `include_domains` entries.
pub const MAX_INCLUDE_DOMAINS: usize = 300;
/// Most `exclude_domains` entries.
pub const MAX_EXCLUDE_DOMAINS: usize = 150;
/// How many characters of one hit's snippet the model sees; the whole snippet stays in
/// `data`.
const MAX_SNIPPET_CHARS: usize = 500;

const FIELDS: [&str; 5] = [
    "query",
    "max_results",
    "time_range",
    "include_domains",
    "exclude_domains",
];

/// The `web_search` tool: a Tavily `basic` search that returns sources, never a
/// generated answer.
///
/// Input (every bound is also in the JSON Schema, so the executor's schema check
/// catches it first; [`Tool::validate_input`] checks again while parsing):
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
/// The tool declares `network` and `metadata["iris.permission_class"] = "web"`, so the
/// default permission policy allows it without asking; under the default rule it is
/// not read-only (network), so the executor runs it as a barrier rather than in a
/// parallel batch.
///
/// ```
/// use std::sync::Arc;
/// use iris_tools_core::Tool;
/// use iris_web::{TavilyClient, WebSearchTool};
/// use serde_json::json;
///
/// let tool = WebSearchTool::new(Arc::new(TavilyClient::from_env()));
/// assert_eq!(tool.definition().name, "web_search");
/// let input = tool.validate_input(json!({"query": "  rust async  "})).unwrap();
/// assert_eq!(input, json!({
///     "query": "rust async", "max_results": 10, "time_range": null,
///     "include_domains": [], "exclude_domains": [],
/// }));
/// assert_eq!(
///     tool.validate_input(json!({"query": "x", "max_results": 21})).unwrap_err().details["field"],
///     "max_results",
/// );
/// ```
#[derive(Debug, Clone)]
pub struct WebSearchTool {
    client: Arc<TavilyClient>,
    definition: ToolDefinition,
}

impl WebSearchTool {
    /// The model-facing name.
    pub const NAME: &'static str = "web_search";
    /// The `tools.builtin` YAML key.
    pub const YAML_KEY: &'static str = "web.search";

    /// The tool over a shared client.
    pub fn new(client: Arc<TavilyClient>) -> Self {
        let definition = ToolDefinition::new(Self::NAME, DESCRIPTION, input_schema())
            .with_capabilities([ToolCapability::Network])
            .with_context_retention(ContextRetention::Observation)
            .with_timeout(client.timeout().saturating_add(TOOL_TIMEOUT_MARGIN))
            .with_metadata(PERMISSION_CLASS_KEY, PermissionClass::Web.as_str())
            .with_metadata("tags", json!(["web", "search", "internet", "tavily"]));
        Self { client, definition }
    }

    /// The client the tool sends requests with.
    pub fn client(&self) -> &Arc<TavilyClient> {
        &self.client
    }

    /// Parses raw model input into a request.
    ///
    /// # Errors
    /// `INVALID_INPUT` with `details.field` naming the first broken field.
    pub fn parse_input(input: &Value) -> Result<SearchRequest, ToolErrorInfo> {
        let object = object(input, Self::NAME, &FIELDS)?;
        let query = match object.get("query") {
            Some(value) => non_blank_string("query", value)?,
            None => return Err(invalid("query", "`query` is required")),
        };
        let mut request = SearchRequest::new(query);
        if let Some(value) = object.get("max_results") {
            request.max_results =
                integer_in("max_results", value, MIN_MAX_RESULTS, MAX_MAX_RESULTS)?;
        }
        request.time_range = match object.get("time_range") {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => Some(TimeRange::parse(name).ok_or_else(|| {
                invalid(
                    "time_range",
                    format!(
                        "`time_range` must be null, \"day\", \"week\", \"month\" or \"year\", got \"{}\"",
                        name.escape_debug()
                    ),
                )
            })?),
            Some(other) => {
                return Err(invalid(
                    "time_range",
                    format!(
                        "`time_range` must be null or a string, got {}",
                        crate::input::kind(other)
                    ),
                ));
            }
        };
        if let Some(value) = object.get("include_domains") {
            request.include_domains = string_list("include_domains", value, MAX_INCLUDE_DOMAINS)?;
        }
        if let Some(value) = object.get("exclude_domains") {
            request.exclude_domains = string_list("exclude_domains", value, MAX_EXCLUDE_DOMAINS)?;
        }
        Ok(request)
    }
}

const DESCRIPTION: &str = "Search the web and return the title, URL and a snippet of each matching page.\n\
Use for current or outside facts; use web_fetch to read a page whose URL you have.\n\
Needs a Tavily API key.";

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "What to search for, in plain words or keywords, e.g. `tokio 1.0 release date`.",
                "pattern": "\\S",
            },
            "max_results": {
                "type": "integer",
                "description": "How many results to return; raise it for broad research, e.g. 20.",
                "minimum": MIN_MAX_RESULTS,
                "maximum": MAX_MAX_RESULTS,
                "default": DEFAULT_MAX_RESULTS,
            },
            "time_range": {
                "type": ["string", "null"],
                "description": "Only pages from this recent period, for news or fast-moving topics, e.g. `week`; null searches any time.",
                "enum": ["day", "week", "month", "year", null],
                "default": null,
            },
            "include_domains": {
                "type": "array",
                "description": "Search only these sites, when the user names a source, e.g. [\"docs.rs\", \"github.com\"].",
                "items": {"type": "string", "pattern": "\\S"},
                "maxItems": MAX_INCLUDE_DOMAINS,
                "default": [],
            },
            "exclude_domains": {
                "type": "array",
                "description": "Leave these sites out, e.g. to skip a mirror or a forum: [\"pinterest.com\"].",
                "items": {"type": "string", "pattern": "\\S"},
                "maxItems": MAX_EXCLUDE_DOMAINS,
                "default": [],
            },
        },
        "required": ["query"],
        "additionalProperties": false,
    })
}

/// The normalized input the executor passes on: every default filled in.
fn normalized(request: &SearchRequest) -> Value {
    json!({
        "query": request.query,
        "max_results": request.max_results,
        "time_range": request.time_range.map(TimeRange::as_str),
        "include_domains": request.include_domains,
        "exclude_domains": request.exclude_domains,
    })
}

/// The model's view of a search: a header, then title / URL / snippet per hit.
fn to_text(query: &str, response: &SearchResponse) -> String {
    let quoted = one_line(query, 200);
    if response.results.is_empty() {
        return format!("No web results for \"{quoted}\".");
    }
    let mut text = format!(
        "{} web result{} for \"{quoted}\":",
        response.results.len(),
        if response.results.len() == 1 { "" } else { "s" }
    );
    for (i, hit) in response.results.iter().enumerate() {
        let title = one_line(&hit.title, 200);
        let title = if title.is_empty() {
            "(untitled)".to_owned()
        } else {
            title
        };
        text.push_str(&format!("\n\n{}. {title}\n   {}", i + 1, hit.url));
        let snippet = one_line(&hit.content, MAX_SNIPPET_CHARS);
        if !snippet.is_empty() {
            text.push_str("\n   ");
            text.push_str(&snippet);
        }
    }
    text
}

impl Tool for WebSearchTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn validate_input(&self, raw: Value) -> Result<Value, ToolErrorInfo> {
        Self::parse_input(&raw).map(|request| normalized(&request))
    }

    fn run<'a>(&'a self, input: Value, ctx: &'a ToolExecutionContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let request = match Self::parse_input(&input) {
                Ok(request) => request,
                Err(info) => return ToolResult::error("", "", info),
            };
            let deadline = deadline(&self.client, ctx);
            match until_cancelled(ctx, self.client.search_within(&request, deadline)).await {
                Ok(response) => ToolResult::ok_text(to_text(&request.query, &response))
                    .with_data("query", request.query.as_str())
                    .with_data("results", json!(response.results))
                    .with_data("request_id", json!(response.request_id)),
                Err(info) => ToolResult::error("", "", info),
            }
        })
    }
}
