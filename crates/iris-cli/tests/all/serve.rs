//! `iris mcp serve`, driven by the official Python MCP SDK's client
//! (`serve_client.py`, `mcp.Client`) over stdio and streamable HTTP, in both protocol
//! eras: `auto` probes `server/discover` and speaks 2026-07-28 (approvals come back
//! as `input_required`), `legacy` sends `initialize` (approvals are
//! `elicitation/create` requests).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::process::Signal;
use serde_json::{Value, json};

use super::signals::{assert_gone, spawn};

const MODES: [&str; 2] = ["auto", "legacy"];

fn client_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../iris-mcp/tests/fixtures/mcp/serve_client.py")
}

/// Runs the Python client on `script`; its printed JSON.
fn client(script: &Value) -> Value {
    let out = std::process::Command::new(super::mcp::python())
        .arg(client_script())
        .arg(script.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "client failed: {stdout}\n{stderr}");
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

/// A folder with `iris.yaml` (file tools and exec_command, approvals on by default,
/// then `extra`) and `hello.txt`.
fn agent(extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "tools:\n  builtin: [file.read, file.list, file.write, exec.command]\ncommand:\n  mode: native\n  timeout_seconds: 30\n{extra}"
    );
    std::fs::write(dir.path().join("iris.yaml"), yaml).unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hello\n").unwrap();
    dir
}

/// The script for a stdio client that starts `iris --config DIR/iris.yaml mcp serve`.
fn stdio(dir: &Path, mode: &str, elicit: Option<&str>, steps: Value) -> Value {
    let config = dir.join("iris.yaml");
    json!({
        "stdio": {
            "command": env!("CARGO_BIN_EXE_iris"),
            "args": ["--config", config, "mcp", "serve"],
            "cwd": dir,
            "env": {"HOME": super::user_home(), "XDG_CONFIG_HOME": super::user_home().join("config")},
        },
        "mode": mode,
        "elicit": elicit,
        "steps": steps,
    })
}

fn call(name: &str, args: Value) -> Value {
    json!({"op": "call", "name": name, "args": args})
}

fn names(listed: &Value) -> Vec<String> {
    listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn tool<'a>(listed: &'a Value, name: &str) -> &'a Value {
    listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed: {listed}"))
}

fn code(result: &Value) -> &Value {
    &result["meta"]["iris/result"]["code"]
}

#[test]
fn lists_and_calls_over_stdio_in_both_eras() {
    let dir = agent("");
    for (mode, protocol) in MODES.into_iter().zip(["2026-07-28", "2025-11-25"]) {
        let steps = json!([{"op": "list"}, call("read_file", json!({"file_path": "hello.txt"})),
                           call("read_file", json!({"file_path": "../outside.txt"}))]);
        let out = client(&stdio(dir.path(), mode, None, steps));
        assert_eq!(out["protocol"], protocol);
        let listed = &out["results"][0];
        assert_eq!(
            names(listed),
            ["read_file", "list_files", "write_file", "exec_command"]
        );
        let read = tool(listed, "read_file");
        assert_eq!(read["annotations"]["readOnlyHint"], true, "{read}");
        assert_eq!(read["schema"]["required"], json!(["file_path"]));
        assert!(
            read["description"]
                .as_str()
                .unwrap()
                .starts_with("Read a text file")
        );
        assert_eq!(read["meta"]["iris/tool"]["capabilities"], json!(["read"]));
        for destructive in ["write_file", "exec_command"] {
            let t = tool(listed, destructive);
            assert_eq!(t["annotations"]["readOnlyHint"], false, "{t}");
            assert_eq!(t["annotations"]["destructiveHint"], true, "{t}");
        }
        let read = &out["results"][1];
        assert_eq!(read["is_error"], false, "{read}");
        assert_eq!(read["texts"], json!(["hello\n"]));
        // The permission policy's workspace confinement holds over MCP too.
        let escape = &out["results"][2];
        assert_eq!(escape["is_error"], true, "{escape}");
        assert!(
            escape["texts"][0].as_str().unwrap().starts_with("Error["),
            "{escape}"
        );
        assert!(code(escape).is_string(), "{escape}");
    }
}

/// `write_file` needs approval (write_mode: confirm): the client is asked and its
/// answer decides whether the file is written; a client that cannot be asked gets
/// MCP_APPROVAL_UNAVAILABLE.
#[test]
fn approvals_are_asked_of_the_client_by_elicitation() {
    let dir = agent("");
    for mode in MODES {
        for (elicit, expect) in [
            (Some("approve"), None),
            (
                Some("deny"),
                Some(("APPROVAL_DENIED", "denied by the user: not today")),
            ),
            (
                Some("decline"),
                Some(("APPROVAL_DENIED", "the user declined")),
            ),
            (
                None,
                Some((
                    "MCP_APPROVAL_UNAVAILABLE",
                    "did not declare the elicitation (form) capability",
                )),
            ),
        ] {
            let file = format!("out-{mode}-{}.txt", elicit.unwrap_or("none"));
            let steps = json!([call(
                "write_file",
                json!({"file_path": file, "content": "written\n"})
            )]);
            let out = client(&stdio(dir.path(), mode, elicit, steps));
            let result = &out["results"][0];
            let written = dir.path().join(&file).exists();
            let asked = out["elicitations"].as_array().unwrap();
            assert_eq!(
                asked.len(),
                usize::from(elicit.is_some()),
                "{mode} {elicit:?}: {out}"
            );
            if let Some(question) = asked.first() {
                let question = question.as_str().unwrap();
                assert!(
                    question.contains("`write_file` needs approval"),
                    "{question}"
                );
                assert!(question.contains(&file), "{question}");
            }
            match expect {
                None => {
                    assert!(written, "{mode}: {out}");
                    assert_eq!(result["is_error"], false, "{out}");
                    assert_eq!(result["meta"]["iris/result"]["approved"], true, "{out}");
                }
                Some((expected, text)) => {
                    assert!(!written, "{mode} {elicit:?}: {out}");
                    assert_eq!(result["is_error"], true, "{out}");
                    assert_eq!(code(result), expected, "{mode} {elicit:?}: {out}");
                    let shown = result["texts"][0].as_str().unwrap();
                    assert!(shown.starts_with(&format!("Error[{expected}]")), "{shown}");
                    assert!(shown.contains(text), "{shown}");
                }
            }
        }
    }
}

/// A body over exec_command's result budget comes back as Iris shows the model: a
/// preview and the saved file's path, which `_meta` names too.
#[test]
fn a_long_result_comes_back_as_its_preview_and_artifact() {
    let dir = agent("permissions:\n  execute_mode: allow\n");
    let steps = json!([call("exec_command", json!({"command": "seq 1 100000"}))]);
    let out = client(&stdio(dir.path(), "auto", None, steps));
    let result = &out["results"][0];
    assert_eq!(result["is_error"], false, "{}", result["meta"]);
    let text: String = result["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(text.len() < 20_000, "not a preview: {} chars", text.len());
    let artifact = &result["meta"]["iris/result"]["artifact"];
    let saved = Path::new(artifact["text_path"].as_str().unwrap());
    let file_name = saved.file_name().unwrap().to_str().unwrap();
    assert!(
        text.contains(&format!(".iris/tool-results/mcp-stateless/{file_name}")),
        "the preview names the saved file: {}",
        &text[text.len().saturating_sub(500)..]
    );
    let body = std::fs::read_to_string(saved).unwrap();
    assert!(
        body.ends_with("\n99999\n100000\n"),
        "the whole body is saved"
    );
    assert_eq!(artifact["size_bytes"], body.len());
}

/// Deferred MCP tools stay behind `tool_search`: not listed, not callable, until a
/// search in the same session reveals them; another session starts unrevealed.
#[test]
fn deferred_tools_stay_deferred_until_tool_search_reveals_them() {
    let dir = super::mcp::agent("context_policy:\n  deferred_tools: true\n");
    let add = || call("mcp__fixture__add", json!({"a": 2, "b": 40}));
    let steps = json!([
        {"op": "list"},
        add(),
        call("tool_search", json!({"queries": ["sum of two whole numbers"]})),
        {"op": "list"},
        add(),
    ]);
    for mode in MODES {
        let out = client(&stdio(dir.path(), mode, Some("approve"), steps.clone()));
        let r = &out["results"];
        assert_eq!(names(&r[0]), ["tool_search"], "{out}");
        assert_eq!(code(&r[1]), "TOOL_NOT_LOADED", "{out}");
        assert_eq!(r[2]["is_error"], false, "{out}");
        assert_eq!(
            names(&r[3]),
            ["tool_search", "mcp__fixture__add"],
            "{mode}: {out}"
        );
        assert_eq!(r[4]["is_error"], false, "{out}");
        assert!(r[4]["texts"].to_string().contains("42"), "{out}");
    }

    let fresh = client(&stdio(dir.path(), "legacy", None, json!([{"op": "list"}])));
    assert_eq!(names(&fresh["results"][0]), ["tool_search"], "{fresh}");
}

/// `iris mcp serve --http 127.0.0.1:0` (plus `extra`) on `dir`'s `iris.yaml`, and the
/// URL it printed.
fn serve_http(
    dir: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (super::signals::Spawned, String) {
    let config = dir.join("iris.yaml");
    let mut args = vec![
        "--config",
        config.to_str().unwrap(),
        "mcp",
        "serve",
        "--http",
        "127.0.0.1:0",
    ];
    args.extend_from_slice(extra);
    let iris = spawn(dir, &args, env);
    let url = served_url(&iris);
    (iris, url)
}

/// The URL `iris mcp serve --http` printed on stderr.
fn served_url(iris: &super::signals::Spawned) -> String {
    let lines = iris.stderr_until("iris: serving MCP on http://");
    let line = lines.last().unwrap();
    let start = line.find("http://").unwrap();
    line[start..].split_whitespace().next().unwrap().to_owned()
}

/// A raw HTTP POST of an MCP request; the status code.
fn post_status(url: &str, authorization: Option<&str>) -> u16 {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let auth = authorization
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {response}"))
}

/// Streamable HTTP with a bearer token: 401 without it or with a wrong one (the token
/// never printed), the SDK client with it lists, calls and is asked for approval in
/// both eras; SIGTERM stops the server and the MCP server it started.
#[test]
fn http_with_a_bearer_token() {
    let dir = super::mcp::agent("tools:\n  builtin: [file.read, file.write]\n");
    let token = "t0ken-that-must-never-be-printed";
    let (mut iris, url) = serve_http(
        dir.path(),
        &["--token-env", "IRIS_TEST_MCP_TOKEN"],
        &[("IRIS_TEST_MCP_TOKEN", token)],
    );
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    let servers = iris.children();
    assert!(!servers.is_empty(), "the fixture MCP server runs");

    assert_eq!(post_status(&url, None), 401);
    assert_eq!(post_status(&url, Some("Bearer wrong")), 401);
    assert_eq!(
        post_status(
            &url.replace("/mcp", "/other"),
            Some(&format!("Bearer {token}"))
        ),
        404
    );

    for mode in MODES {
        let file = format!("http-{mode}.txt");
        let script = json!({
            "http": {"url": url, "token": token},
            "mode": mode,
            "elicit": "approve",
            "steps": [
                {"op": "list"},
                call("mcp__fixture__echo", json!({"text": "over http"})),
                call("write_file", json!({"file_path": file, "content": "x"})),
            ],
        });
        let out = client(&script);
        let r = &out["results"];
        assert!(
            names(&r[0]).contains(&"mcp__fixture__echo".to_owned()),
            "{out}"
        );
        assert_eq!(r[1]["texts"], json!(["over http"]), "{out}");
        assert_eq!(r[2]["is_error"], false, "{mode}: {out}");
        assert_eq!(out["elicitations"].as_array().unwrap().len(), 1, "{out}");
        assert!(dir.path().join(&file).exists(), "{mode}");
    }
    let wrong = json!({"http": {"url": url, "token": "wrong"}, "mode": "auto", "elicit": null, "steps": []});
    let refused = std::process::Command::new(super::mcp::python())
        .arg(client_script())
        .arg(wrong.to_string())
        .output()
        .unwrap();
    assert!(!refused.status.success(), "a wrong token cannot connect");

    iris.signal(Signal::TERM);
    let status = iris.exit();
    let stderr = iris.stderr_rest();
    assert_gone(&servers);
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(!stderr.contains(token), "{stderr}");
}

/// stdin EOF ends a stdio server: exit 0, and the MCP server it started is gone.
#[test]
fn stdin_eof_ends_the_stdio_server_and_its_mcp_servers() {
    let dir = super::mcp::agent("");
    let config = dir.path().join("iris.yaml");
    let mut iris = spawn(
        dir.path(),
        &["--config", config.to_str().unwrap(), "mcp", "serve"],
        &[],
    );
    iris.stderr_until("iris: serving MCP on stdio");
    let servers = iris.children();
    assert!(!servers.is_empty(), "the fixture MCP server runs");
    drop(iris.child.stdin.take());
    let status = iris.exit();
    assert_gone(&servers);
    assert_eq!(status.code(), Some(0), "{}", iris.stderr_rest());
}

#[test]
fn bad_serve_flags_start_nothing() {
    let dir = agent("");
    let config = dir.path().join("iris.yaml");
    let config = config.to_str().unwrap();
    let rows: &[(&[&str], i32, &str)] = &[
        (
            &["--http", "0.0.0.0:0"],
            2,
            "error[MCP_SERVE_ADDRESS_REFUSED]: 0.0.0.0 is not a loopback address",
        ),
        (
            &["--http", "0.0.0.0:0", "--allow-remote"],
            2,
            "error[MCP_SERVE_ADDRESS_REFUSED]: 0.0.0.0 is not a loopback address and no bearer token",
        ),
        (
            &[
                "--http",
                "127.0.0.1:0",
                "--token-env",
                "IRIS_TEST_UNSET_TOKEN",
            ],
            3,
            "error[SERVE_TOKEN_MISSING]: --token-env IRIS_TEST_UNSET_TOKEN",
        ),
        (&["--token-env", "X"], 2, "--http"),
    ];
    for (args, code, stderr) in rows {
        let mut all = vec!["--config", config, "mcp", "serve"];
        all.extend_from_slice(args);
        let run = super::iris(dir.path(), &all, &[], "");
        assert_eq!(run.code, *code, "{args:?}: {run:?}");
        assert!(run.stderr.contains(stderr), "{args:?}: {run:?}");
    }
}

/// The MCP Inspector's launcher, installed by its `setup.sh` on first use (as `.ci/setup`
/// does): 0.14, the last release that runs on Node 20.
fn inspector() -> &'static str {
    static INSPECTOR: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    INSPECTOR.get_or_init(|| {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/inspector/setup.sh");
        let out = std::process::Command::new("bash")
            .arg(script)
            .stderr(std::process::Stdio::inherit())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "inspector setup.sh failed (needs node and npm)"
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    })
}

/// `mcp-inspector --cli … --method …` against `iris --trust mcp serve` over stdio
/// (0.14's CLI reaches URLs only over legacy SSE, so HTTP is the Python client's).
fn inspect(dir: &Path, method: &[&str]) -> Value {
    let out = std::process::Command::new(inspector())
        .arg("--cli")
        .args([
            env!("CARGO_BIN_EXE_iris"),
            "--trust",
            "mcp",
            "serve",
            "--method",
        ])
        .args(method)
        .current_dir(dir)
        .env("HOME", super::user_home())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{method:?}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn the_mcp_inspector_cli_lists_and_calls() {
    let dir = agent("");
    let listed = inspect(dir.path(), &["tools/list"]);
    assert_eq!(
        names(&listed),
        ["read_file", "list_files", "write_file", "exec_command"]
    );
    assert_eq!(
        tool(&listed, "read_file")["annotations"]["readOnlyHint"],
        true
    );
    let read = inspect(
        dir.path(),
        &[
            "tools/call",
            "--tool-name",
            "read_file",
            "--tool-arg",
            "file_path=hello.txt",
        ],
    );
    assert_eq!(read["isError"], false, "{read}");
    assert_eq!(read["content"][0]["text"], "hello\n");
    // The Inspector's CLI declares no elicitation: a call that needs approval is refused.
    let write = inspect(
        dir.path(),
        &[
            "tools/call",
            "--tool-name",
            "write_file",
            "--tool-arg",
            "file_path=inspected.txt",
            "content=x",
        ],
    );
    assert_eq!(write["isError"], true, "{write}");
    assert_eq!(
        write["_meta"]["iris/result"]["code"],
        "MCP_APPROVAL_UNAVAILABLE"
    );
    assert!(!dir.path().join("inspected.txt").exists());
}

/// SIGTERM while a served call runs a command: the call is cancelled, its process group
/// stopped, the environment closed, and iris exits 143 with nothing left running.
#[test]
fn sigterm_during_a_served_call_stops_its_processes() {
    let dir = agent("permissions:\n  execute_mode: allow\n");
    let (mut iris, url) = serve_http(dir.path(), &[], &[]);
    let pidfile = dir.path().join("sleep.pid");
    let command = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    let script = json!({
        "http": {"url": url},
        "mode": "auto",
        "elicit": null,
        "steps": [call("exec_command", json!({"command": command}))],
    });
    let mut python = std::process::Command::new(super::mcp::python())
        .arg(client_script())
        .arg(script.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let sleep = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
        {
            break pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    iris.signal(Signal::TERM);
    let status = iris.exit();
    assert_gone(&[sleep]);
    assert_eq!(status.code(), Some(143), "{}", iris.stderr_rest());
    let _ = python.kill();
    let _ = python.wait();
}

/// Over HTTP a 2026-07-28 client has no session, so its reveals are the server's
/// stateless scope, shared by every such client; an `initialize` session keeps its own.
#[test]
fn stateless_http_clients_share_reveals_and_sessions_keep_their_own() {
    let dir = super::mcp::agent("context_policy:\n  deferred_tools: true\n");
    let (mut iris, url) = serve_http(dir.path(), &[], &[]);
    let run = |mode: &str, steps: Value| {
        client(&json!({"http": {"url": url}, "mode": mode, "elicit": null, "steps": steps}))
    };
    let search = call(
        "tool_search",
        json!({"queries": ["sum of two whole numbers"]}),
    );
    let first = run("auto", json!([search]));
    assert_eq!(first["results"][0]["is_error"], false, "{first}");
    let second = run("auto", json!([{"op": "list"}]));
    assert_eq!(
        names(&second["results"][0]),
        ["tool_search", "mcp__fixture__add"],
        "{second}"
    );
    let session = run("legacy", json!([{"op": "list"}]));
    assert_eq!(names(&session["results"][0]), ["tool_search"], "{session}");
    iris.signal(Signal::TERM);
    assert_eq!(iris.exit().code(), Some(143), "{}", iris.stderr_rest());
}

/// The YAML's hooks run for served calls: a `tool.before` command hook vetoes a call, a
/// `tool.after` one adds feedback the client sees after the result.
#[test]
fn served_calls_run_the_yaml_hooks() {
    let dir = agent(
        "permissions:\n  execute_mode: allow\nhooks:\n  - name: no-rm\n    event: tool.before\n    tools: [exec_command]\n    timeout_seconds: 10\n    handler: {type: command, command: \"case \\\"$(cat)\\\" in *'rm '*) echo '{\\\"deny_reason\\\": \\\"rm is not allowed here\\\"}' ;; *) echo '{}' ;; esac\"}\n  - name: audit\n    event: tool.after\n    tools: [read_file]\n    timeout_seconds: 10\n    handler: {type: command, command: \"cat > /dev/null; echo '{\\\"feedback\\\": \\\"audited by the hook\\\"}'\"}\n",
    );
    std::fs::write(dir.path().join("keep.txt"), "keep").unwrap();
    let steps = json!([
        call("exec_command", json!({"command": "rm keep.txt"})),
        call("read_file", json!({"file_path": "hello.txt"})),
    ]);
    let out = client(&stdio(dir.path(), "auto", None, steps));
    let r = &out["results"];
    assert_eq!(r[0]["is_error"], true, "{out}");
    assert!(
        r[0]["texts"].to_string().contains("rm is not allowed here"),
        "{out}"
    );
    assert!(
        dir.path().join("keep.txt").exists(),
        "the vetoed call did not run"
    );
    assert_eq!(
        r[1]["texts"],
        json!(["hello\n", "audited by the hook"]),
        "{out}"
    );
}

/// A client that gives up on a call cancels it: the command's processes stop while the
/// server keeps running and serving.
#[test]
fn a_call_the_client_gives_up_on_is_cancelled() {
    let dir = agent("permissions:\n  execute_mode: allow\n");
    let (mut iris, url) = serve_http(dir.path(), &[], &[]);
    for mode in MODES {
        let pidfile = dir.path().join(format!("sleep-{mode}.pid"));
        let command = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
        let script = json!({
            "http": {"url": url},
            "mode": mode,
            "elicit": null,
            "steps": [
                {"op": "call", "name": "exec_command", "args": {"command": command}, "timeout": 3},
                call("read_file", json!({"file_path": "hello.txt"})),
            ],
        });
        let out = client(&script);
        let r = &out["results"];
        assert!(
            r[0]["error"].is_string(),
            "{mode}: the client timed out: {out}"
        );
        assert_eq!(r[1]["texts"], json!(["hello\n"]), "{mode}: {out}");
        let sleep: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_gone(&[sleep]);
        assert!(
            iris.child.try_wait().unwrap().is_none(),
            "the server still runs"
        );
    }
    iris.signal(Signal::TERM);
    assert_eq!(iris.exit().code(), Some(143), "{}", iris.stderr_rest());
}

/// `iris mcp serve` lists only what runs there: no tool the run loop answers
/// (`ask_question`, the goal and context tools), and `run_tool_script` with the
/// executor attached as its script host, so a program's inner call works as under
/// `iris call`.
#[test]
fn serve_lists_no_loop_tool_and_runs_scripts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("iris.yaml"),
        "tools:\n  builtin: [file.read, human.ask, exec.tool_script]\ncommand: {mode: native}\n\
         permissions: {execute_mode: allow}\ngoal: Serve well.\ncontext_policy: {retention: {}}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hello\n").unwrap();
    let code = "import iris_tools\nprint(iris_tools.read_file(file_path='hello.txt').text)";
    let steps = json!([{"op": "list"}, call("run_tool_script", json!({"code": code})),
                       call("ask_question", json!({"question": "Which?"}))]);
    let out = client(&stdio(dir.path(), "auto", None, steps));
    assert_eq!(names(&out["results"][0]), ["read_file", "run_tool_script"]);
    let script = &out["results"][1];
    assert_eq!(script["is_error"], false, "{script}");
    assert!(
        script["texts"][0].as_str().unwrap().contains("hello"),
        "{script}"
    );
    // Not listed, so not callable.
    assert_eq!(out["results"][2]["is_error"], true, "{out}");
}
