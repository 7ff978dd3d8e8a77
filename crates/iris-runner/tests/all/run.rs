//! The run loop with the scripted provider: real tools, real executor, real hooks.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use iris_discovery::{DisclosureLayer, ToolSearchTool};
use iris_executor::ToolExecutor;
use iris_providers::chat::{Message, Role};
use iris_providers::{ScriptedProvider, Strict};
use iris_runner::{AgentRunner, Answer, Interaction, RunEvent, RunInput, RunOutcome};
use iris_tools_core::{
    FnTool, ToolCapability, ToolDefinition, ToolOutput, ToolRegistry, ViewFilter,
};
use serde_json::json;

use crate::support::{Fixture, events, finished, outcome, runtime};

/// A read-only tool that sleeps and records how many of its calls overlapped.
fn sleeper(
    name: &str,
    live: &Arc<AtomicUsize>,
    peak: &Arc<AtomicUsize>,
) -> impl iris_tools_core::Tool {
    let def = ToolDefinition::new(
        name,
        "Sleeps a little, then answers.",
        json!({"type": "object"}),
    )
    .with_capabilities([ToolCapability::Read]);
    let (live, peak) = (Arc::clone(live), Arc::clone(peak));
    FnTool::new(def, move |_, _| {
        let (live, peak) = (Arc::clone(&live), Arc::clone(&peak));
        async move {
            let now = live.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(200)).await;
            live.fetch_sub(1, Ordering::SeqCst);
            ToolOutput::text("slept")
        }
    })
}

#[test]
fn parallel_reads_then_a_write_barrier_then_a_read_that_sees_it() {
    let fx = Fixture::new(
        r#"
tools: {builtin: [file.read, file.write]}
permissions: {write_mode: allow}
model:
  provider: scripted
  script:
    - text: Reading both, then writing.
      tool_calls:
        - {name: read_file, arguments: {file_path: a.txt}}
        - {name: read_file, arguments: {file_path: b.txt}}
        - {name: write_file, arguments: {file_path: c.txt, content: "a and b\n"}}
        - {name: read_file, arguments: {file_path: c.txt}}
    - {expect_tool_results: 4, text: Done.}
"#,
        &[("a.txt", "alpha\n"), ("b.txt", "beta\n")],
    );
    runtime().block_on(async {
        let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
        let all = events(&runner, "Combine a and b into c").await;
        assert_eq!(outcome(&all).output(), Some("Done."), "{all:#?}");
        // The two reads form one window: both start before either finishes; the write
        // is a barrier; the last read runs after it and sees the new file.
        let order: Vec<String> = all
            .iter()
            .filter_map(|e| match e {
                RunEvent::ToolCallStarted { call_id, .. } => Some(format!("start {call_id}")),
                RunEvent::ToolCallFinished { result, .. } => {
                    Some(format!("end {}", result.tool_use_id))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            order,
            [
                "start call_1_1",
                "start call_1_2",
                "end call_1_1",
                "end call_1_2",
                "start call_1_3",
                "end call_1_3",
                "start call_1_4",
                "end call_1_4"
            ]
        );
        let results = finished(&all);
        assert!(results[0].model_content().contains("alpha"));
        assert!(
            results[3].model_content().contains("a and b"),
            "{:?}",
            results[3]
        );
        assert_eq!(
            std::fs::read_to_string(fx.root().join("c.txt")).unwrap(),
            "a and b\n"
        );
        runner.close().await.unwrap();
    });
}

#[test]
fn adjacent_read_only_calls_really_run_concurrently() {
    runtime().block_on(async {
        let (live, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let registry = ToolRegistry::new();
        registry.register(sleeper("nap_a", &live, &peak)).unwrap();
        registry.register(sleeper("nap_b", &live, &peak)).unwrap();
        registry.register(sleeper("nap_c", &live, &peak)).unwrap();
        let provider = ScriptedProvider::from_yaml(
            "- tool_calls: [{name: nap_a}, {name: nap_b}, {name: nap_c}]\n- {expect_tool_results: 3, text: rested}\n",
        )
        .unwrap();
        let runner = AgentRunner::builder(provider, ToolExecutor::new(registry)).build();
        assert_eq!(runner.run("rest").await.output(), Some("rested"));
        assert_eq!(peak.load(Ordering::SeqCst), 3, "the three reads overlapped");
    });
}

fn deferred_registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    let def = ToolDefinition::new(
        "create_issue",
        "Create an issue in the bug tracker with a title.",
        json!({"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}),
    )
    .with_deferred(true)
    .with_auto_allow(true);
    registry
        .register(FnTool::new(def, |input: serde_json::Value, _| async move {
            ToolOutput::text(format!(
                "created: {}",
                input["title"].as_str().unwrap_or("")
            ))
        }))
        .unwrap();
    registry
        .register(ToolSearchTool::new(registry.view(ViewFilter::default())))
        .unwrap();
    registry
}

#[test]
fn a_deferred_tool_is_refused_until_tool_search_finds_it_then_it_runs() {
    runtime().block_on(async {
        let registry = deferred_registry();
        let executor = ToolExecutor::new(registry).with_layer(DisclosureLayer);
        let provider = ScriptedProvider::from_yaml(
            r#"
- tool_calls: [{name: create_issue, arguments: {title: crash on start}}]
- expect_tool_results: 1
  tool_calls: [{name: tool_search, arguments: {queries: ["create an issue in the bug tracker"]}}]
- expect_tool_results: 1
  tool_calls: [{name: create_issue, arguments: {title: crash on start}}]
- {expect_tool_results: 1, text: Filed.}
"#,
        )
        .unwrap();
        let runner = AgentRunner::builder(provider, executor).build();
        let all = events(&runner, "File the crash").await;
        assert_eq!(outcome(&all).output(), Some("Filed."), "{all:#?}");
        let tools: Vec<&Vec<String>> = all
            .iter()
            .filter_map(|e| match e {
                RunEvent::TurnStarted { tools, .. } => Some(tools),
                _ => None,
            })
            .collect();
        assert_eq!(tools[0], &vec!["tool_search".to_owned()]);
        assert!(tools[2].contains(&"create_issue".to_owned()), "{tools:?}");
        let results = finished(&all);
        assert_eq!(results[0].error_code(), Some("TOOL_NOT_LOADED"));
        assert!(results[0].model_content().contains("tool_search"));
        assert!(!results[1].is_error(), "{:?}", results[1]);
        assert_eq!(results[2].model_content(), "created: crash on start");
    });
}

#[test]
fn max_turns_ends_a_run_that_never_answers() {
    let fx = Fixture::new(
        r#"
tools: {builtin: [file.list]}
max_turns: 2
model:
  provider: scripted
  script:
    - tool_calls: [{name: list_files}]
    - tool_calls: [{name: list_files}]
    - tool_calls: [{name: list_files}]
"#,
        &[],
    );
    runtime().block_on(async {
        let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
        let RunOutcome::Failed { error } = runner.run("loop").await else {
            panic!("expected a failure")
        };
        assert_eq!(error.code, "RUN_MAX_TURNS");
        assert!(error.message.contains("after 2 model requests"), "{error}");
        runner.close().await.unwrap();
    });
}

#[test]
fn unknown_tools_and_malformed_arguments_become_results_the_model_reads() {
    let fx = Fixture::new(
        r#"
tools: {builtin: [file.read]}
model:
  provider: scripted
  script:
    - tool_calls:
        - {name: no_such_tool}
        - {name: read_file, arguments: '{"file_path": '}
        - {name: read_file, arguments: {path: wrong-key.txt}}
    - {expect_tool_results: 3, text: I will do better.}
"#,
        &[],
    );
    runtime().block_on(async {
        let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
        let RunOutcome::Completed { history, .. } = runner.run("try").await else {
            panic!("expected completion")
        };
        let tool_message = history.iter().find(|m| m.role == Role::Tool).unwrap();
        let text = serde_json::to_string(tool_message).unwrap();
        assert!(text.contains("TOOL_NOT_FOUND"), "{text}");
        assert!(text.contains("could not be used: not valid JSON"), "{text}");
        assert!(text.contains("INVALID_INPUT"), "{text}");
        runner.close().await.unwrap();
    });
}

#[test]
fn cancelling_mid_tool_kills_the_command_and_ends_the_run_cancelled() {
    let fx = Fixture::new(
        r#"
tools: {builtin: [exec.command]}
permissions: {execute_mode: allow}
model:
  provider: scripted
  script:
    - tool_calls: [{name: exec_command, arguments: {command: "echo $$ > pid; exec sleep 60"}}]
    - {text: never reached}
"#,
        &[],
    );
    runtime().block_on(async {
        let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
        let pid_file = fx.root().join("pid");
        let all = crate::support::events_cancelled_when(&runner, "sleep", &pid_file, |e| {
            matches!(e, RunEvent::ToolCallStarted { .. })
        })
        .await;
        let outcome = crate::support::outcome(&all);
        assert!(matches!(outcome, RunOutcome::Cancelled), "{outcome:?}");
        let pid = crate::support::pid_in(&pid_file);
        assert!(
            crate::support::ends_soon(pid),
            "the command's process {pid} outlived the cancelled run"
        );
        runner.close().await.unwrap();
    });
}

#[test]
fn a_before_hook_denying_is_a_result_and_run_hooks_fire_around_the_run() {
    let fx = Fixture::new(
        r#"
tools: {builtin: [exec.command]}
permissions: {execute_mode: allow}
hooks:
  - name: no-rm
    event: tool.before
    handler: {type: command, command: "grep -q '\"rm ' && echo '{\"deny_reason\": \"rm is not allowed\"}' || echo '{}'"}
  - name: started
    event: run.started
    handler: {type: command, command: "cat >> run-events.jsonl; echo >> run-events.jsonl; echo '{}'"}
  - name: finished
    event: run.finished
    handler: {type: command, command: "cat >> run-events.jsonl; echo >> run-events.jsonl; echo '{}'"}
model:
  provider: scripted
  script:
    - tool_calls: [{name: exec_command, arguments: {command: "rm -rf data"}}, {name: exec_command, arguments: {command: "echo kept"}}]
    - {expect_tool_results: 2, text: Denied as expected.}
"#,
        &[("data/x", "x")],
    );
    runtime().block_on(async {
        let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
        let all = events(&runner, "clean up").await;
        assert_eq!(
            outcome(&all).output(),
            Some("Denied as expected."),
            "{all:#?}"
        );
        let results = finished(&all);
        assert_eq!(results[0].error_code(), Some("HOOK_DENIED"));
        assert!(results[0].model_content().contains("rm is not allowed"));
        assert_eq!(results[1].model_content().trim(), "kept");
        assert!(fx.root().join("data/x").exists());
        let log = std::fs::read_to_string(fx.root().join("run-events.jsonl")).unwrap();
        let lines: Vec<serde_json::Value> = log
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{log}");
        assert_eq!(lines[0]["event"], "run.started");
        assert_eq!(lines[0]["input"]["prompt"], "clean up");
        assert_eq!(lines[1]["event"], "run.finished");
        assert_eq!(lines[1]["status"], "completed");
        assert_eq!(lines[1]["result"]["output"], "Denied as expected.");
        assert_eq!(lines[0]["run_id"], lines[1]["run_id"]);
        runner.close().await.unwrap();
    });
}

#[test]
fn command_hooks_skip_a_run_finished_that_did_not_complete() {
    let fx = Fixture::new(
        r#"
tools: {builtin: [file.list]}
max_turns: 1
hooks:
  - name: finished
    event: run.finished
    handler: {type: command, command: "cat >> finished.jsonl; echo '{}'"}
model:
  provider: scripted
  script:
    - tool_calls: [{name: list_files}]
"#,
        &[],
    );
    runtime().block_on(async {
        let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
        let RunOutcome::Failed { error } = runner.run("loop").await else {
            panic!("expected failure")
        };
        assert_eq!(error.code, "RUN_MAX_TURNS");
        assert!(!fx.root().join("finished.jsonl").exists());
        runner.close().await.unwrap();
    });
}

const WRITE_SCRIPT: &str = r#"
tools: {builtin: [file.write, file.read]}
model:
  provider: scripted
  script:
    - tool_calls:
        - {name: write_file, arguments: {file_path: out.txt, content: "approved\n"}}
        - {name: read_file, arguments: {file_path: out.txt}}
    - {expect_tool_results: 2, text: Wrote it.}
"#;

#[test]
fn a_call_that_needs_approval_makes_the_run_wait_and_later_calls_do_not_run() {
    let fx = Fixture::new(WRITE_SCRIPT, &[]);
    runtime().block_on(async {
        let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
        let all = events(&runner, "write").await;
        let RunOutcome::Waiting {
            run_id,
            interaction,
        } = outcome(&all)
        else {
            panic!("expected waiting: {all:#?}")
        };
        assert!(run_id.starts_with("run_"));
        let Interaction::Approval(request) = interaction else {
            panic!("{interaction:?}")
        };
        assert_eq!(request.tool_name, "write_file");
        assert_eq!(request.arguments["file_path"], "out.txt");
        assert!(!fx.root().join("out.txt").exists());
        // The read after the write did not run either.
        assert!(finished(&all).is_empty(), "{all:#?}");
        runner.close().await.unwrap();
    });
}

#[test]
fn an_approval_handler_approves_or_denies_in_flight() {
    for approve in [true, false] {
        let fx = Fixture::new(WRITE_SCRIPT, &[]);
        runtime().block_on(async {
            let loaded = iris_runner::AgentConfig::load_with_env(fx.file(), false).unwrap();
            let env = iris_runner::build_tool_registry(&loaded, &iris_runner::HostRegistry::new())
                .await
                .unwrap();
            let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
            let seen_in = Arc::clone(&seen);
            let provider =
                ScriptedProvider::from_yaml(
                    &serde_yaml::to_string(
                        &serde_yaml::from_str::<serde_yaml::Value>(WRITE_SCRIPT).unwrap()["model"]
                            ["script"],
                    )
                    .unwrap(),
                )
                .unwrap();
            let runner = AgentRunner::builder(provider, env.executor.clone())
                .workspace(env.workspace.clone())
                .interaction_handler(move |i: &Interaction| {
                    let Interaction::Approval(r) = i else {
                        return None;
                    };
                    seen_in.lock().unwrap().push(r.tool_name.clone());
                    Some(if approve {
                        Answer::Approve
                    } else {
                        Answer::Deny {
                            reason: "not today".into(),
                        }
                    })
                })
                .build();
            let all = events(&runner, "write").await;
            assert_eq!(outcome(&all).output(), Some("Wrote it."), "{all:#?}");
            assert_eq!(*seen.lock().unwrap(), ["write_file"]);
            let results = finished(&all);
            if approve {
                assert!(results[0].approved);
                assert_eq!(
                    std::fs::read_to_string(fx.root().join("out.txt")).unwrap(),
                    "approved\n"
                );
                assert!(results[1].model_content().contains("approved"));
            } else {
                assert_eq!(results[0].error_code(), Some("APPROVAL_DENIED"));
                assert!(results[0].model_content().contains("not today"));
                assert!(!fx.root().join("out.txt").exists());
                assert!(results[1].is_error(), "the read finds no file");
            }
            env.close().await.unwrap();
        });
    }
}

/// One handler answers every kind of interaction in process with the same `Answer`
/// that `resume` takes; an answer that does not fit its interaction (a text to an
/// approval) never runs the call: the run waits, and `resume` with a fitting answer
/// goes on.
#[test]
fn one_interaction_handler_answers_questions_and_approvals_and_a_wrong_answer_waits() {
    let yaml = r#"
tools: {builtin: [file.write, file.read, human.ask]}
run_store: {kind: memory}
model:
  provider: scripted
  script:
    - tool_calls: [{name: ask_question, arguments: {question: "Which file?", options: [out.txt, other.txt]}}]
    - expect_tool_results: 1
      tool_calls: [{name: write_file, arguments: {file_path: out.txt, content: "answered\n"}}]
    - {expect_tool_results: 1, text: Done.}
"#;
    for wrong in [false, true] {
        let fx = Fixture::new(yaml, &[]);
        runtime().block_on(async {
            let loaded = iris_runner::AgentConfig::load_with_env(fx.file(), false).unwrap();
            let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
            let seen_in = Arc::clone(&seen);
            let runner =
                AgentRunner::builder_from_loaded(&loaded, &iris_runner::HostRegistry::new(), None)
                    .await
                    .unwrap()
                    .interaction_handler(move |i: &Interaction| {
                        seen_in.lock().unwrap().push(i.kind());
                        match i {
                            Interaction::Question(q) => Some(Answer::Text {
                                text: q.options[0].clone(),
                            }),
                            Interaction::Approval(_) if wrong => {
                                Some(Answer::Text { text: "yes".into() })
                            }
                            Interaction::Approval(_) => Some(Answer::Approve),
                            _ => None,
                        }
                    })
                    .build();
            let outcome = runner.run("write").await;
            assert_eq!(*seen.lock().unwrap(), ["question", "approval"]);
            if !wrong {
                assert_eq!(outcome.output(), Some("Done."), "{outcome:?}");
                assert_eq!(
                    std::fs::read_to_string(fx.root().join("out.txt")).unwrap(),
                    "answered\n"
                );
                return;
            }
            let RunOutcome::Waiting {
                run_id,
                interaction: Interaction::Approval(request),
            } = &outcome
            else {
                panic!("a wrong answer must leave the approval waiting: {outcome:?}")
            };
            assert!(!fx.root().join("out.txt").exists(), "the call did not run");
            let refused = runner
                .resume(run_id, &request.id, Answer::Text { text: "yes".into() })
                .await
                .unwrap_err();
            assert_eq!(refused.code, "RUN_ANSWER_INVALID");
            let resumed = runner
                .resume(run_id, &request.id, Answer::Approve)
                .await
                .unwrap();
            assert_eq!(resumed.output(), Some("Done."), "{resumed:?}");
            assert!(fx.root().join("out.txt").exists());
            runner.close().await.unwrap();
        });
    }
}

#[test]
fn a_completed_runs_history_continues_the_conversation() {
    runtime().block_on(async {
        let provider =
            ScriptedProvider::from_yaml("- text: Hello.\n- text: You said hi before.\n").unwrap();
        let runner = AgentRunner::builder(provider, ToolExecutor::new(ToolRegistry::new()))
            .instructions("Be brief.")
            .build();
        let RunOutcome::Completed { history, .. } = runner.run("Hi").await else {
            panic!()
        };
        assert_eq!(
            history,
            vec![Message::user("Hi"), Message::assistant("Hello.")]
        );
        let second = runner
            .run(RunInput::new("What did I say?").with_history(history))
            .await;
        let RunOutcome::Completed {
            output,
            history,
            turns,
            ..
        } = second
        else {
            panic!()
        };
        assert_eq!(output, "You said hi before.");
        assert_eq!(turns, 1);
        assert_eq!(history.len(), 4);
    });
}

#[test]
fn every_run_of_a_scripted_config_replays_the_script_from_the_start() {
    let fx = Fixture::new("model: {provider: scripted, script: [{text: same}]}\n", &[]);
    runtime().block_on(async {
        let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
        assert_eq!(runner.run("one").await.output(), Some("same"));
        assert_eq!(runner.run("two").await.output(), Some("same"));
        runner.close().await.unwrap();
    });
}

#[test]
fn strict_mode_nulls_are_undone_before_the_tool_sees_them() {
    runtime().block_on(async {
        let registry = ToolRegistry::new();
        let schema = json!({"type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["path"], "additionalProperties": false});
        let def = ToolDefinition::new("peek", "Peek at a path.", schema);
        registry
            .register(FnTool::new(def, |input: serde_json::Value, _| async move {
                ToolOutput::text(input.to_string())
            }))
            .unwrap();
        let provider = ScriptedProvider::from_yaml(
            "- tool_calls: [{name: peek, arguments: {path: a, limit: null}}]\n- {expect_tool_results: 1, text: ok}\n",
        )
        .unwrap();
        let runner = AgentRunner::builder(provider, ToolExecutor::new(registry))
            .strict(Strict::Yes)
            .build();
        let all = events(&runner, "peek").await;
        let results = finished(&all);
        assert!(!results[0].is_error(), "{:?}", results[0]);
        assert_eq!(results[0].model_content(), r#"{"path":"a"}"#);
    });
}

#[test]
fn a_streamed_run_forwards_text_and_usage() {
    runtime().block_on(async {
        let provider = ScriptedProvider::from_yaml(
            "- {text: Hello there., usage: {input_tokens: 12, output_tokens: 3}}\n",
        )
        .unwrap();
        let runner = AgentRunner::builder(provider, ToolExecutor::new(ToolRegistry::new())).build();
        let all = events(&runner, "Hi").await;
        assert!(matches!(all[0], RunEvent::RunStarted { .. }));
        let text: String = all
            .iter()
            .filter_map(|e| match e {
                RunEvent::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "Hello there.");
        let RunOutcome::Completed { usage, .. } = outcome(&all) else {
            panic!()
        };
        assert_eq!((usage.input_tokens, usage.output_tokens), (12, 3));
        let json = serde_json::to_value(all.last().unwrap()).unwrap();
        assert_eq!(json["type"], "finished");
        assert_eq!(json["outcome"]["status"], "completed");
    });
}

#[test]
fn a_refusal_and_an_exhausted_script_fail_with_the_providers_codes() {
    runtime().block_on(async {
        let refuse = ScriptedProvider::from_yaml("- refusal: I cannot help with that.\n").unwrap();
        let runner = AgentRunner::builder(refuse, ToolExecutor::new(ToolRegistry::new())).build();
        let RunOutcome::Failed { error } = runner.run("?").await else {
            panic!()
        };
        assert_eq!(error.code, "PROVIDER_REFUSED");
        assert!(error.message.contains("I cannot help"), "{error}");

        let short = ScriptedProvider::from_yaml("- tool_calls: [{name: nothing}]\n").unwrap();
        let runner = AgentRunner::builder(short, ToolExecutor::new(ToolRegistry::new())).build();
        let RunOutcome::Failed { error } = runner.run("?").await else {
            panic!()
        };
        assert_eq!(error.code, "PROVIDER_SCRIPT_EXHAUSTED");
    });
}

#[test]
fn a_config_without_a_usable_model_is_a_typed_error() {
    runtime().block_on(async {
        let fx = Fixture::new("tools: {builtin: [file.read]}\n", &[]);
        let err = AgentRunner::from_config_path(fx.file()).await.unwrap_err();
        assert_eq!(err.code(), "CONFIG_INVALID");
        assert!(err.to_string().contains("no `model` section"), "{err}");

        let fx = Fixture::new(
            "model: {provider: anthropic, model: claude-x, api_key_env: IRIS_TEST_SURELY_UNSET_KEY}\n",
            &[],
        );
        let err = AgentRunner::from_config_path(fx.file()).await.unwrap_err();
        assert_eq!(err.code(), "PROVIDER_AUTH");
        assert!(err.to_string().contains("IRIS_TEST_SURELY_UNSET_KEY"), "{err}");

        for (yaml, key) in [
            ("model: {provider: openai}\n", "model.model"),
            ("model: {provider: scripted}\n", "model.script"),
            ("model: {provider: gemini, model: g, strict: true}\n", "model.strict"),
            ("model: {provider: openai, model: m, temperature: 3}\n", "model.temperature"),
            ("max_turns: 0\n", "max_turns"),
            ("model: {provider: openai, model: m, timeout_seconds: 0}\n", "model.timeout_seconds"),
            ("model: {provider: openai, model: m, max_output_tokens: 0}\n", "model.max_output_tokens"),
            ("model: {provider: openai, model: m, script: s.yaml}\n", "model.script"),
            ("goal: \"  \"\n", "goal"),
        ] {
            let fx = Fixture::new(yaml, &[]);
            let err = iris_runner::AgentConfig::load_with_env(fx.file(), false).unwrap_err();
            assert_eq!(err.code(), "CONFIG_INVALID", "{yaml}");
            assert!(err.to_string().contains(key), "{yaml}: {err}");
        }
        let fx = Fixture::new("model: {provider: claude}\n", &[]);
        let err = iris_runner::AgentConfig::load_with_env(fx.file(), false).unwrap_err();
        assert!(err.to_string().contains("openai-responses"), "{err}");
    });
}

#[test]
fn a_prompt_less_run_without_history_is_refused() {
    runtime().block_on(async {
        let provider = ScriptedProvider::from_yaml("- text: x\n").unwrap();
        let runner = AgentRunner::builder(provider, ToolExecutor::new(ToolRegistry::new())).build();
        let RunOutcome::Failed { error } = runner.run(RunInput::default()).await else {
            panic!()
        };
        assert_eq!(error.code, "RUN_INPUT_INVALID");
    });
}

#[test]
fn permission_modes_from_the_yaml_hold_inside_the_loop() {
    let fx = Fixture::new(
        r#"
tools: {builtin: [exec.command]}
permissions: {execute_mode: deny}
model:
  provider: scripted
  script:
    - tool_calls: [{name: exec_command, arguments: {command: "touch made"}}]
    - {expect_tool_results: 1, text: refused}
"#,
        &[],
    );
    runtime().block_on(async {
        let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
        let all = events(&runner, "touch").await;
        assert_eq!(outcome(&all).output(), Some("refused"));
        assert_eq!(finished(&all)[0].error_code(), Some("PERMISSION_DENIED"));
        assert!(!fx.root().join("made").exists());
        runner.close().await.unwrap();
    });
}

#[test]
fn a_long_call_reports_heartbeats_as_run_events() {
    runtime().block_on(async {
        let (live, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let registry = ToolRegistry::new();
        registry.register(sleeper("nap", &live, &peak)).unwrap();
        let provider = ScriptedProvider::from_yaml(
            "- tool_calls: [{name: nap}]\n- {expect_tool_results: 1, text: awake}\n",
        )
        .unwrap();
        let executor =
            ToolExecutor::new(registry).with_heartbeat_interval(Duration::from_millis(40));
        let runner = AgentRunner::builder(provider, executor).build();
        let all = events(&runner, "nap").await;
        assert_eq!(outcome(&all).output(), Some("awake"));
        let beats: Vec<&RunEvent> = all
            .iter()
            .filter(|e| matches!(e, RunEvent::Heartbeat { .. }))
            .collect();
        assert!(
            !beats.is_empty(),
            "a 200 ms call with a 40 ms heartbeat: {all:#?}"
        );
        let RunEvent::Heartbeat {
            call_id,
            tool_name,
            elapsed_seconds,
            ..
        } = beats[0]
        else {
            unreachable!()
        };
        assert_eq!((call_id.as_str(), tool_name.as_str()), ("call_1_1", "nap"));
        assert!(*elapsed_seconds > 0.0);
    });
}

#[test]
fn report_goal_done_ends_the_run_with_its_summary_after_the_turns_other_calls() {
    let fx = Fixture::new(
        r#"
goal: Write the release note to NOTES.md.
tools: {builtin: [file.write]}
permissions: {write_mode: allow}
model:
  provider: scripted
  script:
    - tool_calls:
        - {name: get_goal}
        - {name: report_goal, arguments: {status: shipped, summary: x}}
        - {name: report_goal, arguments: {status: in_progress, summary: Reading the changes.}}
    - expect_tool_results: 3
      tool_calls:
        - {name: report_goal, arguments: {status: done, summary: NOTES.md has the release note.}}
        - {name: write_file, arguments: {file_path: NOTES.md, content: "v1.0: first release\n"}}
"#,
        &[],
    );
    runtime().block_on(async {
        let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
        let tools = runner.executor().registry().names();
        assert!(
            tools.contains(&"get_goal".to_owned()) && tools.contains(&"report_goal".to_owned())
        );
        let all = events(&runner, "Do the release note").await;
        let RunOutcome::Completed { output, turns, .. } = outcome(&all) else {
            panic!("{all:#?}")
        };
        // No third model request (the script has two turns): the summary is the answer.
        assert_eq!(output, "NOTES.md has the release note.");
        assert_eq!(*turns, 2);
        assert_eq!(
            std::fs::read_to_string(fx.root().join("NOTES.md")).unwrap(),
            "v1.0: first release\n",
            "the turn's other call ran before the run ended"
        );
        let results = finished(&all);
        let goal: serde_json::Value = serde_json::from_str(&results[0].model_content()).unwrap();
        assert_eq!(goal["goal"], "Write the release note to NOTES.md.");
        assert_eq!(goal["status"], "not_reported");
        assert_eq!(results[1].error_code(), Some("INVALID_INPUT"));
        assert_eq!(results[2].model_content(), "recorded: in_progress");
        runner.close().await.unwrap();
    });
}

#[test]
fn without_a_yaml_goal_there_are_no_goal_tools_and_a_builder_goal_defaults_to_the_prompt() {
    let fx = Fixture::new(
        "tools: {builtin: [file.read]}\nmodel: {provider: scripted, script: [{text: hi}]}\n",
        &[],
    );
    runtime().block_on(async {
        let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
        assert!(
            !runner
                .executor()
                .registry()
                .names()
                .contains(&"get_goal".to_owned())
        );
        runner.close().await.unwrap();

        let registry = ToolRegistry::new();
        registry
            .register(iris_runner::RunLoopTool::get_goal())
            .unwrap();
        let provider = ScriptedProvider::from_yaml(
            "- tool_calls: [{name: get_goal}]\n- {expect_tool_results: 1, text: ok}\n",
        )
        .unwrap();
        let runner = AgentRunner::builder(provider, ToolExecutor::new(registry)).build();
        let all = events(&runner, "Tidy the docs").await;
        let goal: serde_json::Value =
            serde_json::from_str(&finished(&all)[0].model_content()).unwrap();
        assert_eq!(goal["goal"], "Tidy the docs");
    });
}

/// A provider that records every request, replaying a script.
struct Recording {
    inner: ScriptedProvider,
    requests: Arc<std::sync::Mutex<Vec<iris_providers::chat::CompletionRequest>>>,
}

impl iris_providers::CompletionProvider for Recording {
    fn name(&self) -> &str {
        "recording"
    }

    fn stream<'a>(
        &'a self,
        request: &'a iris_providers::chat::CompletionRequest,
    ) -> iris_providers::ProviderStream<'a> {
        self.requests.lock().unwrap().push(request.clone());
        self.inner.stream(request)
    }
}

#[test]
fn old_observation_results_become_previews_that_context_read_pages_back() {
    let fx = Fixture::new(
        "tools: {builtin: [file.read, file.list]}\ncontext_policy: {retention: {recent_turns: 1, preview_chars: 40}}\n",
        &[("big.txt", &"0123456789".repeat(300))],
    );
    runtime().block_on(async {
        let loaded = iris_runner::AgentConfig::load_with_env(fx.file(), false).unwrap();
        let env = iris_runner::build_tool_registry(&loaded, &iris_runner::HostRegistry::new())
            .await
            .unwrap();
        let names = env.registry.names();
        assert!(names.contains(&"context_read".to_owned()) && names.contains(&"context_search".to_owned()));
        let requests = Arc::new(std::sync::Mutex::new(Vec::new()));
        let provider = Recording {
            inner: ScriptedProvider::from_yaml(
                r#"
- tool_calls: [{name: read_file, arguments: {file_path: big.txt}}]
- {expect_tool_results: 1, tool_calls: [{name: list_files}]}
- {expect_tool_results: 1, tool_calls: [{name: context_search, arguments: {query: "56789012"}}]}
- {expect_tool_results: 1, tool_calls: [{name: context_read, arguments: {ref: "result:call_1_1", offset: 2990, limit: 100}}]}
- {expect_tool_results: 1, text: Read it back.}
"#,
            )
            .unwrap(),
            requests: Arc::clone(&requests),
        };
        let runner = AgentRunner::builder(provider, env.executor.clone())
            .workspace(env.workspace.clone())
            .retention(loaded.config.context_policy.retention.unwrap())
            .build();
        let all = events(&runner, "read big.txt").await;
        assert_eq!(outcome(&all).output(), Some("Read it back."), "{all:#?}");
        let requests = requests.lock().unwrap().clone();
        let read_result_in = |r: &iris_providers::chat::CompletionRequest| {
            serde_json::to_string(&r.messages[2]).unwrap()
        };
        // Request 2: the read is the newest tool turn, sent whole.
        assert!(read_result_in(&requests[1]).contains(&"0123456789".repeat(200)));
        // Request 3 on: it is older than the last tool turn: a preview naming its ref.
        let third = read_result_in(&requests[2]);
        assert!(!third.contains(&"0123456789".repeat(10)), "{third}");
        assert!(third.contains("context_read") && third.contains("result:call_1_1"), "{third}");
        let results = finished(&all);
        // The search still sees the whole stored result; the read pages its end back.
        assert_eq!(results[2].output.data["hits"][0]["ref"], "result:call_1_1");
        assert_eq!(results[3].output.data["context"]["total_chars"], 3000);
        assert_eq!(results[3].output.data["context"]["next_offset"], serde_json::Value::Null);
        assert!(results[3].model_content().ends_with("56789"));
        env.close().await.unwrap();
    });
}

/// A background tool: sleeps, then reports; counts how many finished.
fn slow_report(done: &Arc<AtomicUsize>, millis: u64) -> impl iris_tools_core::Tool {
    let def = ToolDefinition::new(
        "build_report",
        "Builds the weekly report in the background.",
        json!({"type": "object"}),
    )
    .with_capabilities([ToolCapability::Read])
    .with_background(true);
    let done = Arc::clone(done);
    FnTool::new(def, move |_, _| {
        let done = Arc::clone(&done);
        async move {
            tokio::time::sleep(Duration::from_millis(millis)).await;
            done.fetch_add(1, Ordering::SeqCst);
            ToolOutput::text("report: 42 deploys")
        }
    })
}

#[test]
fn a_background_call_answers_with_a_receipt_and_its_result_arrives_on_a_later_turn() {
    runtime().block_on(async {
        let done = Arc::new(AtomicUsize::new(0));
        let registry = ToolRegistry::new();
        registry.register(slow_report(&done, 300)).unwrap();
        let provider = ScriptedProvider::from_yaml(
            r#"
- tool_calls: [{name: build_report}]
- {expect_tool_results: 1, text: "Started the report; I will summarize it when it is ready."}
- {text: "The report says 42 deploys."}
"#,
        )
        .unwrap();
        let runner = AgentRunner::builder(provider, ToolExecutor::new(registry)).build();
        let all = events(&runner, "weekly report").await;
        let RunOutcome::Completed {
            output,
            history,
            turns,
            ..
        } = outcome(&all)
        else {
            panic!("{all:#?}")
        };
        assert_eq!(output, "The report says 42 deploys.");
        assert_eq!(*turns, 3);
        assert_eq!(done.load(Ordering::SeqCst), 1);
        // The receipt answered the call at once; the result came as a later message.
        let receipt = &finished(&all)[0];
        assert_eq!(receipt.output.data["background"]["status"], "running");
        assert!(
            all.iter()
                .any(|e| matches!(e, RunEvent::BackgroundFinished { .. }))
        );
        let roles: Vec<Role> = history.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Assistant,
                Role::User,
                Role::Assistant
            ]
        );
        assert!(
            history[4].text().contains("report: 42 deploys"),
            "{:?}",
            history[4]
        );
        assert!(history[4].text().contains("build_report"));
    });
}

#[test]
fn max_turns_reached_while_waiting_on_a_background_call_says_so() {
    runtime().block_on(async {
        let done = Arc::new(AtomicUsize::new(0));
        let registry = ToolRegistry::new();
        registry.register(slow_report(&done, 300)).unwrap();
        // The second request answers while the report still runs; `wait` would ask
        // once more with its result, but max_turns allows only two requests.
        let provider = ScriptedProvider::from_yaml(
            "- tool_calls: [{name: build_report}]\n- {expect_tool_results: 1, text: Started.}\n",
        )
        .unwrap();
        let runner = AgentRunner::builder(provider, ToolExecutor::new(registry))
            .max_turns(2)
            .build();
        let RunOutcome::Failed { error } = runner.run("weekly report").await else {
            panic!("expected RUN_MAX_TURNS")
        };
        assert_eq!(error.code, "RUN_MAX_TURNS");
        assert!(
            error
                .message
                .contains("answered while background calls were running"),
            "{}",
            error.message
        );
        assert!(!error.message.contains("still asked for tools"));
    });
}

#[test]
fn background_calls_drop_policy_completes_at_once_and_cancels_them() {
    runtime().block_on(async {
        let done = Arc::new(AtomicUsize::new(0));
        let registry = ToolRegistry::new();
        registry.register(slow_report(&done, 400)).unwrap();
        let provider = ScriptedProvider::from_yaml(
            "- tool_calls: [{name: build_report}]\n- {expect_tool_results: 1, text: Not waiting.}\n",
        )
        .unwrap();
        let runner = AgentRunner::builder(provider, ToolExecutor::new(registry))
            .background_calls(iris_runner::config::BackgroundCalls::Drop)
            .build();
        assert_eq!(runner.run("go").await.output(), Some("Not waiting."));
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(done.load(Ordering::SeqCst), 0, "the dropped call was cancelled");
    });
}

#[test]
fn the_view_filter_and_the_schema_budget_decide_what_a_request_carries() {
    runtime().block_on(async {
        // A denied tool is never sent, so a call to it is not run.
        let registry = deferred_registry();
        let provider = ScriptedProvider::from_yaml(
            "- tool_calls: [{name: tool_search, arguments: {queries: [create an issue]}}]\n- {expect_tool_results: 1, text: done}\n",
        )
        .unwrap();
        let runner = AgentRunner::builder(provider, ToolExecutor::new(registry))
            .view_filter(ViewFilter::default().deny(["tool_search"]))
            .build();
        let all = events(&runner, "x").await;
        assert!(matches!(&all[1], RunEvent::TurnStarted { tools, .. } if tools.is_empty()), "{all:#?}");
        assert_eq!(finished(&all)[0].error_code(), Some("TOOL_NOT_LOADED"));

        // A revealed tool whose spec does not fit the budget stays unsent and uncallable.
        let executor = ToolExecutor::new(deferred_registry()).with_layer(DisclosureLayer);
        let provider = ScriptedProvider::from_yaml(
            r#"
- tool_calls: [{name: tool_search, arguments: {queries: ["create an issue in the bug tracker"]}}]
- expect_tool_results: 1
  tool_calls: [{name: create_issue, arguments: {title: t}}]
- {expect_tool_results: 1, text: done}
"#,
        )
        .unwrap();
        let runner = AgentRunner::builder(provider, executor)
            .schema_budget(iris_discovery::SchemaBudget::chars(10))
            .build();
        let all = events(&runner, "x").await;
        let results = finished(&all);
        assert!(!results[0].is_error(), "{:?}", results[0]);
        assert_eq!(results[1].error_code(), Some("TOOL_NOT_LOADED"));
    });
}

#[test]
fn a_memory_run_store_from_the_yaml_resumes_within_the_process() {
    let fx = Fixture::new(
        r#"
run_store: {kind: memory}
tools: {builtin: [file.write]}
model:
  provider: scripted
  timeout_seconds: 30
  script:
    - tool_calls: [{name: write_file, arguments: {file_path: a.txt, content: a}}]
    - {expect_tool_results: 1, text: wrote}
"#,
        &[],
    );
    runtime().block_on(async {
        let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
        assert_eq!(runner.run_store().unwrap().describe(), "memory");
        assert!(!fx.root().join(".iris/runs.db").exists());
        let RunOutcome::Waiting {
            run_id,
            interaction,
        } = runner.run("write").await
        else {
            panic!()
        };
        let outcome = runner
            .resume(&run_id, interaction.id(), iris_runner::Answer::Approve)
            .await
            .unwrap();
        assert_eq!(outcome.output(), Some("wrote"));
        runner.close().await.unwrap();
    });
}

/// A host's own tools named like loop tools are ordinary tools: their bodies run
/// (the loop recognises its tools by type, never by name).
#[test]
fn host_tools_named_like_loop_tools_run_their_bodies() {
    runtime().block_on(async {
        let registry = ToolRegistry::new();
        for name in ["ask_question", "get_goal"] {
            let def = ToolDefinition::new(
                name,
                "The host's own tool of that name.",
                json!({"type": "object"}),
            );
            let answer = format!("{name}: the host's body ran");
            registry
                .register(FnTool::new(def, move |_, _| {
                    let answer = answer.clone();
                    async move { ToolOutput::text(answer) }
                }))
                .unwrap();
        }
        let provider = ScriptedProvider::from_yaml(
            "- tool_calls: [{name: ask_question, arguments: {question: Which?}}, {name: get_goal}]\n\
             - {expect_tool_results: 2, text: done}\n",
        )
        .unwrap();
        let runner = AgentRunner::builder(provider, ToolExecutor::new(registry)).build();
        let all = events(&runner, "Go").await;
        assert_eq!(outcome(&all).output(), Some("done"), "{all:#?}");
        let results: Vec<String> = finished(&all).iter().map(|r| r.model_content()).collect();
        assert_eq!(
            results,
            [
                "ask_question: the host's body ran",
                "get_goal: the host's body ran"
            ]
        );
    });
}

/// Declares the secret `HOST_KEY` and takes any value.
#[derive(Debug)]
struct HostKey;

impl iris_runner::SecretTarget for HostKey {
    fn secret_names(&self) -> Vec<String> {
        vec!["HOST_KEY".into()]
    }

    fn set_secret(&self, _: &str, _: &iris_runner::SecretValue) -> Result<(), String> {
        Ok(())
    }
}

/// After an auth failure naming a secret of the run, the loop offers its own
/// `store_secret`, found by type: a host's own system tool of that name is not it, and
/// is not offered (it stays outside the view like any system tool).
#[test]
fn the_loops_store_secret_is_found_by_type() {
    runtime().block_on(async {
        let registry = ToolRegistry::new();
        let fetch = ToolDefinition::new(
            "fetch_report",
            "Fetches the report.",
            json!({"type": "object"}),
        );
        registry
            .register(FnTool::new(fetch, |_, _| async {
                ToolOutput::error(
                    iris_tools_core::ToolErrorInfo::new("AUTH_REQUIRED", "the key is missing")
                        .with_detail("secret", "HOST_KEY"),
                )
            }))
            .unwrap();
        let own = ToolDefinition::new(
            "store_secret",
            "The host's own system tool of that name.",
            json!({"type": "object"}),
        )
        .with_system_use(true);
        registry
            .register(FnTool::new(own, |_, _| async {
                ToolOutput::text("the host's body ran")
            }))
            .unwrap();
        let requests = Arc::new(std::sync::Mutex::new(Vec::new()));
        let provider = Recording {
            inner: ScriptedProvider::from_yaml(
                "- tool_calls: [{name: fetch_report}]\n- {expect_tool_results: 1, text: done}\n",
            )
            .unwrap(),
            requests: Arc::clone(&requests),
        };
        let runner = AgentRunner::builder(provider, ToolExecutor::new(registry))
            .secret_target(Arc::new(HostKey))
            .build();
        let all = events(&runner, "Go").await;
        assert_eq!(outcome(&all).output(), Some("done"), "{all:#?}");
        let requests = requests.lock().unwrap().clone();
        let offered: Vec<&str> = requests[1].tools.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(offered, ["fetch_report"]);
    });
}
