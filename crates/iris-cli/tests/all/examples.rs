//! The loop-tool examples in `examples/` as a newcomer runs them (`iris --config
//! examples/<name>/iris.yaml run …`), each copied into a fresh folder first, and the
//! heartbeat of a long call on the progress output.

use std::path::Path;

use serde_json::Value;

use super::{Run, examples, iris};

/// `examples/<name>` copied into a fresh folder; returns it and its config path.
fn example(name: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(examples().join(name)).unwrap().flatten() {
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
    }
    let config = dir.path().join("iris.yaml").to_str().unwrap().to_owned();
    (dir, config)
}

fn run(dir: &Path, config: &str, json: bool) -> Run {
    let mut args = vec!["--config", config];
    if json {
        args.push("--json");
    }
    args.extend(["run", "Go"]);
    iris(dir, &args, &[], "")
}

fn events(run: &Run) -> Vec<Value> {
    assert_eq!(run.code, 0, "{run:?}");
    run.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

/// The background call's receipt comes at once, the second turn answers while it runs,
/// the run waits for it, and the third turn reads its result.
#[test]
fn the_background_example_delivers_the_result_two_turns_later() {
    let (dir, config) = example("background");
    let all = events(&run(dir.path(), &config, true));
    let kinds = kinds(&all);
    let at = |kind: &str, n: usize| {
        kinds
            .iter()
            .enumerate()
            .filter(|(_, k)| **k == kind)
            .nth(n)
            .map(|(i, _)| i)
            .unwrap_or_else(|| panic!("no {kind} #{n} in {kinds:?}"))
    };
    let receipt = &all[at("tool_call_finished", 0)]["result"];
    assert_eq!(receipt["data"]["background"]["status"], "running");
    let done = at("background_finished", 0);
    // After the second turn's answer, before the third request.
    assert!(
        at("turn_started", 1) < done && done < at("turn_started", 2),
        "{kinds:?}"
    );
    assert!(
        all[done]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("build finished: 0 errors"),
        "{}",
        all[done]
    );
    let last = all.last().unwrap();
    assert_eq!(
        last["outcome"]["output"],
        "The background build reported: 0 errors."
    );
    // Text mode names both moments on stderr.
    let text = run(dir.path(), &config, false);
    assert_eq!(text.code, 0, "{text:?}");
    for line in [
        "tool exec_command (call_1_1) ... running in the background",
        "tool exec_command (call_1_1) ... background call finished ok",
    ] {
        assert!(text.stderr.contains(line), "{line:?} in {text:?}");
    }
}

/// `report_goal(done)` ends the run with its summary, shown like any answer, after the
/// turn's write ran.
#[test]
fn the_goals_example_ends_with_the_reported_summary() {
    let (dir, config) = example("goals");
    let text = run(dir.path(), &config, false);
    assert_eq!(text.code, 0, "{text:?}");
    assert_eq!(text.stdout, "NOTES.md has the release note.\n");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("NOTES.md")).unwrap(),
        "v1.0: first release\n"
    );
    let all = events(&run(dir.path(), &config, true));
    let goal = all
        .iter()
        .find(|e| e["type"] == "tool_call_finished" && e["result"]["tool_name"] == "get_goal")
        .unwrap();
    assert!(
        goal["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Write a one-line release note to NOTES.md.")
    );
}

/// The changelog read at the first turn is a preview two turns later; `context_search`
/// finds it and `context_read` pages its end back.
#[test]
fn the_context_example_pages_an_old_result_back() {
    let (dir, config) = example("context");
    let all = events(&run(dir.path(), &config, true));
    let result = |name: &str| {
        all.iter()
            .find(|e| e["type"] == "tool_call_finished" && e["result"]["tool_name"] == name)
            .unwrap_or_else(|| panic!("no {name}"))["result"]
            .clone()
    };
    let search = result("context_search");
    assert!(search["data"]["hits"][0]["ref"].is_string(), "{search}");
    let read = result("context_read");
    let text = read["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("## 0.3.0") && text.contains("First stable release."),
        "{read}"
    );
    assert_eq!(read["data"]["next_offset"], Value::Null);
    assert_eq!(
        all.last().unwrap()["outcome"]["output"],
        "The changelog ends with release 0.3.0."
    );
}

/// A call that runs longer than `heartbeat_seconds` says so while it runs: a
/// `heartbeat` event in `--json`, a "still running" line without a terminal.
#[test]
fn a_long_call_shows_its_heartbeat() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("iris.yaml");
    std::fs::write(
        &config,
        "tools: {builtin: [exec.command]}\npermissions: {execute_mode: allow}\nheartbeat_seconds: 0.3\nrun_store: {kind: memory}\nmodel:\n  provider: scripted\n  script:\n    - tool_calls: [{name: exec_command, arguments: {command: \"sleep 1.2; echo done\"}}]\n    - {expect_tool_results: 1, text: ok}\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let all = events(&run(dir.path(), config, true));
    let beat = all
        .iter()
        .find(|e| e["type"] == "heartbeat")
        .unwrap_or_else(|| panic!("no heartbeat in {all:?}"));
    assert_eq!(beat["call_id"], "call_1_1");
    // A command's deadline is the command service's `timeout_seconds` (default 120 s).
    assert_eq!(beat["deadline_seconds"], 120.0);
    let text = run(dir.path(), config, false);
    assert_eq!(text.code, 0, "{text:?}");
    assert!(
        text.stderr
            .contains("tool exec_command (call_1_1) ... still running ("),
        "{text:?}"
    );
    assert!(text.stderr.contains(" s of 120 s)"), "{text:?}");
}
