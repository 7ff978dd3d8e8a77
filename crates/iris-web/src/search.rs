//! The body of the `web_search` built-in (YAML key `web.search`), its bounds and what
//! the model sees of a search.

use iris_tools_core::{ToolExecutionContext, ToolOutput};
use serde_json::json;

use crate::call::{deadline, until_cancelled};
use crate::client::TavilyClient;
use crate::error::one_line;
use crate::wire::{SearchRequest, SearchResponse};

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

/// Runs one search: the `web_search` body.
pub(crate) async fn run(
    client: &TavilyClient,
    request: SearchRequest,
    ctx: &ToolExecutionContext,
) -> ToolOutput {
    let deadline = deadline(client, ctx);
    match until_cancelled(ctx, client.search_within(&request, deadline)).await {
        Ok(response) => ToolOutput::text(to_text(&request.query, &response))
            .with_data("query", request.query.as_str())
            .with_data("results", json!(response.results))
            .with_data("request_id", json!(response.request_id)),
        Err(info) => ToolOutput::error(info),
    }
}
