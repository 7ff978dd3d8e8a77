//! `store_secret` from the command line, with `examples/secret/iris.yaml` against a
//! local server speaking Tavily's `/search` (401 until the right key): without a
//! terminal the run waits and `iris resume RUN --secret-stdin` heals it; on a terminal
//! the key is asked without echo. The key appears in no output and no stored byte.

use std::path::Path;

use serde_json::{Value, json};

use super::run::Pty;
use super::wire::{Reply, Server};
use super::{Run, examples, iris};

/// The key the Tavily-compatible server takes.
pub(super) const GOOD_KEY: &str = "tvly-cli-good-93d1c0a7";

/// A server speaking Tavily's `/search`: 200 with one result for the good key, 401
/// otherwise.
pub(super) fn tavily() -> Server {
    Server::start(|_, request| {
        if request.header("authorization") == Some(&format!("Bearer {GOOD_KEY}")) {
            Reply::Json(
                200,
                json!({"query": "q", "answer": null, "images": [], "response_time": 0.1,
                       "results": [{"title": "Tokio", "url": "https://tokio.rs/",
                                    "content": "An asynchronous Rust runtime.", "score": 0.9}]}),
            )
        } else {
            Reply::Json(401, json!({"detail": {"error": "Unauthorized"}}))
        }
    })
}

/// The example copied into a fresh folder (its run store lands there).
fn example() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("iris.yaml");
    std::fs::copy(examples().join("secret/iris.yaml"), &config).unwrap();
    (dir, config.to_str().unwrap().to_owned())
}

fn every_byte_under(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.extend(std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    out
}

fn assert_no_key(runs: &[&Run], dir: &Path) {
    for run in runs {
        assert!(!run.stdout.contains(GOOD_KEY), "{run:?}");
        assert!(!run.stderr.contains(GOOD_KEY), "{run:?}");
    }
    let bytes = every_byte_under(dir);
    assert!(
        !bytes
            .windows(GOOD_KEY.len())
            .any(|w| w == GOOD_KEY.as_bytes()),
        "the key is stored under {}",
        dir.display()
    );
}

#[test]
fn without_a_terminal_the_run_waits_and_secret_stdin_heals_it() {
    let server = tavily();
    let (dir, config) = example();
    let url = server.url();
    let env = [("IRIS_WEB__BASE_URL", url.as_str())];
    let first = iris(
        dir.path(),
        &["--config", &config, "--json", "run", "Which runtime?"],
        &env,
        "",
    );
    assert_eq!(first.code, 4, "{first:?}");
    let waiting: Value = serde_json::from_str(first.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(waiting["type"], "waiting");
    assert_eq!(waiting["kind"], "secret");
    assert!(
        waiting["summary"]
            .as_str()
            .unwrap()
            .contains("IRIS_PROVIDER_API_KEYS__TAVILY"),
        "{waiting}"
    );
    let run_id = waiting["run_id"].as_str().unwrap().to_owned();
    let commands: Vec<&str> = waiting["answer_with"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(
        commands[0].ends_with(&format!("resume {run_id} --secret-stdin")),
        "{commands:?}"
    );
    // The missing key cost no request.
    assert!(server.requests().is_empty());

    // An empty line is refused (exit 2) and the run still waits.
    let empty = iris(
        dir.path(),
        &["--config", &config, "resume", &run_id, "--secret-stdin"],
        &env,
        "\n",
    );
    assert_eq!(empty.code, 2, "{empty:?}");
    assert!(empty.stderr.contains("RUN_ANSWER_INVALID"), "{empty:?}");

    let healed = iris(
        dir.path(),
        &["--config", &config, "resume", &run_id, "--secret-stdin"],
        &env,
        &format!("{GOOD_KEY}\n"),
    );
    assert_eq!(healed.code, 0, "{healed:?}");
    assert_eq!(healed.stdout, "Tokio is the most used async runtime.\n");
    assert!(
        healed
            .stderr
            .contains("tool store_secret (call_2_1) ... ok"),
        "{healed:?}"
    );
    assert!(
        healed.stderr.contains("tool web_search (call_3_1) ... ok"),
        "{healed:?}"
    );
    let auth: Vec<Option<String>> = server
        .requests()
        .iter()
        .map(|r| r.header("authorization").map(str::to_owned))
        .collect();
    assert_eq!(auth, [Some(format!("Bearer {GOOD_KEY}"))]);
    let show = iris(
        dir.path(),
        &["--config", &config, "--json", "runs", "show", &run_id],
        &env,
        "",
    );
    assert_eq!(show.code, 0, "{show:?}");
    assert!(show.stdout.contains("is stored"), "{show:?}");
    assert_no_key(&[&first, &empty, &healed, &show], dir.path());
}

#[test]
fn a_terminal_is_asked_for_the_key_without_echo() {
    let server = tavily();
    let (dir, config) = example();
    let url = server.url();
    let mut pty = Pty::open();
    let child = pty.spawn_iris(
        dir.path(),
        &["--config", &config, "run", "Which runtime?"],
        &[("IRIS_WEB__BASE_URL", url.as_str())],
    );
    pty.until("Value (typing is hidden; empty leaves the run waiting): ");
    assert!(
        pty.seen_text().contains(
            "iris: the agent needs the secret IRIS_PROVIDER_API_KEYS__TAVILY for web_search"
        ),
        "{}",
        pty.seen_text()
    );
    pty.type_line(&format!("{GOOD_KEY}\n"));
    let out = child.wait_with_output().unwrap();
    let screen = pty.rest().to_owned();
    assert_eq!(out.status.code(), Some(0), "{screen}");
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "Let me search.\nTokio is the most used async runtime.\n"
    );
    assert!(!screen.contains(GOOD_KEY), "the key was echoed: {screen:?}");
    assert!(
        screen.contains("tool web_search (call_3_1) ... ok"),
        "{screen}"
    );
    assert_eq!(server.requests().len(), 1);
}
