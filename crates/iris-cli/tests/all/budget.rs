//! Run budgets (`limits:`, `iris run --max-…`, `iris resume --raise-limit`) through the
//! real binary on the default SQLite store: each limit stops a scripted run at the
//! right point with RUN_BUDGET_EXCEEDED, a new process resumes it with a raised limit
//! and it completes without running a call twice, a subagent's tokens count, and the
//! admin policy caps a limit.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::Value;

use crate::{Run, iris};

/// A workspace with `iris.yaml` = `yaml`.
fn workspace(yaml: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("iris.yaml"), yaml).unwrap();
    dir
}

fn at(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut all = vec!["--config", "iris.yaml"];
    all.extend_from_slice(args);
    iris(dir, &all, env, "")
}

/// `turns` turns, each one `exec_command` appending its number to `log.txt` and
/// reporting `usage`, then an answer.
fn logging_agent(head: &str, turns: usize, usage: &str) -> String {
    let mut yaml = format!(
        "{head}permissions: {{execute_mode: allow}}\ntools:\n  builtin: [exec.command]\nmodel:\n  \
         provider: scripted\n  script:\n"
    );
    for n in 1..=turns {
        let expect = if n > 1 {
            "expect_tool_results: 1, "
        } else {
            ""
        };
        yaml.push_str(&format!(
            "    - {{{expect}text: Turn {n}., tool_calls: [{{name: exec_command, arguments: \
             {{command: \"echo {n} >> log.txt\"}}}}], usage: {usage}}}\n"
        ));
    }
    yaml.push_str(&format!(
        "    - {{expect_tool_results: 1, text: All logged., usage: {usage}}}\n"
    ));
    yaml
}

fn log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("log.txt")).unwrap_or_default()
}

/// The run id of the `iris: the run is saved; …` hint's resume command.
fn saved_run(run: &Run) -> String {
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains(" resume run_"))
        .unwrap_or_else(|| panic!("no resume command: {run:?}"));
    line.split(" resume ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_owned()
}

fn budget_error(run: &Run) -> &str {
    run.stderr
        .lines()
        .find(|l| l.starts_with("error[RUN_BUDGET_EXCEEDED]: "))
        .unwrap_or_else(|| panic!("no RUN_BUDGET_EXCEEDED: {run:?}"))
}

#[test]
fn max_tool_calls_stops_the_run_and_a_raised_limit_finishes_it() {
    let dir = workspace(&logging_agent(
        "limits: {max_tool_calls: 2}\n",
        3,
        "{input_tokens: 10, output_tokens: 2}",
    ));
    let run = at(dir.path(), &["run", "log three"], &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        budget_error(&run).contains(
            "limit `max_tool_calls` (2): 2 tool calls run; `exec_command` would be one more"
        ),
        "{run:?}"
    );
    assert_eq!(log(dir.path()), "1\n2\n");
    let run_id = saved_run(&run);

    // The run is kept as failed with the code, its third call still planned.
    let shown = at(dir.path(), &["--json", "runs", "show", &run_id], &[]);
    let record: Value = serde_json::from_str(&shown.stdout).unwrap();
    let record = &record["run"];
    assert_eq!(record["status"], "failed", "{shown:?}");
    assert_eq!(record["error"]["code"], "RUN_BUDGET_EXCEEDED");
    assert_eq!(record["pending"]["results"], serde_json::json!([null]));
    assert_eq!(record["spent"]["tool_calls"]["exec_command"], 2);
    let text = at(dir.path(), &["runs", "show", &run_id], &[]);
    assert!(
        text.stdout
            .contains("\nspent:    2 tool calls (exec_command 2), "),
        "{text:?}"
    );

    // Resuming under the same limit stops at once, running nothing.
    let again = at(dir.path(), &["resume", &run_id], &[]);
    assert_eq!(again.code, 1, "{again:?}");
    budget_error(&again);
    assert_eq!(log(dir.path()), "1\n2\n");

    let raised = at(
        dir.path(),
        &["resume", &run_id, "--raise-limit", "max_tool_calls=5"],
        &[],
    );
    assert_eq!(raised.code, 0, "{raised:?}");
    assert!(raised.stdout.ends_with("All logged.\n"), "{raised:?}");
    assert_eq!(log(dir.path()), "1\n2\n3\n", "no call ran twice");
}

/// One turn with two calls of the same tool: the first runs, the second is held in
/// the turn until the limit is raised.
#[test]
fn a_per_tool_limit_holds_the_rest_of_the_turn() {
    let yaml = "permissions: {execute_mode: allow}\ntools:\n  builtin: [exec.command, file.read]\n\
        model:\n  provider: scripted\n  script:\n    - text: Two.\n      tool_calls:\n        \
        - {name: exec_command, arguments: {command: echo a >> log.txt}}\n        \
        - {name: exec_command, arguments: {command: echo b >> log.txt}}\n    \
        - {expect_tool_results: 2, text: Both.}\n";
    let dir = workspace(yaml);
    let run = at(
        dir.path(),
        &["run", "--max-tool-calls-per-tool", "exec_command=1", "two"],
        &[],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        budget_error(&run).contains("`max_tool_calls_per_tool.exec_command` (1): 1 calls"),
        "{run:?}"
    );
    assert_eq!(log(dir.path()), "a\n");
    let run_id = saved_run(&run);
    let raised = at(
        dir.path(),
        &[
            "resume",
            &run_id,
            "--raise-limit",
            "max_tool_calls_per_tool.exec_command=2",
        ],
        &[],
    );
    assert_eq!(raised.code, 0, "{raised:?}");
    assert_eq!(log(dir.path()), "a\nb\n");
}

#[test]
fn token_and_cost_limits_stop_before_the_next_request() {
    // 60 input tokens a turn: 120 after two turns reaches 100 before the third.
    let dir = workspace(&logging_agent(
        "limits: {max_input_tokens: 100}\n",
        3,
        "{input_tokens: 60, output_tokens: 5}",
    ));
    let run = at(dir.path(), &["run", "go"], &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        budget_error(&run).contains("`max_input_tokens` (100): 120 input tokens"),
        "{run:?}"
    );
    assert_eq!(log(dir.path()), "1\n2\n");

    // Output tokens the same way: 5 a turn reach 10 after two turns.
    let dir = workspace(&logging_agent(
        "limits: {max_output_tokens: 10}\n",
        3,
        "{input_tokens: 1, output_tokens: 5}",
    ));
    let run = at(dir.path(), &["run", "go"], &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        budget_error(&run).contains("`max_output_tokens` (10): 10 output tokens"),
        "{run:?}"
    );
    assert_eq!(log(dir.path()), "1\n2\n");

    // $10 per million output tokens, 400k a turn: $4, $8, then $12 >= $10.
    let dir = workspace(&logging_agent(
        "limits:\n  max_cost_usd: 10\n  prices: {scripted: {input_per_mtok: 0, output_per_mtok: 10}}\n",
        3,
        "{input_tokens: 1, output_tokens: 400000}",
    ));
    let run = at(dir.path(), &["run", "go"], &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        budget_error(&run).contains("`max_cost_usd` (10): $12.0000 at the prices of `scripted`"),
        "{run:?}"
    );
    assert_eq!(log(dir.path()), "1\n2\n3\n");
    // A cost limit without the model's price is refused before anything runs.
    let dir = workspace(&logging_agent("limits: {max_cost_usd: 1}\n", 1, "{}"));
    let check = at(dir.path(), &["check"], &[]);
    assert_eq!(check.code, 1, "{check:?}");
    assert!(
        check
            .stdout
            .contains("`limits.max_cost_usd`: needs the price of model `scripted`"),
        "{check:?}"
    );
}

#[test]
fn max_wall_seconds_counts_the_time_driven() {
    let yaml = "limits: {max_wall_seconds: 0.5}\npermissions: {execute_mode: allow}\ntools:\n  \
        builtin: [exec.command]\nmodel:\n  provider: scripted\n  script:\n    - tool_calls: \
        [{name: exec_command, arguments: {command: sleep 1}}]\n    - {expect_tool_results: 1, \
        text: Slept.}\n";
    let dir = workspace(yaml);
    let run = at(dir.path(), &["run", "go"], &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        budget_error(&run).contains("`max_wall_seconds` (0.5): "),
        "{run:?}"
    );
}

/// `examples/subagents`: the lead's first turn reports 310 input tokens and its reader
/// child 300; 600 is reached only with the child's tokens counted.
#[test]
fn a_subagents_tokens_count_against_the_parent() {
    let dir = crate::subagent::example();
    let run = at(
        dir.path(),
        &["run", "--max-input-tokens", "600", "Summarize the notes"],
        &[],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        budget_error(&run).contains("`max_input_tokens` (600): 610 input tokens"),
        "{run:?}"
    );
    // Without the limit the run goes on to the scribe (which waits for approval).
    let run = at(dir.path(), &["run", "Summarize the notes"], &[]);
    assert_eq!(run.code, 4, "{run:?}");
}

#[test]
fn the_policy_caps_the_budget() {
    let dir = workspace(&logging_agent(
        "limits: {max_tool_calls: 5}\n",
        3,
        "{input_tokens: 1, output_tokens: 1}",
    ));
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, "limits: {max_tool_calls: 1}\n").unwrap();
    std::fs::set_permissions(&policy, std::fs::Permissions::from_mode(0o644)).unwrap();
    let env = [("IRIS_POLICY_FILE", policy.to_str().unwrap())];
    let run = at(dir.path(), &["run", "go"], &env);
    assert_eq!(run.code, 1, "{run:?}");
    budget_error(&run);
    assert_eq!(log(dir.path()), "1\n");
    // A raise past the policy is capped back, with a line saying so.
    let run_id = saved_run(&run);
    let raised = at(
        dir.path(),
        &["resume", &run_id, "--raise-limit", "max_tool_calls=9"],
        &env,
    );
    assert_eq!(raised.code, 1, "{raised:?}");
    assert!(
        raised
            .stderr
            .contains("iris: policy: `limits.max_tool_calls` 9 -> 1"),
        "{raised:?}"
    );
    assert_eq!(log(dir.path()), "1\n");
}

/// The loop's own tools count too: the lead's second `subagent` call is held.
#[test]
fn loop_tool_calls_count_against_the_budget() {
    let dir = crate::subagent::example();
    let run = at(
        dir.path(),
        &[
            "run",
            "--max-tool-calls-per-tool",
            "subagent=1",
            "Summarize the notes",
        ],
        &[],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        budget_error(&run).contains("`max_tool_calls_per_tool.subagent` (1): 1 calls"),
        "{run:?}"
    );
    assert!(!dir.path().join("notes/summary.md").exists());
}
