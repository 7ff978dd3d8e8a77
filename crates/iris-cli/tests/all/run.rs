//! `iris run` as a real process: the scripted example from the README, a multi-turn
//! task against each of the four wire formats served on 127.0.0.1, approvals (waiting
//! without a terminal, `--yes`, a real pseudo-terminal), `--json` event lines, failed
//! runs and the model flags.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::fs::{Mode, OFlags};
use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
use serde_json::Value;

use super::wire::{NOTE, Reply, Server, TEST_KEY, Wire};
use super::{Run, examples, iris};

/// A folder with `iris.yaml` holding `yaml` (and a notes.txt to read); returns it and
/// the config path.
fn agent(yaml: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), format!("{NOTE}\n")).unwrap();
    let config = dir.path().join("iris.yaml");
    std::fs::write(&config, yaml).unwrap();
    let config = config.to_str().unwrap().to_owned();
    (dir, config)
}

/// `iris --config CONFIG args…` in `dir`.
fn run_in(dir: &Path, config: &str, args: &[&str], env: &[(&str, &str)], stdin: &str) -> Run {
    let mut all = vec!["--config", config];
    all.extend_from_slice(args);
    iris(dir, &all, env, stdin)
}

/// Every stdout line parsed as JSON.
fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}")))
        .collect()
}

fn types(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("?"))
        .collect()
}

fn assert_no_key(run: &Run) {
    assert!(!run.stdout.contains(TEST_KEY), "{run:?}");
    assert!(!run.stderr.contains(TEST_KEY), "{run:?}");
}

/// The README command: the example's scripted model reads three things in parallel,
/// then answers; the answer streams to stdout, each call's status to stderr.
#[test]
fn the_readme_command_runs_the_scripted_example() {
    let config = examples().join("iris.yaml");
    let run = run_in(
        &examples(),
        config.to_str().unwrap(),
        &["run", "Summarize the project"],
        &[],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .starts_with("Let me look at the files first.\nThis folder is an example Iris agent."),
        "{run:?}"
    );
    assert!(
        run.stdout.ends_with("need a human's approval.\n"),
        "{run:?}"
    );
    for line in [
        "tool list_files (call_1_1) ... ok",
        "tool read_file (call_1_2) ... ok",
        "tool load_skill (call_1_3) ... ok",
    ] {
        assert!(run.stderr.lines().any(|l| l == line), "{line}: {run:?}");
    }
    // Off a terminal: no status line, no run banner, nothing but the calls.
    assert_eq!(run.stderr.lines().count(), 3, "{run:?}");
    assert!(!run.stderr.contains('\x1b'), "{run:?}");

    // The prompt from stdin, the same run.
    let piped = run_in(
        &examples(),
        config.to_str().unwrap(),
        &["run", "-"],
        &[],
        "Summarize the project\n",
    );
    assert_eq!(piped.code, 0, "{piped:?}");
    assert_eq!(piped.stdout, run.stdout);
}

/// `--json`: every stdout line is one event; the run starts, streams, calls three
/// tools in one parallel window (all start before any finishes) and ends `finished`.
#[test]
fn json_prints_the_event_stream() {
    let config = examples().join("iris.yaml");
    let run = run_in(
        &examples(),
        config.to_str().unwrap(),
        &["--json", "run", "Summarize the project"],
        &[],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr, "", "{run:?}");
    let events = json_lines(&run.stdout);
    let kinds = types(&events);
    assert_eq!(kinds[0], "run_started", "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"finished"), "{kinds:?}");
    assert_eq!(events[0]["provider"], "scripted");
    assert!(events[0]["run_id"].as_str().unwrap().starts_with("run_"));
    let window: Vec<&str> = kinds
        .iter()
        .copied()
        .filter(|k| k.starts_with("tool_call"))
        .collect();
    assert_eq!(
        window,
        [
            "tool_call_started",
            "tool_call_started",
            "tool_call_started",
            "tool_call_finished",
            "tool_call_finished",
            "tool_call_finished"
        ]
    );
    assert_eq!(kinds.iter().filter(|k| **k == "turn_started").count(), 2);
    let finished = &events.last().unwrap()["outcome"];
    assert_eq!(finished["status"], "completed");
    assert_eq!(finished["turns"], 2);
    assert_eq!(finished["usage"]["input_tokens"], 412 + 1630);
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert!(
        text.ends_with(finished["output"].as_str().unwrap()),
        "{text}"
    );
}

/// The YAML for a task against `wire`'s local server.
fn server_agent(model: &str) -> (tempfile::TempDir, String) {
    agent(&format!("tools:\n  builtin: [file.read]\n{model}"))
}

/// One multi-turn run against `wire`: the call's line on stderr, the two turns' text on
/// stdout, two requests (the second carrying the result: the server checks it).
fn assert_task(wire: Wire, server: &Server, run: &Run) {
    assert_eq!(run.code, 0, "{wire:?}: {run:?} {:#?}", server.requests());
    assert_eq!(
        run.stdout,
        format!("Reading the note.\nThe note says {NOTE}.\n"),
        "{wire:?}"
    );
    let line = format!("tool read_file ({}) ... ok", wire.call_id());
    assert!(run.stderr.lines().any(|l| l == line), "{wire:?}: {run:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{wire:?}");
    assert!(!wire.carries_tool_result(&requests[0].body), "{wire:?}");
    assert!(wire.carries_tool_result(&requests[1].body), "{wire:?}");
    assert_no_key(run);
}

/// OpenAI Chat Completions through `--model` and `--base-url`, replacing the YAML's
/// Anthropic model: the provider-neutral `max_output_tokens` is kept.
#[test]
fn a_run_against_openai_chat_completions() {
    let wire = Wire::Chat;
    let server = Server::start(move |n, r| wire.reply(n, r));
    let (dir, config) = server_agent(
        "model: {provider: anthropic, model: claude-sonnet-4-5, max_output_tokens: 256}\n",
    );
    let base = format!("{}{}", server.url(), wire.base_path());
    let run = run_in(
        dir.path(),
        &config,
        &[
            "run",
            "What does the note say?",
            "--model",
            "openai:gpt-4.1-mini",
            "--base-url",
            &base,
        ],
        &[("OPENAI_API_KEY", TEST_KEY)],
        "",
    );
    assert_task(wire, &server, &run);
    let first = &server.requests()[0].body;
    assert_eq!(first["model"], "gpt-4.1-mini");
    assert_eq!(first["max_completion_tokens"], 256);
}

/// OpenAI Responses from the YAML alone: `base_url` and `api_key_env`.
#[test]
fn a_run_against_openai_responses() {
    let wire = Wire::Responses;
    let server = Server::start(move |n, r| wire.reply(n, r));
    let (dir, config) = server_agent(&format!(
        "instructions: Answer from the files.\nmodel:\n  provider: openai-responses\n  model: \
         gpt-4.1-mini\n  base_url: {}{}\n  api_key_env: TEST_MODEL_API_KEY\n",
        server.url(),
        wire.base_path()
    ));
    let run = run_in(
        dir.path(),
        &config,
        &["run", "What does the note say?"],
        &[("TEST_MODEL_API_KEY", TEST_KEY)],
        "",
    );
    assert_task(wire, &server, &run);
    assert_eq!(
        server.requests()[0].body["instructions"],
        "Answer from the files."
    );
}

/// Anthropic Messages from the YAML, with `temperature`.
#[test]
fn a_run_against_anthropic_messages() {
    let wire = Wire::Anthropic;
    let server = Server::start(move |n, r| wire.reply(n, r));
    let (dir, config) = server_agent(&format!(
        "model:\n  provider: anthropic\n  model: claude-sonnet-4-5\n  base_url: {}\n  \
         api_key_env: TEST_MODEL_API_KEY\n  temperature: 0.5\n",
        server.url()
    ));
    let run = run_in(
        dir.path(),
        &config,
        &["run", "What does the note say?"],
        &[("TEST_MODEL_API_KEY", TEST_KEY)],
        "",
    );
    assert_task(wire, &server, &run);
    assert_eq!(server.requests()[0].body["temperature"], 0.5);
}

/// Gemini `generateContent`: `--base-url` over the YAML's Gemini model keeps its
/// `api_key_env` (the same provider keeps every key).
#[test]
fn a_run_against_gemini_generate_content() {
    let wire = Wire::Gemini;
    let server = Server::start(move |n, r| wire.reply(n, r));
    let (dir, config) = server_agent(
        "model: {provider: gemini, model: gemini-2.5-flash, api_key_env: TEST_MODEL_API_KEY}\n",
    );
    let base = format!("{}{}", server.url(), wire.base_path());
    let run = run_in(
        dir.path(),
        &config,
        &["run", "What does the note say?", "--base-url", &base],
        &[("TEST_MODEL_API_KEY", TEST_KEY)],
        "",
    );
    assert_task(wire, &server, &run);
}

/// A server that rejects the key: the run fails with PROVIDER_AUTH (exit 1, not
/// retried), and neither the text nor the JSON output shows the key.
#[test]
fn a_rejected_key_fails_the_run_without_printing_it() {
    let server = Server::start(|_, _| {
        Reply::Json(
            401,
            serde_json::json!({"error": {"message": "Incorrect API key provided: sk-test-****cdef.",
                "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}),
        )
    });
    let (dir, config) = server_agent("");
    let base = format!("{}/v1", server.url());
    let args = [
        "run",
        "Hi",
        "--model",
        "openai:gpt-4.1-mini",
        "--base-url",
        &base,
    ];
    let run = run_in(
        dir.path(),
        &config,
        &args,
        &[("OPENAI_API_KEY", TEST_KEY)],
        "",
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.starts_with("error[PROVIDER_AUTH]: "), "{run:?}");
    assert!(run.stderr.contains("Incorrect API key provided"), "{run:?}");
    assert_eq!(run.stdout, "", "{run:?}");
    assert_no_key(&run);
    assert_eq!(server.requests().len(), 1);

    let mut json_args = vec!["--json"];
    json_args.extend_from_slice(&args);
    let run = run_in(
        dir.path(),
        &config,
        &json_args,
        &[("OPENAI_API_KEY", TEST_KEY)],
        "",
    );
    assert_eq!(run.code, 1, "{run:?}");
    let events = json_lines(&run.stdout);
    let outcome = &events.last().unwrap()["outcome"];
    assert_eq!(outcome["status"], "failed");
    assert_eq!(outcome["error"]["code"], "PROVIDER_AUTH");
    assert_no_key(&run);
}

/// A scripted run whose one call needs approval (`execute_mode: confirm`).
const APPROVAL_AGENT: &str = "tools:\n  builtin: [exec.command]\nmodel:\n  provider: scripted\n  \
    script:\n    - text: Writing the marker.\n      tool_calls:\n        - {name: exec_command, \
    arguments: {command: echo ran > marker.txt}}\n    - {expect_tool_results: 1, text: Done.}\n";

/// Without a terminal the run waits before the call (exit 4, RUN_WAITING: the run id,
/// the question and the exact commands that answer it on stderr; in `--json` the
/// `finished` event and a `waiting` line say it); `--yes` approves.
#[test]
fn an_approval_without_a_terminal_waits_and_yes_approves() {
    let (dir, config) = agent(APPROVAL_AGENT);
    let marker = dir.path().join("marker.txt");
    let run = run_in(dir.path(), &config, &["run", "Write the marker"], &[], "");
    assert_eq!(run.code, 4, "{run:?}");
    assert_eq!(run.stdout, "Writing the marker.\n");
    assert!(
        run.stderr
            .lines()
            .any(|l| l == "tool exec_command (call_1_1) ... waiting for a human"),
        "{run:?}"
    );
    let lines: Vec<&str> = run.stderr.lines().collect();
    let waiting = lines[lines.len() - 4];
    assert!(
        waiting.starts_with("error[RUN_WAITING]: run run_"),
        "{waiting}"
    );
    assert!(
        waiting.contains(" waits for a human (approval): approve exec_command (call_1_1)?"),
        "{waiting}"
    );
    let run_id = waiting["error[RUN_WAITING]: run ".len()..]
        .split(' ')
        .next()
        .unwrap();
    assert_eq!(
        lines[lines.len() - 3..],
        [
            "iris: no terminal can answer here (`run --yes` approves every call); the run is saved: \
             answer it with",
            &*format!("  iris --config {config} resume {run_id} --approve"),
            &*format!("  iris --config {config} resume {run_id} --deny REASON"),
        ],
        "{run:?}"
    );
    assert!(!marker.exists());

    let run = run_in(
        dir.path(),
        &config,
        &["--json", "run", "Write the marker"],
        &[],
        "",
    );
    assert_eq!(run.code, 4, "{run:?}");
    assert_eq!(run.stderr, "", "{run:?}");
    let events = json_lines(&run.stdout);
    let requested = events
        .iter()
        .find(|e| e["type"] == "approval_requested")
        .unwrap();
    assert_eq!(requested["request"]["tool_name"], "exec_command");
    assert_eq!(
        requested["request"]["arguments"]["command"],
        "echo ran > marker.txt"
    );
    let outcome = &events[events.len() - 2]["outcome"];
    assert_eq!(outcome["status"], "waiting");
    assert_eq!(outcome["interaction"]["kind"], "approval");
    assert_eq!(outcome["run_id"], events[0]["run_id"]);
    let waiting = events.last().unwrap();
    assert_eq!(waiting["type"], "waiting");
    assert_eq!(waiting["code"], "RUN_WAITING");
    assert_eq!(waiting["kind"], "approval");
    assert_eq!(waiting["run_id"], events[0]["run_id"]);
    assert_eq!(waiting["answer_with"].as_array().unwrap().len(), 2);
    assert!(!marker.exists());

    let run = run_in(
        dir.path(),
        &config,
        &["run", "Write the marker", "--yes"],
        &[],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "Writing the marker.\nDone.\n");
    assert!(
        run.stderr
            .lines()
            .any(|l| l == "tool exec_command (call_1_1) ... ok (approved)"),
        "{run:?}"
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");
}

/// A tool error goes back to the model and shows as `error[CODE]`; the run goes on.
#[test]
fn a_failed_call_shows_its_code_and_the_run_continues() {
    let (dir, config) = agent(
        "tools:\n  builtin: [file.read]\nmodel:\n  provider: scripted\n  script:\n    - \
         tool_calls: [{name: read_file, arguments: {file_path: missing.txt}}]\n    - \
         {expect_tool_results: 1, text: \"There is no such file.\"}\n",
    );
    let run = run_in(dir.path(), &config, &["run", "Read missing.txt"], &[], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "There is no such file.\n");
    assert!(
        run.stderr
            .lines()
            .any(|l| l.starts_with("tool read_file (call_1_1) ... error[") && l.ends_with(']')),
        "{run:?}"
    );
}

/// Text from the model is escaped like every other output: it cannot drive the
/// terminal, and in `--json` it is exact.
#[test]
fn model_text_is_escaped() {
    let (dir, config) = agent(
        "model:\n  provider: scripted\n  script:\n    - text: \"\\e[31mred\\e[0m \\u202Eevil\\r\\nnext\"\n",
    );
    let run = run_in(dir.path(), &config, &["run", "Hi"], &[], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "\\x1b[31mred\\x1b[0m \\u{202e}evil\r\nnext\n");
    let run = run_in(dir.path(), &config, &["--json", "run", "Hi"], &[], "");
    let events = json_lines(&run.stdout);
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "\x1b[31mred\x1b[0m \u{202e}evil\r\nnext");
}

/// A run that exhausts `max_turns` fails with RUN_MAX_TURNS (exit 1).
#[test]
fn max_turns_fails_the_run() {
    let (dir, config) = agent(
        "tools:\n  builtin: [file.read]\nmax_turns: 1\nmodel:\n  provider: scripted\n  script:\n    \
         - tool_calls: [{name: read_file, arguments: {file_path: notes.txt}}]\n    - {text: never}\n",
    );
    let run = run_in(dir.path(), &config, &["run", "Loop"], &[], "");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .lines()
            .last()
            .unwrap()
            .starts_with("error[RUN_MAX_TURNS]: "),
        "{run:?}"
    );
}

/// The model flags and the model section: what cannot name a model is refused (exit 2
/// for a flag, 3 for the configuration — a missing key before anything starts, a client
/// that refuses its settings once the tools are assembled), with a typed code.
#[test]
fn model_flags_and_missing_models_are_typed_errors() {
    let (dir, scripted) = agent("model:\n  provider: scripted\n  script: [{text: Scripted.}]\n");
    let bare = dir.path().join("bare.yaml");
    std::fs::write(&bare, "tools:\n  builtin: [file.read]\n").unwrap();
    let bare = bare.to_str().unwrap();
    let rows: &[(&str, &[&str], i32, &str)] = &[
        (
            bare,
            &["--model", "nope:x"],
            2,
            "error[MODEL_FLAG_INVALID]: --model `nope:x`: unknown provider `nope`",
        ),
        (
            bare,
            &["--model", "openai"],
            2,
            "error[MODEL_FLAG_INVALID]: --model `openai`: provider `openai` needs the model's name",
        ),
        (
            bare,
            &["--model", "openai:"],
            2,
            "needs the model's name, e.g. openai:gpt-4.1-mini",
        ),
        (
            bare,
            &["--model", "scripted"],
            2,
            "error[MODEL_FLAG_INVALID]: --model scripted: the scripted model replays",
        ),
        (
            &scripted,
            &["--base-url", "http://127.0.0.1:9/v1"],
            2,
            "error[MODEL_FLAG_INVALID]: --base-url: the scripted model",
        ),
        (bare, &[], 3, "error[CONFIG_INVALID]: "),
        (
            bare,
            &["--model", "anthropic:claude-sonnet-4-5"],
            3,
            "needs an API key: set the environment variable ANTHROPIC_API_KEY",
        ),
        (
            bare,
            &[
                "--model",
                "openai:gpt-4.1-mini",
                "--base-url",
                "ftp://127.0.0.1/v1",
            ],
            3,
            "error[PROVIDER_CONFIG_INVALID]: ",
        ),
    ];
    for (config, flags, code, fragment) in rows {
        let mut args = vec!["--config", config, "run", "Hi"];
        args.extend_from_slice(flags);
        let mut command = super::command(dir.path(), &args, &[]);
        let out = command.env_remove("ANTHROPIC_API_KEY").output().unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(*code), "{flags:?}: {stderr}");
        assert!(stderr.contains(fragment), "{flags:?}: {stderr}");
        assert_eq!(out.stdout, b"", "{flags:?}");
    }
    // The missing key names its variable; the missing section says how to add one.
    let run = run_in(dir.path(), bare, &["run", "Hi"], &[], "");
    assert!(run.stderr.contains("no `model` section"), "{run:?}");

    // A script file is read when the run starts: relative to the YAML, and a missing
    // one is the provider's error before anything starts.
    let file_script = dir.path().join("file-script.yaml");
    std::fs::write(
        &file_script,
        "model: {provider: scripted, script: turns.yaml}\n",
    )
    .unwrap();
    let file_script = file_script.to_str().unwrap();
    let run = run_in(dir.path(), file_script, &["run", "Hi"], &[], "");
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.starts_with("error[PROVIDER_SCRIPT_INVALID]: "),
        "{run:?}"
    );
    std::fs::write(dir.path().join("turns.yaml"), "- text: From the file.\n").unwrap();
    let run = run_in(dir.path(), file_script, &["run", "Hi"], &[], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "From the file.\n");

    // `--model scripted` keeps the YAML's script; `scripted:NAME` names the model.
    let run = run_in(
        dir.path(),
        &scripted,
        &["--json", "run", "Hi", "--model", "scripted:demo"],
        &[],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    let events = json_lines(&run.stdout);
    assert_eq!(events[0]["model"], "demo");
    assert_eq!(events.last().unwrap()["outcome"]["output"], "Scripted.");

    // An empty prompt is refused; `--json` errors are JSON lines too.
    let run = run_in(dir.path(), &scripted, &["--json", "run", " "], &[], "");
    assert_eq!(run.code, 2, "{run:?}");
    let lines = json_lines(&run.stdout);
    assert_eq!(lines.len(), 1, "{run:?}");
    assert_eq!(lines[0]["error"]["code"], "RUN_INPUT_INVALID");
}

/// The bound on waiting for the terminal's output; far above what a passing run needs.
const DEADLINE: Duration = Duration::from_secs(60);

/// A pseudo-terminal: `iris` gets the slave as stdin and stderr, the test reads what
/// it draws from the master and types into it.
pub(crate) struct Pty {
    master: File,
    slave: std::path::PathBuf,
    screen: mpsc::Receiver<Vec<u8>>,
    seen: String,
}

impl Pty {
    pub(crate) fn open() -> Self {
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
        grantpt(&master).unwrap();
        unlockpt(&master).unwrap();
        let slave = ptsname(&master, Vec::new()).unwrap();
        let slave = std::path::PathBuf::from(slave.into_string().unwrap());
        let master = File::from(master);
        let mut reader = master.try_clone().unwrap();
        let (tx, screen) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0_u8; 4096];
            // Ends with EIO once no process holds the slave any more.
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Self {
            master,
            slave,
            screen,
            seen: String::new(),
        }
    }

    /// `iris args…` in `cwd` with this terminal as its stdin and stderr, stdout piped.
    pub(crate) fn spawn_iris(
        &self,
        cwd: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> std::process::Child {
        let mut command = super::command(cwd, args, env);
        command
            .stdin(self.slave())
            .stderr(self.slave())
            .stdout(Stdio::piped());
        // The parent's copies of the slave go with the command when it returns.
        command.spawn().unwrap()
    }

    /// The slave end, opened once more for one of the child's streams.
    pub(crate) fn slave(&self) -> Stdio {
        let fd = rustix::fs::open(
            &self.slave,
            OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        Stdio::from(File::from(fd))
    }

    /// Reads until the terminal shows `fragment` (at most [`DEADLINE`]).
    pub(crate) fn until(&mut self, fragment: &str) {
        let start = Instant::now();
        while !self.seen.contains(fragment) {
            assert!(
                start.elapsed() < DEADLINE,
                "no {fragment:?} in {:?}",
                self.seen
            );
            if let Ok(bytes) = self.screen.recv_timeout(Duration::from_millis(100)) {
                self.seen.push_str(&String::from_utf8_lossy(&bytes));
            }
        }
    }

    /// Everything left once `iris` exited.
    pub(crate) fn rest(&mut self) -> &str {
        let start = Instant::now();
        while start.elapsed() < DEADLINE {
            match self.screen.recv_timeout(Duration::from_millis(100)) {
                Ok(bytes) => self.seen.push_str(&String::from_utf8_lossy(&bytes)),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        &self.seen
    }

    /// What the terminal showed so far.
    pub(crate) fn seen_text(&self) -> &str {
        &self.seen
    }

    pub(crate) fn type_line(&mut self, text: &str) {
        self.master.write_all(text.as_bytes()).unwrap();
    }
}

/// On a terminal the call is asked (tool, call id, reason, the exact arguments), the
/// calls in flight share an updating status line, and the answer decides: `y` runs the
/// call, `n` denies it (the model gets APPROVAL_DENIED and goes on).
#[test]
fn a_terminal_is_asked_and_shows_a_status_line() {
    let (dir, config) = agent(APPROVAL_AGENT);
    let marker = dir.path().join("marker.txt");
    for (answer, line, ran) in [
        (
            "y\n",
            "tool exec_command (call_1_1) ... ok (approved) (",
            true,
        ),
        (
            "n\n",
            "tool exec_command (call_1_1) ... error[APPROVAL_DENIED] (",
            false,
        ),
    ] {
        let _ = std::fs::remove_file(&marker);
        let mut pty = Pty::open();
        let child = pty.spawn_iris(
            dir.path(),
            &["--config", &config, "run", "Write the marker"],
            &[],
        );
        pty.until("Run it? [y/N] ");
        pty.type_line(answer);
        let out = child.wait_with_output().unwrap();
        let screen = pty.rest().to_owned();
        assert_eq!(out.status.code(), Some(0), "{screen}");
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            "Writing the marker.\nDone.\n"
        );
        for fragment in [
            "iris: run run_",
            "iris: exec_command (call_1_1) needs approval: ",
            "  arguments: {\"command\":\"echo ran > marker.txt\"}",
            // The status line: erased and redrawn in place.
            "\r\x1b[2K",
            " tool exec_command (call_1_1) ... ",
            line,
        ] {
            assert!(screen.contains(fragment), "{fragment:?} in {screen:?}");
        }
        assert_eq!(marker.exists(), ran, "{screen}");
    }
}

/// An agent that asks which greeting to use, then writes a file (which needs approval).
const ASK_AGENT: &str = "tools:\n  builtin: [file.write, human.ask]\nmodel:\n  provider: \
    scripted\n  script:\n    - text: Let me ask.\n      tool_calls: [{name: ask_question, \
    arguments: {question: Which greeting?, options: [hi, hello]}}]\n    - {expect_tool_results: \
    1, tool_calls: [{name: write_file, arguments: {file_path: hello.txt, content: \"hi\\n\"}}]}\n    \
    - {expect_tool_results: 1, text: Done.}\n";

/// `iris --config CONFIG args…` on a pseudo-terminal (stdin and stderr), stdout piped.
fn on_terminal(dir: &Path, config: &str, args: &[&str]) -> (Pty, std::process::Child) {
    let pty = Pty::open();
    let mut all = vec!["--config", config];
    all.extend_from_slice(args);
    let child = pty.spawn_iris(dir, &all, &[]);
    (pty, child)
}

/// The first run's history, from `iris runs show --json`.
fn stored_answer(dir: &Path, config: &str) -> Value {
    let list = run_in(dir, config, &["--json", "runs"], &[], "");
    let list: Value = serde_json::from_str(&list.stdout).unwrap();
    let run_id = list["runs"][0]["run_id"].as_str().unwrap().to_owned();
    let show = run_in(dir, config, &["--json", "runs", "show", &run_id], &[], "");
    let show: Value = serde_json::from_str(&show.stdout).unwrap();
    show["run"]["history"][2]["content"][0].clone()
}

/// On a terminal `ask_question` is asked too: the question and its numbered options;
/// an answer that is not an option is refused and asked again; an option's number
/// picks it. The run goes on to ask the approval of its write.
#[test]
fn a_terminal_answers_a_question_and_a_wrong_option_is_asked_again() {
    let (dir, config) = agent(ASK_AGENT);
    let (mut pty, child) = on_terminal(dir.path(), &config, &["run", "Greet"]);
    pty.until("Answer (an option or its number): ");
    for fragment in [
        "iris: the agent asks (call_1_1): Which greeting?",
        "  1) hi",
        "  2) hello",
    ] {
        assert!(
            pty.seen.contains(fragment),
            "{fragment:?} in {:?}",
            pty.seen
        );
    }
    pty.type_line("maybe\n");
    pty.until(
        "iris: `maybe` is not one of the options (hi | hello); type one of them or its number",
    );
    pty.type_line("2\n");
    pty.until("Run it? [y/N] ");
    pty.type_line("y\n");
    let out = child.wait_with_output().unwrap();
    let screen = pty.rest().to_owned();
    assert_eq!(out.status.code(), Some(0), "{screen}");
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "Let me ask.\nDone.\n"
    );
    assert!(
        screen.contains("tool write_file (call_2_1) ... ok (approved) ("),
        "{screen}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("hello.txt")).unwrap(),
        "hi\n"
    );
    let answer = stored_answer(dir.path(), &config);
    assert_eq!(answer["tool_name"], "ask_question", "{answer}");
    assert_eq!(answer["content"][0]["text"], "hello", "{answer}");
}

/// `iris resume` shows the continued run like `iris run`: on a terminal the next
/// approval is asked there.
#[test]
fn a_resumed_run_asks_its_next_approval_on_the_terminal() {
    let (dir, config) = agent(ASK_AGENT);
    let run = run_in(dir.path(), &config, &["run", "Greet"], &[], "");
    assert_eq!(run.code, 4, "{run:?}");
    let command = run
        .stderr
        .lines()
        .find(|l| l.ends_with(" --answer hi"))
        .unwrap();
    let run_id = command
        .split(" resume ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let (mut pty, child) = on_terminal(dir.path(), &config, &["resume", run_id, "--answer", "hi"]);
    pty.until("iris: write_file (call_2_1) needs approval: ");
    pty.until("Run it? [y/N] ");
    pty.type_line("n\n");
    let out = child.wait_with_output().unwrap();
    let screen = pty.rest().to_owned();
    assert_eq!(out.status.code(), Some(0), "{screen}");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "Done.\n");
    for fragment in [
        &*format!("iris: run {run_id} (scripted:scripted)"),
        "tool ask_question (call_1_1) ... ok",
        "tool write_file (call_2_1) ... error[APPROVAL_DENIED] (",
    ] {
        assert!(screen.contains(fragment), "{fragment:?} in {screen:?}");
    }
    assert!(!dir.path().join("hello.txt").exists());
    assert_eq!(
        stored_answer(dir.path(), &config)["content"][0]["text"],
        "hi"
    );
}

/// A subagent's approval is asked on the terminal like the agent's own (the child
/// answers through the parent's handler); `y` runs the child's write and the run
/// completes without waiting.
#[test]
fn a_subagents_approval_is_asked_on_the_terminal() {
    let dir = super::subagent::example();
    let (mut pty, child) = on_terminal(dir.path(), "iris.yaml", &["run", "Summarize the notes"]);
    pty.until("Run it? [y/N] ");
    pty.type_line("y\n");
    let out = child.wait_with_output().unwrap();
    let screen = pty.rest().to_owned();
    assert_eq!(out.status.code(), Some(0), "{screen}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.ends_with(&format!("{}\n", super::subagent::FINAL)),
        "{stdout}"
    );
    for fragment in [
        "iris: write_file (call_1_1) needs approval: ",
        "tool write_file (scribe:call_1_1) ... ok (approved) (",
        "tool subagent (call_2_1) ... ok (",
    ] {
        assert!(screen.contains(fragment), "{fragment:?} in {screen:?}");
    }
    assert!(dir.path().join("notes/summary.md").is_file(), "{screen}");
}

/// On a terminal an MCP server's request for input is asked: `iris call` fills a
/// form field by field, `iris run` shows a URL and asks whether the user went
/// there; the answers reach the server.
#[test]
fn a_terminal_answers_mcp_elicitations() {
    let dir = super::mcp::agent_with("", &["--extra-tools"]);
    let mut pty = Pty::open();
    let child = pty.spawn_iris(
        dir.path(),
        &["--trust", "call", "mcp__fixture__ask_form"],
        &[],
    );
    pty.until("asks for input during mcp__fixture__ask_form");
    pty.until("Answer it? [Y/n] ");
    pty.type_line("y\n");
    pty.until("Colour (string, required): ");
    pty.type_line("blue\n");
    let out = child.wait_with_output().unwrap();
    let screen = pty.rest().to_owned();
    assert_eq!(out.status.code(), Some(0), "{screen}");
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "action=accept colour=blue\n"
    );

    let script = "model:\n  provider: scripted\n  script:\n    - tool_calls: [{name: mcp__fixture__ask_url}]\n    - {expect_tool_results: 1, text: Signed in.}\n";
    let dir = super::mcp::agent_with(script, &["--extra-tools"]);
    let mut pty = Pty::open();
    let child = pty.spawn_iris(dir.path(), &["--trust", "run", "--yes", "Sign in"], &[]);
    pty.until("open: http://127.0.0.1:9/signin");
    pty.until("Did you open it and finish there? [y/N] ");
    pty.type_line("y\n");
    let out = child.wait_with_output().unwrap();
    let screen = pty.rest().to_owned();
    assert_eq!(out.status.code(), Some(0), "{screen}");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "Signed in.\n");
    assert!(
        screen.contains("tool mcp__fixture__ask_url (call_1_1) ... ok (approved)"),
        "{screen}"
    );
}

/// MCP progress of a call in a run: on the terminal's status line, and as
/// `progress` events in `--json`.
#[test]
fn mcp_progress_shows_on_the_status_line_and_in_json() {
    let script = "model:\n  provider: scripted\n  script:\n    - tool_calls: [{name: mcp__fixture__progress, arguments: {steps: 4, interval: 0.5}}]\n    - {expect_tool_results: 1, text: Done.}\n";
    let dir = super::mcp::agent_with(script, &["--extra-tools"]);
    let run: Run = super::iris(
        dir.path(),
        &["--trust", "--json", "run", "--yes", "go"],
        &[],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    let events: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let progress: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["type"] == "progress").collect();
    assert_eq!(progress.len(), 4, "{events:#?}");
    assert_eq!(progress[3]["progress"], 4.0);
    assert_eq!(progress[3]["total"], 4.0);
    assert_eq!(progress[3]["tool_name"], "mcp__fixture__progress");
    assert_eq!(progress[3]["message"], "step 4 of 4");

    let mut pty = Pty::open();
    let child = pty.spawn_iris(dir.path(), &["--trust", "run", "--yes", "go"], &[]);
    pty.until("tool mcp__fixture__progress (call_1_1) 2/4 step 2 of 4");
    let out = child.wait_with_output().unwrap();
    let screen = pty.rest().to_owned();
    assert_eq!(out.status.code(), Some(0), "{screen}");
}

/// A call the MCP server makes a task: `iris run` shows it running in the
/// background, the model goes on, the task's progress and status messages show as
/// lines while it runs, and its result is shown when it finishes (in `--json`:
/// `progress` events for the call, then a `background_finished` event naming it).
#[test]
fn an_mcp_task_runs_in_the_background_of_iris_run() {
    let script = "model:\n  provider: scripted\n  script:\n    - tool_calls: [{name: mcp__fixture__slow_task, arguments: {seconds: 1.0, steps: 2}}]\n    - {expect_tool_results: 1, text: Waiting for the task.}\n    - {text: The task is done.}\n";
    let dir = super::mcp::agent_with(script, &["--extra-tools"]);
    let text = iris(dir.path(), &["--trust", "run", "--yes", "go"], &[], "");
    assert_eq!(text.code, 0, "{text:?}");
    assert_eq!(
        text.stdout, "Waiting for the task.\nThe task is done.\n",
        "{text:?}"
    );
    for line in [
        "tool mcp__fixture__slow_task (call_1_1) ... running in the background",
        "tool mcp__fixture__slow_task (call_1_1) ... background: 0 queued",
        "tool mcp__fixture__slow_task (call_1_1) ... background: 1/2 step 1 of 2",
        "tool mcp__fixture__slow_task (call_1_1) ... background: 2/2 step 2 of 2",
        "tool mcp__fixture__slow_task (call_1_1) ... background call finished ok",
    ] {
        assert!(text.stderr.contains(line), "{line:?} in {text:?}");
    }
    let lines: Vec<&str> = text.stderr.lines().collect();
    let at = |want: &str| lines.iter().position(|l| l.contains(want)).unwrap();
    let (started, ended) = (at("running in the background"), at("finished ok"));
    for want in ["step 1 of 2", "phase 1 of 2", "step 2 of 2", "phase 2 of 2"] {
        let i = at(want);
        assert!(started < i && i < ended, "{want:?} in order in {text:?}");
        assert!(lines[i].contains("... background: "), "{}", lines[i]);
    }
    let json = iris(
        dir.path(),
        &["--trust", "--json", "run", "--yes", "go"],
        &[],
        "",
    );
    assert_eq!(json.code, 0, "{json:?}");
    let events = json_lines(&json.stdout);
    let receipt = events
        .iter()
        .find(|e| e["type"] == "tool_call_finished")
        .unwrap();
    assert_eq!(
        receipt["result"]["data"]["background"]["mcp_task"]["server"], "fixture",
        "{receipt}"
    );
    let done = events
        .iter()
        .find(|e| e["type"] == "background_finished")
        .unwrap_or_else(|| panic!("{events:#?}"));
    assert_eq!(done["result"]["tool_use_id"], "call_1_1", "{done}");
    let progress: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["type"] == "progress").collect();
    assert_eq!(progress.len(), 5, "{events:#?}");
    assert!(
        progress
            .iter()
            .all(|p| p["call_id"] == "call_1_1" && p["tool_name"] == "mcp__fixture__slow_task"),
        "{progress:#?}"
    );
    assert_eq!(
        done["result"]["content"][0]["text"], "task done after 1.0s",
        "{done}"
    );

    // `iris call` has no run loop: the task is polled to its end within the call.
    let call = iris(
        dir.path(),
        &[
            "--trust",
            "call",
            "--yes",
            "mcp__fixture__slow_task",
            "{\"seconds\": 0.2}",
        ],
        &[],
        "",
    );
    assert_eq!(call.code, 0, "{call:?}");
    assert_eq!(call.stdout, "task done after 0.2s\n", "{call:?}");
}

/// A local OpenAI-compatible server whose model writes `out.txt` (a write that waits
/// for approval), then answers `Written.` once the write's result comes back.
fn writing_server() -> Server {
    use super::wire::{chat_chunk, openai_sse};
    use serde_json::json;
    Server::start(|n, request| {
        let call = json!({"tool_calls": [{"index": 0, "id": "call_w", "type": "function",
            "function": {"name": "write_file",
                "arguments": "{\"file_path\": \"out.txt\", \"content\": \"hi\"}"}}]});
        let carries_result = request.body["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        match n {
            0 => Reply::Sse(openai_sse(&[
                chat_chunk(call, None),
                chat_chunk(json!({}), Some("tool_calls")),
            ])),
            _ if carries_result => Reply::Sse(openai_sse(&[
                chat_chunk(json!({"content": "Written."}), None),
                chat_chunk(json!({}), Some("stop")),
            ])),
            _ => Reply::Json(400, json!({"error": {"message": "no tool result"}})),
        }
    })
}

/// `iris run --model … --base-url …` that waits for an approval is resumed on the same
/// model and server by the printed command, run as printed (the YAML names no model);
/// `--model` or `--base-url` naming another one is refused without `--switch-model`.
#[test]
fn resume_continues_on_the_model_the_run_started_with() {
    let server = writing_server();
    let other = writing_server();
    let (dir, config) = agent("tools:\n  builtin: [file.write]\n");
    let base = format!("{}/v1", server.url());
    let key = [("OPENAI_API_KEY", TEST_KEY)];
    let run = run_in(
        dir.path(),
        &config,
        &[
            "run",
            "Write it",
            "--model",
            "openai:llama3.1",
            "--base-url",
            &base,
        ],
        &key,
        "",
    );
    assert_eq!(run.code, 4, "{run:?}");
    let printed: Vec<&str> = run
        .stderr
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("iris ") && l.contains(" resume "))
        .collect();
    let approve = printed
        .iter()
        .find(|l| l.ends_with("--approve"))
        .unwrap_or_else(|| panic!("no approve command: {run:?}"));
    let words: Vec<&str> = approve.split_whitespace().collect();
    assert!(
        !approve.contains(['\'', '"']),
        "quoted words need a shell: {approve}"
    );

    // Another model or server is refused, and nothing is sent anywhere.
    let other_base = format!("{}/v1", other.url());
    for flags in [
        vec!["--model", "openai:gpt-4.1-mini"],
        vec!["--base-url", other_base.as_str()],
    ] {
        let mut args = words[1..].to_vec();
        args.extend_from_slice(&flags);
        let refused = iris(dir.path(), &args, &key, "");
        assert_eq!(refused.code, 2, "{flags:?}: {refused:?}");
        assert!(
            refused.stderr.contains("MODEL_SWITCH_REFUSED"),
            "{refused:?}"
        );
    }
    assert!(other.requests().is_empty());

    // The printed command, as printed: the same server gets the rest of the run.
    let resumed = iris(dir.path(), &words[1..], &key, "");
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert_eq!(resumed.stdout, "Written.\n", "{resumed:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "hi"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert_eq!(requests[1].body["model"], "llama3.1");
    assert!(other.requests().is_empty());
    assert_no_key(&resumed);
    // The store keeps the model's settings, never its key.
    let stored = std::fs::read(dir.path().join(".iris/runs.db")).unwrap();
    let stored = String::from_utf8_lossy(&stored);
    assert!(stored.contains("llama3.1") && !stored.contains(TEST_KEY));
}
