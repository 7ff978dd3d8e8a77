//! `tool_search` with the decision backend, through a real registry and the real
//! executor, answered by an in-process evaluator (the HTTP path is tested in `jev`
//! and `discovery`).

use std::sync::Arc;

use iris_decision::{
    DecisionDiscoveryBackend, DecisionQuestion, DecisionRequest, Error, MAX_DISCOVERY_TOOLS,
    TimeoutPhase, decision_tool_search,
};
use iris_discovery::{DisclosureLayer, DisclosureState, SchemaBudget};
use iris_executor::ToolExecutor;
use iris_tools_core::{
    FnTool, ToolDefinition, ToolExecutionContext, ToolOutput, ToolRegistry, ToolUse, ViewFilter,
};
use serde_json::{Value, json};

use crate::support::Scripted;

const CREATE_ISSUE: &str = "mcp__github__create_issue";
const SLACK_POST: &str = "mcp__slack__slack_post_message";

fn register(registry: &ToolRegistry, def: ToolDefinition) {
    registry
        .register(FnTool::new(def, |_, _| async { ToolOutput::text("done") }))
        .unwrap();
}

fn deferred(name: &str, group: &str, description: &str) -> ToolDefinition {
    ToolDefinition::new(name, description, json!({"type": "object"}))
        .with_group(group)
        .with_deferred(true)
}

/// Two deferred MCP-like tools, one eager tool that matches the same words, and
/// `tool_search` answered by `evaluator`, behind an executor with the disclosure layer
/// (which certifies what a search reveals and refuses tools not loaded).
fn setup(evaluator: Arc<Scripted>) -> (ToolExecutor, ToolRegistry) {
    let registry = ToolRegistry::new();
    register(
        &registry,
        deferred(
            CREATE_ISSUE,
            "github",
            "Create a new issue in a GitHub repository.",
        ),
    );
    register(
        &registry,
        deferred(
            SLACK_POST,
            "slack",
            "Post a new message to a Slack channel.",
        ),
    );
    register(
        &registry,
        ToolDefinition::new(
            "create_issue_draft",
            "Draft an issue locally (eager).",
            json!({"type": "object"}),
        ),
    );
    let view = registry.view(ViewFilter::default());
    registry
        .register(decision_tool_search(view, evaluator))
        .unwrap();
    (
        ToolExecutor::new(registry.clone()).with_layer(DisclosureLayer),
        registry,
    )
}

/// Picks a tool by a keyword of the query, else `none`.
fn by_keyword(instructions: &str) -> Option<String> {
    if instructions.contains("issue") {
        Some(CREATE_ISSUE.to_owned())
    } else if instructions.contains("slack") {
        Some(SLACK_POST.to_owned())
    } else {
        None
    }
}

fn ctx() -> ToolExecutionContext {
    ToolExecutionContext::new("/nonexistent/iris-decision-tests").session_id("s-dec")
}

fn search(input: Value) -> ToolUse {
    ToolUse::new("c-search", "tool_search", input)
}

fn options(request: &DecisionRequest) -> Vec<Vec<String>> {
    request
        .questions
        .values()
        .map(|q| match q {
            DecisionQuestion::Choice(q) => q.options.keys().cloned().collect(),
            other => panic!("discovery asked a {} question", other.kind()),
        })
        .collect()
}

#[tokio::test]
async fn decision_backend_through_the_executor() {
    let evaluator = Arc::new(Scripted::choosing(by_keyword));
    let (executor, registry) = setup(evaluator.clone());
    let state = DisclosureState::new();
    let ctx = state.attach(ctx());
    let input = json!({"queries": ["open an issue for the crash", "bake bread", "tell slack", "another issue"]});
    let result = executor.execute_one(&search(input), &ctx, None).await;
    assert!(!result.is_error(), "{result:?}");

    // The same output contract as the local backend.
    assert_eq!(
        result.output.data["selections"],
        json!([
            {"query": "open an issue for the crash", "tool": CREATE_ISSUE},
            {"query": "bake bread", "tool": null},
            {"query": "tell slack", "tool": SLACK_POST},
            {"query": "another issue", "tool": CREATE_ISSUE},
        ])
    );
    assert_eq!(
        result.output.data["tools"],
        json!([
            {"name": CREATE_ISSUE, "description": "Create a new issue in a GitHub repository.", "group": "github"},
            {"name": SLACK_POST, "description": "Post a new message to a Slack channel.", "group": "slack"},
        ])
    );
    // The decision is recorded; the backend is named.
    assert_eq!(
        result.output.metadata["decision"],
        json!({
            "feature": "tool_discovery",
            "provider": "scripted",
            "model": "script-1",
            "question_count": 4,
            "usage": {"input_tokens": 1000, "output_tokens": 12},
        })
    );
    assert_eq!(result.output.metadata["discovery"]["backend"], "decision");
    assert!(!result.output.metadata.contains_key("local_search"));

    // One request; each question offers exactly the deferred candidates plus `none`.
    assert_eq!(evaluator.calls(), 1);
    let seen = evaluator.seen.lock().unwrap().clone();
    assert_eq!(
        options(&seen[0]),
        vec![
            vec![
                CREATE_ISSUE.to_owned(),
                SLACK_POST.to_owned(),
                "none".to_owned()
            ];
            4
        ]
    );

    // Certified like any real tool_search body: the next request loads, the call runs.
    assert_eq!(result.output.revealed_tools, [CREATE_ISSUE, SLACK_POST]);
    let view = registry.view(ViewFilter::default());
    state.request_specs(&view, SchemaBudget::UNLIMITED);
    let call = ToolUse::new("c-issue", CREATE_ISSUE, json!({}));
    let ok = executor.execute_one(&call, &ctx, None).await;
    assert_eq!(ok.model_content(), "done");
}

#[tokio::test]
async fn include_groups_narrow_the_offered_catalog() {
    let check = |groups: Value, expect_options: Option<Vec<&'static str>>, expect: Value| async move {
        let evaluator = Arc::new(Scripted::choosing(by_keyword));
        let (executor, _registry) = setup(evaluator.clone());
        let input = json!({"queries": ["open an issue", "tell slack"], "include_groups": groups});
        let result = executor.execute_one(&search(input), &ctx(), None).await;
        let seen = evaluator.seen.lock().unwrap().clone();
        match expect_options {
            Some(names) => {
                assert_eq!(options(&seen[0])[0], names, "include_groups {groups}");
            }
            None => assert!(seen.is_empty(), "include_groups {groups}: nothing is asked"),
        }
        let got = if result.is_error() {
            json!(result.error_code())
        } else {
            result.output.data["selections"].clone()
        };
        assert_eq!(got, expect, "include_groups {groups}");
        result
    };
    let both = json!([
        {"query": "open an issue", "tool": CREATE_ISSUE},
        {"query": "tell slack", "tool": SLACK_POST},
    ]);
    check(
        Value::Null,
        Some(vec![CREATE_ISSUE, SLACK_POST, "none"]),
        both.clone(),
    )
    .await;
    check(
        json!(["github", "slack"]),
        Some(vec![CREATE_ISSUE, SLACK_POST, "none"]),
        both,
    )
    .await;
    // Only Slack offered: the issue query gets `none` from an evaluator that obeys.
    let slack_only = Arc::new(Scripted::choosing(|i| {
        by_keyword(i).filter(|t| t == SLACK_POST)
    }));
    let (executor, _registry) = setup(slack_only.clone());
    let input = json!({"queries": ["open an issue", "tell slack"], "include_groups": ["slack"]});
    let result = executor.execute_one(&search(input), &ctx(), None).await;
    assert_eq!(
        result.output.data["selections"],
        json!([{"query": "open an issue", "tool": null}, {"query": "tell slack", "tool": SLACK_POST}])
    );
    assert_eq!(
        options(&slack_only.seen.lock().unwrap()[0])[0],
        [SLACK_POST, "none"]
    );
    // An evaluator answering outside the offered options is an invalid response.
    check(
        json!(["github"]),
        Some(vec![CREATE_ISSUE, "none"]),
        json!("DECISION_INVALID_RESPONSE"),
    )
    .await;
    // No group allowed: nothing to ask, every selection null, no decision recorded.
    let none = check(
        json!([]),
        None,
        json!([{"query": "open an issue", "tool": null}, {"query": "tell slack", "tool": null}]),
    )
    .await;
    assert!(!none.output.metadata.contains_key("decision"));
}

#[tokio::test]
async fn evaluator_errors_become_tool_errors_without_fallback() {
    let failures: Vec<fn() -> Error> = vec![
        || Error::Timeout {
            seconds: 5.0,
            phase: TimeoutPhase::Request,
        },
        || Error::Http {
            status: 503,
            message: Some("overloaded".into()),
        },
        || Error::Auth {
            reason: "the service rejected the key".into(),
            status: Some(401),
        },
        || Error::Closed,
    ];
    for failure in failures {
        let expected = failure();
        let evaluator = Arc::new(Scripted::new(move |_| Err(failure())));
        let (executor, _registry) = setup(evaluator.clone());
        let state = DisclosureState::new();
        let ctx = state.attach(ctx());
        // The local ranking would find the issue tool for this query; the decision
        // backend's failure must not be papered over with it.
        let input = json!({"queries": ["create a new issue in the github repository"]});
        let result = executor.execute_one(&search(input), &ctx, None).await;
        let error = result
            .output
            .error_info()
            .cloned()
            .expect("an error result");
        assert_eq!(error.code, expected.code(), "{expected}");
        assert_eq!(error.retryable, expected.retryable(), "{expected}");
        assert_eq!(error.message, expected.to_string());
        assert!(result.output.data.is_empty(), "no selections on failure");
        assert!(state.revealed().is_empty(), "nothing revealed on failure");
        assert_eq!(evaluator.calls(), 1, "one request, no retry");
    }
}

/// A registry with `n` deferred tools in group `bulk` and 100 in group `extra`.
fn bulk(n: usize, evaluator: Arc<Scripted>) -> ToolExecutor {
    let registry = ToolRegistry::new();
    for i in 0..n {
        register(
            &registry,
            deferred(
                &format!("bulk_tool_{i:03}"),
                "bulk",
                &format!("Bulk tool number {i}."),
            ),
        );
    }
    for i in 0..100 {
        register(
            &registry,
            deferred(
                &format!("extra_tool_{i:03}"),
                "extra",
                &format!("Extra tool number {i}."),
            ),
        );
    }
    let view = registry.view(ViewFilter::default());
    registry
        .register(iris_discovery::ToolSearchTool::with_backend(
            view,
            Arc::new(DecisionDiscoveryBackend::new(evaluator)),
        ))
        .unwrap();
    ToolExecutor::new(registry).with_layer(DisclosureLayer)
}

#[tokio::test]
async fn at_most_254_candidates_never_trimmed() {
    assert_eq!(MAX_DISCOVERY_TOOLS, 254);
    let check = |n: usize, groups: Value, expect: Result<usize, &'static str>| async move {
        let evaluator = Arc::new(Scripted::choosing(|_| None));
        let executor = bulk(n, evaluator.clone());
        let input = json!({"queries": ["anything"], "include_groups": groups});
        let result = executor.execute_one(&search(input), &ctx(), None).await;
        match expect {
            Ok(offered) => {
                assert!(!result.is_error(), "{n} {groups}: {result:?}");
                let seen = evaluator.seen.lock().unwrap().clone();
                // Every candidate plus `none`: no trimming.
                assert_eq!(options(&seen[0])[0].len(), offered + 1, "{n} {groups}");
            }
            Err(code) => {
                assert_eq!(result.error_code(), Some(code), "{n} {groups}");
                assert_eq!(evaluator.calls(), 0, "{n} {groups}: nothing is sent");
                let details = &result.output.error_info().unwrap().details;
                assert_eq!(details["max"], 254);
                assert!(
                    result.model_content().contains("at most 254 (no trimming)"),
                    "{}",
                    result.model_content()
                );
            }
        }
    };
    check(254, json!(["bulk"]), Ok(254)).await;
    check(255, json!(["bulk"]), Err("DECISION_TOO_MANY_TOOLS")).await;
    // The limit applies to the allowed catalog: narrowing the groups makes it fit.
    check(154, Value::Null, Ok(254)).await;
    check(155, Value::Null, Err("DECISION_TOO_MANY_TOOLS")).await;
    check(300, json!(["extra"]), Ok(100)).await;
}
