//! What the model and the host get back: compact text for the model, structured data
//! for the host, and partial / total extraction failure.

use serde_json::{Value, json};

use crate::support::{
    Reply, TestServer, call, client, fetch_tool, result_json, search_answer, search_tool,
};

/// The parts of a result a reader cares about, for snapshots.
fn view(result: &iris_tools_core::ToolOutput) -> Value {
    json!({
        "is_error": result.is_error(),
        "model_content": result.model_content(),
        "error": result.error_info(),
        "data": result.data,
    })
}

#[tokio::test]
async fn search_hits_become_compact_text_and_data() {
    let server = TestServer::start(Reply::json(search_answer())).await;
    let result = call(
        &search_tool(client(&server)),
        json!({"query": "rust async runtime"}),
    )
    .await;
    insta::assert_snapshot!("search_model_content", result.model_content());
    insta::assert_json_snapshot!("search_result", view(&result));
}

#[tokio::test]
async fn search_edge_answers() {
    // (answer, expected model content)
    let long = "word ".repeat(200);
    let cases = [
        (
            json!({"results": []}),
            "No web results for \"q\".".to_owned(),
        ),
        (
            json!({"results": [{"url": "https://a.example/", "title": null, "content": null, "score": null}]}),
            "1 web result for \"q\":\n\n1. (untitled)\n   https://a.example/".to_owned(),
        ),
        (
            json!({"results": [{"url": "https://a.example/", "title": "  A\n title ", "content": long}]}),
            format!(
                "1 web result for \"q\":\n\n1. A title\n   https://a.example/\n   {}…",
                "word ".repeat(100).chars().take(499).collect::<String>()
            ),
        ),
    ];
    for (answer, expected) in cases {
        let server = TestServer::start(Reply::json(answer.clone())).await;
        let result = call(&search_tool(client(&server)), json!({"query": "q"})).await;
        assert!(!result.is_error(), "{answer}: {result:?}");
        assert_eq!(result.model_content(), expected, "{answer}");
        assert_eq!(
            result.data["results"].as_array().unwrap().len(),
            answer["results"].as_array().unwrap().len()
        );
    }
}

#[tokio::test]
async fn fetch_whole_pages() {
    let answer = json!({
        "results": [
            {"url": "https://a.example/", "raw_content": "# A\n\nAll of page A.", "images": []},
            {"url": "https://b.example/doc", "raw_content": null},
        ],
        "failed_results": [],
        "response_time": 0.4,
        "request_id": "req-1",
    });
    let server = TestServer::start(Reply::json(answer)).await;
    let input = json!({"urls": ["https://a.example", "https://b.example/doc"]});
    let result = call(&fetch_tool(client(&server)), input).await;
    // `https://a.example` came back as `https://a.example/`: the same page, not missing.
    assert_eq!(result.data["failed"], json!([]));
    insta::assert_json_snapshot!(view(&result));
}

#[tokio::test]
async fn fetch_partial_failure_keeps_both_sides() {
    let answer = json!({
        "results": [{"url": "https://a.example/", "raw_content": "<chunk 1> prices [...] <chunk 2> plans"}],
        "failed_results": [{"url": "https://b.example/", "error": "Failed to fetch url"}],
    });
    let server = TestServer::start(Reply::json(answer)).await;
    let input = json!({
        "urls": ["https://a.example/", "https://b.example/", "https://c.example/"],
        "query": "pricing",
    });
    let result = call(&fetch_tool(client(&server)), input).await;
    assert!(!result.is_error());
    insta::assert_json_snapshot!(view(&result));
}

#[tokio::test]
async fn fetch_total_failure_is_a_tool_error() {
    let answer = json!({
        "results": [],
        "failed_results": [
            {"url": "https://a.example/", "error": "Failed to fetch url"},
            {"url": "https://b.example/", "error": null},
        ],
    });
    let server = TestServer::start(Reply::json(answer)).await;
    let input = json!({"urls": ["https://a.example/", "https://b.example/", "https://c.example/"]});
    let result = call(&fetch_tool(client(&server)), input).await;
    assert_eq!(result.error_code(), Some("WEB_FETCH_FAILED"));
    assert!(!result.error_info().unwrap().retryable);
    insta::assert_json_snapshot!(view(&result));
}

#[tokio::test]
async fn results_serialize_without_surprises() {
    let server = TestServer::start(Reply::json(search_answer())).await;
    let result = call(&search_tool(client(&server)), json!({"query": "q"})).await;
    let json = result_json(&result);
    assert_eq!(json["content"].as_array().unwrap().len(), 1);
    assert_eq!(
        json["data"]["request_id"],
        "123e4567-e89b-12d3-a456-426614174111"
    );
    assert_eq!(json["data"]["results"][0]["score"], 0.91);
}
