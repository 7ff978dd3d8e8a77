//! The exact requests the tools send, as the local Tavily server receives them.

use iris_web::{ExtractRequest, SearchRequest, TavilyClient, TimeRange};
use serde_json::{Value, json};

use crate::support::{
    Reply, TEST_KEY, TestServer, call, client, fetch_tool, search_answer, search_tool,
};

/// One request: method, path and the headers that matter, then the body exactly as
/// sent (field order included) and parsed.
fn request_view(server: &TestServer) -> Value {
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "exactly one request per call");
    let r = &requests[0];
    assert_eq!(r.method, "POST");
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {TEST_KEY}").as_str())
    );
    assert_eq!(r.header("content-type"), Some("application/json"));
    json!({"path": r.path, "raw_body": r.raw_body, "body": r.body})
}

#[tokio::test]
async fn search_with_defaults() {
    let server = TestServer::start(Reply::json(search_answer())).await;
    let result = call(
        &search_tool(client(&server)),
        json!({"query": "  rust async runtime "}),
    )
    .await;
    assert!(!result.is_error(), "{result:?}");
    insta::assert_json_snapshot!(request_view(&server));
}

#[tokio::test]
async fn search_with_every_field() {
    let server = TestServer::start(Reply::json(search_answer())).await;
    let input = json!({
        "query": "tokio release",
        "max_results": 20,
        "time_range": "week",
        "include_domains": ["tokio.rs", "github.com"],
        "exclude_domains": ["reddit.com"],
    });
    let result = call(&search_tool(client(&server)), input).await;
    assert!(!result.is_error(), "{result:?}");
    insta::assert_json_snapshot!(request_view(&server));
}

#[tokio::test]
async fn extract_whole_pages() {
    let answer = json!({"results": [{"url": "https://a.example/", "raw_content": "A"}], "failed_results": []});
    let server = TestServer::start(Reply::json(answer)).await;
    let input = json!({"urls": ["https://a.example/", "http://b.example/doc"]});
    let result = call(&fetch_tool(client(&server)), input).await;
    assert!(!result.is_error(), "{result:?}");
    insta::assert_json_snapshot!(request_view(&server));
}

#[tokio::test]
async fn extract_relevant_excerpts() {
    let answer = json!({"results": [{"url": "https://a.example/", "raw_content": "A"}], "failed_results": []});
    let server = TestServer::start(Reply::json(answer)).await;
    let input = json!({"urls": ["https://a.example/"], "query": " pricing tiers "});
    let result = call(&fetch_tool(client(&server)), input).await;
    assert!(!result.is_error(), "{result:?}");
    insta::assert_json_snapshot!(request_view(&server));
}

#[tokio::test]
async fn base_url_path_prefix_is_kept() {
    let server = TestServer::with_handler(|r| match r.path.as_str() {
        "/proxy/tavily/search" => Reply::json(search_answer()),
        "/proxy/tavily/extract" => Reply::json(json!({"results": [], "failed_results": []})),
        _ => Reply::status_json(404, json!({"detail": "no such path"})),
    })
    .await;
    let client = TavilyClient::new(TEST_KEY)
        .with_base_url(&format!("{}/proxy/tavily", server.url()))
        .unwrap();
    client.search(&SearchRequest::new("q")).await.unwrap();
    client
        .extract(&ExtractRequest::new(["https://a.example/"]))
        .await
        .unwrap();
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/proxy/tavily/search", "/proxy/tavily/extract"]);
}

#[tokio::test]
async fn client_api_sends_the_same_bodies() {
    let server = TestServer::start(Reply::json(search_answer())).await;
    let client = TavilyClient::new(TEST_KEY)
        .with_base_url(&server.url())
        .unwrap();
    let request = SearchRequest::new("q")
        .max_results(3)
        .time_range(TimeRange::Year)
        .include_domains(["a.example"])
        .exclude_domains(["b.example"]);
    let response = client.search(&request).await.unwrap();
    assert_eq!(response.results.len(), 2);
    assert_eq!(
        server.requests()[0].body,
        json!({
            "query": "q", "search_depth": "basic", "max_results": 3, "time_range": "year",
            "include_domains": ["a.example"], "exclude_domains": ["b.example"],
            "include_answer": false,
        })
    );
}
