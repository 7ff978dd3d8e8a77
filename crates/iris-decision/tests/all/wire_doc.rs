//! The examples of `docs/decision-wire-format.md` are the wire format: the client sends
//! exactly the documented request and accepts exactly the documented response.

use std::collections::BTreeMap;

use iris_decision::{DecisionAnswer, DecisionEvaluator, DecisionRequest, DecisionUsage};
use serde_json::Value;

use crate::support::{JevServer, TestServer, status};

/// The fenced blocks of the document whose info string is `json <label>`, by label.
fn documented_blocks() -> BTreeMap<String, String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/decision-wire-format.md"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let mut blocks = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        match (&mut current, line.strip_prefix("```")) {
            (None, Some(info)) => {
                if let Some(label) = info.strip_prefix("json ") {
                    current = Some((label.trim().to_owned(), String::new()));
                }
            }
            (Some(_), Some("")) => {
                let (label, body) = current.take().unwrap();
                blocks.insert(label, body);
            }
            (Some((_, body)), _) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    blocks
}

#[tokio::test]
async fn documented_examples_are_what_the_client_sends_and_accepts() {
    let blocks = documented_blocks();
    assert_eq!(
        blocks.keys().map(String::as_str).collect::<Vec<_>>(),
        ["error", "request", "response"]
    );
    let wire_request: Value = serde_json::from_str(&blocks["request"]).unwrap();
    let wire_response: Value = serde_json::from_str(&blocks["response"]).unwrap();

    let reply = blocks["response"].clone();
    let server = TestServer::with_handler(move |_| status(200, reply.clone())).await;
    let request: DecisionRequest = serde_json::from_value(wire_request.clone()).unwrap();
    let client = server
        .client(5.0)
        .with_model(wire_request["model"].as_str().unwrap())
        .unwrap();
    let response = client.evaluate(&request).await.unwrap();

    assert_eq!(
        server.requests()[0].json(),
        wire_request,
        "the documented request"
    );
    let answers: BTreeMap<String, DecisionAnswer> =
        serde_json::from_value(wire_response["answers"].clone()).unwrap();
    let usage: DecisionUsage = serde_json::from_value(wire_response["usage"].clone()).unwrap();
    assert_eq!(response.answers, answers, "the documented response");
    assert_eq!(response.usage, usage);
    assert_eq!(response.model, wire_response["model"]);
    assert_eq!(response.provider, "typesafe");

    let error = blocks["error"].clone();
    let server = TestServer::with_handler(move |_| status(401, error.clone())).await;
    let error = server.client(5.0).evaluate(&request).await.unwrap_err();
    assert_eq!(error.code(), "DECISION_AUTH");
    assert_eq!(
        error.to_string(),
        "decision authentication failed: the decision service rejected the API key (HTTP 401: the API key is revoked)"
    );
}
