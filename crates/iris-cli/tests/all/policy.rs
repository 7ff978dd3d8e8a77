//! The admin policy (`IRIS_POLICY_FILE`, as `/etc/iris/policy.yaml` is read): each key
//! a project YAML tries to loosen is tightened or refused with POLICY_DENIED through
//! the real binary; an unsafe policy file stops everything; `iris check` shows the
//! effective policy. The tests run as root (as CI does), so a file they write is
//! root-owned like an administrator's.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::{Run, iris};

/// A workspace with `iris.yaml` = `yaml` and a policy file `policy.yaml` = `policy`
/// (mode 0644) beside it, outside the workspace.
struct Setup {
    _root: tempfile::TempDir,
    workspace: PathBuf,
    config: String,
    policy: PathBuf,
}

fn setup(yaml: &str, policy: &str) -> Setup {
    let root = tempfile::tempdir().unwrap();
    let workspace = root.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let config = workspace.join("iris.yaml");
    std::fs::write(&config, yaml).unwrap();
    let policy_file = root.path().join("policy.yaml");
    std::fs::write(&policy_file, policy).unwrap();
    std::fs::set_permissions(&policy_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    Setup {
        config: config.to_str().unwrap().to_owned(),
        workspace,
        policy: policy_file,
        _root: root,
    }
}

impl Setup {
    /// `iris --config … args…` in the workspace, under the policy when `policy`.
    fn run(&self, args: &[&str], policy: bool) -> Run {
        let mut all = vec!["--config", self.config.as_str()];
        all.extend_from_slice(args);
        let env: Vec<(&str, &str)> = if policy {
            vec![("IRIS_POLICY_FILE", self.policy.to_str().unwrap())]
        } else {
            Vec::new()
        };
        iris(&self.workspace, &all, &env, "")
    }

    fn outside(&self) -> &Path {
        self._root.path()
    }
}

/// One `exec_command` call of `command`, then an answer.
fn command_agent(head: &str, command: &str) -> String {
    format!(
        "{head}tools:\n  builtin: [exec.command]\nmodel:\n  provider: scripted\n  script:\n    \
         - text: Running.\n      tool_calls:\n        - {{name: exec_command, arguments: \
         {{command: {command:?}}}}}\n    - {{expect_tool_results: 1, text: Done.}}\n"
    )
}

fn stderr_has_code(run: &Run, code: &str) -> bool {
    run.stderr
        .lines()
        .any(|l| l.starts_with(&format!("error[{code}]")))
}

#[test]
fn a_projects_allow_becomes_the_policys_confirm() {
    let yaml = command_agent(
        "permissions: {execute_mode: allow}\n",
        "echo ran > marker.txt",
    );
    let s = setup(&yaml, "permissions: {execute_mode: confirm}\n");
    let marker = s.workspace.join("marker.txt");

    let run = s.run(&["run", "go"], true);
    assert_eq!(run.code, 4, "the call waits for a human: {run:?}");
    assert!(stderr_has_code(&run, "RUN_WAITING"), "{run:?}");
    assert!(!marker.exists());

    let check = s.run(&["check"], true);
    assert_eq!(check.code, 0, "{check:?}");
    let policy = s.policy.display();
    assert!(
        check.stdout.contains(&format!(
            "policy: {policy}: permissions.execute_mode at least confirm"
        )),
        "{check:?}"
    );
    assert!(
        check.stdout.contains(&format!(
            "policy: `permissions.execute_mode` allow -> confirm (rule \
             `permissions.execute_mode` of {policy})"
        )),
        "{check:?}"
    );
    let json: Value = serde_json::from_str(&s.run(&["--json", "check"], true).stdout).unwrap();
    assert_eq!(
        json["policy"]["tightened"][0]["key"],
        "permissions.execute_mode"
    );
    assert_eq!(json["policy"]["tightened"][0]["to"], "confirm");

    // Without the policy the project's allow stands.
    let run = s.run(&["run", "go"], false);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(marker.exists());
}

#[test]
fn max_turns_is_lowered_to_the_policys() {
    let yaml = command_agent(
        "max_turns: 10\npermissions: {execute_mode: allow}\n",
        "true",
    );
    let s = setup(&yaml, "max_turns: 1\n");
    let run = s.run(&["run", "go"], true);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(stderr_has_code(&run, "RUN_MAX_TURNS"), "{run:?}");
    let run = s.run(&["run", "go"], false);
    assert_eq!(run.code, 0, "{run:?}");
}

/// The project turns the file-system sandbox off; the policy's `workspace-write` puts
/// it back, so a write outside the workspace is refused by the kernel.
#[test]
fn the_sandbox_cannot_be_turned_off_under_the_policy() {
    let s = setup(
        "",
        "command:\n  sandbox: {filesystem: workspace-write, network: off}\n",
    );
    let written = s.outside().join("written.txt");
    let yaml = command_agent(
        "permissions: {execute_mode: allow}\ncommand:\n  sandbox: {filesystem: off, network: on}\n",
        &format!("echo pwned > {}", written.display()),
    );
    std::fs::write(&s.config, yaml).unwrap();

    let run = s.run(&["run", "go"], true);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!written.exists(), "the write outside went through: {run:?}");
    let check = s.run(&["check"], true);
    assert!(
        check
            .stdout
            .contains("policy: `command.sandbox.filesystem` off -> workspace-write"),
        "{check:?}"
    );
    assert!(
        check
            .stdout
            .contains("policy: `command.sandbox.network` on -> off"),
        "{check:?}"
    );

    let run = s.run(&["run", "go"], false);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        written.exists(),
        "without the policy the project's off stands"
    );
}

#[test]
fn an_mcp_server_the_policy_does_not_list_is_refused() {
    let s = setup(
        "mcp: {path: mcp.json}\n",
        "mcp:\n  allow:\n    - {name: docs, command: \"uvx *\"}\n",
    );
    std::fs::write(
        s.workspace.join("mcp.json"),
        r#"{"mcpServers": {"tracker": {"command": "node", "args": ["tracker.js"]}}}"#,
    )
    .unwrap();
    let run = s.run(&["tools"], true);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(stderr_has_code(&run, "POLICY_DENIED"), "{run:?}");
    assert!(
        run.stderr.contains(&format!(
            "{}: policy rule `mcp.allow`: MCP server `tracker` (command `node`) matches no \
             allowed server",
            s.policy.display()
        )),
        "{run:?}"
    );
    let check = s.run(&["check"], true);
    assert_eq!(check.code, 1, "{check:?}");
    assert!(check.stdout.contains("error[POLICY_DENIED]"), "{check:?}");
    // Without the policy the server is started (and fails on its own terms).
    let run = s.run(&["tools"], false);
    assert!(!run.stderr.contains("POLICY_DENIED"), "{run:?}");
}

#[test]
fn a_model_provider_or_endpoint_the_policy_does_not_allow_is_refused() {
    let yaml = "model: {provider: openai, model: gpt-4.1-mini}\n";
    let s = setup(
        yaml,
        "model:\n  providers: [openai, scripted]\n  base_urls: [\"http://127.0.0.1:*\"]\n",
    );
    // The YAML's model goes to the public API, which the policy does not list.
    let check = s.run(&["check"], true);
    assert_eq!(check.code, 1, "{check:?}");
    assert!(
        check.stdout.contains(
            "policy rule `model.base_urls`: the model endpoint `https://api.openai.com/v1` \
             matches no allowed base URL"
        ),
        "{check:?}"
    );
    // `--model` on the command line is held to the same list.
    let run = s.run(
        &["run", "--model", "anthropic:claude-sonnet-4-5", "hi"],
        true,
    );
    assert_eq!(run.code, 3, "{run:?}");
    assert!(stderr_has_code(&run, "POLICY_DENIED"), "{run:?}");
    assert!(
        run.stderr
            .contains("policy rule `model.providers`: provider `anthropic` is not allowed"),
        "{run:?}"
    );
    let check = s.run(&["check"], false);
    assert!(!check.stdout.contains("POLICY_DENIED"), "{check:?}");
}

const DENY_ALL: &str = "hooks:\n  - name: guard\n    event: tool.before\n    handler: {type: \
    command, command: \"cat > /dev/null; echo '{\\\"deny_reason\\\": \\\"the policy says \
    no\\\"}'\"}\n";

#[test]
fn policy_hooks_run_first_and_cannot_be_replaced() {
    let yaml = command_agent(
        "permissions: {execute_mode: allow}\n",
        "echo ran > marker.txt",
    );
    let s = setup(&yaml, DENY_ALL);
    let run = s.run(&["--json", "run", "go"], true);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("HOOK_DENIED"), "{run:?}");
    assert!(run.stdout.contains("the policy says no"), "{run:?}");
    assert!(!s.workspace.join("marker.txt").exists());

    // A YAML hook of the same name would shadow it: refused.
    let shadow = format!(
        "{yaml}hooks:\n  - name: guard\n    event: tool.before\n    handler: {{type: command, \
         command: \"cat > /dev/null; echo '{{}}'\"}}\n"
    );
    std::fs::write(&s.config, shadow).unwrap();
    let run = s.run(&["run", "go"], true);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr
            .contains("policy rule `hooks`: the agent YAML declares a hook named `guard`"),
        "{run:?}"
    );
}

#[test]
fn an_unsafe_or_broken_policy_file_stops_everything() {
    let s = setup(&command_agent("", "true"), "max_turns: 5\n");
    let path = s.policy.to_str().unwrap().to_owned();
    // Writable by the group.
    std::fs::set_permissions(&s.policy, std::fs::Permissions::from_mode(0o664)).unwrap();
    let run = s.run(&["check"], true);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.contains("error[POLICY_FILE_UNSAFE]"), "{run:?}");
    assert!(run.stdout.contains(&path), "{run:?}");
    // Owned by another user.
    std::fs::set_permissions(&s.policy, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::os::unix::fs::chown(&s.policy, Some(65534), None).unwrap();
    let run = s.run(&["run", "go"], true);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(stderr_has_code(&run, "POLICY_FILE_UNSAFE"), "{run:?}");
    std::os::unix::fs::chown(&s.policy, Some(0), None).unwrap();
    // A key no policy has.
    std::fs::write(&s.policy, "max_turn: 5\n").unwrap();
    let run = s.run(&["run", "go"], true);
    assert!(stderr_has_code(&run, "POLICY_INVALID"), "{run:?}");
    assert!(run.stderr.contains("max_turn"), "{run:?}");
    // A missing file named by IRIS_POLICY_FILE is not silently skipped.
    std::fs::remove_file(&s.policy).unwrap();
    let run = s.run(&["run", "go"], true);
    assert!(stderr_has_code(&run, "POLICY_INVALID"), "{run:?}");
}
