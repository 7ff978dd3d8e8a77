//! Sandbox escalation through the `iris` binary: `command.sandbox.escalation: ask`
//! under `execute_mode: allow`. A call whose `sandbox` asks for the network waits for a
//! human (through `iris run` with the scripted model and through `iris call`), with the
//! widening in the approval and in the run record; declined, nothing runs; approved,
//! it runs with the network on. Under `never` the parameter is not in the schema and
//! a call carrying it is invalid input.

use std::net::TcpListener;
use std::path::Path;

use serde_json::Value;

use super::iris;

const REASON: &str = "tool `exec_command` asks to widen its sandbox: network: on (policy: off)";

/// A workspace whose agent allows every command and whose sandbox escalation is
/// `escalation`; the scripted model asks once for `command` with `sandbox: {network:
/// on}`.
fn agent(escalation: &str, command: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "tools:\n  builtin: [exec.command]\npermissions:\n  execute_mode: allow\n\
         command:\n  sandbox:\n    escalation: {escalation}\n\
         model:\n  provider: scripted\n  script:\n    - text: Connecting.\n      tool_calls:\n        \
         - name: exec_command\n          arguments: {{command: {command:?}, sandbox: {{network: \"on\"}}}}\n    \
         - {{expect_tool_results: 1, text: Done.}}\n"
    );
    let config = dir.path().join("iris.yaml");
    std::fs::write(&config, yaml).unwrap();
    (dir, config.to_str().unwrap().to_owned())
}

/// A command that writes `marker.txt` only when it can connect to `port` on loopback
/// (which the default `network: off` refuses).
fn connect(port: u16) -> String {
    format!(
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 5)' && echo connected > marker.txt"
    )
}

fn at(dir: &Path, config: &str, args: &[&str]) -> super::Run {
    let mut all = vec!["--config", config];
    all.extend_from_slice(args);
    iris(dir, &all, &[], "")
}

#[test]
fn iris_run_waits_for_the_widening_and_runs_it_only_when_approved() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (dir, config) = agent("ask", &connect(port));
    let marker = dir.path().join("marker.txt");

    // No terminal, no --yes: the run waits before the call, naming the widening.
    let run = at(dir.path(), &config, &["--json", "run", "Connect"]);
    assert_eq!(run.code, 4, "{run:?}");
    let events: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let requested = events
        .iter()
        .find(|e| e["type"] == "approval_requested")
        .unwrap();
    assert_eq!(requested["request"]["reason"], REASON);
    assert_eq!(
        requested["request"]["arguments"]["sandbox"],
        serde_json::json!({"network": "on"})
    );
    let run_id = events[0]["run_id"].as_str().unwrap().to_owned();
    assert!(!marker.exists());
    // The run record keeps it.
    let shown = at(dir.path(), &config, &["runs", "show", &run_id]);
    assert!(shown.stdout.contains(REASON), "{shown:?}");

    // Declined: the call never runs and the run goes on without it.
    let denied = at(
        dir.path(),
        &config,
        &["resume", &run_id, "--deny", "no network"],
    );
    assert_eq!(denied.code, 0, "{denied:?}");
    assert!(!marker.exists());

    // A new run, approved with --yes: the command reaches the loopback listener.
    let run = at(dir.path(), &config, &["run", "Connect", "--yes"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .lines()
            .any(|l| l == "tool exec_command (call_1_1) ... ok (approved)"),
        "{run:?}"
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "connected\n");

    // The same widening approved on resume.
    std::fs::remove_file(&marker).unwrap();
    let run = at(dir.path(), &config, &["--json", "run", "Connect"]);
    assert_eq!(run.code, 4, "{run:?}");
    let run_id =
        serde_json::from_str::<Value>(run.stdout.lines().next().unwrap()).unwrap()["run_id"]
            .as_str()
            .unwrap()
            .to_owned();
    let approved = at(dir.path(), &config, &["resume", &run_id, "--approve"]);
    assert_eq!(approved.code, 0, "{approved:?}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "connected\n");
}

#[test]
fn iris_call_needs_yes_for_a_widening_and_never_refuses_the_parameter() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (dir, config) = agent("ask", "true");
    let marker = dir.path().join("marker.txt");
    let input =
        serde_json::json!({"command": connect(port), "sandbox": {"network": "on"}}).to_string();

    let call = at(dir.path(), &config, &["call", "exec_command", &input]);
    assert_eq!(call.code, 4, "{call:?}");
    assert!(
        call.stderr.contains("APPROVAL_REQUIRED") && call.stderr.contains(REASON),
        "{call:?}"
    );
    assert!(!marker.exists());
    // Without the parameter the same command runs at once (execute_mode: allow) and
    // the sandbox refuses the connection.
    let plain = serde_json::json!({"command": connect(port)}).to_string();
    let call = at(dir.path(), &config, &["call", "exec_command", &plain]);
    assert_eq!(call.code, 1, "{call:?}");
    assert!(!marker.exists());
    let call = at(
        dir.path(),
        &config,
        &["--json", "call", "exec_command", &input, "--yes"],
    );
    assert_eq!(call.code, 0, "{call:?}");
    let result: Value = serde_json::from_str(&call.stdout).unwrap();
    assert_eq!(result["approved"], true, "{result}");
    assert_eq!(result["data"]["sandbox"]["network"], "on", "{result}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "connected\n");

    // The schema shows the parameter under `ask` only.
    let schema = at(dir.path(), &config, &["schema", "exec_command"]);
    assert!(schema.stdout.contains("\"sandbox\""), "{schema:?}");
    let (never_dir, never) = agent("never", "true");
    let schema = at(never_dir.path(), &never, &["schema", "exec_command"]);
    assert_eq!(schema.code, 0, "{schema:?}");
    assert!(!schema.stdout.contains("\"sandbox\""), "{schema:?}");
    let call = at(
        never_dir.path(),
        &never,
        &["call", "exec_command", &input, "--yes"],
    );
    assert_eq!(call.code, 2, "{call:?}");
    assert!(
        call.stdout.contains("INVALID_INPUT") || call.stderr.contains("INVALID_INPUT"),
        "{call:?}"
    );
    assert!(!never_dir.path().join("marker.txt").exists());
}

/// A tool run in the background (`tools.background`) is wrapped; the wrapper forwards
/// the widening, so the call still waits for a human.
#[test]
fn a_background_exec_command_still_asks_for_its_widening() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = "tools:\n  builtin: [exec.command]\n  background: [exec_command]\n\
                permissions:\n  execute_mode: allow\ncommand:\n  sandbox:\n    escalation: ask\n";
    let config = dir.path().join("iris.yaml");
    std::fs::write(&config, yaml).unwrap();
    let input =
        serde_json::json!({"command": "echo ran > marker.txt", "sandbox": {"network": "on"}})
            .to_string();
    let call = at(
        dir.path(),
        config.to_str().unwrap(),
        &["call", "exec_command", &input],
    );
    assert_eq!(call.code, 4, "{call:?}");
    assert!(call.stderr.contains(REASON), "{call:?}");
    assert!(!dir.path().join("marker.txt").exists());
}
