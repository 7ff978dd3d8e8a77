//! [`WebFetchTool`]: the `web_fetch` built-in (YAML key `web.fetch`).

use std::sync::Arc;

use iris_tools_core::permission::{PERMISSION_CLASS_KEY, PermissionClass};
use iris_tools_core::{
    BoxFuture, ContextRetention, Tool, ToolCapability, ToolDefinition, ToolErrorInfo,
    ToolExecutionContext, ToolResult,
};
use reqwest::Url;
use serde_json::{Value, json};

use crate::call::{TOOL_TIMEOUT_MARGIN, deadline, until_cancelled};
use crate::client::TavilyClient;
use crate::error::{Error, one_line};
use crate::input::{invalid, kind, non_blank_string, object};
use crate::wire::{ExtractRequest, ExtractResponse, ExtractedPage, FailedUrl};

/// Fewest URLs in one call.
pub const MIN_URLS: usize = 1;
/// Most URLs in one call (Tavily's limit for one extraction).
pub const MAX_URLS: usize = 20;
/// The reason given for a requested URL the server listed neither as extracted nor as
/// failed.
pub const NO_RESULT_REASON: &str = "the service returned no result for this URL";

const FIELDS: [&str; 2] = ["urls", "query"];

/// The `web_fetch` tool: Tavily `basic` extraction of 1–20 pages, whole or as the
/// excerpts relevant to a query.
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
/// reason. Permission and parallelism are as for [`crate::WebSearchTool`].
///
/// ```
/// use std::sync::Arc;
/// use iris_tools_core::Tool;
/// use iris_web::{TavilyClient, WebFetchTool};
/// use serde_json::json;
///
/// let tool = WebFetchTool::new(Arc::new(TavilyClient::from_env()));
/// let input = tool.validate_input(json!({"urls": ["https://example.com/a"]})).unwrap();
/// assert_eq!(input, json!({"urls": ["https://example.com/a"], "query": null}));
/// let err = tool.validate_input(json!({"urls": ["ftp://example.com/a"]})).unwrap_err();
/// assert_eq!(err.details["field"], "urls[0]");
/// ```
#[derive(Debug, Clone)]
pub struct WebFetchTool {
    client: Arc<TavilyClient>,
    definition: ToolDefinition,
}

impl WebFetchTool {
    /// The model-facing name.
    pub const NAME: &'static str = "web_fetch";
    /// The `tools.builtin` YAML key.
    pub const YAML_KEY: &'static str = "web.fetch";

    /// The tool over a shared client.
    pub fn new(client: Arc<TavilyClient>) -> Self {
        let definition = ToolDefinition::new(Self::NAME, DESCRIPTION, input_schema())
            .with_capabilities([ToolCapability::Network])
            .with_context_retention(ContextRetention::Observation)
            .with_timeout(client.timeout().saturating_add(TOOL_TIMEOUT_MARGIN))
            .with_metadata(PERMISSION_CLASS_KEY, PermissionClass::Web.as_str())
            .with_metadata("tags", json!(["web", "fetch", "extract", "url", "tavily"]));
        Self { client, definition }
    }

    /// The client the tool sends requests with.
    pub fn client(&self) -> &Arc<TavilyClient> {
        &self.client
    }

    /// Parses raw model input into a request.
    ///
    /// # Errors
    /// `INVALID_INPUT` with `details.field` naming the first broken field (`urls[2]` for
    /// one bad URL).
    pub fn parse_input(input: &Value) -> Result<ExtractRequest, ToolErrorInfo> {
        let object = object(input, Self::NAME, &FIELDS)?;
        let urls = match object.get("urls") {
            Some(value) => parse_urls(value)?,
            None => return Err(invalid("urls", "`urls` is required")),
        };
        let mut request = ExtractRequest::new(urls);
        match object.get("query") {
            None | Some(Value::Null) => {}
            Some(value) => request.query = Some(non_blank_string("query", value)?),
        }
        Ok(request)
    }
}

fn parse_urls(value: &Value) -> Result<Vec<String>, ToolErrorInfo> {
    let Value::Array(items) = value else {
        return Err(invalid(
            "urls",
            format!("`urls` must be an array of URLs, got {}", kind(value)),
        ));
    };
    if !(MIN_URLS..=MAX_URLS).contains(&items.len()) {
        return Err(invalid(
            "urls",
            format!(
                "`urls` has {} items; give {MIN_URLS} to {MAX_URLS}",
                items.len()
            ),
        ));
    }
    let mut urls: Vec<String> = Vec::with_capacity(items.len());
    let mut seen: Vec<Url> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let field = format!("urls[{i}]");
        let text = non_blank_string(&field, item)?;
        let url = Url::parse(&text).map_err(|e| {
            invalid(
                &field,
                format!("`{field}` is not a URL ({e}): `{}`", one_line(&text, 200)),
            )
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid(
                &field,
                format!(
                    "`{field}` must be an http or https URL, not `{}`",
                    url.scheme()
                ),
            ));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(invalid(&field, format!("`{field}` has no host")));
        }
        if let Some(first) = seen.iter().position(|u| *u == url) {
            return Err(invalid(
                &field,
                format!("`{field}` repeats `urls[{first}]`; list each URL once"),
            ));
        }
        seen.push(url);
        urls.push(text);
    }
    Ok(urls)
}

const DESCRIPTION: &str = "Extract the readable text of up to 20 web pages, whole or as excerpts.\n\
Use to read pages you have URLs for, e.g. from web_search; pass query for relevant parts.\n\
Needs a Tavily API key.";

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "urls": {
                "type": "array",
                "description": "The http(s) pages to read, each listed once, e.g. [\"https://doc.rust-lang.org/book/ch16-00-concurrency.html\"].",
                "items": {"type": "string", "format": "uri", "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://\\S"},
                "minItems": MIN_URLS,
                // No `uniqueItems`: OpenAI strict mode refuses it. The typed parse
                // refuses repeated URLs instead.
                "maxItems": MAX_URLS,
            },
            "query": {
                "type": ["string", "null"],
                "description": "What you look for in the pages, to get only the relevant excerpts of long pages, e.g. `pricing`; null returns whole pages.",
                "pattern": "\\S",
                "default": null,
            },
        },
        "required": ["urls"],
        "additionalProperties": false,
    })
}

/// The normalized input the executor passes on.
fn normalized(request: &ExtractRequest) -> Value {
    json!({"urls": request.urls, "query": request.query})
}

/// The server's failures plus every requested URL it mentioned in neither list.
fn failures(requested: &[String], response: &ExtractResponse) -> Vec<FailedUrl> {
    // An empty server reason reads the same in the text, the error and `data`.
    let mut failed: Vec<FailedUrl> = response
        .failed_results
        .iter()
        .map(|f| FailedUrl {
            url: f.url.clone(),
            error: failure_reason(f),
        })
        .collect();
    // Compare parsed URLs so `https://a.example` matches the server's
    // `https://a.example/`.
    let parsed = |text: &str| Url::parse(text).ok();
    let answered: Vec<(&str, Option<Url>)> = response
        .results
        .iter()
        .map(|r| r.url.as_str())
        .chain(response.failed_results.iter().map(|f| f.url.as_str()))
        .map(|text| (text, parsed(text)))
        .collect();
    for url in requested {
        let mine = parsed(url);
        let found = answered
            .iter()
            .any(|(text, theirs)| text == url || (mine.is_some() && *theirs == mine));
        if !found {
            failed.push(FailedUrl {
                url: url.clone(),
                error: NO_RESULT_REASON.to_owned(),
            });
        }
    }
    failed
}

/// The model's view of an extraction: a header, each page inside `<page>` tags, then
/// the failures.
fn to_text(request: &ExtractRequest, pages: &[ExtractedPage], failed: &[FailedUrl]) -> String {
    let mode = match &request.query {
        Some(q) => format!("excerpts relevant to \"{}\"", one_line(q, 200)),
        None => "whole pages".to_owned(),
    };
    let mut text = format!(
        "Fetched {} of {} URL{} ({mode}).",
        pages.len(),
        request.urls.len(),
        if request.urls.len() == 1 { "" } else { "s" }
    );
    for page in pages {
        let content = page.raw_content.trim();
        let content = if content.is_empty() {
            "(no text extracted)"
        } else {
            content
        };
        text.push_str(&format!(
            "\n\n<page url=\"{}\">\n{content}\n</page>",
            page.url
        ));
    }
    if !failed.is_empty() {
        text.push_str("\n\nFailed:");
        for f in failed {
            text.push_str(&format!("\n- {}: {}", f.url, f.error));
        }
    }
    text
}

fn failure_reason(failed: &FailedUrl) -> String {
    let reason = one_line(&failed.error, 200);
    if reason.is_empty() {
        "no reason given".to_owned()
    } else {
        reason
    }
}

impl Tool for WebFetchTool {
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
            let response =
                match until_cancelled(ctx, self.client.extract_within(&request, deadline)).await {
                    Ok(response) => response,
                    Err(info) => return ToolResult::error("", "", info),
                };
            let failed = failures(&request.urls, &response);
            let mode = if request.query.is_some() {
                "excerpts"
            } else {
                "whole"
            };
            if response.results.is_empty() {
                let error = Error::FetchFailed {
                    failed: failed
                        .iter()
                        .map(|f| (f.url.clone(), f.error.clone()))
                        .collect(),
                };
                return ToolResult::error("", "", error.to_info())
                    .with_data("query", json!(request.query))
                    .with_data("mode", mode)
                    .with_data("results", json!([]))
                    .with_data("failed", json!(failed));
            }
            ToolResult::ok_text(to_text(&request, &response.results, &failed))
                .with_data("query", json!(request.query))
                .with_data("mode", mode)
                .with_data("results", json!(response.results))
                .with_data("failed", json!(failed))
                .with_data("request_id", json!(response.request_id))
        })
    }
}
