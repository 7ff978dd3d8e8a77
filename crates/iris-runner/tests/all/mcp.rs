//! MCP and deferred tools in `build_tool_registry`, against iris-mcp's real Python
//! fixture server over stdio.

use iris_mcp::{ElicitationAnswer, ElicitationKind};
use iris_runner::{
    AgentConfig, AgentRunner, AgentRunnerBuilder, Answer, HostRegistry, Interaction,
    InteractionHandler, RunEvent, RunOutcome, ToolEnvironment, build_tool_registry,
};
use iris_tools_core::{BoxFuture, ToolExecutionContext, ToolUse};
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

/// An `.mcp.json` with the fixture's extra tools (progress, elicitation, catalog
/// changes) on one stdio server `fx`.
fn extra_tools_json() -> String {
    let server = crate::support::mcp_fixtures().join("sdk_server.py");
    json!({"mcpServers": {"fx": {
        "command": crate::support::python(),
        "args": [server.display().to_string(), "--name", "fx", "--extra-tools"],
    }}})
    .to_string()
}

/// A host that approves every call and answers elicitations with `colour`.
struct Host {
    colour: &'static str,
}

impl InteractionHandler for Host {
    fn answer<'a>(&'a self, interaction: &'a Interaction) -> BoxFuture<'a, Option<Answer>> {
        let answer = match interaction {
            Interaction::Approval(_) => Answer::Approve,
            Interaction::Elicitation(e) => Answer::Elicitation {
                reply: match &e.request.kind {
                    ElicitationKind::Form { .. } => {
                        ElicitationAnswer::accept(json!({"colour": self.colour}))
                    }
                    _ => ElicitationAnswer::decline("forms only"),
                },
            },
            _ => return Box::pin(async { None }),
        };
        Box::pin(async move { Some(answer) })
    }
}

/// A runner builder for `yaml` with `mcp.json` = the extra tools (the fixture keeps
/// the files).
async fn extra_tools_builder(yaml: &str) -> (Fixture, AgentRunnerBuilder) {
    let fx = Fixture::new(yaml, &[("mcp.json", &extra_tools_json())]);
    let loaded = AgentConfig::load_with_env(fx.file(), false).unwrap();
    let builder = AgentRunner::builder_from_loaded(&loaded, &HostRegistry::new(), None)
        .await
        .unwrap();
    (fx, builder)
}

/// The history of a completed run as JSON text, after checking its output.
fn completed_text(outcome: &RunOutcome, expected: &str) -> String {
    let RunOutcome::Completed {
        output, history, ..
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(output, expected);
    serde_json::to_string(history).unwrap()
}

/// A streamed run of `yaml` (with `mcp.json` = the extra tools) and its events.
async fn streamed(yaml: &str, host: Option<Host>) -> Vec<RunEvent> {
    let (_fx, mut builder) = extra_tools_builder(yaml).await;
    if let Some(host) = host {
        builder = builder.interaction_handler(host);
    }
    let runner = builder.build();
    let mut stream = runner.run_streamed("go");
    let mut all = Vec::new();
    while let Some(event) = stream.next().await {
        all.push(event);
    }
    runner.close().await.unwrap();
    all
}

fn tool_results(events: &[RunEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::ToolCallFinished { result, .. } => Some(result.model_content()),
            _ => None,
        })
        .collect()
}

fn run_yaml(script: &str) -> String {
    format!(
        "mcp:\n  path: mcp.json\n  overrides:\n    fx: {{trust_annotations: true}}\nrun_store: {{kind: memory}}\nmodel:\n  provider: scripted\n  script:\n{script}"
    )
}

/// MCP progress notifications of a call reach the run's stream as
/// `RunEvent::Progress`, in order, naming the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_of_an_mcp_call_is_a_run_event() {
    let yaml = run_yaml(
        "    - tool_calls: [{name: mcp__fx__progress, arguments: {steps: 3, interval: 0.2}}]\n    - {expect_tool_results: 1, text: done}\n",
    );
    let all = streamed(&yaml, Some(Host { colour: "red" })).await;
    type Seen = (String, String, f64, Option<f64>, Option<String>);
    let progress: Vec<Seen> = all
        .iter()
        .filter_map(|e| match e {
            RunEvent::Progress {
                turn: 1,
                call_id,
                tool_name,
                progress,
                total,
                message,
            } => Some((
                call_id.clone(),
                tool_name.clone(),
                *progress,
                *total,
                message.clone(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(progress.len(), 3, "{all:#?}");
    for (i, (call_id, tool, p, total, message)) in progress.iter().enumerate() {
        assert_eq!(call_id, "call_1_1");
        assert_eq!(tool, "mcp__fx__progress");
        assert_eq!(*p, (i + 1) as f64);
        assert_eq!(*total, Some(3.0));
        assert_eq!(message.as_deref(), Some(&*format!("step {} of 3", i + 1)));
    }
    assert_eq!(tool_results(&all), ["done after 3 steps"]);
    let json = serde_json::to_value(&all).unwrap();
    assert!(
        json.as_array()
            .unwrap()
            .iter()
            .any(|e| e["type"] == "progress" && e["progress"] == 1.0),
        "the --json stream carries it: {json}"
    );
}

/// An elicitation during a run goes to the run's host: answered by
/// the run's `InteractionHandler`, shown on the stream, declined with a reason by the
/// default `elicit` and when the run has no handler at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_during_a_run_goes_to_the_host() {
    let yaml = run_yaml(
        "    - tool_calls: [{name: mcp__fx__ask_form}]\n    - {expect_tool_results: 1, text: done}\n",
    );
    let all = streamed(&yaml, Some(Host { colour: "red" })).await;
    assert_eq!(tool_results(&all), ["action=accept colour=red"], "{all:#?}");
    let requested = all
        .iter()
        .find_map(|e| match e {
            RunEvent::ElicitationRequested { turn: 1, request } => Some(request.clone()),
            _ => None,
        })
        .expect("ElicitationRequested");
    assert_eq!(requested.tool, "mcp__fx__ask_form");
    assert_eq!(requested.call_id, "call_1_1");
    assert_eq!(requested.message, "Pick a colour");
    assert!(all.iter().any(|e| matches!(
        e,
        RunEvent::ElicitationAnswered { call_id, answer: ElicitationAnswer::Accept { .. }, .. }
            if call_id == "call_1_1"
    )));
}

/// With nobody attached, a 2026-07-28 elicitation makes the run wait
/// (`Interaction::Elicitation`, durable); `resume` with the form's values sends the
/// call again where it stopped, and a bad answer is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_nobody_answers_makes_the_run_wait_for_resume() {
    let yaml = run_yaml(
        "    - tool_calls: [{name: mcp__fx__ask_form}]\n    - {expect_tool_results: 1, text: done}\n",
    );
    let (_fx, builder) = extra_tools_builder(&yaml).await;
    let runner = builder.build();
    let outcome = runner.run("go").await;
    let RunOutcome::Waiting {
        run_id,
        interaction: Interaction::Elicitation(asks),
    } = &outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(asks.call_id, "call_1_1");
    assert_eq!(asks.tool_name, "mcp__fx__ask_form");
    assert_eq!(asks.request.message, "Pick a colour");
    let summary = Interaction::Elicitation(asks.clone()).summary();
    assert!(summary.contains("form: colour (string)"), "{summary}");

    let bad = runner
        .resume(
            run_id,
            &asks.id,
            Answer::Text {
                text: "teal".into(),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(bad.code, "RUN_ANSWER_INVALID", "{bad:?}");
    let done = runner
        .resume(
            run_id,
            &asks.id,
            Answer::Text {
                text: r#"{"colour": "teal"}"#.into(),
            },
        )
        .await
        .unwrap();
    let RunOutcome::Completed {
        history, output, ..
    } = &done
    else {
        panic!("{done:?}")
    };
    assert_eq!(output, "done");
    let text = serde_json::to_string(history).unwrap();
    assert!(text.contains("action=accept colour=teal"), "{text}");
    runner.close().await.unwrap();
}

/// A tool the server adds mid-run (`notifications/tools/list_changed`) is in the
/// next model requests, after the tools sent before (names and order stable), and
/// callable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_change_reaches_the_next_model_request() {
    let yaml = run_yaml(
        "    - tool_calls: [{name: mcp__fx__add_tool, arguments: {name: fresh}}]\n    - tool_calls: [{name: mcp__fx__echo, arguments: {text: between}}]\n    - tool_calls: [{name: mcp__fx__fresh, arguments: {text: hi}}]\n    - {expect_tool_results: 1, text: done}\n",
    );
    let all = streamed(&yaml, Some(Host { colour: "red" })).await;
    let tools: Vec<Vec<String>> = all
        .iter()
        .filter_map(|e| match e {
            RunEvent::TurnStarted { tools, .. } => Some(tools.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(tools.len(), 4, "{all:#?}");
    assert!(!tools[0].iter().any(|t| t == "mcp__fx__fresh"));
    let mut expected = tools[0].clone();
    expected.push("mcp__fx__fresh".into());
    assert_eq!(
        tools[2], expected,
        "old tools keep their order; the new one is last"
    );
    assert_eq!(
        tool_results(&all),
        ["added fresh", "between", "fresh: hi"],
        "{all:#?}"
    );
    assert_eq!(outcome_text(&all), Some("done"));
}

fn outcome_text(events: &[RunEvent]) -> Option<&str> {
    match events.last() {
        Some(RunEvent::Finished { outcome }) => outcome.output(),
        _ => None,
    }
}

/// The background results of a run's events, in order.
fn background_finished(events: &[RunEvent]) -> Vec<&iris_tools_core::ToolResult> {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::BackgroundFinished { result, .. } => Some(result),
            _ => None,
        })
        .collect()
}

fn completed_history(events: &[RunEvent]) -> String {
    match events.last() {
        Some(RunEvent::Finished {
            outcome: RunOutcome::Completed { history, .. },
        }) => serde_json::to_string(history).unwrap(),
        other => panic!("not completed: {other:?}"),
    }
}

/// A call the MCP server makes a task answers with a receipt naming the task; the
/// loop goes on (another model turn, another call) while the task runs, and its
/// result arrives as a later message, with `RunEvent::BackgroundFinished` naming the
/// call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_task_becomes_a_background_call_of_the_run() {
    let yaml = run_yaml(
        "    - tool_calls: [{name: mcp__fx__slow_task, arguments: {seconds: 3.0}}]\n    - expect_tool_results: 1\n      tool_calls: [{name: mcp__fx__echo, arguments: {text: meanwhile}}]\n    - {expect_tool_results: 1, text: waiting for the task}\n    - {text: the task is done}\n",
    );
    let all = streamed(&yaml, Some(Host { colour: "red" })).await;
    assert_eq!(outcome_text(&all), Some("the task is done"), "{all:#?}");
    let results = crate::support::finished(&all);
    let receipt = results[0];
    assert_eq!(receipt.tool_use_id, "call_1_1");
    assert_eq!(receipt.tool_name, "mcp__fx__slow_task");
    assert!(!receipt.is_error(), "{receipt:?}");
    let background = &receipt.output.data["background"];
    assert_eq!(background["status"], "running");
    assert_eq!(background["mcp_task"]["server"], "fx");
    let task_id = background["mcp_task"]["task_id"].as_str().unwrap();
    assert!(!task_id.is_empty());
    assert_eq!(results[1].model_content(), "meanwhile");

    let done = background_finished(&all);
    assert_eq!(done.len(), 1, "{all:#?}");
    assert_eq!(done[0].tool_use_id, "call_1_1");
    assert_eq!(done[0].tool_name, "mcp__fx__slow_task");
    assert_eq!(done[0].model_content(), "task done after 3.0s");
    assert_eq!(done[0].output.metadata["mcp"]["task_id"], task_id);
    // The task finished after the second turn's call did.
    let at = |want: &dyn Fn(&RunEvent) -> bool| all.iter().position(want).unwrap();
    let echoed = at(
        &|e| matches!(e, RunEvent::ToolCallFinished { result, .. } if result.tool_use_id == "call_2_1"),
    );
    let finished_at = at(&|e| matches!(e, RunEvent::BackgroundFinished { .. }));
    assert!(echoed < finished_at, "{all:#?}");
    let history = completed_history(&all);
    assert!(
        history.contains(
            "[background call call_1_1 (mcp__fx__slow_task) started in turn 1 finished]\\ntask done after 3.0s"
        ),
        "{history}"
    );
}

/// A background MCP task keeps its heartbeat: its progress notifications and its
/// status messages arrive as `RunEvent::Progress` for the call's id and tool,
/// after the receipt and before `RunEvent::BackgroundFinished`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_mcp_task_reports_progress_until_it_finishes() {
    let yaml = run_yaml(
        "    - tool_calls: [{name: mcp__fx__slow_task, arguments: {seconds: 1.5, steps: 3}}]\n    - {expect_tool_results: 1, text: waiting}\n    - {text: it finished}\n",
    );
    let all = streamed(&yaml, Some(Host { colour: "red" })).await;
    assert_eq!(outcome_text(&all), Some("it finished"), "{all:#?}");
    let at = |want: &dyn Fn(&RunEvent) -> bool| all.iter().position(want).unwrap();
    let receipt = at(
        &|e| matches!(e, RunEvent::ToolCallFinished { result, .. } if result.tool_use_id == "call_1_1"),
    );
    let finished = at(&|e| matches!(e, RunEvent::BackgroundFinished { .. }));
    let progress: Vec<(usize, f64, Option<f64>, &str)> = all
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            RunEvent::Progress {
                turn,
                call_id,
                tool_name,
                progress,
                total,
                message,
            } => {
                assert_eq!(
                    (*turn, call_id.as_str(), tool_name.as_str()),
                    (1, "call_1_1", "mcp__fx__slow_task")
                );
                Some((i, *progress, *total, message.as_deref().unwrap_or("")))
            }
            _ => None,
        })
        .collect();
    for step in 1..=3 {
        let note = format!("step {step} of 3");
        let beat = progress.iter().find(|p| p.3 == note);
        assert_eq!(
            beat.map(|p| (p.1, p.2)),
            Some((f64::from(step), Some(3.0))),
            "{progress:?}"
        );
        let phase = format!("phase {step} of 3");
        assert_eq!(
            progress.iter().filter(|p| p.3 == phase).count(),
            1,
            "{progress:?}"
        );
    }
    assert_eq!(
        progress[0].3, "queued",
        "the task's first status: {progress:?}"
    );
    assert_eq!(progress.len(), 7, "{progress:?}");
    assert!(
        progress.iter().all(|p| receipt < p.0 && p.0 < finished),
        "between the receipt ({receipt}) and the end ({finished}): {progress:?}"
    );
    let done = background_finished(&all);
    assert_eq!(done[0].model_content(), "task done after 1.5s");
}

/// A task that fails arrives like any failed background call: its typed code
/// (`MCP_TASK_FAILED`) and the server's message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_mcp_task_arrives_as_a_failed_background_result() {
    let yaml = run_yaml(
        "    - tool_calls: [{name: mcp__fx__slow_task, arguments: {seconds: 1.0, fail: disk full}}]\n    - {expect_tool_results: 1, text: waiting}\n    - {text: it failed}\n",
    );
    let all = streamed(&yaml, Some(Host { colour: "red" })).await;
    assert_eq!(outcome_text(&all), Some("it failed"), "{all:#?}");
    let done = background_finished(&all);
    assert_eq!(done.len(), 1, "{all:#?}");
    assert_eq!(
        done[0].error_code(),
        Some("MCP_TASK_FAILED"),
        "{:?}",
        done[0]
    );
    assert!(
        done[0].model_content().contains("disk full"),
        "{:?}",
        done[0]
    );
    let history = completed_history(&all);
    assert!(
        history.contains("(mcp__fx__slow_task) started in turn 1 failed (MCP_TASK_FAILED)"),
        "{history}"
    );
}

/// Cancelling a run whose MCP task still runs sends `tasks/cancel`, which the server
/// sees; the run ends cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_run_cancels_its_mcp_task_on_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("cancelled");
    let yaml = run_yaml(&format!(
        "    - tool_calls: [{{name: mcp__fx__slow_task, arguments: {{seconds: 3600.0, marker: '{}'}}}}]\n    - {{expect_tool_results: 1, text: waiting}}\n",
        marker.display()
    ));
    let (_fx, builder) = extra_tools_builder(&yaml).await;
    let runner = builder.interaction_handler(Host { colour: "red" }).build();
    let signal = iris_tools_core::CancellationSignal::new();
    let mut stream =
        runner.run_streamed(iris_runner::RunInput::from("go").cancellation(signal.clone()));
    let mut all = Vec::new();
    while let Some(event) = stream.next().await {
        // The model's answer came while the task runs: the loop waits for it.
        if matches!(&event, RunEvent::Usage { turn: 2, .. }) {
            signal.cancel();
        }
        all.push(event);
    }
    assert!(
        matches!(
            all.last(),
            Some(RunEvent::Finished {
                outcome: RunOutcome::Cancelled
            })
        ),
        "{all:#?}"
    );
    let receipt = crate::support::finished(&all)[0];
    assert_eq!(
        receipt.output.data["background"]["status"], "running",
        "{receipt:?}"
    );
    let seen = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        marker.exists()
    });
    assert!(seen, "the server never saw tasks/cancel");
    runner.close().await.unwrap();
}

/// The SDK fixture with its extra tools on streamable HTTP: a server that outlives
/// the runners that call it (killed and reaped on drop).
struct HttpFixture {
    child: std::process::Child,
    port: u16,
}

impl HttpFixture {
    fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = crate::support::mcp_fixtures().join("sdk_server.py");
        let child = std::process::Command::new(crate::support::python())
            .arg(server)
            .args([
                "--transport",
                "streamable-http",
                "--port",
                &port.to_string(),
            ])
            .args(["--name", "fx", "--extra-tools"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let fixture = Self { child, port };
        let ready = (0..300).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(100));
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(ready, "the HTTP fixture did not listen on {port}");
        fixture
    }

    fn mcp_json(&self) -> String {
        json!({"mcpServers": {"fx": {"url": format!("http://127.0.0.1:{}/mcp", self.port)}}})
            .to_string()
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A run whose process dies while its MCP task runs is recovered by another runner
/// (its own MCP client, the same server): the record names the task, and the
/// recovered run follows it again by id (`tasks/get`) instead of losing it or
/// calling the tool again; its result reaches the conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recovered_run_follows_its_mcp_task_again_by_id() {
    let server = HttpFixture::start();
    let yaml = run_yaml(
        "    - tool_calls: [{name: mcp__fx__slow_task, arguments: {seconds: 2.0}}]\n    - {expect_tool_results: 1, text: waiting}\n    - {text: the task finished}\n",
    );
    let fx = Fixture::new(&yaml, &[("mcp.json", &server.mcp_json())]);
    let loaded = AgentConfig::load_with_env(fx.file(), false).unwrap();
    let store: std::sync::Arc<dyn iris_runner::RunStore> =
        std::sync::Arc::new(iris_runner::MemoryRunStore::new());
    let runner = || async {
        AgentRunner::builder_from_loaded(&loaded, &HostRegistry::new(), None)
            .await
            .unwrap()
            .interaction_handler(Host { colour: "red" })
            .run_store(std::sync::Arc::clone(&store))
            .lease_ttl(std::time::Duration::from_millis(400))
            .build()
    };
    let first = runner().await;
    let task = tokio::spawn({
        let first = first.clone();
        async move { first.run("go").await }
    });
    // The process "dies" once the record names the task: nothing is cancelled.
    let mut noted = None;
    for _ in 0..300 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        if let Some(summary) = store.list(None, 1).await.unwrap().first()
            && let Some(record) = store.load(&summary.run_id).await.unwrap()
            && let Some(running) = record.background_running.first()
        {
            noted = Some((record.run_id.clone(), running.clone()));
            break;
        }
    }
    let (run_id, running) = noted.expect("the record never named the MCP task");
    task.abort();
    let _ = task.await;
    first.close().await.unwrap();
    assert_eq!(running.call_id, "call_1_1");
    assert_eq!(running.tool_name, "mcp__fx__slow_task");
    let reference = iris_mcp::McpTaskRef::from_reference(&running.reference).unwrap();
    assert_eq!(
        (reference.server.as_str(), reference.tool.as_str()),
        ("fx", "slow_task")
    );

    let second = runner().await;
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let outcome = second.recover(&run_id).await.unwrap();
    let text = completed_text(&outcome, "the task finished");
    assert!(
        text.contains(
            "[background call call_1_1 (mcp__fx__slow_task) started in turn 1 finished]\\ntask done after 2.0s"
        ),
        "{text}"
    );
    assert_eq!(
        text.matches("runs the call as task").count(),
        1,
        "one receipt: the tool was not called again: {text}"
    );
    let record = store.load(&run_id).await.unwrap().unwrap();
    assert!(record.background_running.is_empty(), "{record:?}");
    second.close().await.unwrap();
}

/// A stored run that stops to wait for a person does not wait for its MCP task
/// first: the record names the task, and `resume` follows it again by id; its
/// result reaches the conversation after the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_run_leaves_its_mcp_task_running_and_follows_it_on_resume() {
    let yaml = format!(
        "tools: {{builtin: [human.ask]}}\n{}",
        run_yaml(
            "    - tool_calls: [{name: mcp__fx__slow_task, arguments: {seconds: 2.0}}]\n    - expect_tool_results: 1\n      tool_calls: [{name: ask_question, arguments: {question: Which colour?, options: [red, blue]}}]\n    - {expect_tool_results: 1, text: waiting for the task}\n    - {text: done}\n",
        )
    );
    let (_fx, builder) = extra_tools_builder(&yaml).await;
    let runner = builder.interaction_handler(Host { colour: "red" }).build();
    let outcome = runner.run("go").await;
    let RunOutcome::Waiting {
        run_id,
        interaction,
    } = &outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(interaction.kind(), "question");
    let record = runner
        .run_store()
        .unwrap()
        .load(run_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        record.background_running.len(),
        1,
        "the run did not wait for the task: {record:?}"
    );
    assert!(record.background_done.is_empty(), "{record:?}");
    let done = runner
        .resume(
            run_id,
            interaction.id(),
            Answer::Text { text: "red".into() },
        )
        .await
        .unwrap();
    let text = completed_text(&done, "done");
    assert!(
        text.contains(
            "[background call call_1_1 (mcp__fx__slow_task) started in turn 1 finished]\\ntask done after 2.0s"
        ),
        "{text}"
    );
    runner.close().await.unwrap();
}

/// An approved call that becomes a task when the run resumes is followed once: the
/// resume's re-attachment skips the task its own answer just started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_started_by_an_approved_resume_is_followed_once() {
    let yaml = run_yaml(
        "    - tool_calls: [{name: mcp__fx__slow_task, arguments: {seconds: 0.5}}]\n    - {expect_tool_results: 1, text: waiting}\n    - {text: done}\n",
    );
    let (_fx, builder) = extra_tools_builder(&yaml).await;
    let runner = builder.build();
    let outcome = runner.run("go").await;
    let RunOutcome::Waiting {
        run_id,
        interaction,
    } = &outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(interaction.kind(), "approval");
    let done = runner
        .resume(run_id, interaction.id(), Answer::Approve)
        .await
        .unwrap();
    let text = completed_text(&done, "done");
    assert_eq!(
        text.matches("[background call call_1_1 (mcp__fx__slow_task) started in turn 1 finished]")
            .count(),
        1,
        "{text}"
    );
    runner.close().await.unwrap();
}
