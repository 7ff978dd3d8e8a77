//! `examples/subagents` through the real binary: `iris check`, `iris run` delegating to
//! a read-only child and to a child whose write waits for approval (exit 4), and
//! `iris resume` in a new process answering the child through its parent, on the
//! default SQLite store; `--yes` and `--json`; a child with a disjoint workspace
//! listed by `iris check`.

use std::path::Path;

use serde_json::Value;

use super::{Run, examples, iris};

/// A copy of `examples/subagents` (runs write `.iris/` and `notes/summary.md`).
pub(super) fn example() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy(&examples().join("subagents"), dir.path());
    dir
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() != ".iris" {
                copy(&entry.path(), &target);
            }
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn at(dir: &Path, args: &[&str]) -> Run {
    at_env(dir, args, &[])
}

fn at_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut all = vec!["--config", "iris.yaml"];
    all.extend_from_slice(args);
    iris(dir, &all, env, "")
}

/// The run ids of the `error[RUN_WAITING]: run PARENT waits … subagent scribe
/// (CHILD): …` line.
fn waiting_ids(run: &Run) -> (String, String) {
    let line = run
        .stderr
        .lines()
        .find(|l| l.starts_with("error[RUN_WAITING]: run "))
        .unwrap_or_else(|| panic!("no RUN_WAITING line: {run:?}"));
    let parent = line["error[RUN_WAITING]: run ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .to_owned();
    let child = line
        .split("subagent scribe (")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("no child run in {line}"))
        .to_owned();
    (parent, child)
}

pub(super) const FINAL: &str =
    "The reader found two tasks, and the scribe wrote them to notes/summary.md.";
const SUMMARY: &str = "Renew the TLS certificate; rotate the API keys.\n";

#[test]
fn the_example_delegates_and_a_new_process_approves_the_childs_write() {
    let dir = example();
    let root = dir.path();
    let check = at(root, &["check"]);
    // The root runs commands: its sandbox block comes before `ok`.
    assert!(
        check.code == 0
            && check.stdout.starts_with("sandbox: ")
            && check.stdout.ends_with("\nok\n"),
        "{check:?}"
    );

    let run = at(root, &["run", "Summarize the notes"]);
    assert_eq!(run.code, 4, "{run:?}");
    assert_eq!(
        run.stdout, "Asking the reader first.\nNow the scribe writes it down.\n",
        "{run:?}"
    );
    for line in [
        "tool read_file (reader:call_1_1) ... ok",
        "tool subagent (call_1_1) ... ok",
        "tool subagent (call_2_1) ... waiting for a human",
    ] {
        assert!(run.stderr.lines().any(|l| l == line), "{line}: {run:?}");
    }
    assert!(
        run.stderr
            .contains("waits for a human (subagent): subagent scribe ("),
        "{run:?}"
    );
    assert!(
        run.stderr.contains("approve write_file (call_1_1)?"),
        "{run:?}"
    );
    let (parent, child) = waiting_ids(&run);
    assert!(
        run.stderr.contains(&format!(
            "iris --config iris.yaml resume {parent} --approve"
        )),
        "{run:?}"
    );
    assert!(!root.join("notes/summary.md").exists());

    // The listing shows both runs waiting; the child is answered through its parent.
    let runs = at(root, &["--json", "runs"]);
    let listed: Value = serde_json::from_str(&runs.stdout).unwrap();
    let waiting: Vec<&str> = listed["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "waiting")
        .map(|r| r["agent_id"].as_str().unwrap())
        .collect();
    assert_eq!(waiting.len(), 2, "{runs:?}");
    let parents: Vec<(&str, Option<&str>)> = listed["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "waiting")
        .map(|r| (r["run_id"].as_str().unwrap(), r["parent_run_id"].as_str()))
        .collect();
    assert!(
        parents.contains(&(child.as_str(), Some(parent.as_str()))),
        "{runs:?}"
    );
    assert!(parents.contains(&(parent.as_str(), None)), "{runs:?}");
    assert!(
        waiting.contains(&"scribe") && waiting.contains(&"iris"),
        "{runs:?}"
    );
    let shown = at(root, &["runs", "show", &child]);
    assert_eq!(shown.code, 0, "{shown:?}");
    assert!(
        shown.stdout.contains(&format!(
            "parent:   {parent} (subagent scribe, call call_2_1)"
        )),
        "{shown:?}"
    );
    assert!(
        shown.stdout.contains(&format!(
            "iris --config iris.yaml resume {parent} --approve"
        )),
        "the child's answer goes to its parent: {shown:?}"
    );
    // Without an answer, the child run's hint names its parent, which answers it.
    let unanswered = at(root, &["resume", &child]);
    assert_eq!(unanswered.code, 2, "{unanswered:?}");
    assert!(
        unanswered.stderr.contains("RUN_ANSWER_INVALID")
            && unanswered.stderr.contains(&format!(
                "iris --config iris.yaml resume {parent} --approve"
            ))
            && !unanswered
                .stderr
                .contains(&format!("resume {child} --approve")),
        "{unanswered:?}"
    );
    let direct = at(root, &["resume", &child, "--approve"]);
    assert_eq!(direct.code, 1, "{direct:?}");
    assert!(
        direct.stderr.contains("error[RUN_IS_SUBAGENT]"),
        "{direct:?}"
    );
    let wrong = at(root, &["resume", &parent, "--answer", "yes"]);
    assert_eq!(wrong.code, 2, "{wrong:?}");
    assert!(wrong.stderr.contains("RUN_ANSWER_INVALID"), "{wrong:?}");

    let resumed = at(root, &["resume", &parent, "--approve"]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert_eq!(resumed.stdout, format!("{FINAL}\n"), "{resumed:?}");
    for line in [
        "tool write_file (scribe:call_1_1) ... ok (approved)",
        "tool subagent (call_2_1) ... ok",
    ] {
        assert!(
            resumed.stderr.lines().any(|l| l == line),
            "{line}: {resumed:?}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(root.join("notes/summary.md")).unwrap(),
        SUMMARY
    );
    let shown = at(root, &["--json", "runs", "show", &child]);
    let record: Value =
        serde_json::from_str(&shown.stdout).unwrap_or_else(|e| panic!("{e}: {shown:?}"));
    let text = record.to_string();
    assert!(text.contains("\"completed\""), "{shown:?}");
    assert!(
        text.contains(&parent),
        "the child names its parent: {shown:?}"
    );
}

#[test]
fn yes_approves_the_childs_write_and_json_streams_the_childs_events() {
    let dir = example();
    // An `IRIS_COMMAND__*` override is the root's: it does not make the children
    // "declare" a command section.
    let env = [("IRIS_COMMAND__TIMEOUT_SECONDS", "30")];
    let check = at_env(dir.path(), &["check"], &env);
    // The root runs commands: its sandbox block comes before `ok`.
    assert!(
        check.code == 0
            && check.stdout.starts_with("sandbox: ")
            && check.stdout.ends_with("\nok\n"),
        "{check:?}"
    );
    let yes = at_env(dir.path(), &["run", "--yes", "Summarize the notes"], &env);
    assert_eq!(yes.code, 0, "{yes:?}");
    assert!(yes.stdout.ends_with(&format!("{FINAL}\n")), "{yes:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes/summary.md")).unwrap(),
        SUMMARY
    );

    let dir = example();
    let run = at(dir.path(), &["--json", "run", "Summarize the notes"]);
    assert_eq!(run.code, 4, "{run:?}");
    let events: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let child: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["type"] == "subagent")
        .map(|e| {
            (
                e["agent_selector"].as_str().unwrap(),
                e["event"]["type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(child.first(), Some(&("reader", "run_started")), "{child:?}");
    assert!(child.contains(&("reader", "finished")), "{child:?}");
    assert!(
        child.contains(&("scribe", "approval_requested")),
        "{child:?}"
    );
    let waiting = events.last().unwrap();
    assert_eq!(waiting["type"], "waiting", "{waiting}");
    assert_eq!(waiting["kind"], "subagent", "{waiting}");
    assert_eq!(
        waiting["answer_with"][0],
        format!(
            "iris --config iris.yaml resume {} --approve",
            waiting["run_id"].as_str().unwrap()
        )
    );
}

#[test]
fn check_lists_a_child_whose_workspace_is_disjoint() {
    let dir = example();
    let elsewhere = tempfile::tempdir().unwrap();
    let scribe = dir.path().join("agents/scribe.yaml");
    let yaml = std::fs::read_to_string(&scribe).unwrap().replace(
        "workspace: ../notes",
        &format!("workspace: {}", elsewhere.path().display()),
    );
    std::fs::write(&scribe, yaml).unwrap();
    let check = at(dir.path(), &["check"]);
    assert_eq!(check.code, 1, "{check:?}");
    assert!(
        check.stdout.contains("error[SUBAGENT_WORKSPACE_DISJOINT]:"),
        "{check:?}"
    );
    assert!(check.stdout.contains("subagent `scribe`"), "{check:?}");
}
