//! Code mode from the command line: `iris run` of examples/code-mode (one script, five
//! tools, one model turn) and `iris call run_tool_script` whose inner write needs
//! approval.

use serde_json::Value;

use super::{examples, iris};

/// The example's scripted model writes one program; the program calls five tools
/// (eight calls) in that one turn, and the model reads only what it printed.
#[test]
fn iris_run_shows_one_script_calling_five_tools_in_one_model_turn() {
    let dir = examples().join("code-mode");
    let config = dir.join("iris.yaml");
    let config = config.to_str().unwrap();
    let prompt = "Which files still have a TODO?";
    let run = iris(&dir, &["--config", config, "run", prompt], &[], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        "I'll check the tree with one script.\nTwo files still have a TODO: src/parser.rs \
         (quoted fields) and src/store.rs (writing to disk).\n"
    );
    assert_eq!(
        run.stderr, "tool run_tool_script (call_1_1) ... ok\n",
        "{run:?}"
    );

    let json = iris(
        &dir,
        &["--config", config, "--json", "run", prompt],
        &[],
        "",
    );
    assert_eq!(json.code, 0, "{json:?}");
    let events: Vec<Value> = json
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let turns = events
        .iter()
        .filter(|e| e["type"] == "turn_started")
        .count();
    assert_eq!(turns, 2, "{json:?}");
    let finished: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_call_finished")
        .collect();
    assert_eq!(finished.len(), 1, "one call reached the model");
    let result = &finished[0]["result"];
    assert_eq!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .lines()
            .next(),
        Some("2 of 4 files (50%) have a TODO: src/parser.rs, src/store.rs")
    );
    let calls = &result["data"]["calls"];
    assert_eq!(calls["count"], 8);
    let mut tools: Vec<&str> = calls["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    tools.dedup();
    assert_eq!(
        tools,
        [
            "list_files",
            "grep_search",
            "read_file",
            "exec_command",
            "run_python"
        ]
    );
}

/// `iris call run_tool_script` off a terminal: the inner `write_file` needs approval,
/// so the call fails with APPROVAL_REQUIRED naming it (exit 4) and nothing is written;
/// with `--yes` the inner write is granted and runs.
#[test]
fn iris_call_of_a_script_whose_inner_write_needs_approval() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("iris.yaml"),
        "tools:\n  builtin: [file.write, exec.tool_script]\n  script: {callable: [write_file]}\n\
         permissions: {execute_mode: allow}\n",
    )
    .unwrap();
    let code =
        "import iris_tools\nprint(iris_tools.write_file(file_path='out.txt', content='hi').text)";
    let input = serde_json::json!({"code": code}).to_string();
    let args = ["--trust", "call", "run_tool_script", input.as_str()];
    let refused = iris(dir.path(), &args, &[], "");
    assert_eq!(refused.code, 4, "{refused:?}");
    assert!(
        refused.stderr.contains("APPROVAL_REQUIRED")
            && refused.stderr.contains("inner call `write_file`"),
        "{refused:?}"
    );
    assert!(!dir.path().join("out.txt").exists());

    let mut yes = args.to_vec();
    yes.push("--yes");
    let granted = iris(dir.path(), &yes, &[], "");
    assert_eq!(granted.code, 0, "{granted:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "hi"
    );
}

/// `iris call run_tool_script` starts every MCP server (a program may call any tool),
/// and an inner call to an MCP tool goes through like any other.
#[test]
fn iris_call_of_a_script_reaches_mcp_tools() {
    let dir = super::mcp::agent(
        "tools:\n  builtin: [exec.tool_script]\n  script: {callable: [mcp__fixture__echo]}\n\
         permissions: {execute_mode: allow}\n",
    );
    let code = "import iris_tools\nprint(iris_tools.mcp__fixture__echo(text='via script').text)";
    let input = serde_json::json!({"code": code}).to_string();
    let run = iris(
        dir.path(),
        &[
            "--trust",
            "call",
            "run_tool_script",
            input.as_str(),
            "--yes",
        ],
        &[],
        "",
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("via script"), "{run:?}");
}
