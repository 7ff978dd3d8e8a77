//! Helpers shared by the test modules; the local HTTP server that plays Tavily is
//! iris-test-support's.
#![allow(dead_code)] // Each module uses a different subset of the helpers.

use std::sync::Arc;
use std::time::Duration;

use iris_tools_core::{Tool, ToolExecutionContext, ToolOutput};
use iris_web::{TavilyClient, WebFetchTool, WebSearchTool};
use serde_json::{Value, json};

pub(crate) use iris_test_support::http::{Reply, TestServer};

/// The key every test client sends; tests check it never leaks.
pub(crate) const TEST_KEY: &str = "tvly-test-key-0123456789";

/// A client with the test key pointed at `server`.
pub(crate) fn client(server: &TestServer) -> Arc<TavilyClient> {
    Arc::new(
        TavilyClient::new(TEST_KEY)
            .with_base_url(&server.url())
            .unwrap(),
    )
}

/// A client with the test key and a short deadline, for servers that hang.
pub(crate) fn impatient_client(server: &TestServer) -> Arc<TavilyClient> {
    Arc::new(
        TavilyClient::new(TEST_KEY)
            .with_base_url(&server.url())
            .unwrap()
            .with_timeout(Duration::from_millis(50))
            .unwrap(),
    )
}

/// A context for a call.
pub(crate) fn ctx() -> ToolExecutionContext {
    ToolExecutionContext::new(std::env::temp_dir())
}

/// Runs `tool` the way the executor does: validate, then run with the validated input
/// (normalized, and already parsed).
pub(crate) async fn call(tool: &dyn Tool, input: Value) -> ToolOutput {
    call_with(tool, input, &ctx()).await
}

/// [`call`] with a given context.
pub(crate) async fn call_with(
    tool: &dyn Tool,
    input: Value,
    ctx: &ToolExecutionContext,
) -> ToolOutput {
    match tool.validate_input(input) {
        Ok(valid) => tool.run(valid, ctx).await,
        Err(info) => ToolOutput::error(info),
    }
}

/// A `web_search` tool over `client`.
pub(crate) fn search_tool(client: Arc<TavilyClient>) -> WebSearchTool {
    WebSearchTool::new(client)
}

/// A `web_fetch` tool over `client`.
pub(crate) fn fetch_tool(client: Arc<TavilyClient>) -> WebFetchTool {
    WebFetchTool::new(client)
}

/// A realistic `/search` answer with two hits.
pub(crate) fn search_answer() -> Value {
    json!({
        "query": "rust async runtime",
        "follow_up_questions": null,
        "answer": null,
        "images": [],
        "results": [
            {
                "title": "Tokio - An asynchronous Rust runtime",
                "url": "https://tokio.rs/",
                "content": "Tokio is an event-driven, non-blocking I/O platform\nfor writing asynchronous applications with Rust.",
                "score": 0.91,
                "raw_content": null
            },
            {
                "title": "async-std",
                "url": "https://async.rs/",
                "content": "Async version of the Rust standard library.",
                "score": 0.72,
                "raw_content": null
            }
        ],
        "response_time": 1.02,
        "request_id": "123e4567-e89b-12d3-a456-426614174111"
    })
}

/// The result as JSON with the error, data and content, for snapshots and leak checks.
pub(crate) fn result_json(result: &ToolOutput) -> Value {
    serde_json::to_value(result).unwrap()
}
