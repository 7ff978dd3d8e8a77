//! `iris serve` as a real process: the --config agent and an --agent served over HTTP
//! (a run waits, is approved over HTTP and finishes; SIGTERM stops it, exit 143); two
//! processes on one PostgreSQL database (started on one, answered on the other, the
//! call run once, an event stream moved from one to the other with `Last-Event-ID`
//! missing nothing); the listening rules before anything starts.

use std::path::Path;
use std::time::{Duration, Instant};

use rustix::process::Signal;
use serde_json::{Value, json};

use super::durable::fresh_database;
use super::iris;
use super::signals::{Spawned, spawn};

/// A scripted agent whose one call writes `hello.txt` (writes wait for approval),
/// then answers.
const WRITE_YAML: &str = "tools:\n  builtin: [file.write]\nmodel:\n  provider: scripted\n  \
    script:\n    - text: Writing the file.\n      tool_calls: [{name: write_file, arguments: \
    {file_path: hello.txt, content: \"hi\\n\"}}]\n    - {expect_tool_results: 1, text: Wrote \
    hello.txt.}\n";

/// A scripted agent that answers at once.
const HELLO_YAML: &str = "model:\n  provider: scripted\n  script:\n    - text: Hello.\n";

/// `iris serve` started in `dir` with `args` after `serve`; its base URL.
fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (Spawned, String) {
    let mut all = vec!["--config", "iris.yaml", "serve", "--listen", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let served = spawn(dir, &all, env);
    let lines = served.stderr_until("iris: serving ");
    let line = lines.last().unwrap();
    let url = line
        .split("on ")
        .nth(1)
        .and_then(|rest| rest.split("/v1").next())
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
    (served, url)
}

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

fn read(response: reqwest::blocking::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn get(url: &str) -> (u16, Value) {
    read(client().get(url).send().unwrap())
}

fn post(url: &str, body: &Value) -> (u16, Value) {
    read(client().post(url).body(body.to_string()).send().unwrap())
}

/// Polls the run until it has `status`.
fn wait_for(base: &str, run_id: &str, status: &str) -> Value {
    let start = Instant::now();
    loop {
        let (code, run) = get(&format!("{base}/v1/runs/{run_id}"));
        assert_eq!(code, 200, "{run}");
        if run["status"] == status {
            return run;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "still {run}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn start_run(base: &str, agent: &str) -> String {
    let (status, body) = post(
        &format!("{base}/v1/runs"),
        &json!({"agent": agent, "input": "go"}),
    );
    assert_eq!(status, 201, "{body}");
    body["run_id"].as_str().unwrap().to_owned()
}

/// Approves what the run waits for, through `base`.
fn approve(base: &str, run_id: &str, run: &Value) {
    let interaction = run["interaction"]["id"].as_str().unwrap();
    let (status, body) = post(
        &format!("{base}/v1/runs/{run_id}/answer"),
        &json!({"interaction_id": interaction, "answer": "approve"}),
    );
    assert_eq!(status, 202, "{body}");
}

#[test]
fn iris_serve_serves_the_config_and_another_agent_until_a_signal() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("iris.yaml"), WRITE_YAML).unwrap();
    std::fs::write(dir.path().join("other.yaml"), HELLO_YAML).unwrap();
    let (mut served, base) = start(dir.path(), &["--agent", "greeter=other.yaml"], &[]);

    let run_id = start_run(&base, "default");
    let run = wait_for(&base, &run_id, "waiting");
    assert_eq!(run["interaction"]["tool_name"], "write_file");
    approve(&base, &run_id, &run);
    let run = wait_for(&base, &run_id, "completed");
    assert_eq!(run["output"], "Wrote hello.txt.");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("hello.txt")).unwrap(),
        "hi\n"
    );
    let greeting = start_run(&base, "greeter");
    assert_eq!(wait_for(&base, &greeting, "completed")["output"], "Hello.");
    let (_, list) = get(&format!("{base}/v1/runs?agent=greeter"));
    assert_eq!(list["runs"].as_array().unwrap().len(), 1, "{list}");

    served.signal(Signal::TERM);
    let status = served.exit();
    assert_eq!(status.code(), Some(143), "{}", served.stderr_rest());
    // The runs are in the YAML's store: `iris runs` sees them.
    let runs = iris(
        dir.path(),
        &["--config", "iris.yaml", "--json", "runs"],
        &[],
        "",
    );
    assert_eq!(runs.code, 0, "{runs:?}");
    let listed: Value = serde_json::from_str(&runs.stdout).unwrap();
    assert_eq!(listed["runs"].as_array().unwrap().len(), 2, "{listed}");
}

/// Reads SSE events (`id`, `data` as JSON) from `response`, at most `max`, or until
/// the stream ends.
fn sse_events(response: reqwest::blocking::Response, max: Option<usize>) -> Vec<(u64, Value)> {
    use std::io::BufRead;
    assert_eq!(response.status().as_u16(), 200);
    let mut lines = std::io::BufReader::new(response).lines();
    let mut events = Vec::new();
    let (mut id, mut data) = (None, String::new());
    while max.is_none_or(|m| events.len() < m) {
        let Some(line) = lines.next() else { break };
        let line = line.unwrap();
        if let Some(v) = line.strip_prefix("id: ") {
            id = Some(v.parse::<u64>().unwrap());
        } else if let Some(v) = line.strip_prefix("data: ") {
            data.push_str(v);
        } else if line.is_empty() {
            // A keep-alive comment has no id.
            if let Some(id) = id.take() {
                events.push((id, serde_json::from_str(&data).unwrap()));
            }
            data.clear();
        }
    }
    events
}

/// `GET /v1/runs/{run_id}/events` on `base`, after `last` when given.
fn open_events(base: &str, run_id: &str, last: Option<u64>) -> reqwest::blocking::Response {
    let mut request = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
        .get(format!("{base}/v1/runs/{run_id}/events"));
    if let Some(last) = last {
        request = request.header("Last-Event-ID", last.to_string());
    }
    request.send().unwrap()
}

/// Two `iris serve` processes on one PostgreSQL database, from one folder: a run
/// started on the first is answered on the second, which drives it; the write ran
/// once; an event stream read on the first and continued on the second with
/// `Last-Event-ID` gets every event exactly once.
#[test]
fn two_processes_on_postgres_share_a_run() {
    let url = fresh_database();
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!("{WRITE_YAML}run_store: {{kind: postgres, url_env: IRIS_SERVE_TEST_DB}}\n");
    std::fs::write(dir.path().join("iris.yaml"), yaml).unwrap();
    let env = [("IRIS_SERVE_TEST_DB", url.as_str())];
    let (mut a, base_a) = start(dir.path(), &[], &env);
    let (mut b, base_b) = start(dir.path(), &[], &env);

    let run_id = start_run(&base_a, "default");
    // A client reads the first three events on A, then goes away.
    let mut seen = sse_events(open_events(&base_a, &run_id, None), Some(3));
    assert_eq!(seen.len(), 3, "{seen:?}");
    let run = wait_for(&base_b, &run_id, "waiting");
    approve(&base_b, &run_id, &run);
    // It comes back on B with the last id it saw, while B drives the run.
    let last = seen.last().unwrap().0;
    seen.extend(sse_events(open_events(&base_b, &run_id, Some(last)), None));
    let ids: Vec<u64> = seen.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, (1..=seen.len() as u64).collect::<Vec<_>>(), "{seen:?}");
    let (_, end) = seen.last().unwrap();
    assert_eq!(end["type"], "finished");
    assert_eq!(end["outcome"]["status"], "completed");
    let run = wait_for(&base_a, &run_id, "completed");
    assert_eq!(run["output"], "Wrote hello.txt.");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("hello.txt")).unwrap(),
        "hi\n"
    );
    // The whole log, read on A, is what the client got: both drives, one call.
    let whole = sse_events(open_events(&base_a, &run_id, None), None);
    assert_eq!(whole, seen);
    let calls = whole
        .iter()
        .filter(|(_, e)| e["type"] == "tool_call_finished")
        .count();
    assert_eq!(calls, 1, "{whole:?}");
    for served in [&mut a, &mut b] {
        served.signal(Signal::INT);
        assert_eq!(served.exit().code(), Some(130));
    }
}

/// A scripted agent whose one command appends a line to `side.txt`, then sleeps (the
/// call is still going when its host is killed); after the call, it answers.
const SLOW_SIDE_EFFECT_YAML: &str = "tools:\n  builtin: [exec.command]\npermissions:\n  \
    execute_mode: allow\nmodel:\n  provider: scripted\n  script:\n    - tool_calls: [{name: \
    exec_command, arguments: {command: 'echo once >> side.txt; sleep 300'}}]\n    - \
    {expect_tool_results: 1, text: Done.}\n";

/// The host driving a run is killed (SIGKILL) in the middle of a command; when its
/// lease lapses the other host takes the run over. The command, which has a side
/// effect and is not idempotent, is not run again: the run waits with the call in
/// doubt, and a human's `skip` on the surviving host finishes it.
#[test]
fn a_killed_hosts_run_is_taken_over_without_repeating_a_side_effect() {
    let url = fresh_database();
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "{SLOW_SIDE_EFFECT_YAML}run_store: {{kind: postgres, url_env: IRIS_SERVE_TEST_DB}}\n"
    );
    std::fs::write(dir.path().join("iris.yaml"), yaml).unwrap();
    let env = [("IRIS_SERVE_TEST_DB", url.as_str())];
    let (mut a, base_a) = start(dir.path(), &[], &env);
    let (mut b, base_b) = start(dir.path(), &[], &env);

    let run_id = start_run(&base_a, "default");
    let side = dir.path().join("side.txt");
    let begun = Instant::now();
    while std::fs::read_to_string(&side).unwrap_or_default() != "once\n" {
        assert!(
            begun.elapsed() < Duration::from_secs(30),
            "the command never ran"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(wait_for(&base_b, &run_id, "running")["status"], "running");
    a.signal(Signal::KILL);
    a.exit();

    // The lease (30 s) lapses, B takes the run over and stops at the call in doubt.
    let begun = Instant::now();
    let run = loop {
        let (code, run) = get(&format!("{base_b}/v1/runs/{run_id}"));
        assert_eq!(code, 200, "{run}");
        if run["status"] == "waiting" {
            break run;
        }
        assert_eq!(run["status"], "running", "{run}");
        assert!(
            begun.elapsed() < Duration::from_secs(120),
            "never taken over: {run}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(run["interaction"]["kind"], "in_doubt", "{run}");
    assert_eq!(std::fs::read_to_string(&side).unwrap(), "once\n");
    let interaction = run["interaction"]["id"].as_str().unwrap();
    let (status, body) = post(
        &format!("{base_b}/v1/runs/{run_id}/answer"),
        &json!({"interaction_id": interaction, "answer": "skip"}),
    );
    assert_eq!(status, 202, "{body}");
    let run = wait_for(&base_b, &run_id, "completed");
    assert_eq!(run["output"], "Done.");
    assert_eq!(
        std::fs::read_to_string(&side).unwrap(),
        "once\n",
        "run once"
    );
    // The log holds what A appended before it died, then B's take-over, in order.
    let events = sse_events(open_events(&base_b, &run_id, None), None);
    let ids: Vec<u64> = events.iter().map(|(id, _)| *id).collect();
    assert_eq!(
        ids,
        (1..=events.len() as u64).collect::<Vec<_>>(),
        "{events:?}"
    );
    let started = events
        .iter()
        .filter(|(_, e)| e["type"] == "run_started")
        .count();
    assert!(started >= 2, "A's start and B's take-over: {events:?}");
    b.signal(Signal::TERM);
    assert_eq!(b.exit().code(), Some(143));
}

/// Waits until `side.txt` in `dir` holds `lines` lines.
fn wait_for_lines(dir: &Path, lines: usize) {
    let begun = Instant::now();
    while std::fs::read_to_string(dir.join("side.txt"))
        .unwrap_or_default()
        .lines()
        .count()
        < lines
    {
        assert!(
            begun.elapsed() < Duration::from_secs(30),
            "the command never ran"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A run in the middle of a command: cancelled on its host it ends `cancelled`;
/// another host refuses to cancel it (`SERVE_RUN_ELSEWHERE`). A host stopped by
/// SIGTERM gives the runs it drives up (leases released) and the other host takes
/// them over without waiting for a lease to lapse; the command is not run again.
#[test]
fn running_runs_are_cancelled_on_their_host_and_given_up_on_sigterm() {
    let url = fresh_database();
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "{SLOW_SIDE_EFFECT_YAML}run_store: {{kind: postgres, url_env: IRIS_SERVE_TEST_DB}}\n"
    );
    std::fs::write(dir.path().join("iris.yaml"), yaml).unwrap();
    let env = [("IRIS_SERVE_TEST_DB", url.as_str())];
    let (mut a, base_a) = start(dir.path(), &[], &env);
    let (mut b, base_b) = start(dir.path(), &[], &env);

    // Cancelled where it is driven.
    let first = start_run(&base_a, "default");
    wait_for_lines(dir.path(), 1);
    let (status, body) = post(&format!("{base_b}/v1/runs/{first}/cancel"), &json!({}));
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "SERVE_RUN_ELSEWHERE");
    let (status, run) = post(&format!("{base_a}/v1/runs/{first}/cancel"), &json!({}));
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "cancelled", "{run}");

    // Given up on SIGTERM, taken over by B.
    let second = start_run(&base_a, "default");
    wait_for_lines(dir.path(), 2);
    a.signal(Signal::TERM);
    assert_eq!(a.exit().code(), Some(143));
    let stderr = a.stderr_rest();
    assert!(
        stderr.contains("left 1 running run(s) for another host, leases released")
            && stderr.contains(&second),
        "{stderr}"
    );
    let run = wait_for(&base_b, &second, "waiting");
    assert_eq!(run["interaction"]["kind"], "in_doubt", "{run}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("side.txt")).unwrap(),
        "once\nonce\n"
    );
    // A waiting run is cancelled on any host.
    let (status, run) = post(&format!("{base_b}/v1/runs/{second}/cancel"), &json!({}));
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "cancelled");
    b.signal(Signal::TERM);
    assert_eq!(b.exit().code(), Some(143));
}

/// The listening rules and flags are checked before anything starts.
#[test]
fn bad_flags_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("iris.yaml"), HELLO_YAML).unwrap();
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut all = vec!["--config", "iris.yaml", "serve"];
        all.extend_from_slice(args);
        iris(dir.path(), &all, env, "")
    };
    let remote = run(&["--listen", "0.0.0.0:0"], &[]);
    assert_eq!(remote.code, 2, "{remote:?}");
    assert!(
        remote.stderr.contains("SERVE_ADDRESS_REFUSED"),
        "{remote:?}"
    );
    let no_token = run(&["--listen", "0.0.0.0:0", "--allow-remote"], &[]);
    assert_eq!(no_token.code, 2, "{no_token:?}");
    let unset = run(&["--token-env", "IRIS_SERVE_TEST_UNSET"], &[]);
    assert_eq!(unset.code, 3, "{unset:?}");
    assert!(unset.stderr.contains("SERVE_TOKEN_MISSING"), "{unset:?}");
    let no_requests = run(&["--max-per-client", "0"], &[]);
    assert_eq!(no_requests.code, 2, "{no_requests:?}");
    let bad_agent = run(&["--agent", "nameonly"], &[]);
    assert_eq!(bad_agent.code, 2, "{bad_agent:?}");
    let twice = run(
        &["--listen", "127.0.0.1:0", "--agent", "default=iris.yaml"],
        &[],
    );
    assert_eq!(twice.code, 3, "{twice:?}");
    assert!(twice.stderr.contains("SERVE_AGENT_INVALID"), "{twice:?}");

    // With a token, a request without it is refused.
    let (served, base) = start(
        dir.path(),
        &["--token-env", "IRIS_SERVE_TEST_TOKEN"],
        &[("IRIS_SERVE_TEST_TOKEN", "a-long-test-token")],
    );
    let (status, body) = get(&format!("{base}/v1/runs"));
    assert_eq!(status, 401, "{body}");
    let ok = client()
        .get(format!("{base}/v1/runs"))
        .bearer_auth("a-long-test-token")
        .send()
        .unwrap();
    assert_eq!(ok.status().as_u16(), 200);
    drop(served);
}
