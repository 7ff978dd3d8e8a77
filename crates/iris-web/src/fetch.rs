//! The body of the `web_fetch` built-in (YAML key `web.fetch`), its bounds and what
//! the model sees of an extraction.

use iris_tools_core::{ToolExecutionContext, ToolOutput};
use reqwest::Url;
use serde_json::json;

use crate::call::{deadline, until_cancelled};
use crate::client::TavilyClient;
use crate::error::{Error, one_line};
use crate::wire::{ExtractRequest, ExtractResponse, ExtractedPage, FailedUrl};

/// Fewest URLs in one call.
pub const MIN_URLS: usize = 1;
/// Most URLs in one call (Tavily's limit for one extraction).
pub const MAX_URLS: usize = 20;
/// The reason given for a requested URL the server listed neither as extracted nor as
/// failed.
pub const NO_RESULT_REASON: &str = "the service returned no result for this URL";

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

/// Runs one extraction: the `web_fetch` body.
pub(crate) async fn run(
    client: &TavilyClient,
    request: ExtractRequest,
    ctx: &ToolExecutionContext,
) -> ToolOutput {
    let deadline = deadline(client, ctx);
    let response = match until_cancelled(ctx, client.extract_within(&request, deadline)).await {
        Ok(response) => response,
        Err(info) => return ToolOutput::error(info),
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
        return ToolOutput::error(error.to_info())
            .with_data("query", json!(request.query))
            .with_data("mode", mode)
            .with_data("results", json!([]))
            .with_data("failed", json!(failed));
    }
    ToolOutput::text(to_text(&request, &response.results, &failed))
        .with_data("query", json!(request.query))
        .with_data("mode", mode)
        .with_data("results", json!(response.results))
        .with_data("failed", json!(failed))
        .with_data("request_id", json!(response.request_id))
}
