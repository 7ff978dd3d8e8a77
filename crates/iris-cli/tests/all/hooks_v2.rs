//! Hooks v2 through the `iris` binary (issue 30): each new reply — `updated_input`,
//! `ask`, `additional_context` — answered by a command hook (a real process) and by an
//! HTTP hook (a server on 127.0.0.1), against a model served on 127.0.0.1 in the OpenAI
//! Chat Completions wire format, which records every request the run makes.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::wire::{Recorded, Reply, Server, TEST_KEY, chat_chunk, openai_sse};
use super::{Run, iris};

/// A secret an HTTP hook's header names through `${HOOK_TOKEN}`; no output shows it.
const HOOK_TOKEN: &str = "hook-token-5b1e0c9a77d4";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handler {
    Command,
    Http,
}

const HANDLERS: [Handler; 2] = [Handler::Command, Handler::Http];

/// One model turn: calls (name, arguments), or a final text.
enum Turn {
    Call(&'static str, Value),
    Text(&'static str),
}

fn usage_chunk() -> Value {
    json!({"id": "chatcmpl-hooks", "object": "chat.completion.chunk", "created": 1741570283,
        "model": "gpt-4.1-mini-2025-04-14", "choices": [],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}})
}

/// The SSE body of one turn; call ids are `call_<request>`.
fn turn_sse(n: usize, turn: &Turn) -> String {
    match turn {
        Turn::Call(name, arguments) => openai_sse(&[
            chat_chunk(json!({"role": "assistant", "content": ""}), None),
            chat_chunk(
                json!({"tool_calls": [{"index": 0, "id": format!("call_{n}"), "type": "function",
                    "function": {"name": name, "arguments": arguments.to_string()}}]}),
                None,
            ),
            chat_chunk(json!({}), Some("tool_calls")),
            usage_chunk(),
        ]),
        Turn::Text(text) => openai_sse(&[
            chat_chunk(json!({"role": "assistant", "content": text}), None),
            chat_chunk(json!({}), Some("stop")),
            usage_chunk(),
        ]),
    }
}

/// A model that plays `turns` in order (across processes: a resumed run asks the same
/// server), and records each request.
fn serve_model(turns: Vec<Turn>) -> Server {
    Server::start(move |n, _| match turns.get(n) {
        Some(turn) => Reply::Sse(turn_sse(n, turn)),
        None => Reply::Json(400, json!({"error": {"message": "no more turns"}})),
    })
}

/// The peer of one hook: the HTTP server answering it (which records the events), or
/// the log file a command hook appends each event to.
struct Peer {
    server: Option<Server>,
    log: std::path::PathBuf,
}

impl Peer {
    /// The events the hook received, in order.
    fn events(&self) -> Vec<Value> {
        match &self.server {
            Some(server) => server.requests().into_iter().map(|r| r.body).collect(),
            None => std::fs::read_to_string(&self.log)
                .unwrap_or_default()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect(),
        }
    }

    fn requests(&self) -> Vec<Recorded> {
        self.server
            .as_ref()
            .map(Server::requests)
            .unwrap_or_default()
    }
}

/// A hook named `name` on `event` answering `reply` every time, as the YAML's
/// `handler:` mapping, with its peer. A command hook appends each event (one line) to
/// `<dir>/<name>.events`; an HTTP hook's server records them, and its
/// `Authorization` header names `${HOOK_TOKEN}`.
fn hook(handler: Handler, dir: &Path, name: &str, reply: &Value) -> (Value, Peer) {
    let log = dir.join(format!("{name}.events"));
    match handler {
        Handler::Command => {
            let quoted = reply.to_string().replace('\'', "'\\''");
            let command = format!(
                "{{ cat; echo; }} >> '{}'; printf '%s' '{quoted}'",
                log.display()
            );
            (
                json!({"type": "command", "command": command}),
                Peer { server: None, log },
            )
        }
        Handler::Http => {
            let reply = reply.clone();
            let server = Server::start(move |_, _| Reply::Json(200, reply.clone()));
            let spec = json!({"type": "http", "url": format!("{}/hooks/{name}", server.url()),
                "headers": {"Authorization": "Bearer ${HOOK_TOKEN}"}, "timeout_seconds": 10});
            (
                spec,
                Peer {
                    server: Some(server),
                    log,
                },
            )
        }
    }
}

/// A workspace whose `iris.yaml` (written as JSON, which YAML reads) has the file
/// tools, `write_mode: allow` (so only a hook asks), the model at `model` and `hooks`.
fn workspace(model: &Server, hooks: Value) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_yaml(dir.path(), model, hooks);
    dir
}

fn write_yaml(dir: &Path, model: &Server, hooks: Value) {
    let yaml = json!({
        "tools": {"builtin": ["file.read", "file.write"]},
        "permissions": {"write_mode": "allow"},
        "model": {"provider": "openai", "model": "gpt-4.1-mini",
            "base_url": format!("{}/v1", model.url()), "api_key_env": "TEST_MODEL_API_KEY"},
        "hooks": hooks,
    });
    std::fs::write(dir.join("iris.yaml"), yaml.to_string()).unwrap();
}

const ENV: &[(&str, &str)] = &[("TEST_MODEL_API_KEY", TEST_KEY), ("HOOK_TOKEN", HOOK_TOKEN)];

/// `iris --trust args…` in `dir`.
fn at(dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["--trust"];
    all.extend_from_slice(args);
    let run = iris(dir, &all, ENV, "");
    assert!(
        !run.stdout.contains(HOOK_TOKEN) && !run.stderr.contains(HOOK_TOKEN),
        "the hook's secret header was printed: {run:?}"
    );
    run
}

/// The `--json` events of a run.
fn events(run: &Run) -> Vec<Value> {
    run.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}: {run:?}")))
        .collect()
}

fn finished_call(events: &[Value]) -> &Value {
    &events
        .iter()
        .find(|e| e["type"] == "tool_call_finished")
        .unwrap_or_else(|| panic!("no finished call: {events:#?}"))["result"]
}

/// The `tool` message of the model's request `n` (the call's result as the model saw
/// it), as text.
fn tool_message(model: &Server, n: usize) -> String {
    let requests = model.requests();
    let messages = requests[n].body["messages"].as_array().unwrap().clone();
    messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The HTTP hook got its header from the environment.
fn assert_secret_header(handler: Handler, peer: &Peer) {
    if handler == Handler::Http {
        let requests = peer.requests();
        assert!(!requests.is_empty());
        for r in requests {
            assert_eq!(
                r.header("authorization"),
                Some(&*format!("Bearer {HOOK_TOKEN}"))
            );
            assert_eq!(r.header("content-type"), Some("application/json"));
        }
    }
}

/// `updated_input`: the call runs with the rewritten input; the events show the call as
/// the model made it and the result's `input_rewrite` (original and rewritten); the
/// model's view of the result and the run record's history name the rewrite.
#[test]
fn a_rewritten_input_runs_and_both_inputs_are_shown() {
    for handler in HANDLERS {
        let model = serve_model(vec![
            Turn::Call(
                "write_file",
                json!({"file_path": "draft.txt", "content": "hi\n"}),
            ),
            Turn::Text("Saved."),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let (spec, peer) = hook(
            handler,
            dir.path(),
            "pin",
            &json!({"updated_input": {"file_path": "notes/draft.txt", "content": "hi\n"}}),
        );
        write_yaml(
            dir.path(),
            &model,
            json!([{"name": "pin", "event": "tool.before", "tools": ["write_file"], "handler": spec.clone()}]),
        );
        let run = at(dir.path(), &["--json", "run", "Save a draft"]);
        assert_eq!(run.code, 0, "{handler:?}: {run:?}");
        assert!(dir.path().join("notes/draft.txt").exists(), "{handler:?}");
        assert!(!dir.path().join("draft.txt").exists(), "{handler:?}");

        let events = events(&run);
        let started = events
            .iter()
            .find(|e| e["type"] == "tool_call_started")
            .unwrap();
        assert_eq!(
            started["arguments"]["file_path"], "draft.txt",
            "{handler:?}"
        );
        let result = finished_call(&events);
        assert_eq!(result["is_error"], false, "{result}");
        assert_eq!(
            result["input_rewrite"],
            json!({"hooks": ["pin"],
                "original": {"file_path": "draft.txt", "content": "hi\n"},
                "updated": {"file_path": "notes/draft.txt", "content": "hi\n"}}),
            "{handler:?}"
        );
        let note = r#"[hook `pin` rewrote this call's input to {\"content\":\"hi\\n\",\"file_path\":\"notes/draft.txt\"}]"#;
        assert!(
            tool_message(&model, 1).contains(note),
            "{handler:?}: {}",
            tool_message(&model, 1)
        );

        // The hook saw the call as the model made it.
        let seen = peer.events();
        assert_eq!(seen.len(), 1, "{handler:?}: {seen:?}");
        assert_eq!(seen[0]["event"], "tool.before");
        assert_eq!(seen[0]["arguments"]["file_path"], "draft.txt");
        assert_secret_header(handler, &peer);

        // The run record: the call's own arguments, and the result naming the rewrite.
        let run_id = events[0]["run_id"].as_str().unwrap();
        let show = at(dir.path(), &["runs", "show", run_id]);
        assert!(
            show.stdout.contains(
                "assistant: call write_file (call_0) {\"content\":\"hi\\n\",\"file_path\":\"draft.txt\"}"
            ),
            "{show:?}"
        );
        assert!(
            show.stdout.contains("[hook `pin` rewrote this call's input to {\"content\":\"hi\\n\",\"file_path\":\"notes/draft.txt\"}]"),
            "{show:?}"
        );

        // Text mode: the call's line says its input was rewritten, and by whom (the
        // file goes first: overwriting it would need a read first).
        std::fs::remove_file(dir.path().join("notes/draft.txt")).unwrap();
        let again = serve_model(vec![
            Turn::Call(
                "write_file",
                json!({"file_path": "draft.txt", "content": "hi\n"}),
            ),
            Turn::Text("Saved."),
        ]);
        write_yaml(
            dir.path(),
            &again,
            json!([{"name": "pin", "event": "tool.before", "handler": spec}]),
        );
        let text = at(dir.path(), &["run", "Save a draft"]);
        assert_eq!(text.code, 0, "{text:?}");
        assert_eq!(
            text.stderr, "tool write_file (call_0) ... ok (input rewritten by pin)\n",
            "{handler:?}: {text:?}"
        );
    }
}

/// A rewrite is checked like the model's own input: one that does not match the tool's
/// schema is HOOK_INPUT_INVALID, one that leaves the workspace is refused by the
/// workspace policy; neither runs, and the model sees why.
#[test]
fn rewrites_are_validated_and_still_confined_to_the_workspace() {
    let cases = [
        (
            json!({"file_path": 7, "content": "hi\n"}),
            "HOOK_INPUT_INVALID",
            "hook `pin` rewrote the input of `write_file` to arguments that are not valid",
        ),
        (
            json!({"file_path": "../outside.txt", "content": "hi\n"}),
            "PERMISSION_DENIED",
            "outside",
        ),
    ];
    for handler in HANDLERS {
        for (updated, code, fragment) in &cases {
            let model = serve_model(vec![
                Turn::Call(
                    "write_file",
                    json!({"file_path": "draft.txt", "content": "hi\n"}),
                ),
                Turn::Text("Done."),
            ]);
            let parent = tempfile::tempdir().unwrap();
            let dir = parent.path().join("ws");
            std::fs::create_dir(&dir).unwrap();
            let (spec, _peer) = hook(handler, &dir, "pin", &json!({"updated_input": updated}));
            write_yaml(
                &dir,
                &model,
                json!([{"name": "pin", "event": "tool.before", "handler": spec}]),
            );
            let run = at(&dir, &["--json", "run", "Save a draft"]);
            assert_eq!(run.code, 0, "{handler:?} {updated}: {run:?}");
            let events = events(&run);
            let result = finished_call(&events);
            assert_eq!(result["error"]["code"], *code, "{handler:?}: {result}");
            assert_eq!(result["input_rewrite"]["updated"], *updated, "{result}");
            let seen = tool_message(&model, 1);
            assert!(seen.contains(&format!("Error[{code}]")), "{seen}");
            assert!(seen.contains(fragment), "{handler:?}: {seen}");
            assert!(!dir.join("draft.txt").exists());
            assert!(!parent.path().join("outside.txt").exists(), "escaped");
        }
    }
}

/// `ask`: an allowed call waits for a human like a `require_human` decision — the run
/// is saved waiting (exit 4) with the hook's reason; a new process approves it, the
/// hooks run again for the approved call, and the run completes. A denial from a new
/// process keeps the call from running.
#[test]
fn ask_waits_durably_and_a_new_process_answers_it() {
    for handler in HANDLERS {
        for approve in [true, false] {
            let model = serve_model(vec![
                Turn::Call(
                    "write_file",
                    json!({"file_path": "draft.txt", "content": "hi\n"}),
                ),
                Turn::Text("Done."),
            ]);
            let dir = tempfile::tempdir().unwrap();
            let (spec, peer) = hook(
                handler,
                dir.path(),
                "review",
                &json!({"ask": "drafts are reviewed"}),
            );
            write_yaml(
                dir.path(),
                &model,
                json!([{"name": "review", "event": "tool.before", "handler": spec}]),
            );
            let run = at(dir.path(), &["run", "Save a draft"]);
            assert_eq!(run.code, 4, "{handler:?}: {run:?}");
            let waiting = run
                .stderr
                .lines()
                .find(|l| l.starts_with("error[RUN_WAITING]: run "))
                .unwrap_or_else(|| panic!("{run:?}"));
            let run_id = waiting["error[RUN_WAITING]: run ".len()..]
                .split(' ')
                .next()
                .unwrap()
                .to_owned();
            assert!(
                waiting.ends_with(
                    "waits for a human (approval): approve write_file (call_0)? hook `review` \
                     asks before `write_file` runs: drafts are reviewed"
                ),
                "{run:?}"
            );
            assert!(!dir.path().join("draft.txt").exists());
            assert_eq!(peer.events().len(), 1, "{handler:?}");

            let shown: Value =
                serde_json::from_str(&at(dir.path(), &["--json", "runs", "show", &run_id]).stdout)
                    .unwrap();
            assert_eq!(shown["run"]["status"], "waiting", "{shown}");
            assert_eq!(
                shown["run"]["interaction"]["interaction"]["arguments"]["file_path"], "draft.txt",
                "{shown}"
            );

            let answer = if approve {
                vec!["resume", &run_id, "--approve"]
            } else {
                vec!["resume", &run_id, "--deny", "not now"]
            };
            let resumed = at(dir.path(), &answer);
            assert_eq!(resumed.code, 0, "{handler:?} {approve}: {resumed:?}");
            assert_eq!(resumed.stdout, "Done.\n", "{resumed:?}");
            assert_eq!(
                dir.path().join("draft.txt").exists(),
                approve,
                "{handler:?} {approve}"
            );
            if approve {
                assert_eq!(
                    resumed.stderr, "tool write_file (call_0) ... ok (approved)\n",
                    "{resumed:?}"
                );
                // The approved call went through the hooks again.
                let seen = peer.events();
                assert_eq!(seen.len(), 2, "{handler:?}: {seen:?}");
                assert_eq!(seen[1]["event"], "tool.before");
                assert_eq!(seen[1]["call_id"], "call_0");
            } else {
                assert_eq!(peer.events().len(), 1, "a denied call runs no hook");
                assert!(
                    tool_message(&model, 1).contains("not now"),
                    "{}",
                    tool_message(&model, 1)
                );
            }
            assert_secret_header(handler, &peer);
        }
    }
}

/// `additional_context`: a `run.started` hook's reaches the first model request, a
/// `tool.after` hook's reaches the model's view of the result after the feedback; the
/// events keep the two apart (`hook_feedback`, `hook_context`).
#[test]
fn additional_context_reaches_the_next_model_request() {
    for handler in HANDLERS {
        let model = serve_model(vec![
            Turn::Call("read_file", json!({"file_path": "notes.txt"})),
            Turn::Text("Read."),
        ]);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "kumquat\n").unwrap();
        let (started, started_peer) = hook(
            handler,
            dir.path(),
            "brief",
            &json!({"additional_context": "The team's style guide says: tabs."}),
        );
        let (after, _after_peer) = hook(
            handler,
            dir.path(),
            "annotate",
            &json!({"feedback": "read by the audit hook",
                "additional_context": "notes.txt is owned by the docs team"}),
        );
        write_yaml(
            dir.path(),
            &model,
            json!([
                {"name": "brief", "event": "run.started", "handler": started},
                {"name": "annotate", "event": "tool.after", "handler": after},
            ]),
        );
        let run = at(dir.path(), &["--json", "run", "Read the notes"]);
        assert_eq!(run.code, 0, "{handler:?}: {run:?}");
        assert_eq!(started_peer.events()[0]["event"], "run.started");

        let requests = model.requests();
        assert_eq!(requests.len(), 2, "{handler:?}");
        let first = &requests[0].body["messages"];
        let users: Vec<String> = first
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| m["content"].to_string())
            .collect();
        assert!(users[0].contains("Read the notes"), "{first}");
        assert!(
            users
                .iter()
                .any(|u| u.contains("The team's style guide says: tabs.")),
            "{handler:?}: the first request lacks the run.started context: {first}"
        );
        // Every later request carries it too: it is part of the run's history.
        assert!(
            requests[1].body["messages"]
                .to_string()
                .contains("The team's style guide says: tabs.")
        );

        let seen = tool_message(&model, 1);
        let (feedback, context) = (
            seen.find("read by the audit hook")
                .unwrap_or_else(|| panic!("{seen}")),
            seen.find("notes.txt is owned by the docs team")
                .unwrap_or_else(|| panic!("{seen}")),
        );
        assert!(seen.contains("kumquat"), "{seen}");
        assert!(feedback < context, "context comes after feedback: {seen}");

        let events = events(&run);
        let result = finished_call(&events);
        assert_eq!(result["hook_feedback"], json!(["read by the audit hook"]));
        assert_eq!(
            result["hook_context"],
            json!(["notes.txt is owned by the docs team"])
        );
    }
}

/// HTTP handler rules at assembly: plain http only to this machine, a header's
/// `${VAR}` must be set — each a typed refusal naming the key, never a value.
#[test]
fn http_hooks_are_refused_when_they_could_leak() {
    let model = serve_model(vec![Turn::Text("never asked")]);
    for (spec, fragment) in [
        (
            json!({"type": "http", "url": "http://hooks.example.com/hook"}),
            "must be https, or plain http to this machine only",
        ),
        (
            json!({"type": "http", "url": "http://127.0.0.1:9/hook",
                "headers": {"Authorization": "Bearer ${IRIS_TEST_UNSET_HOOK_TOKEN}"}}),
            "the environment variable `IRIS_TEST_UNSET_HOOK_TOKEN` is not set",
        ),
    ] {
        let dir = workspace(
            &model,
            json!([{"name": "guard", "event": "tool.before", "handler": spec}]),
        );
        let run = at(dir.path(), &["run", "hi"]);
        assert_ne!(run.code, 0, "{run:?}");
        assert!(run.stderr.contains(fragment), "{run:?}");
        assert!(run.stderr.contains("guard"), "{run:?}");
    }
    assert!(model.requests().is_empty(), "no run started");
}

/// A `tool.before` HTTP hook that fails — a redirect (never followed), an error status,
/// nobody listening — denies the call (fail closed); the run goes on.
#[test]
fn a_failing_http_hook_denies_the_call() {
    let redirect = Server::start(|_, _| Reply::Json(307, json!({})));
    let failing = Server::start(|_, _| Reply::Json(500, json!({"error": "boom"})));
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    for (url, fragment) in [
        (
            format!("{}/hook", redirect.url()),
            "redirects are not followed",
        ),
        (format!("{}/hook", failing.url()), "500"),
        (format!("http://{closed}/hook"), "HOOK_HTTP_FAILED"),
    ] {
        let model = serve_model(vec![
            Turn::Call(
                "write_file",
                json!({"file_path": "draft.txt", "content": "hi\n"}),
            ),
            Turn::Text("Done."),
        ]);
        let dir = workspace(
            &model,
            json!([{"name": "guard", "event": "tool.before",
                "handler": {"type": "http", "url": url}}]),
        );
        let run = at(dir.path(), &["--json", "run", "Save a draft"]);
        assert_eq!(run.code, 0, "{run:?}");
        let result = finished_call(&events(&run)).clone();
        assert_eq!(result["error"]["code"], "HOOK_DENIED", "{result}");
        let message = result["error"]["message"].as_str().unwrap();
        assert!(message.contains("hook `guard` failed"), "{message}");
        assert!(message.contains(fragment), "{url}: {message}");
        assert!(!dir.path().join("draft.txt").exists());
    }
}

/// `iris mcp serve`: a hook's `ask` goes to the client as an approval, like the
/// policy's — `input_required` in the 2026-07-28 era (`auto`), `elicitation/create` in
/// the older one (`legacy`); a client that cannot be asked gets
/// MCP_APPROVAL_UNAVAILABLE, never a hang.
#[test]
fn an_ask_over_mcp_serve_is_asked_of_the_client_or_refused() {
    let log: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = Arc::clone(&log);
    let hooks = Server::start(move |_, request| {
        seen.lock().unwrap().push(request.body.clone());
        Reply::Json(200, json!({"ask": "drafts are reviewed"}))
    });
    let model = serve_model(vec![]);
    let dir = workspace(
        &model,
        json!([{"name": "review", "event": "tool.before",
            "handler": {"type": "http", "url": format!("{}/hook", hooks.url())}}]),
    );
    let cases = [
        ("auto", Some("approve"), true, None),
        ("legacy", Some("approve"), true, None),
        ("auto", Some("deny"), false, Some("APPROVAL_DENIED")),
        ("auto", None, false, Some("MCP_APPROVAL_UNAVAILABLE")),
    ];
    for (mode, elicit, written, code) in cases {
        let file = format!("draft-{mode}-{}.txt", elicit.unwrap_or("none"));
        let script = json!({
            "stdio": {
                "command": env!("CARGO_BIN_EXE_iris"),
                "args": ["--config", dir.path().join("iris.yaml"), "mcp", "serve"],
                "cwd": dir.path(),
                "env": {"HOME": super::user_home(),
                    "XDG_CONFIG_HOME": super::user_home().join("config")},
            },
            "mode": mode,
            "elicit": elicit,
            "steps": [{"op": "call", "name": "write_file",
                "args": {"file_path": file, "content": "hi\n"}}],
        });
        let out = std::process::Command::new(super::mcp::python())
            .arg(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../iris-mcp/tests/fixtures/mcp/serve_client.py"),
            )
            .arg(script.to_string())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out: Value = serde_json::from_str(stdout.trim()).unwrap();
        let result = &out["results"][0];
        assert_eq!(dir.path().join(&file).exists(), written, "{out}");
        match code {
            None => {
                let asked = out["elicitations"][0].as_str().unwrap();
                assert!(
                    asked.contains("hook `review` asks before `write_file` runs"),
                    "{asked}"
                );
                assert_eq!(result["is_error"], false, "{out}");
            }
            Some(code) => {
                assert_eq!(result["meta"]["iris/result"]["code"], code, "{out}");
                let text = result["texts"][0].as_str().unwrap();
                assert!(text.starts_with(&format!("Error[{code}]")), "{out}");
                if elicit.is_none() {
                    assert!(text.contains("drafts are reviewed"), "{out}");
                }
            }
        }
    }
    // Each call ran the hook once, and an approved call once more.
    let events = log.lock().unwrap().clone();
    assert_eq!(events.len(), 6, "{events:#?}");
    assert!(
        events
            .iter()
            .all(|e| e["event"] == "tool.before" && e["tool_name"] == "write_file")
    );
}

/// `iris call`: a hook's `ask` is APPROVAL_REQUIRED (exit 4) naming the hook, nothing
/// runs; `--yes` approves it and the call runs.
#[test]
fn an_ask_on_iris_call_needs_yes() {
    let model = serve_model(vec![]);
    let dir = tempfile::tempdir().unwrap();
    let (spec, peer) = hook(
        Handler::Command,
        dir.path(),
        "review",
        &json!({"ask": "drafts are reviewed"}),
    );
    write_yaml(
        dir.path(),
        &model,
        json!([{"name": "review", "event": "tool.before", "handler": spec}]),
    );
    let input = json!({"file_path": "draft.txt", "content": "hi\n"}).to_string();
    let refused = at(dir.path(), &["call", "write_file", &input]);
    assert_eq!(refused.code, 4, "{refused:?}");
    assert!(
        refused.stderr.contains("APPROVAL_REQUIRED")
            && refused
                .stderr
                .contains("hook `review` asks before `write_file` runs: drafts are reviewed"),
        "{refused:?}"
    );
    assert!(!dir.path().join("draft.txt").exists());
    let granted = at(dir.path(), &["call", "write_file", &input, "--yes"]);
    assert_eq!(granted.code, 0, "{granted:?}");
    assert!(dir.path().join("draft.txt").exists());
    assert_eq!(peer.events().len(), 3, "ask, then ask and approved");
    assert!(model.requests().is_empty());
}

/// Code mode: a hook's `ask` on a call a `run_tool_script` program makes waits like any
/// inner approval — the run is saved waiting, naming the inner call; a new process
/// approves it, the program runs again, its inner call passes the hooks again and
/// runs.
#[test]
fn an_ask_on_a_code_mode_inner_call_waits_and_resumes() {
    let code =
        "import iris_tools\nprint(iris_tools.write_file(file_path='out.txt', content='hi').text)";
    let model = serve_model(vec![
        Turn::Call("run_tool_script", json!({"code": code})),
        Turn::Text("Done."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (spec, peer) = hook(
        Handler::Command,
        dir.path(),
        "review",
        &json!({"ask": "writes are reviewed"}),
    );
    let yaml = json!({
        "tools": {"builtin": ["file.write", "exec.tool_script"],
            "script": {"callable": ["write_file"]}},
        "permissions": {"write_mode": "allow", "execute_mode": "allow"},
        "model": {"provider": "openai", "model": "gpt-4.1-mini",
            "base_url": format!("{}/v1", model.url()), "api_key_env": "TEST_MODEL_API_KEY"},
        "hooks": [{"name": "review", "event": "tool.before", "tools": ["write_file"],
            "handler": spec}],
    });
    std::fs::write(dir.path().join("iris.yaml"), yaml.to_string()).unwrap();
    let run = at(dir.path(), &["run", "Write out.txt"]);
    assert_eq!(run.code, 4, "{run:?}");
    assert!(
        run.stderr
            .contains("hook `review` asks before `write_file` runs: writes are reviewed"),
        "{run:?}"
    );
    assert!(!dir.path().join("out.txt").exists());
    let run_id = run
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("error[RUN_WAITING]: run "))
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("{run:?}"))
        .to_owned();
    let first = peer.events();
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(first[0]["parent_call_id"].is_string(), "{first:?}");

    let resumed = at(dir.path(), &["resume", &run_id, "--approve"]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert_eq!(resumed.stdout, "Done.\n", "{resumed:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "hi"
    );
    assert_eq!(
        peer.events().len(),
        2,
        "the approved inner call ran the hooks again"
    );
}
