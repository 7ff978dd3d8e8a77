//! The `iris` binary, run as a real process against `examples/` and temporary configs.
// Tests may unwrap: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

mod budget;
mod code_mode;
mod console;
mod console_input;
#[cfg(feature = "embed")]
mod discovery;
mod durable;
mod examples;
mod hooks_v2;
mod http_serve;
mod mcp;
mod output;
mod policy;
mod run;
mod sandbox;
mod sandbox_escalation;
mod secret;
mod serve;
mod signals;
mod subagent;
mod trust;
mod wire;

/// Environment variables added to one run.
type Vars<'a> = &'a [(&'a str, &'a str)];

/// What one run produced.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// An empty folder standing in for the user's HOME and XDG_CONFIG_HOME, so no run
/// reads or writes the real user's trusted folders. Tests of trust pass their own.
fn user_home() -> &'static Path {
    static HOME: OnceLock<tempfile::TempDir> = OnceLock::new();
    HOME.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

/// `iris args…` in `cwd` with an isolated home, then `env` added.
fn command(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_iris"));
    command
        .args(args)
        .current_dir(cwd)
        .env("HOME", user_home())
        .env("XDG_CONFIG_HOME", user_home().join("config"))
        .envs(env.iter().copied());
    command
}

/// Runs `iris args…` in `cwd` with `env` added and `stdin` piped in; stdin is never a
/// TTY here, which is what the approval rows rely on.
fn iris(cwd: &Path, args: &[&str], env: &[(&str, &str)], stdin: &str) -> Run {
    let mut child = command(cwd, args, env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap(),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// One row: arguments after `--config examples/iris.yaml`, stdin, exit code, a fragment
/// stdout must contain and one stderr must contain.
fn check(args: &[&str], stdin: &str, code: i32, stdout: &str, stderr: &str) {
    let config = examples().join("iris.yaml");
    let mut all = vec!["--config", config.to_str().unwrap()];
    all.extend_from_slice(args);
    let run = iris(&examples(), &all, &[], stdin);
    assert_eq!(run.code, code, "{args:?}: {run:?}");
    assert!(run.stdout.contains(stdout), "{args:?} stdout: {run:?}");
    assert!(run.stderr.contains(stderr), "{args:?} stderr: {run:?}");
}

#[test]
fn every_subcommand_against_the_example() {
    let rows: &[(&[&str], &str, i32, &str, &str)] = &[
        (
            &["tools"],
            "",
            0,
            "exec_command         exec       execute",
            "",
        ),
        (&["tools", "--all"], "", 0, "load_skill", ""),
        (
            &["--json", "tools"],
            "",
            0,
            "\"capabilities\": [\n        \"execute\"\n      ]",
            "",
        ),
        (&["schema", "exec_command"], "", 0, "\"input_schema\"", ""),
        (
            &["schema", "exec_command", "--format", "openai"],
            "",
            0,
            "\"type\": \"function\"",
            "",
        ),
        (
            &["schema", "web_search", "--format", "openai-strict"],
            "",
            0,
            "\"strict\": true",
            "",
        ),
        (
            &["schema", "exec_command", "--format", "openai-strict"],
            "",
            0,
            "Constraints: minLength 1.",
            "",
        ),
        (
            &["schema", "exec_command", "--format", "responses"],
            "",
            0,
            "\"parameters\"",
            "",
        ),
        (
            &["schema", "exec_command", "--format", "anthropic"],
            "",
            0,
            "\"input_schema\"",
            "",
        ),
        (
            &["schema", "exec_command", "--format", "gemini"],
            "",
            0,
            "functionDeclarations",
            "",
        ),
        (
            &["schema", "nope"],
            "",
            2,
            "",
            "error[TOOL_NOT_FOUND]: no tool is named `nope`",
        ),
        (
            &["schema", "exec_command", "--format", "xml"],
            "",
            2,
            "",
            "invalid value 'xml'",
        ),
        (
            &[
                "call",
                "exec_command",
                "{\"command\": \"echo hi\"}",
                "--yes",
            ],
            "",
            0,
            "hi\n\n[audit] command logged",
            "",
        ),
        (
            &["call", "exec_command", "-", "--yes"],
            "{\"command\": \"echo piped\"}",
            0,
            "piped",
            "",
        ),
        (
            &[
                "--json",
                "call",
                "exec_command",
                "{\"command\": \"exit 3\"}",
                "--yes",
            ],
            "",
            1,
            "\"code\": \"COMMAND_FAILED\"",
            "",
        ),
        (
            &["call", "exec_command", "{\"command\": \"echo hi\"}"],
            "",
            4,
            "",
            "error[APPROVAL_REQUIRED]: `exec_command` needs approval",
        ),
        (
            &["call", "load_skill", "{\"name\": \"release-notes\"}"],
            "",
            0,
            "Group them",
            "",
        ),
        (
            &["call", "load_skill", "{not json"],
            "",
            2,
            "",
            "error[INVALID_INPUT]: the call input is not JSON",
        ),
        // Valid JSON the schema rejects is bad call input, like JSON that is not JSON:
        // exit 2, with the INVALID_INPUT result still printed.
        (
            &["call", "load_skill", "{}"],
            "",
            2,
            "Error[INVALID_INPUT]",
            "",
        ),
        (
            &["call", "web_search", "{\"query\": \"rust\"}", "--yes"],
            "",
            1,
            "WEB_AUTH_REQUIRED",
            "",
        ),
        (
            &["skills"],
            "",
            0,
            "release-notes            Write release notes",
            "",
        ),
        (&["--json", "skills"], "", 0, "\"enabled\": true", ""),
        (&["check"], "", 0, "ok", ""),
        (&["--json", "check"], "", 0, "\"ok\": true", ""),
        (&["lint"], "", 0, "ok: 8 tools", ""),
        (&["mcp", "list"], "", 0, "no MCP servers are configured", ""),
        (
            &["--json", "mcp", "list"],
            "",
            0,
            "\"configured\": false",
            "",
        ),
    ];
    for (args, stdin, code, stdout, stderr) in rows {
        check(args, stdin, *code, stdout, stderr);
    }
}

/// `--help` carries examples, workspace trust, signals and the exit codes.
#[test]
fn help_lists_examples_and_exit_codes() {
    let run = iris(&examples(), &["--help"], &[], "");
    assert_eq!(run.code, 0);
    for fragment in [
        "Examples:",
        "Workspace trust: a discovered config",
        "Signals: SIGINT (Ctrl-C), SIGTERM and SIGHUP",
        "iris --config examples/iris.yaml run \"Summarize the project\"",
        "Run: `iris run PROMPT` streams the answer",
        "4 approval required but not given (a run waits for a human",
        "Exit codes: 0 success",
        "129/130/143 ended by SIGHUP/SIGINT/SIGTERM",
    ] {
        assert!(run.stdout.contains(fragment), "{fragment}: {run:?}");
    }
    let run = iris(&examples(), &["mcp", "serve", "--help"], &[], "");
    assert_eq!(run.code, 0);
    for fragment in [
        "--http [<ADDR>]",
        "--token-env <VAR>",
        "--allow-remote",
        "Loopback only unless",
        "iris mcp serve --http 127.0.0.1:8931 --token-env MCP_TOKEN",
        "MCP_APPROVAL_UNAVAILABLE",
        "MCP_APPROVAL_STATE_INVALID",
    ] {
        // clap wraps the help at the terminal's width: compare with the line breaks
        // and their indentation folded into single spaces.
        let folded = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(folded.contains(fragment), "{fragment}: {run:?}");
    }
}

/// A command line clap refuses is exit 2: clap's own text, or with `--json` one JSON
/// error with the code `CLI_USAGE` on stdout (and nothing on stderr).
#[test]
fn a_bad_command_line_is_cli_usage_and_json_with_json() {
    let rows: &[(&[&str], &str)] = &[
        (&["--json", "run", "hi", "--model"], "--model"),
        (&["--json", "tools", "--no-such-flag"], "--no-such-flag"),
        (&["--json", "no-such-command"], "no-such-command"),
        (
            &["--json", "resume", "run_1", "--approve", "--deny", "x"],
            "--deny",
        ),
    ];
    for (args, names) in rows {
        let run = iris(&examples(), args, &[], "");
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        let error: serde_json::Value =
            serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {run:?}"));
        assert_eq!(error["error"]["code"], "CLI_USAGE", "{args:?}: {run:?}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains(names), "{args:?}: {message}");
        assert!(!message.starts_with("error:"), "{message}");
        assert!(run.stderr.is_empty(), "{args:?}: {run:?}");
    }
    // Without --json (and with it only after `--`, as a prompt's word): clap's text.
    for args in [
        &["run", "hi", "--model"][..],
        &["tools", "--no-such-flag", "--", "--json"][..],
    ] {
        let run = iris(&examples(), args, &[], "");
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert!(run.stdout.is_empty(), "{args:?}: {run:?}");
        assert!(run.stderr.starts_with("error: "), "{args:?}: {run:?}");
        assert!(run.stderr.contains("--help"), "{args:?}: {run:?}");
    }
}

/// Config lookup: `./iris.yaml`, else `.iris/agent.yaml`, else a clear error.
#[test]
fn default_config_locations() {
    let dir = tempfile::tempdir().unwrap();
    let run = iris(dir.path(), &["--trust", "tools"], &[], "");
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr
            .contains("error[CONFIG_NOT_FOUND]: no agent config"),
        "{run:?}"
    );

    std::fs::create_dir(dir.path().join(".iris")).unwrap();
    std::fs::write(
        dir.path().join(".iris/agent.yaml"),
        "tools:\n  builtin: [exec.python]\n",
    )
    .unwrap();
    assert!(
        iris(dir.path(), &["--trust", "tools"], &[], "")
            .stdout
            .contains("run_python")
    );

    std::fs::write(
        dir.path().join("iris.yaml"),
        "tools:\n  builtin: [exec.command]\n",
    )
    .unwrap();
    let run = iris(dir.path(), &["--trust", "tools"], &[], "");
    assert!(
        run.stdout.contains("exec_command") && !run.stdout.contains("run_python"),
        "{run:?}"
    );
}

/// `IRIS_` variables override the file; unrelated ones are ignored; a bad value names
/// the variable.
#[test]
fn environment_overrides() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("iris.yaml"),
        "tools:\n  builtin: [exec.command]\n",
    )
    .unwrap();
    let call = [
        "--trust",
        "call",
        "exec_command",
        "{\"command\": \"echo ok\"}",
    ];
    let rows: &[(Vars, i32, &str)] = &[
        (&[], 4, "APPROVAL_REQUIRED"),
        (&[("IRIS_PERMISSIONS__EXECUTE_MODE", "allow")], 0, "ok"),
        (
            &[("IRIS_PERMISSIONS__EXECUTE_MODE", "deny")],
            1,
            "PERMISSION_DENIED",
        ),
        (
            &[
                ("IRIS_PERMISSIONS__EXECUTE_MODE", "allow"),
                ("IRIS_PYTHON", "python3"),
                ("IRIS_UNRELATED", "x"),
            ],
            0,
            "ok",
        ),
        (
            &[("IRIS_PERMISSIONS__EXECUTE_MODE", "maybe")],
            3,
            "from environment variable IRIS_PERMISSIONS__EXECUTE_MODE",
        ),
    ];
    for (env, code, fragment) in rows {
        let run = iris(dir.path(), &call, env, "");
        assert_eq!(run.code, *code, "{env:?}: {run:?}");
        assert!(
            run.stdout.contains(fragment) || run.stderr.contains(fragment),
            "{env:?}: {run:?}"
        );
    }
}

/// Without `IRIS_PROVIDER_API_KEYS__TAVILY` the web tools still assemble, and a call
/// fails with the credential error naming the variable.
#[test]
fn web_tools_without_key_fail_with_auth_required() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("iris.yaml"),
        "tools:\n  builtin: [web.search]\n",
    )
    .unwrap();
    let call = [
        "--trust",
        "--json",
        "call",
        "web_search",
        "{\"query\": \"rust\"}",
        "--yes",
    ];
    let run = iris(dir.path(), &call, &[], "");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.contains("WEB_AUTH_REQUIRED"), "{run:?}");
    assert!(
        run.stdout.contains("IRIS_PROVIDER_API_KEYS__TAVILY"),
        "{run:?}"
    );
}

/// `check` lists every problem and exits 1; relative paths resolve against the YAML.
#[test]
fn check_lists_every_problem() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("agent")).unwrap();
    std::fs::write(
        dir.path().join("agent/iris.yaml"),
        "tools:\n  builtin: [file.read]\n  subagent: catalog.yaml\n  python:\n    functions: [app:f]\ndecision:\n  path: decision.yaml\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("agent/decision.yaml"),
        "model: jev-1.13.0\n",
    )
    .unwrap();
    let run = iris(
        dir.path(),
        &["--config", "agent/iris.yaml", "check"],
        &[],
        "",
    );
    assert_eq!(run.code, 1, "{run:?}");
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let text = run
        .stdout
        .replace(&root.display().to_string(), "<dir>")
        .replace(&dir.path().display().to_string(), "<dir>");
    insta::assert_snapshot!(text);

    let run = iris(
        dir.path(),
        &["--config", "agent/missing.yaml", "check"],
        &[],
        "",
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout
            .contains("error[CONFIG_NOT_FOUND]: agent/missing.yaml"),
        "{run:?}"
    );
}

/// `--workspace` replaces the YAML's workspace.
#[test]
fn workspace_flag() {
    let dir = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("marker.txt"), "").unwrap();
    std::fs::write(
        dir.path().join("iris.yaml"),
        "tools:\n  builtin: [exec.command]\n",
    )
    .unwrap();
    let ws_arg = ws.path().to_str().unwrap();
    let run = iris(
        dir.path(),
        &[
            "--trust",
            "--workspace",
            ws_arg,
            "call",
            "exec_command",
            "{\"command\": \"ls\"}",
            "--yes",
        ],
        &[],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("marker.txt"), "{run:?}");
}

/// Config errors reach the terminal with file, key and expected shape, exit 3.
#[test]
fn config_error_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("iris.yaml"),
        "tools:\n  builtin: [exec.shell]\n",
    )
    .unwrap();
    let run = iris(dir.path(), &["--trust", "tools"], &[], "");
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.starts_with("error[CONFIG_INVALID]: iris.yaml: `tools.builtin[0]`: unknown value `exec.shell`; expected one of `file.read`"),
        "{run:?}"
    );
}

/// Every `iris call` has its own call id, so the artifact of a large result is never
/// overwritten by the next call: two calls leave two files, each as its preview says.
#[test]
fn each_call_keeps_its_own_artifact() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("iris.yaml"),
        "tools:\n  builtin: [exec.command]\npermissions:\n  execute_mode: allow\n",
    )
    .unwrap();
    let config = dir.path().join("iris.yaml");
    let config = config.to_str().unwrap();
    let mut saved = Vec::new();
    for first in ["1", "2"] {
        let input = format!("{{\"command\": \"seq {first} 100000\"}}");
        let run = iris(
            dir.path(),
            &["--config", config, "call", "exec_command", &input],
            &[],
            "",
        );
        assert_eq!(run.code, 0, "{run:?}");
        let at = run.stdout.find("is saved at \"").expect("a preview") + "is saved at \"".len();
        let path = &run.stdout[at..];
        saved.push((first, path[..path.find('"').unwrap()].to_owned()));
    }
    assert_ne!(saved[0].1, saved[1].1, "{saved:?}");
    for (first, path) in &saved {
        let body = std::fs::read_to_string(dir.path().join(path)).unwrap();
        assert!(body.starts_with(&format!("{first}\n")), "{path}");
    }
    let files = std::fs::read_dir(dir.path().join(".iris/tool-results/iris-cli"))
        .unwrap()
        .count();
    assert_eq!(files, 2);
}

/// `--timeout` takes positive seconds; anything else is a bad command line, never a
/// panic (a Duration from 1e20 seconds would overflow).
#[test]
fn call_timeout_is_checked() {
    let config = examples().join("iris.yaml");
    let config = config.to_str().unwrap();
    for bad in ["0", "-1", "1e20", "NaN", "inf", "soon"] {
        let run = iris(
            &examples(),
            &[
                "--config",
                config,
                "call",
                "load_skill",
                "{}",
                &format!("--timeout={bad}"),
            ],
            &[],
            "",
        );
        assert_eq!(run.code, 2, "{bad}: {run:?}");
        assert!(run.stderr.contains("--timeout"), "{bad}: {run:?}");
        assert!(!run.stderr.contains("panicked"), "{bad}: {run:?}");
    }
    let run = iris(
        &examples(),
        &[
            "--config",
            config,
            "call",
            "load_skill",
            "{\"name\": \"release-notes\"}",
            "--timeout=0.5",
        ],
        &[],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
}

/// A `{type: python}` hook names host code, which the `iris` binary never registers: one
/// code for that fault, `HOST_KEY_UNKNOWN` (as for `tools.host` and middleware), from
/// assembly (exit 3) and from `iris check` alike.
#[test]
fn a_python_hook_is_host_key_unknown() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("iris.yaml"),
        "tools:\n  builtin: [file.read]\nhooks:\n  - name: audit\n    event: tool.after\n    \
         handler: {type: python, factory: 'app:audit'}\n",
    )
    .unwrap();
    let want = "error[HOST_KEY_UNKNOWN]: `hooks[0].handler.factory`: ";
    let run = iris(dir.path(), &["--trust", "tools"], &[], "");
    assert_eq!(run.code, 3, "{run:?}");
    assert!(run.stderr.starts_with(want), "{run:?}");
    assert!(run.stderr.contains("`app:audit`"), "{run:?}");
    let run = iris(dir.path(), &["--trust", "check"], &[], "");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.contains(want), "{run:?}");
    assert!(
        !format!("{run:?}").contains("HOOK_UNKNOWN_FACTORY"),
        "{run:?}"
    );
}
