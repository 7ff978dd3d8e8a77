//! `subagent` through the loop: scripted parent and child models, real tools, the real
//! SQLite run store under the parent's workspace.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use iris_providers::chat::{Message, Part, Role, Usage};
use iris_providers::{CompletionProvider, ScriptedProvider};
use iris_runner::store::RunStatus;
use iris_runner::{
    AgentConfig, AgentRunner, Answer, HostRegistry, Interaction, RunError, RunEvent, RunOutcome,
    check_config,
};
use iris_tools_core::ToolResult;

use crate::support::{Fixture, events, finished, outcome, runtime};

/// A parent agent (file and command tools, everything allowed, `tools.subagent:
/// agents.yaml`) with `script`, a `docs/` folder, and one child YAML per
/// `(selector, yaml)` at `agents/<selector>.yaml`; the first child is the default.
fn family(script: &str, children: &[(&str, &str)]) -> Fixture {
    family_with("", script, children)
}

/// [`family`] with `extra` top-level YAML in the parent.
fn family_with(extra: &str, script: &str, children: &[(&str, &str)]) -> Fixture {
    let parent = format!(
        "tools:\n  builtin: [file.read, file.write, exec.command]\n  subagent: agents.yaml\n\
         permissions: {{write_mode: allow, execute_mode: allow}}\n{extra}\
         model:\n  provider: scripted\n  script:\n{}",
        indent(script, 4)
    );
    let mut catalog = format!("default: {}\nagents:\n", children[0].0);
    for (selector, _) in children {
        catalog.push_str(&format!(
            "  {selector}: {{path: agents/{selector}.yaml, description: The {selector} agent.}}\n"
        ));
    }
    let paths: Vec<String> = children
        .iter()
        .map(|(s, _)| format!("agents/{s}.yaml"))
        .collect();
    let mut files: Vec<(&str, &str)> = vec![
        ("agents.yaml", catalog.as_str()),
        ("docs/readme.md", "hello from the docs\n"),
        ("secret.txt", "parent-only\n"),
    ];
    for (path, (_, yaml)) in paths.iter().zip(children) {
        files.push((path.as_str(), yaml));
    }
    Fixture::new(&parent, &files)
}

fn indent(text: &str, by: usize) -> String {
    text.lines()
        .map(|l| format!("{}{l}\n", " ".repeat(by)))
        .collect()
}

/// The child events of the parent's stream, unwrapped, with the child run id.
fn child_events(events: &[RunEvent]) -> Vec<(&str, &RunEvent)> {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Subagent {
                child_run_id,
                event,
                ..
            } => Some((child_run_id.as_str(), &**event)),
            _ => None,
        })
        .collect()
}

fn child_codes(events: &[RunEvent]) -> Vec<Option<String>> {
    child_events(events)
        .into_iter()
        .filter_map(|(_, e)| match e {
            RunEvent::ToolCallFinished { result, .. } => {
                Some(result.error_code().map(str::to_owned))
            }
            _ => None,
        })
        .collect()
}

fn meta<'a>(result: &'a ToolResult, key: &str) -> &'a str {
    result.output.metadata[key].as_str().unwrap()
}

fn text_of(message: &Message) -> String {
    serde_json::to_string(message).unwrap()
}

/// A child in `docs/` with a read-only policy (writes denied): its write is refused,
/// its read outside `docs/` is refused, and the parent — whose workspace is the whole
/// folder and who may write — then writes the file itself. The parent gets only the
/// child's final text, with `agent_selector` and `child_run_id`; the child's usage is
/// in the child's record, not the parent's.
#[test]
fn a_narrower_read_only_child_is_denied_a_write_its_parent_then_makes() {
    let reader = r#"
workspace: ../docs
tools: {builtin: [file.read, file.write]}
permissions: {write_mode: deny}
model:
  provider: scripted
  script:
    - tool_calls:
        - {name: read_file, arguments: {file_path: readme.md}}
        - {name: read_file, arguments: {file_path: ../secret.txt}}
        - {name: write_file, arguments: {file_path: notes.txt, content: "from the child\n"}}
      usage: {input_tokens: 7, output_tokens: 3}
    - {expect_tool_results: 3, text: The docs say hello., usage: {input_tokens: 11, output_tokens: 5}}
"#;
    let fx = family(
        r#"- tool_calls: [{name: subagent, arguments: {prompt: Summarize the docs}}]
  usage: {input_tokens: 100, output_tokens: 10}
- expect_tool_results: 1
  tool_calls: [{name: write_file, arguments: {file_path: docs/notes.txt, content: "from the parent\n"}}]
- {expect_tool_results: 1, text: Done.}"#,
        &[("reader", reader)],
    );
    runtime().block_on(async {
        let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
        let all = events(&runner, "PARENT-ONLY prompt: look at the docs").await;
        let RunOutcome::Completed { output, usage, .. } = outcome(&all) else {
            panic!("{:?}", outcome(&all))
        };
        assert_eq!(output, "Done.");
        assert_eq!(*usage, Usage::new(100, 10), "the child's usage stays its own");

        let calls = finished(&all);
        assert_eq!(calls.len(), 2, "{calls:?}");
        let sub = calls[0];
        assert_eq!(sub.tool_name, "subagent");
        assert_eq!(sub.error_code(), None, "{sub:?}");
        assert_eq!(sub.model_content(), "The docs say hello.");
        assert_eq!(meta(sub, "agent_selector"), "reader");
        let child_id = meta(sub, "child_run_id").to_owned();
        assert_eq!(calls[1].error_code(), None, "the parent may write: {:?}", calls[1]);
        assert_eq!(
            std::fs::read_to_string(fx.root().join("docs/notes.txt")).unwrap(),
            "from the parent\n"
        );

        // The child's stream, wrapped: its start, its calls, its end.
        let child = child_events(&all);
        assert!(child.iter().all(|(id, _)| *id == child_id));
        assert!(matches!(child.first(), Some((_, RunEvent::RunStarted { run_id, .. })) if *run_id == child_id));
        assert!(matches!(
            child.last(),
            Some((_, RunEvent::Finished { outcome: RunOutcome::Completed { .. } }))
        ));
        assert_eq!(
            child_codes(&all),
            [
                None,
                Some("PERMISSION_DENIED".into()),
                Some("PERMISSION_DENIED".into())
            ]
        );
        let why: Vec<String> = child_events(&all)
            .into_iter()
            .filter_map(|(_, e)| match e {
                RunEvent::ToolCallFinished { result, .. } => Some(result.model_content()),
                _ => None,
            })
            .collect();
        assert!(why[0].contains("hello from the docs"), "{why:?}");
        assert!(why[1].contains("outside the workspace"), "{why:?}");
        assert!(why[2].contains("write_mode is `deny`"), "{why:?}");

        // One store, two runs; the child names its parent and keeps its usage.
        let store = runner.run_store().unwrap();
        let record = store.load(&child_id).await.unwrap().unwrap();
        assert_eq!(record.status, RunStatus::Completed);
        assert_eq!(record.agent_id, "reader");
        assert_eq!(record.usage, Usage::new(18, 8));
        let parent = record.parent.as_ref().unwrap();
        assert_eq!(parent.agent_selector, "reader");
        assert_eq!(parent.call_id, sub.tool_use_id);
        let parent_record = store.load(&parent.run_id).await.unwrap().unwrap();
        assert_eq!(parent_record.usage, Usage::new(100, 10));
        assert_eq!(parent_record.parent, None);
        // Its own session, without the parent's history.
        assert_ne!(record.session_id, parent_record.session_id);
        assert_eq!(record.history[0].role, Role::User);
        assert!(text_of(&record.history[0]).contains("Summarize the docs"));
        assert!(
            record
                .history
                .iter()
                .all(|m| !text_of(m).contains("PARENT-ONLY")),
            "the child saw the parent's history"
        );
        runner.close().await.unwrap();
    });
}

const WRITER: &str = r#"
workspace: ../docs
tools: {builtin: [file.write, human.ask]}
model:
  provider: scripted
  script:
    - tool_calls: [{name: write_file, arguments: {file_path: note.txt, content: "approved\n"}}]
    - expect_tool_results: 1
      tool_calls: [{name: ask_question, arguments: {question: Which tone?, options: [dry, warm]}}]
    - {expect_tool_results: 1, text: Wrote note.txt in a warm tone.}
"#;

/// The child's write needs approval (the parent allows writes, the child confirms:
/// the stricter wins), so the parent waits on a `subagent` proxy. Another runner —
/// another process, the same SQLite file — resumes the parent: the child's write
/// runs, the child asks a question, the parent waits again; a third answers it and
/// the child's final text becomes the parent's call result.
#[test]
fn a_child_approval_and_question_are_answered_through_the_parent() {
    let fx = writer_family();
    runtime().block_on(async {
        let runner = async || AgentRunner::from_config_path(fx.file()).await.unwrap();
        approval_and_question_through_the_parent(&fx, runner).await;
    });
}

/// The same on a real PostgreSQL server (`.ci/postgres.sh`), each runner with its own
/// connection, as another machine would.
#[test]
fn a_child_approval_and_question_are_answered_through_the_parent_on_postgres() {
    let fx = writer_family();
    runtime().block_on(async {
        let place = crate::durable::Place::new(crate::durable::Kind::Postgres).await;
        let loaded = AgentConfig::load(fx.file()).unwrap();
        let runner = async || {
            AgentRunner::builder_from_loaded(&loaded, &HostRegistry::new(), None)
                .await
                .unwrap()
                .run_store(place.open().await)
                .build()
        };
        approval_and_question_through_the_parent(&fx, runner).await;
    });
}

fn writer_family() -> Fixture {
    family(
        r#"- tool_calls: [{name: subagent, arguments: {prompt: Write a note, agent: writer}}]
- {expect_tool_results: 1, text: The writer is done.}"#,
        &[("writer", WRITER)],
    )
}

async fn approval_and_question_through_the_parent(
    fx: &Fixture,
    runner: impl AsyncFn() -> AgentRunner,
) {
    {
        let first = runner().await;
        let RunOutcome::Waiting {
            run_id,
            interaction,
        } = first.run("Delegate the note").await
        else {
            panic!("expected a wait")
        };
        first.close().await.unwrap();
        drop(first);
        let Interaction::Subagent(proxy) = &interaction else {
            panic!("{interaction:?}")
        };
        assert_eq!(proxy.run_id, run_id);
        assert_eq!(proxy.agent_selector, "writer");
        let Interaction::Approval(approval) = &*proxy.inner else {
            panic!("{proxy:?}")
        };
        assert_eq!(approval.tool_name, "write_file");
        assert_eq!(approval.run_id, proxy.child_run_id);
        assert!(interaction.summary().starts_with("subagent writer ("));
        assert!(!fx.root().join("docs/note.txt").exists());

        let second = runner().await;
        let store = second.run_store().unwrap();
        let child = store.load(&proxy.child_run_id).await.unwrap().unwrap();
        assert_eq!(child.status, RunStatus::Waiting);
        assert_eq!(child.parent.as_ref().unwrap().run_id, run_id);
        // The child is resumed through its parent only; the answer must fit the
        // child's interaction.
        let err = second
            .resume(&proxy.child_run_id, approval.id.as_str(), Answer::Approve)
            .await
            .unwrap_err();
        assert_eq!(err.code, "RUN_IS_SUBAGENT", "{err}");
        let err = second
            .resume(&run_id, &proxy.id, Answer::Text { text: "yes".into() })
            .await
            .unwrap_err();
        assert_eq!(err.code, "RUN_ANSWER_INVALID", "{err}");
        assert!(err.message.contains("approve or deny"), "{err}");

        let again = second
            .resume(&run_id, &proxy.id, Answer::Approve)
            .await
            .unwrap();
        second.close().await.unwrap();
        assert_eq!(
            std::fs::read_to_string(fx.root().join("docs/note.txt")).unwrap(),
            "approved\n"
        );
        let RunOutcome::Waiting {
            interaction: next, ..
        } = again
        else {
            panic!("{again:?}")
        };
        let Interaction::Subagent(proxy2) = &next else {
            panic!("{next:?}")
        };
        assert_eq!(proxy2.child_run_id, proxy.child_run_id);
        let Interaction::Question(question) = &*proxy2.inner else {
            panic!("{proxy2:?}")
        };
        assert_eq!(question.options, ["dry", "warm"]);

        let third = runner().await;
        let err = third
            .resume(
                &run_id,
                &proxy2.id,
                Answer::Text {
                    text: "cold".into(),
                },
            )
            .await
            .unwrap_err();
        assert_eq!(err.code, "RUN_ANSWER_INVALID", "{err}");
        let done = third
            .resume(
                &run_id,
                &proxy2.id,
                Answer::Text {
                    text: "warm".into(),
                },
            )
            .await
            .unwrap();
        let RunOutcome::Completed {
            output, history, ..
        } = &done
        else {
            panic!("{done:?}")
        };
        assert_eq!(output, "The writer is done.");
        let results: Vec<&Part> = history
            .iter()
            .filter(|m| m.role == Role::Tool)
            .flat_map(|m| &m.content)
            .collect();
        let shown = serde_json::to_string(&results).unwrap();
        assert!(shown.contains("Wrote note.txt in a warm tone."), "{shown}");
        let store = third.run_store().unwrap();
        let child = store.load(&proxy.child_run_id).await.unwrap().unwrap();
        assert_eq!(child.status, RunStatus::Completed);
        assert_eq!(
            child.output.as_deref(),
            Some("Wrote note.txt in a warm tone.")
        );
        third.close().await.unwrap();
    }
}

/// A child gets no `subagent` tool even when its YAML names a catalog, and a call to
/// it is refused with `SUBAGENT_RECURSION`; the child goes on and answers.
#[test]
fn a_child_cannot_call_subagent() {
    let looper = r#"
tools: {builtin: [file.read], subagent: ../agents.yaml}
model:
  provider: scripted
  script:
    - tool_calls: [{name: subagent, arguments: {prompt: do it for me}}]
    - {expect_tool_results: 1, text: I did it myself.}
"#;
    let fx = family(
        r#"- tool_calls: [{name: subagent, arguments: {prompt: Loop}}]
- {expect_tool_results: 1, text: ok}"#,
        &[("looper", looper)],
    );
    runtime().block_on(async {
        let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
        let all = events(&runner, "go").await;
        assert_eq!(outcome(&all).output(), Some("ok"));
        assert_eq!(finished(&all)[0].model_content(), "I did it myself.");
        assert_eq!(child_codes(&all), [Some("SUBAGENT_RECURSION".into())]);
        let child_tools: Vec<&Vec<String>> = child_events(&all)
            .into_iter()
            .filter_map(|(_, e)| match e {
                RunEvent::TurnStarted { tools, .. } => Some(tools),
                _ => None,
            })
            .collect();
        assert_eq!(child_tools.len(), 2);
        assert!(
            child_tools
                .iter()
                .all(|t| !t.iter().any(|n| n == "subagent"))
        );
        runner.close().await.unwrap();
    });
}

/// Children that cannot run under their parent: a disjoint workspace, an own
/// `command` section, an unknown selector, an empty prompt — each a typed result the
/// model reads, and the first two listed by `check_config` (what `iris check` runs).
#[test]
fn children_that_break_the_parent_rules_are_typed_errors_and_check_lists_them() {
    let elsewhere = tempfile::tempdir().unwrap();
    let outsider = format!(
        "workspace: {}\nmodel: {{provider: scripted, script: [{{text: never}}]}}\n",
        elsewhere.path().display()
    );
    let commander =
        "command: {mode: native}\nmodel: {provider: scripted, script: [{text: never}]}\n";
    let fx = family(
        r#"- tool_calls:
    - {name: subagent, arguments: {prompt: a, agent: outsider}}
    - {name: subagent, arguments: {prompt: b, agent: commander}}
    - {name: subagent, arguments: {prompt: c, agent: nobody}}
    - {name: subagent, arguments: {prompt: ""}}
- {expect_tool_results: 4, text: none of them ran}"#,
        &[("outsider", &outsider), ("commander", commander)],
    );
    let loaded = AgentConfig::load(fx.file()).unwrap();
    let problems = check_config(&loaded, &HostRegistry::new());
    let codes: Vec<&str> = problems.iter().map(iris_runner::Error::code).collect();
    assert_eq!(
        codes,
        ["SUBAGENT_WORKSPACE_DISJOINT", "SUBAGENT_COMMAND_DECLARED"],
        "{problems:?}"
    );
    assert!(problems[0].to_string().contains("subagent `outsider`"));
    runtime().block_on(async {
        let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
        let all = events(&runner, "go").await;
        assert_eq!(outcome(&all).output(), Some("none of them ran"));
        let codes: Vec<Option<&str>> = finished(&all).iter().map(|r| r.error_code()).collect();
        assert_eq!(
            codes,
            [
                Some("SUBAGENT_WORKSPACE_DISJOINT"),
                Some("SUBAGENT_COMMAND_DECLARED"),
                Some("SUBAGENT_NOT_FOUND"),
                Some("INVALID_INPUT"),
            ]
        );
        assert!(child_events(&all).is_empty(), "no child ran");
        runner.close().await.unwrap();
    });
}

/// The child runs its command on the root's command service, borrowed: the child's
/// end does not close it, so the parent's next command runs, and only the root's
/// close closes it.
#[test]
fn the_child_borrows_the_command_service_and_never_closes_it() {
    let shell = r#"
tools: {builtin: [exec.command]}
permissions: {execute_mode: allow}
model:
  provider: scripted
  script:
    - tool_calls: [{name: exec_command, arguments: {command: pwd; echo from-child}}]
    - {expect_tool_results: 1, text: the child ran it}
"#;
    let fx = family(
        r#"- tool_calls: [{name: subagent, arguments: {prompt: run something}}]
- expect_tool_results: 1
  tool_calls: [{name: exec_command, arguments: {command: echo from-parent}}]
- {expect_tool_results: 1, text: both ran}"#,
        &[("shell", shell)],
    );
    runtime().block_on(async {
        let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
        let all = events(&runner, "go").await;
        assert_eq!(outcome(&all).output(), Some("both ran"));
        let calls = finished(&all);
        assert_eq!(calls[0].model_content(), "the child ran it");
        assert_eq!(calls[1].error_code(), None, "{:?}", calls[1]);
        assert!(calls[1].model_content().contains("from-parent"));
        let child_out: Vec<String> = child_events(&all)
            .into_iter()
            .filter_map(|(_, e)| match e {
                RunEvent::ToolCallFinished { result, .. } => Some(result.model_content()),
                _ => None,
            })
            .collect();
        assert_eq!(child_out.len(), 1);
        assert!(child_out[0].contains("from-child"), "{child_out:?}");
        // The child's workspace (its YAML's folder, inside the parent's) is its cwd.
        let agents = std::fs::canonicalize(fx.root().join("agents")).unwrap();
        assert!(
            child_out[0].contains(&agents.display().to_string()),
            "{child_out:?}"
        );
        let binding = runner.environment().unwrap().command.as_ref().unwrap();
        assert!(binding.is_owner());
        assert!(!binding.is_closed(), "a child closed the root's service");
        runner.close().await.unwrap();
        assert!(binding.is_closed());
    });
}

/// A host's `ChildProviderFactory` builds each selected child's provider from its
/// config and path (here for a child YAML without `model`).
#[test]
fn a_child_provider_factory_builds_each_childs_provider() {
    let hosted = "tools: {builtin: [file.read]}\ninstructions: Be brief.\n";
    let fx = family(
        r#"- tool_calls: [{name: subagent, arguments: {prompt: one}}]
- expect_tool_results: 1
  tool_calls: [{name: subagent, arguments: {prompt: two}}]
- {expect_tool_results: 1, text: done}"#,
        &[("hosted", hosted)],
    );
    /// Each factory call: the child's YAML and its instructions.
    type Seen = Vec<(PathBuf, Option<String>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let record = Arc::clone(&seen);
    let factory =
        move |config: &AgentConfig, path: &Path| -> Result<Arc<dyn CompletionProvider>, RunError> {
            record
                .lock()
                .unwrap()
                .push((path.to_path_buf(), config.instructions.clone()));
            Ok(Arc::new(
                ScriptedProvider::from_yaml("- text: from the factory").unwrap(),
            ))
        };
    runtime().block_on(async {
        let loaded = AgentConfig::load(fx.file()).unwrap();
        let runner = AgentRunner::builder_from_loaded(&loaded, &HostRegistry::new(), None)
            .await
            .unwrap()
            .child_provider_factory(factory)
            .build();
        let all = events(&runner, "go").await;
        assert_eq!(outcome(&all).output(), Some("done"));
        let calls = finished(&all);
        assert!(
            calls
                .iter()
                .all(|c| c.model_content() == "from the factory")
        );
        assert_ne!(
            meta(calls[0], "child_run_id"),
            meta(calls[1], "child_run_id")
        );
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2, "one provider per selected child");
        assert_eq!(seen[0].0, fx.root().join("agents/hosted.yaml"));
        assert_eq!(seen[0].1.as_deref(), Some("Be brief."));
        runner.close().await.unwrap();
    });
}

/// Cancelling the parent cancels the child: its command is killed, both runs end
/// cancelled.
#[test]
fn cancelling_the_parent_cancels_the_child() {
    let sleeper = r#"
tools: {builtin: [exec.command]}
permissions: {execute_mode: allow}
model:
  provider: scripted
  script:
    - tool_calls: [{name: exec_command, arguments: {command: "echo $$ > ../pid; exec sleep 60"}}]
    - {text: never reached}
"#;
    let fx = family(
        r#"- tool_calls: [{name: subagent, arguments: {prompt: sleep}}]
- {text: never reached}"#,
        &[("sleeper", sleeper)],
    );
    runtime().block_on(async {
        let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
        let pid_file = fx.root().join("pid");
        let all = crate::support::events_cancelled_when(&runner, "go", &pid_file, |e| {
            matches!(e, RunEvent::Subagent { event, .. }
                if matches!(**event, RunEvent::ToolCallStarted { .. }))
        })
        .await;
        let outcome = crate::support::outcome(&all);
        assert!(matches!(outcome, RunOutcome::Cancelled), "{outcome:?}");
        let child_id = all.iter().find_map(|e| match e {
            RunEvent::Subagent { child_run_id, .. } => Some(child_run_id.clone()),
            _ => None,
        });
        let pid = crate::support::pid_in(&pid_file);
        assert!(
            crate::support::ends_soon(pid),
            "the child's command {pid} outlived the cancelled parent"
        );
        let store = runner.run_store().unwrap();
        let child = store.load(&child_id.unwrap()).await.unwrap().unwrap();
        assert_eq!(child.status, RunStatus::Cancelled);
        runner.close().await.unwrap();
    });
}

/// The tool's definition: the catalog's selectors as `agent`'s enum with the default,
/// the agents described there, and the tool-design lint satisfied except for the
/// one-word name `subagent`, which is fixed.
#[test]
fn the_definition_lists_the_catalog_and_passes_the_lint() {
    let catalog = iris_skill::SubagentCatalog::parse(
        "default: writer\nagents:\n  reader: {path: r.yaml, description: Reads the docs.}\n  \
         writer: {path: w.yaml, description: Writes notes.}\n",
        "/srv/agents.yaml",
    )
    .unwrap();
    let tool = iris_runner::RunLoopTool::subagent(&catalog);
    let def = iris_tools_core::Tool::definition(&tool);
    let agent = &def.input_schema["properties"]["agent"];
    assert_eq!(agent["enum"], serde_json::json!(["reader", "writer"]));
    assert_eq!(agent["default"], "writer");
    let about = agent["description"].as_str().unwrap();
    assert!(
        about.contains("`writer` (default): Writes notes.") && about.contains("Reads the docs."),
        "{about}"
    );
    assert_eq!(def.input_schema["required"], serde_json::json!(["prompt"]));
    assert!(def.auto_allow && !iris_tools_core::Tool::is_read_only(&tool));
    let rules: Vec<_> = iris_providers::lint::lint_definition(def)
        .into_iter()
        .map(|f| f.rule)
        .collect();
    assert_eq!(rules, [iris_providers::lint::LintRule::NameMeaning]);
}

/// The parent's process dies while its child runs: a new process recovering the
/// parent finds the `subagent` call in doubt (it may have acted) and asks; `rerun`
/// starts a new child run whose answer completes the parent.
#[test]
fn a_parent_that_died_mid_child_asks_before_running_the_child_again() {
    let sleeper = r#"
tools: {builtin: [exec.command]}
permissions: {execute_mode: allow}
model:
  provider: scripted
  script:
    - tool_calls: [{name: exec_command, arguments: {command: "if [ -f ../started ]; then echo again; else echo $$ > ../started; exec sleep 60; fi"}}]
    - {expect_tool_results: 1, text: child finished}
"#;
    let fx = family(
        r#"- tool_calls: [{name: subagent, arguments: {prompt: work}}]
- {expect_tool_results: 1, text: parent finished}"#,
        &[("sleeper", sleeper)],
    );
    runtime().block_on(async {
        let loaded = AgentConfig::load(fx.file()).unwrap();
        let runner = || async {
            AgentRunner::builder_from_loaded(&loaded, &HostRegistry::new(), None)
                .await
                .unwrap()
                .lease_ttl(Duration::from_millis(300))
                .build()
        };
        let first = runner().await;
        let task = tokio::spawn({
            let first = first.clone();
            async move { first.run("go").await }
        });
        let started = fx.root().join("started");
        crate::support::wait_for_line(&started, 400).await;
        // The "crash": the run's task is gone mid-child.
        task.abort();
        assert!(task.await.unwrap_err().is_cancelled());
        first.close().await.unwrap();
        let pid = crate::support::pid_in(&started);
        assert!(
            crate::support::ends_soon(pid),
            "the child's command {pid} outlived its process"
        );
        // Wait out the dead process's leases.
        tokio::time::sleep(Duration::from_millis(400)).await;

        let second = runner().await;
        let store = second.run_store().unwrap();
        let mut parent_id = None;
        for summary in store.list(Some(RunStatus::Running), 10).await.unwrap() {
            let record = store.load(&summary.run_id).await.unwrap().unwrap();
            if record.parent.is_none() {
                parent_id = Some(record.run_id);
            }
        }
        let parent_id = parent_id.expect("the parent run is left running");
        let outcome = second.recover(&parent_id).await.unwrap();
        let RunOutcome::Waiting { interaction, .. } = &outcome else {
            panic!("{outcome:?}")
        };
        let Interaction::InDoubt(doubt) = interaction else {
            panic!("{interaction:?}")
        };
        assert_eq!(doubt.tool_name, "subagent");
        let done = second
            .resume(&parent_id, interaction.id(), Answer::Rerun)
            .await
            .unwrap();
        let RunOutcome::Completed {
            output, history, ..
        } = &done
        else {
            panic!("{done:?}")
        };
        assert_eq!(output, "parent finished");
        let shown = serde_json::to_string(history).unwrap();
        assert!(shown.contains("child finished"), "{shown}");
        second.close().await.unwrap();
    });
}

/// The parent's `tool.before` hook denies every call it sees: the parent's own
/// `read_file` is denied, while `subagent` — outside the ordinary chain — runs, and the
/// child, which inherits no parent hook, reads its file.
#[test]
fn subagent_calls_and_children_are_outside_the_parents_hooks() {
    let reader = r#"
workspace: ../docs
tools: {builtin: [file.read]}
model:
  provider: scripted
  script:
    - tool_calls: [{name: read_file, arguments: {file_path: readme.md}}]
    - {expect_tool_results: 1, text: read it}
"#;
    let hooks = "hooks:\n  - name: deny-all\n    event: tool.before\n    handler: {type: command, \
                 command: \"echo '{\\\"deny_reason\\\": \\\"not here\\\"}'\"}\n";
    let fx = family_with(
        hooks,
        r#"- tool_calls:
    - {name: read_file, arguments: {file_path: docs/readme.md}}
    - {name: subagent, arguments: {prompt: read the readme}}
- {expect_tool_results: 2, text: ok}"#,
        &[("reader", reader)],
    );
    runtime().block_on(async {
        let runner = AgentRunner::from_config_path(fx.file()).await.unwrap();
        let all = events(&runner, "go").await;
        assert_eq!(outcome(&all).output(), Some("ok"));
        let calls = finished(&all);
        let by_name = |name: &str| calls.iter().find(|c| c.tool_name == name).unwrap();
        assert_eq!(by_name("read_file").error_code(), Some("HOOK_DENIED"));
        assert_eq!(by_name("subagent").error_code(), None);
        assert_eq!(by_name("subagent").model_content(), "read it");
        assert_eq!(child_codes(&all), [None]);
        runner.close().await.unwrap();
    });
}

/// A child whose end was saved before its parent's (the parent's process died in
/// between): resuming the parent takes the child's recorded answer and runs nothing
/// of the child again.
#[test]
fn a_child_that_already_ended_answers_its_parent_from_its_record() {
    let fx = family(
        r#"- tool_calls: [{name: subagent, arguments: {prompt: Write a note, agent: writer}}]
- {expect_tool_results: 1, text: The writer is done.}"#,
        &[("writer", WRITER)],
    );
    runtime().block_on(async {
        let first = AgentRunner::from_config_path(fx.file()).await.unwrap();
        let RunOutcome::Waiting {
            run_id,
            interaction: Interaction::Subagent(proxy),
        } = first.run("Delegate the note").await
        else {
            panic!("expected a subagent wait")
        };
        // What a process that died after the child's end was saved leaves behind.
        let store = first.run_store().unwrap();
        store
            .acquire(&proxy.child_run_id, "test", Duration::from_secs(5))
            .await
            .unwrap();
        let mut child = store.load(&proxy.child_run_id).await.unwrap().unwrap();
        child.status = RunStatus::Completed;
        child.output = Some("recorded end".into());
        child.interaction = None;
        child.pending = None;
        store.save(&child, "test").await.unwrap();
        store.release(&proxy.child_run_id, "test").await.unwrap();
        first.close().await.unwrap();

        let second = AgentRunner::from_config_path(fx.file()).await.unwrap();
        let done = second
            .resume(&run_id, &proxy.id, Answer::Approve)
            .await
            .unwrap();
        let RunOutcome::Completed {
            output, history, ..
        } = &done
        else {
            panic!("{done:?}")
        };
        assert_eq!(output, "The writer is done.");
        assert!(
            serde_json::to_string(history)
                .unwrap()
                .contains("recorded end")
        );
        assert!(
            !fx.root().join("docs/note.txt").exists(),
            "the child's approved write ran again"
        );
        second.close().await.unwrap();
    });
}
