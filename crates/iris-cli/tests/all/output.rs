//! What `iris` writes: a closed pipe is not a panic, and text from config files,
//! skills, MCP servers and tools cannot drive the terminal.

use std::path::Path;
use std::process::Stdio;

use super::{command, examples, iris};

/// stdout (or stderr) is a pipe whose reader is already gone, as after `| head` read
/// what it wanted: the write fails with EPIPE, and iris must neither panic (exit 101,
/// a panic message) nor report an error.
#[test]
fn a_closed_pipe_is_not_a_panic() {
    let config = examples().join("iris.yaml");
    let config = config.to_str().unwrap();
    let rows: &[(&[&str], bool, i32)] = &[
        (&["tools", "--all"], true, 0),
        (&["--json", "tools", "--all"], true, 0),
        (&["schema", "exec_command"], true, 0),
        (
            &[
                "call",
                "exec_command",
                "{\"command\": \"seq 1 100000\"}",
                "--yes",
            ],
            true,
            0,
        ),
        (&["check"], true, 0),
        // The exit code stays the command's own.
        (&["lint"], true, 0),
        (&["schema", "nope"], false, 2),
        (&["schema", "nope"], true, 2),
    ];
    for (args, close_stdout, code) in rows {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut all = vec!["--config", config];
        all.extend_from_slice(args);
        let mut cmd = command(&examples(), &all, &[]);
        cmd.stdin(Stdio::null());
        let out = if *close_stdout {
            cmd.stdout(writer).stderr(Stdio::piped()).output().unwrap()
        } else {
            cmd.stderr(writer).stdout(Stdio::piped()).output().unwrap()
        };
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("IO_ERROR"), "{args:?}: {stderr}");
    }
}

/// A skill whose SKILL.md description carries an ANSI colour sequence, a newline
/// forging a `warning:` line, and a right-to-left override.
fn hostile_skill(dir: &Path) {
    let skill = dir.join(".agents/skills/evil");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: evil\ndescription: \"Harmless \\e[31mred\\e[0m\\r\\nwarning: forged line\\u202Eexe.txt\"\n---\nBody.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("iris.yaml"),
        "skills:\n  enabled: true\n  root: .agents/skills\n",
    )
    .unwrap();
}

/// The raw controls never reach stdout or stderr in text mode.
fn assert_escaped(text: &str) {
    for raw in ['\x1b', '\u{202e}', '\r', '\u{9b}'] {
        assert!(!text.contains(raw), "{raw:?} printed raw: {text:?}");
    }
}

#[test]
fn skill_descriptions_are_escaped_in_text_and_exact_in_json() {
    let dir = tempfile::tempdir().unwrap();
    hostile_skill(dir.path());
    let run = iris(dir.path(), &["--config", "iris.yaml", "skills"], &[], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert_escaped(&run.stdout);
    assert!(
        run.stdout
            .contains("Harmless \\x1b[31mred\\x1b[0m\\r\\nwarning: forged line\\u{202e}exe.txt"),
        "{run:?}"
    );
    // The forged line is not a line of its own.
    assert!(
        !run.stdout.lines().any(|l| l.starts_with("warning: forged")),
        "{run:?}"
    );

    let run = iris(
        dir.path(),
        &["--config", "iris.yaml", "--json", "skills"],
        &[],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    let value: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let description = value["skills"]["skills"][0]["description"]
        .as_str()
        .unwrap();
    assert_eq!(
        description,
        "Harmless \x1b[31mred\x1b[0m\r\nwarning: forged line\u{202e}exe.txt"
    );
}

/// An MCP server's command path shows up in `mcp list` diagnostics and `check` notes;
/// a config value shows up in an error message; a tool's output is printed by `call`.
#[test]
fn server_config_error_and_tool_text_is_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let mcp = serde_json::json!({"mcpServers": {
        "gone": {"command": "/nonexistent/\u{1b}[2J\u{202e}evil"},
    }});
    std::fs::write(dir.path().join("mcp.json"), mcp.to_string()).unwrap();
    std::fs::write(
        dir.path().join("iris.yaml"),
        "tools:\n  builtin: [exec.command]\nmcp:\n  path: mcp.json\n  overrides:\n    gone: {required: false}\npermissions:\n  execute_mode: allow\n",
    )
    .unwrap();
    for args in [
        &["--config", "iris.yaml", "mcp", "list"][..],
        &["--config", "iris.yaml", "check"],
        &[
            "--config",
            "iris.yaml",
            "call",
            "exec_command",
            "{\"command\": \"printf 'ok\\\\033[2J\\\\342\\\\200\\\\256\\\\rnext'\"}",
        ],
    ] {
        let run = iris(dir.path(), args, &[], "");
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
        assert_escaped(&run.stdout);
        assert_escaped(&run.stderr);
        assert!(run.stdout.contains("\\x1b[2J"), "{args:?}: {run:?}");
        assert!(run.stdout.contains("\\u{202e}"), "{args:?}: {run:?}");
    }
    // A tool's multi-line output keeps its newlines, CRLFs and tabs.
    let run = iris(
        dir.path(),
        &[
            "--config",
            "iris.yaml",
            "call",
            "exec_command",
            "{\"command\": \"printf 'a\\\\tb\\\\r\\\\nc\\\\n'\"}",
        ],
        &[],
        "",
    );
    assert!(run.stdout.starts_with("a\tb\r\nc\n"), "{run:?}");

    std::fs::write(
        dir.path().join("iris.yaml"),
        "tools:\n  builtin: [\"exec\\e[8m.command\"]\n",
    )
    .unwrap();
    let run = iris(dir.path(), &["--config", "iris.yaml", "tools"], &[], "");
    assert_eq!(run.code, 3, "{run:?}");
    assert_escaped(&run.stderr);
    assert!(run.stderr.contains("exec\\x1b[8m.command"), "{run:?}");
}
