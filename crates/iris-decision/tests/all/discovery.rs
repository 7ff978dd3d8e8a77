//! The decision backend of tool discovery: `decide_tools` and `discovery_request`.

use std::sync::Arc;

use iris_decision::{
    DecisionEvaluator, DecisionQuestion, DecisionRequest, DiscoverySelection, Error,
    EvaluatorHandle, JevClientState, MAX_DISCOVERY_TOOLS, decide_tools, discovery_request,
};
use serde_json::{Value, json};

use crate::support::{
    JevServer, Scripted, TestServer, choice_answer, response, strings, tool, tools,
};

fn options_of(request: &DecisionRequest, id: &str) -> Vec<String> {
    match &request.questions[id] {
        DecisionQuestion::Choice(q) => q.options.keys().cloned().collect(),
        other => panic!("{id} is a {} question", other.kind()),
    }
}

/// Runs `decide_tools` with an evaluator that picks `pick(instructions)`; returns the
/// selections as (query, tool) pairs, or the error code; and how often it was called.
async fn check(
    case: &str,
    queries: &[&str],
    candidates: usize,
    pick: fn(&str) -> Option<String>,
    expect: Result<Vec<(&str, Option<&str>)>, &str>,
    calls: usize,
) {
    let evaluator = Scripted::choosing(pick);
    let got = decide_tools(&evaluator, &strings(queries), &tools(candidates)).await;
    let got = got
        .map(|o| {
            o.selections
                .into_iter()
                .map(|s| (s.query, s.tool))
                .collect::<Vec<_>>()
        })
        .map_err(|e| e.code());
    let expect = expect.map(|v| {
        v.into_iter()
            .map(|(q, t)| (q.to_owned(), t.map(str::to_owned)))
            .collect::<Vec<_>>()
    });
    assert_eq!(got, expect, "{case}");
    assert_eq!(evaluator.calls(), calls, "{case}: evaluator calls");
}

/// Picks the synthetic tool whose number is written in the query, e.g. "number 7".
fn by_number(instructions: &str) -> Option<String> {
    let n: usize = instructions
        .split("number ")
        .nth(1)?
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()?;
    Some(format!("tool_{n:03}"))
}

#[tokio::test]
async fn selection_table() {
    check(
        "one candidate, matched",
        &["use number 0"],
        1,
        by_number,
        Ok(vec![("use number 0", Some("tool_000"))]),
        1,
    )
    .await;
    check(
        "none becomes None",
        &["book a flight"],
        1,
        by_number,
        Ok(vec![("book a flight", None)]),
        1,
    )
    .await;
    check(
        "254 candidates fit (255 options with none)",
        &["use number 253", "nothing here"],
        MAX_DISCOVERY_TOOLS,
        by_number,
        Ok(vec![
            ("use number 253", Some("tool_253")),
            ("nothing here", None),
        ]),
        1,
    )
    .await;
    check(
        "255 candidates are refused, nothing is asked",
        &["use number 1"],
        255,
        by_number,
        Err("DECISION_TOO_MANY_TOOLS"),
        0,
    )
    .await;
    check(
        "1000 candidates are refused too (no trimming)",
        &["use number 1"],
        1000,
        by_number,
        Err("DECISION_TOO_MANY_TOOLS"),
        0,
    )
    .await;
    check(
        "queries are trimmed and kept in input order",
        &["  use number 2 ", "use number 0", "use number 2"],
        3,
        by_number,
        Ok(vec![
            ("use number 2", Some("tool_002")),
            ("use number 0", Some("tool_000")),
            ("use number 2", Some("tool_002")),
        ]),
        1,
    )
    .await;
    check(
        "no candidates: nothing is asked",
        &["use number 0", "x"],
        0,
        by_number,
        Ok(vec![("use number 0", None), ("x", None)]),
        0,
    )
    .await;
    check(
        "no queries",
        &[],
        3,
        by_number,
        Err("DECISION_INVALID_REQUEST"),
        0,
    )
    .await;
    check(
        "a blank query",
        &["use number 1", "  "],
        3,
        by_number,
        Err("DECISION_INVALID_REQUEST"),
        0,
    )
    .await;
    check(
        "an answer outside the candidates is invalid",
        &["use number 9"],
        3,
        by_number,
        Err("DECISION_INVALID_RESPONSE"),
        1,
    )
    .await;
}

#[tokio::test]
async fn twelve_queries_keep_their_order() {
    let queries: Vec<String> = (0..12).map(|i| format!("use number {}", 11 - i)).collect();
    let evaluator = Scripted::choosing(by_number);
    let outcome = decide_tools(&evaluator, &queries, &tools(12))
        .await
        .unwrap();
    let picked: Vec<_> = outcome
        .selections
        .iter()
        .map(|s| s.tool.clone().unwrap())
        .collect();
    let expected: Vec<_> = (0..12).rev().map(|i| format!("tool_{i:03}")).collect();
    assert_eq!(picked, expected);
    // Ids are zero-padded so they sort in query order.
    let seen = evaluator.seen.lock().unwrap();
    let ids: Vec<_> = seen[0].questions.keys().cloned().collect();
    assert_eq!(ids.first().map(String::as_str), Some("q01"));
    assert_eq!(ids.last().map(String::as_str), Some("q12"));
    assert_eq!(outcome.decision.as_ref().unwrap().question_count, 12);
}

#[tokio::test]
async fn one_request_offers_every_candidate_plus_none() {
    let evaluator = Scripted::choosing(by_number);
    let queries = strings(&["use number 1", "use number 2"]);
    decide_tools(&evaluator, &queries, &tools(MAX_DISCOVERY_TOOLS))
        .await
        .unwrap();
    let seen = evaluator.seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "one request for all queries");
    let request = &seen[0];
    assert!(request.validate().is_ok());
    assert_eq!(request.questions.len(), 2, "one question per query");
    for id in ["q1", "q2"] {
        let options = options_of(request, id);
        assert_eq!(options.len(), 255);
        assert!(options.contains(&"none".to_owned()));
        assert!(options.contains(&"tool_253".to_owned()));
    }
    assert_eq!(
        request.state,
        json!({"feature": "tool_discovery", "queries": ["use number 1", "use number 2"]})
    );
}

#[tokio::test]
async fn metadata_records_the_decision() {
    let evaluator = Scripted::choosing(by_number);
    let outcome = decide_tools(
        &evaluator,
        &strings(&["use number 0", "use number 1", "use number 0"]),
        &tools(2),
    )
    .await
    .unwrap();
    assert_eq!(
        Value::Object(outcome.metadata()),
        json!({"decision": {
            "feature": "tool_discovery",
            "provider": "scripted",
            "model": "script-1",
            "question_count": 3,
            "usage": {"input_tokens": 1000, "output_tokens": 12},
        }})
    );
    assert_eq!(
        outcome.selected_tools(),
        ["tool_000", "tool_001"],
        "deduplicated by first hit"
    );

    let nothing = decide_tools(&evaluator, &strings(&["x"]), &[])
        .await
        .unwrap();
    assert!(nothing.metadata().is_empty(), "no decision, no metadata");
    assert!(nothing.decision.is_none());
}

#[tokio::test]
async fn evaluator_errors_are_returned_never_replaced() {
    // A failing evaluator: discovery must fail with its error, not fall back to a
    // local search and return selections.
    let failures: Vec<fn() -> Error> = vec![
        || Error::Timeout {
            seconds: 5.0,
            phase: iris_decision::TimeoutPhase::Request,
        },
        || Error::Auth {
            reason: "IRIS_PROVIDER_API_KEYS__TYPESAFE is not set".into(),
            status: None,
        },
        || Error::Http {
            status: 503,
            message: None,
        },
        || Error::Closed,
    ];
    for failure in failures {
        let expected = failure().code();
        let evaluator = Scripted::new(move |_| Err(failure()));
        let got = decide_tools(&evaluator, &strings(&["use number 0"]), &tools(3)).await;
        assert_eq!(got.map_err(|e| e.code()), Err(expected));
        assert_eq!(evaluator.calls(), 1);
    }
}

#[tokio::test]
async fn answers_from_any_evaluator_are_validated() {
    type Script = fn(&DecisionRequest) -> iris_decision::Result<iris_decision::DecisionResponse>;
    let cases: Vec<(&str, Script, &str)> = vec![
        (
            "an answer is missing",
            |_| Ok(response(Default::default())),
            "invalid decision response: `answers.q1` is missing; every question needs an answer",
        ),
        (
            "a boolean answer to a choice",
            |_| {
                Ok(response(
                    [(
                        "q1".to_owned(),
                        iris_decision::DecisionAnswer::Boolean(iris_decision::BooleanAnswer {
                            probability: 1.0,
                        }),
                    )]
                    .into(),
                ))
            },
            "invalid decision response: `answers.q1` is a boolean answer to a choice question",
        ),
        (
            "a tool that was not offered",
            |_| {
                Ok(response(
                    [("q1".to_owned(), choice_answer("read_file"))].into(),
                ))
            },
            "invalid decision response: `answers.q1.choice` `read_file` is not an option of the question",
        ),
    ];
    for (case, script, message) in cases {
        let evaluator = Scripted::new(script);
        let error = decide_tools(&evaluator, &strings(&["anything"]), &tools(2))
            .await
            .unwrap_err();
        assert_eq!(error.to_string(), message, "{case}");
    }
}

/// `discovery_request(queries, candidates)` → the exact error message.
fn check_request_error(
    case: &str,
    queries: &[&str],
    candidates: Vec<iris_tools_core::ToolDefinition>,
    message: &str,
) {
    let error = discovery_request(&strings(queries), &candidates).unwrap_err();
    assert_eq!(error.to_string(), message, "{case}");
}

#[test]
fn discovery_request_rules() {
    check_request_error(
        "no queries",
        &[],
        tools(1),
        "invalid decision request: `queries` must contain at least one query",
    );
    check_request_error(
        "blank query",
        &["ok", "\t"],
        tools(1),
        "invalid decision request: `queries[1]` must not be blank",
    );
    check_request_error(
        "a tool named none",
        &["q"],
        vec![tool("alpha", "A."), tool("none", "Does nothing.")],
        "invalid decision request: `candidates[1]` is named `none`, which is the no-match option",
    );
    check_request_error(
        "a tool offered twice",
        &["q"],
        vec![
            tool("alpha", "A."),
            tool("beta", "B."),
            tool("alpha", "A again."),
        ],
        "invalid decision request: `candidates[2]` offers `alpha` a second time",
    );
    check_request_error(
        "255 tools",
        &["q"],
        tools(255),
        "tool discovery got 255 deferred tools; one decision holds at most 254 (no trimming)",
    );
}

#[test]
fn descriptions_are_cut_to_240_characters() {
    let long = format!("{}{}", "é".repeat(239), "tail that is cut");
    let request = discovery_request(
        &strings(&["find it"]),
        &[
            tool("long_tool", &long),
            tool("short_tool", "  Short, with spaces.  "),
        ],
    )
    .unwrap();
    let DecisionQuestion::Choice(q) = &request.questions["q1"] else {
        panic!("a choice")
    };
    let cut = q.options["long_tool"].as_deref().unwrap();
    assert_eq!(cut.chars().count(), 240);
    assert_eq!(cut, format!("{}…", "é".repeat(239)));
    assert_eq!(
        q.options["short_tool"].as_deref(),
        Some("Short, with spaces.")
    );
    assert_eq!(
        q.options["none"].as_deref(),
        Some("No listed tool fits this intent.")
    );
}

#[test]
fn the_discovery_request_snapshot() {
    let request = discovery_request(
        &strings(&[
            "open an issue about the login crash",
            "send the release notes to the team",
        ]),
        &[
            tool(
                "mcp__github__create_issue",
                "Create a new issue in a GitHub repository.",
            ),
            tool(
                "mcp__slack__post_message",
                "Post a message to a Slack channel.",
            ),
        ],
    )
    .unwrap();
    insta::assert_json_snapshot!(request);
}

#[tokio::test]
async fn end_to_end_through_jev_client_and_a_local_service() {
    let server = TestServer::jev().await;
    let client = Arc::new(server.client(5.0));
    let candidates = vec![
        tool(
            "mcp__github__create_issue",
            "Create a new issue in a GitHub repository.",
        ),
        tool(
            "mcp__slack__post_message",
            "Post a message to a Slack channel.",
        ),
        tool("mcp__calendar__create_event", "Add an event to a calendar."),
    ];
    let queries = strings(&["post a status message in the channel", "water the plants"]);

    // A host-injected client is borrowed: closing the handle leaves it usable.
    let borrowed = EvaluatorHandle::Borrowed(client.clone() as Arc<dyn DecisionEvaluator>);
    let outcome = decide_tools(&borrowed, &queries, &candidates)
        .await
        .unwrap();
    assert_eq!(
        outcome.selections,
        vec![
            DiscoverySelection {
                query: queries[0].clone(),
                tool: Some("mcp__slack__post_message".into())
            },
            DiscoverySelection {
                query: queries[1].clone(),
                tool: None
            },
        ]
    );
    assert_eq!(
        Value::Object(outcome.metadata()),
        json!({"decision": {"feature": "tool_discovery", "provider": "typesafe", "model": "jev-1.13.0",
            "question_count": 2, "usage": {"input_tokens": 321, "output_tokens": 7}}})
    );
    borrowed.close().await;
    assert_eq!(
        client.state(),
        JevClientState::Ready,
        "Iris never closes a borrowed evaluator"
    );
    decide_tools(&borrowed, &queries, &candidates)
        .await
        .unwrap();
    assert_eq!(server.requests().len(), 2, "one request per discovery");

    // A client Iris created is owned: closing the handle closes it.
    let owned = EvaluatorHandle::Owned(Arc::new(server.client(5.0)));
    decide_tools(&owned, &queries, &candidates).await.unwrap();
    owned.close().await;
    let EvaluatorHandle::Owned(inner) = &owned else {
        unreachable!()
    };
    assert_eq!(inner.state(), JevClientState::Closed);
    let error = decide_tools(&owned, &queries, &candidates)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "DECISION_CLOSED");
    assert_eq!(server.requests().len(), 3);
}
