//! `iris mcp list`, MCP calls and deferred tools, against iris-mcp's real Python
//! fixture server over stdio.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::{Run, iris};

fn mcp_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../iris-mcp/tests/fixtures/mcp")
}

/// The venv's python, made by iris-mcp's `setup.sh` on first use (idempotent), as
/// iris-mcp's own tests find it.
pub(crate) fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let out = std::process::Command::new("bash")
            .arg(mcp_fixtures().join("setup.sh"))
            .stderr(std::process::Stdio::inherit())
            .output()
            .unwrap();
        assert!(out.status.success(), "setup.sh failed");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    })
}

/// A folder with `iris.yaml` (`yaml` plus an `mcp` section naming `mcp.json`) and an
/// `mcp.json` running the SDK fixture server as `fixture`, plus a server that cannot
/// start, `gone`, made optional by an override.
pub(crate) fn agent(yaml: &str) -> tempfile::TempDir {
    agent_with(yaml, &[])
}

/// [`agent`] with extra arguments for the fixture server (`--extra-tools`).
pub(crate) fn agent_with(yaml: &str, extra: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let server = mcp_fixtures().join("sdk_server.py");
    let mut args = vec![server.display().to_string()];
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let mcp = serde_json::json!({"mcpServers": {
        "fixture": {"command": python(), "args": args},
        "gone": {"command": "/nonexistent/iris-mcp-server"},
    }});
    std::fs::write(dir.path().join("mcp.json"), mcp.to_string()).unwrap();
    let yaml = format!(
        "{yaml}mcp:\n  path: mcp.json\n  overrides:\n    fixture: {{trust_annotations: true}}\n    gone: {{required: false}}\n"
    );
    std::fs::write(dir.path().join("iris.yaml"), yaml).unwrap();
    dir
}

/// One row: arguments, exit code, fragments stdout must contain, one stderr must
/// contain.
type Row<'a> = (&'a [&'a str], i32, &'a [&'a str], &'a str);

/// Runs each row in `dir`, whose discovered `iris.yaml` is trusted for the run.
fn check(dir: &Path, rows: &[Row<'_>]) {
    for (args, code, stdout, stderr) in rows {
        let mut all = vec!["--trust"];
        all.extend_from_slice(args);
        let run: Run = iris(dir, &all, &[], "");
        assert_eq!(run.code, *code, "{args:?}: {run:?}");
        for fragment in *stdout {
            assert!(
                run.stdout.contains(fragment),
                "{args:?} {fragment}: {run:?}"
            );
        }
        assert!(run.stderr.contains(stderr), "{args:?} stderr: {run:?}");
    }
}

#[test]
fn mcp_list_and_calls() {
    let dir = agent("");
    check(
        dir.path(),
        &[
            (
                &["mcp", "list"],
                0,
                &[
                    "SERVER           TRANSPORT  STATUS    REQUIRED  PROTOCOL     TOOLS",
                    "fixture          stdio      ready     yes",
                    "gone             stdio      failed    no",
                    "mcp__fixture__echo        fixture/echo              read-only\n",
                    "diagnostics (1):",
                    "server `gone`",
                ],
                "iris: starting MCP servers from ",
            ),
            (
                &["--json", "mcp", "list"],
                0,
                &[
                    "\"configured\": true",
                    "\"status\": \"ready\"",
                    "\"wire_name\": \"echo\"",
                ],
                "",
            ),
            (
                &["call", "mcp__fixture__echo", "{\"text\": \"hello mcp\"}"],
                0,
                &["hello mcp"],
                "",
            ),
            // `add` has no readOnlyHint: it needs approval, given by --yes.
            (
                &["call", "mcp__fixture__add", "{\"a\": 2, \"b\": 40}"],
                4,
                &[],
                "error[APPROVAL_REQUIRED]",
            ),
            (
                &[
                    "call",
                    "mcp__fixture__add",
                    "{\"a\": 2, \"b\": 40}",
                    "--yes",
                ],
                0,
                &["42"],
                "",
            ),
            (&["check"], 0, &["note: mcp: server `gone`", "ok"], ""),
        ],
    );
}

/// `deferred_tools: true`: MCP tools are deferred, `tool_search` finds one by a
/// paraphrase, and the found tool can be called.
#[test]
fn deferred_tools_and_tool_search() {
    let dir = agent("context_policy:\n  deferred_tools: true\n");
    check(
        dir.path(),
        &[
            (
                &["tools"],
                0,
                &[
                    "tool_search              core       read                     no\n",
                    "mcp__fixture__write_note mcp        mcp                      yes\n",
                ],
                "",
            ),
            (
                &["--json", "tools"],
                0,
                &[
                    "\"name\": \"mcp__fixture__echo\",\n      \"system\": false",
                    "\"deferred\": true",
                ],
                "",
            ),
            (
                &[
                    "call",
                    "tool_search",
                    "{\"queries\": [\"sum of two whole numbers\"]}",
                ],
                0,
                &["mcp__fixture__add"],
                "",
            ),
            (
                &["call", "mcp__fixture__echo", "{\"text\": \"found\"}"],
                0,
                &["found"],
                "",
            ),
        ],
    );
}

#[test]
fn required_server_failure_is_an_assembly_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mcp.json"),
        r#"{"mcpServers": {"gone": {"command": "/nonexistent/iris-mcp-server"}}}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("iris.yaml"), "mcp:\n  path: mcp.json\n").unwrap();
    check(
        dir.path(),
        &[
            (&["mcp", "list"], 3, &[], "error[ASSEMBLY_FAILED]: `mcp`: "),
            (&["check"], 1, &["error[ASSEMBLY_FAILED]: `mcp`: "], ""),
        ],
    );
}

/// `examples/iris-mcp.yaml`: mcp-server-time from the venv, deferred and found by
/// `tool_search`, run from an unrelated folder (paths resolve against the YAML).
#[test]
fn the_mcp_example() {
    python(); // makes the venv holding mcp-server-time
    let config = super::examples().join("iris-mcp.yaml");
    let config = config.to_str().unwrap();
    // Run elsewhere, with the workspace there too, so stored MCP results never land in
    // the repository's examples/ folder.
    let elsewhere = tempfile::tempdir().unwrap();
    let ws = elsewhere.path().to_str().unwrap();
    check(
        elsewhere.path(),
        &[
            (
                &["--workspace", ws, "--config", config, "mcp", "list"],
                0,
                &[
                    "time             stdio      ready     yes",
                    "time/get_current_time",
                ],
                "",
            ),
            (
                &["--workspace", ws, "--config", config, "tools"],
                0,
                &["mcp__time__get_current_time mcp        mcp                      yes\n"],
                "",
            ),
            (
                &[
                    "--workspace",
                    ws,
                    "--config",
                    config,
                    "call",
                    "tool_search",
                    "{\"queries\": [\"what time is it right now\"]}",
                ],
                0,
                &["-> mcp__time__get_current_time"],
                "",
            ),
            (
                &[
                    "--workspace",
                    ws,
                    "--config",
                    config,
                    "call",
                    "mcp__time__get_current_time",
                    "{\"timezone\": \"UTC\"}",
                    "--yes",
                ],
                0,
                &["\"timezone\": \"UTC\""],
                "",
            ),
            (
                &["--workspace", ws, "--config", config, "check"],
                0,
                &["ok"],
                "",
            ),
        ],
    );
}

/// `iris call` starts only the MCP servers that can publish the called tool: with a
/// required server that cannot start, `mcp list` (every server) fails, while a call of
/// the other server's tool, or of a built-in, succeeds; `tool_search` needs them all.
#[test]
fn a_call_starts_only_the_servers_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    let server = mcp_fixtures().join("sdk_server.py");
    let mcp = serde_json::json!({"mcpServers": {
        "fixture": {"command": python(), "args": [server.display().to_string()]},
        "broken": {"command": "/nonexistent/iris-mcp-server", "required": true},
    }});
    std::fs::write(dir.path().join("mcp.json"), mcp.to_string()).unwrap();
    std::fs::write(
        dir.path().join("iris.yaml"),
        "tools: {builtin: [file.list]}\nmcp:\n  path: mcp.json\n  overrides:\n    fixture: {trust_annotations: true}\n",
    )
    .unwrap();
    check(
        dir.path(),
        &[
            (&["mcp", "list"], 3, &[], "broken"),
            (
                &["call", "mcp__fixture__echo", "{\"text\": \"only me\"}"],
                0,
                &["only me"],
                "iris: starting the MCP servers the call needs from ",
            ),
            (&["call", "list_files", "{}"], 0, &["mcp.json"], ""),
        ],
    );
}

/// `iris call` of a tool whose server asks for input: declined with why when no
/// terminal can answer (the server hears `decline`, the result says it); the
/// `--json` result names it under `metadata.mcp.elicitations`.
#[test]
fn iris_call_declines_an_elicitation_without_a_terminal() {
    let dir = agent_with("", &["--extra-tools"]);
    let run: Run = iris(
        dir.path(),
        &["--trust", "call", "mcp__fixture__ask_form"],
        &[],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("action=decline colour=-"), "{run:?}");
    assert!(
        run.stdout.contains("no terminal can answer here"),
        "{run:?}"
    );
    let run: Run = iris(
        dir.path(),
        &[
            "--trust",
            "--json",
            "call",
            "mcp__fixture__ask_url",
            "--yes",
        ],
        &[],
        "",
    );
    let value: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let note = &value["metadata"]["mcp"]["elicitations"][0];
    assert_eq!(note["mode"], "url", "{value}");
    assert_eq!(note["action"], "decline", "{value}");
    assert_eq!(note["url"], "http://127.0.0.1:9/signin", "{value}");
}

/// `iris run` without a terminal: an MCP server's request for input makes the run
/// wait (exit 4) with the commands that answer it; `iris resume --answer` with the
/// form's values sends the call again and the run completes.
#[test]
fn an_elicitation_without_a_terminal_waits_and_resume_answers_it() {
    let script = "model:\n  provider: scripted\n  script:\n    - tool_calls: [{name: mcp__fixture__ask_form}]\n    - {expect_tool_results: 1, text: Got it.}\n";
    let dir = agent_with(script, &["--extra-tools"]);
    let run: Run = iris(dir.path(), &["--trust", "--json", "run", "Pick"], &[], "");
    assert_eq!(run.code, 4, "{run:?}");
    let waiting: serde_json::Value =
        serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(waiting["type"], "waiting", "{run:?}");
    assert_eq!(waiting["kind"], "elicitation", "{run:?}");
    let run_id = waiting["run_id"].as_str().unwrap().to_owned();
    let commands: Vec<&str> = waiting["answer_with"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(
        commands,
        [
            format!("iris --trust resume {run_id} --answer '{{\"colour\":\"<string>\"}}'"),
            format!("iris --trust resume {run_id} --deny REASON"),
        ],
        "{run:?}"
    );
    let bad: Run = iris(
        dir.path(),
        &["--trust", "resume", &run_id, "--answer", "teal"],
        &[],
        "",
    );
    assert_ne!(bad.code, 0, "{bad:?}");
    assert!(bad.stderr.contains("RUN_ANSWER_INVALID"), "{bad:?}");
    let done: Run = iris(
        dir.path(),
        &[
            "--trust",
            "resume",
            &run_id,
            "--answer",
            r#"{"colour": "teal"}"#,
        ],
        &[],
        "",
    );
    assert_eq!(done.code, 0, "{done:?}");
    assert_eq!(done.stdout, "Got it.\n", "{done:?}");
    assert!(
        done.stderr
            .contains("tool mcp__fixture__ask_form (call_1_1) ... ok"),
        "{done:?}"
    );
}

/// A call that needs approval and then asks for input, with nobody at a terminal:
/// the run waits for the approval, then for the input; the answer continues the
/// call without asking for the approval again.
#[test]
fn an_approved_call_that_asks_for_input_is_not_approved_twice() {
    let script = "model:\n  provider: scripted\n  script:\n    - tool_calls: [{name: mcp__fixture__ask_url}]\n    - {expect_tool_results: 1, text: Signed in.}\n";
    let dir = agent_with(script, &["--extra-tools"]);
    let waiting = |run: &Run| -> serde_json::Value {
        serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap()
    };
    let run: Run = iris(
        dir.path(),
        &["--trust", "--json", "run", "Sign in"],
        &[],
        "",
    );
    assert_eq!(run.code, 4, "{run:?}");
    let w = waiting(&run);
    assert_eq!(w["kind"], "approval", "{run:?}");
    let run_id = w["run_id"].as_str().unwrap().to_owned();
    let run: Run = iris(
        dir.path(),
        &["--trust", "--json", "resume", &run_id, "--approve"],
        &[],
        "",
    );
    assert_eq!(run.code, 4, "{run:?}");
    let w = waiting(&run);
    assert_eq!(w["kind"], "elicitation", "{run:?}");
    assert_eq!(
        w["answer_with"][0],
        format!("iris --trust resume {run_id} --answer accept"),
        "{run:?}"
    );
    assert!(
        w["summary"]
            .as_str()
            .unwrap()
            .contains("(open http://127.0.0.1:9/signin)"),
        "{run:?}"
    );
    let done: Run = iris(
        dir.path(),
        &["--trust", "resume", &run_id, "--answer", "accept"],
        &[],
        "",
    );
    assert_eq!(done.code, 0, "{done:?}");
    assert_eq!(done.stdout, "Signed in.\n", "{done:?}");
    assert!(
        done.stderr
            .contains("tool mcp__fixture__ask_url (call_1_1) ... ok (approved)"),
        "{done:?}"
    );
}
