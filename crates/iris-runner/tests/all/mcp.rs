//! MCP and deferred tools in `build_tool_registry`, against iris-mcp's real Python
//! fixture server over stdio.

use iris_runner::{AgentConfig, HostRegistry, ToolEnvironment, build_tool_registry};
use iris_tools_core::{ToolExecutionContext, ToolUse};
use serde_json::{Value, json};

use crate::support::{Fixture, mcp_json, running};

async fn build(yaml: &str, mcp_file: &str) -> (Fixture, ToolEnvironment) {
    let fx = Fixture::new(yaml, &[("mcp.json", mcp_file)]);
    let loaded = AgentConfig::load_with_env(fx.file(), false).unwrap();
    let env = build_tool_registry(&loaded, &HostRegistry::new())
        .await
        .unwrap_or_else(|e| panic!("{yaml}: {e}"));
    (fx, env)
}

/// One call through the executor; `approved` passes the call's id as a human's
/// approval (what `iris call --yes` does after `APPROVAL_REQUIRED`).
async fn call(env: &ToolEnvironment, name: &str, input: Value, approved: bool) -> (bool, String) {
    let ctx = ToolExecutionContext::new(&env.workspace).session_id("s-1");
    let call = ToolUse::new("c1", name, input);
    let approval = approved.then_some(call.id.as_str());
    let result = env.executor.execute_one(&call, &ctx, approval).await;
    (result.is_error(), result.model_content())
}

/// The registry gains `mcp__<server>__<tool>`, a call goes through the executor, the
/// snapshot names the server, and `close()` stops the server process.
#[tokio::test]
async fn mcp_tools_are_assembled_called_and_closed() {
    // Trusting annotations lets the read-only `echo` run without approval.
    let yaml = "mcp:\n  path: mcp.json\n  overrides:\n    fixture: {trust_annotations: true}\n";
    let (_fx, env) = build(yaml, &mcp_json("fixture")).await;
    let names = env.registry.names();
    for expect in ["mcp__fixture__echo", "mcp__fixture__add"] {
        assert!(names.iter().any(|n| n == expect), "{expect} in {names:?}");
    }
    let snapshot = env.mcp_snapshot().unwrap();
    let server = snapshot.server("fixture").unwrap();
    assert_eq!(server.transport, "stdio");
    assert!(server.protocol_version.is_some());
    assert!(snapshot.tools.iter().all(|t| !t.deferred));

    // Rows: tool, input, approved, expected is_error, fragment of the content.
    let cases: &[(&str, Value, bool, bool, &str)] = &[
        (
            "mcp__fixture__echo",
            json!({"text": "hi there"}),
            false,
            false,
            "hi there",
        ),
        (
            "mcp__fixture__add",
            json!({"a": 2, "b": 3}),
            false,
            true,
            "APPROVAL_REQUIRED",
        ),
        (
            "mcp__fixture__add",
            json!({"a": 2, "b": 3}),
            true,
            false,
            "5",
        ),
        (
            "mcp__fixture__fail",
            json!({"message": "nope"}),
            true,
            true,
            "nope",
        ),
    ];
    for (name, input, approved, is_error, fragment) in cases {
        let (error, content) = call(&env, name, input.clone(), *approved).await;
        assert_eq!(error, *is_error, "{name}: {content}");
        assert!(content.contains(fragment), "{name}: {content}");
    }

    let pids = env.mcp.as_ref().unwrap().server_pids().await;
    assert_eq!(pids.len(), 1);
    assert!(running(pids[0].1));
    env.close().await.unwrap();
    assert!(!running(pids[0].1), "the server still runs after close()");
    // Closing twice is safe.
    env.close().await.unwrap();
}

/// With `deferred_tools`, MCP tools are published deferred and `tool_search` finds one
/// by a paraphrase of its description.
#[tokio::test]
async fn deferred_mcp_tools_are_found_by_tool_search() {
    let yaml = "mcp:\n  path: mcp.json\ncontext_policy:\n  deferred_tools: true\n";
    let (_fx, env) = build(yaml, &mcp_json("fixture")).await;
    let echo = env.registry.get("mcp__fixture__echo").unwrap();
    assert!(echo.definition().deferred);
    assert!(
        !env.registry
            .get("tool_search")
            .unwrap()
            .definition()
            .deferred
    );

    let (error, content) = call(
        &env,
        "tool_search",
        json!({"queries": ["add two integers together"]}),
        false,
    )
    .await;
    assert!(!error, "{content}");
    assert!(content.contains("mcp__fixture__add"), "{content}");
    env.close().await.unwrap();
}

/// An optional server that fails to start is a note, not an assembly error.
#[tokio::test]
async fn optional_server_failure_becomes_a_note() {
    let yaml = "mcp:\n  path: mcp.json\n  overrides:\n    gone: {required: false}\n";
    let file = r#"{"mcpServers": {"gone": {"command": "/nonexistent/iris-mcp-server"}}}"#;
    let (_fx, env) = build(yaml, file).await;
    assert!(
        env.notes
            .iter()
            .any(|n| n.starts_with("mcp: server `gone`")),
        "{:?}",
        env.notes
    );
    assert!(env.registry.names().is_empty());
    env.close().await.unwrap();
}

/// The discovery flow end to end with a real MCP server's tools deferred: a call
/// before any search is refused, `tool_search` reveals the tool, the next request
/// carries its schema and the call succeeds.
#[tokio::test]
async fn search_reveal_then_call() {
    use iris_discovery::{DisclosureState, SchemaBudget};
    use iris_tools_core::ViewFilter;

    let yaml = "mcp:\n  path: mcp.json\n  overrides:\n    fixture: {trust_annotations: true}\ncontext_policy:\n  deferred_tools: true\n";
    let (_fx, env) = build(yaml, &mcp_json("fixture")).await;
    let view = env.registry.view(ViewFilter::default());
    let state = DisclosureState::new();
    let ctx = state.attach(ToolExecutionContext::new(&env.workspace).session_id("s-1"));
    let run = |id: &'static str, name: &'static str, input: Value| {
        let ctx = ctx.clone();
        let executor = &env.executor;
        async move {
            executor
                .execute_one(&ToolUse::new(id, name, input), &ctx, None)
                .await
        }
    };

    state.request_specs(&view, SchemaBudget::UNLIMITED);
    let refused = run("c1", "mcp__fixture__echo", json!({"text": "early"})).await;
    assert_eq!(refused.error_code(), Some("TOOL_NOT_LOADED"), "{refused:?}");

    let found = run(
        "c2",
        "tool_search",
        json!({"queries": ["repeat my words back to me unchanged"]}),
    )
    .await;
    assert_eq!(
        found.output.revealed_tools,
        ["mcp__fixture__echo"],
        "{}",
        found.model_content()
    );

    state.request_specs(&view, SchemaBudget::UNLIMITED);
    let ok = run("c3", "mcp__fixture__echo", json!({"text": "now loaded"})).await;
    assert!(!ok.is_error(), "{}", ok.model_content());
    assert_eq!(ok.model_content(), "now loaded");
    env.close().await.unwrap();
}

/// `decision.tools.discovery` with a host-injected evaluator: `tool_search` asks it
/// (never the local ranking), reports `metadata.decision`, and the evaluator stays
/// borrowed.
#[tokio::test]
async fn decision_discovery_uses_the_host_evaluator() {
    use iris_decision::{
        BoxFuture, ChoiceAnswer, DecisionAnswer, DecisionEvaluator, DecisionQuestion,
        DecisionRequest, DecisionResponse, DecisionUsage,
    };
    use std::sync::Arc;

    /// Picks the option whose name appears in the question, else `none`.
    struct ByName;
    impl DecisionEvaluator for ByName {
        fn evaluate<'a>(
            &'a self,
            request: &'a DecisionRequest,
        ) -> BoxFuture<'a, iris_decision::Result<DecisionResponse>> {
            Box::pin(async move {
                let answers = request
                    .questions
                    .iter()
                    .filter_map(|(id, q)| {
                        let DecisionQuestion::Choice(q) = q else {
                            return None;
                        };
                        let choice = q
                            .options
                            .keys()
                            .find(|o| q.instructions.contains(o.as_str()) && *o != "none")
                            .cloned()
                            .unwrap_or_else(|| "none".into());
                        let answer = ChoiceAnswer {
                            probabilities: [(choice.clone(), 1.0)].into(),
                            choice,
                            confidence: 0.9,
                        };
                        Some((id.clone(), DecisionAnswer::Choice(answer)))
                    })
                    .collect();
                Ok(DecisionResponse {
                    provider: "test".into(),
                    model: "by-name".into(),
                    answers,
                    usage: DecisionUsage {
                        input_tokens: 10,
                        output_tokens: 2,
                    },
                })
            })
        }
    }

    let yaml = "mcp:\n  path: mcp.json\ncontext_policy:\n  deferred_tools: true\ndecision:\n  path: decision.yaml\n";
    let fx = Fixture::new(
        yaml,
        &[
            ("mcp.json", &mcp_json("fixture")),
            ("decision.yaml", "tools:\n  discovery: true\n"),
        ],
    );
    let loaded = AgentConfig::load_with_env(fx.file(), false).unwrap();
    let host = HostRegistry::new().decision_evaluator(Arc::new(ByName));
    let env = build_tool_registry(&loaded, &host).await.unwrap();
    assert!(!env.decision_evaluator.as_ref().unwrap().is_owned());

    let ctx = ToolExecutionContext::new(&env.workspace).session_id("s-1");
    let call = ToolUse::new(
        "c1",
        "tool_search",
        json!({"queries": ["run mcp__fixture__add on 2 and 3", "book a flight"]}),
    );
    let result = env.executor.execute_one(&call, &ctx, None).await;
    assert!(!result.is_error(), "{}", result.model_content());
    let selections = &result.output.data["selections"];
    assert_eq!(selections[0]["tool"], json!("mcp__fixture__add"));
    assert_eq!(selections[1]["tool"], Value::Null);
    assert_eq!(
        result.output.metadata["decision"]["model"],
        json!("by-name")
    );
    env.close().await.unwrap();
}
