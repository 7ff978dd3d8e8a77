//! The command sandbox through the `iris` binary, black-box: `iris call exec_command`
//! and `iris call run_python` with an agent YAML whose own files (the YAML, its hook
//! script) must stay unchanged, secrets beside the workspace that must stay unread,
//! and an outside folder that must stay empty. The `iris` binary is its own sandbox
//! helper.

use std::path::{Path, PathBuf};

use super::iris;

const SECRET: &str = "s3cret-value";
const HOOK: &str = "#!/bin/sh\necho '{}'\n";

struct Lab {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    yaml: String,
}

impl Lab {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(ws.join("hooks")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        std::fs::create_dir_all(root.join("secrets")).unwrap();
        std::fs::write(root.join("secrets/key"), SECRET).unwrap();
        std::fs::write(ws.join("hooks/no-rm.sh"), HOOK).unwrap();
        let yaml = format!(
            "tools:\n  builtin: [exec.command, exec.python]\npermissions:\n  execute_mode: allow\n\
             command:\n  sandbox:\n    deny_read: [{secrets}]\n\
             hooks:\n  - name: guard\n    event: tool.before\n    tools: [exec_command]\n    \
             handler: {{type: command, command: sh hooks/no-rm.sh}}\n",
            secrets = root.join("secrets").display()
        );
        std::fs::write(ws.join("iris.yaml"), &yaml).unwrap();
        let git = std::process::Command::new("git")
            .args(["init", "-q", "."])
            .current_dir(&ws)
            .status()
            .unwrap();
        assert!(git.success());
        std::fs::write(ws.join(".git/hooks/pre-commit"), HOOK).unwrap();
        Self {
            _dir: dir,
            root,
            ws,
            yaml,
        }
    }

    /// `iris call <tool>` with `source` as its command or code.
    fn call(&self, tool: &str, source: &str) -> super::Run {
        let source = source.replace("$ROOT", &self.root.display().to_string());
        let key = if tool == "exec_command" {
            "command"
        } else {
            "code"
        };
        let input = serde_json::json!({ key: source }).to_string();
        let config = self.ws.join("iris.yaml");
        iris(
            &self.ws,
            &["--config", config.to_str().unwrap(), "call", tool, &input],
            &[],
            "",
        )
    }

    fn check(&self, name: &str, tool: &str, source: &str) {
        let run = self.call(tool, source);
        assert!(
            !run.stdout.contains("ESCAPED") && !run.stdout.contains(SECRET),
            "{name}: escaped\n{run:?}"
        );
        assert!(!run.stderr.contains("panicked"), "{name}: {run:?}");
        let outside: Vec<_> = std::fs::read_dir(self.root.join("outside"))
            .unwrap()
            .collect();
        assert!(outside.is_empty(), "{name}: wrote outside: {outside:?}");
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        assert_eq!(
            read(&self.ws.join("iris.yaml")),
            self.yaml,
            "{name}: the YAML"
        );
        assert_eq!(
            read(&self.ws.join("hooks/no-rm.sh")),
            HOOK,
            "{name}: the hook"
        );
        assert_eq!(
            read(&self.ws.join(".git/hooks/pre-commit")),
            HOOK,
            "{name}: pre-commit"
        );
        assert!(!self.ws.join(".iris/planted").exists(), "{name}: .iris");
    }
}

#[test]
fn iris_call_cannot_escape_the_sandbox() {
    let lab = Lab::new();
    let cases: [(&str, &str, &str); 24] = [
        ("read a secret", "exec_command", "cat $ROOT/secrets/key"),
        (
            "read via /proc/self/root",
            "exec_command",
            "cat /proc/self/root$ROOT/secrets/key",
        ),
        (
            "read via a symlink",
            "exec_command",
            "ln -s $ROOT/secrets/key l; cat l",
        ),
        (
            "read via a hard link",
            "exec_command",
            "ln $ROOT/secrets/key h; cat h",
        ),
        (
            "read with python",
            "run_python",
            "print(open('$ROOT/secrets/key').read())",
        ),
        (
            "write outside",
            "exec_command",
            "echo x > $ROOT/outside/a && echo ESCAPED",
        ),
        (
            "write through ..",
            "exec_command",
            "echo x > ../outside/a && echo ESCAPED",
        ),
        (
            "mkdir -p outside",
            "exec_command",
            "mkdir -p $ROOT/outside/d && echo ESCAPED",
        ),
        (
            "rename across",
            "exec_command",
            "echo x > m && mv m $ROOT/outside/ && echo ESCAPED",
        ),
        (
            "write /dev/shm",
            "exec_command",
            "echo x > /dev/shm/iris-cli-escape && rm /dev/shm/iris-cli-escape && echo ESCAPED",
        ),
        (
            "rewrite the agent YAML",
            "exec_command",
            "echo 'permissions: {}' > iris.yaml && echo ESCAPED",
        ),
        (
            "replace the agent YAML",
            "run_python",
            "import os\nopen('t', 'w').write('x')\nos.replace('t', 'iris.yaml')\nprint('ESCAPED')",
        ),
        (
            "rewrite the hook script",
            "exec_command",
            "echo 'rm -rf /' >> hooks/no-rm.sh && echo ESCAPED",
        ),
        (
            "swap the hook's folder",
            "exec_command",
            "mv hooks h2 && mkdir hooks && echo evil > hooks/no-rm.sh && echo ESCAPED",
        ),
        (
            "write a git hook",
            "exec_command",
            "echo evil > .git/hooks/pre-commit && echo ESCAPED",
        ),
        (
            "plant in .iris",
            "exec_command",
            "mkdir -p .iris && echo x > .iris/planted && echo ESCAPED",
        ),
        (
            "TCP to loopback",
            "run_python",
            "import socket\nsocket.create_connection(('127.0.0.1', 22), 2)\nprint('ESCAPED')",
        ),
        (
            "UDP DNS",
            "run_python",
            "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'q', ('127.0.0.1', 53))\nprint('ESCAPED')",
        ),
        (
            "the Docker socket",
            "run_python",
            "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('/var/run/docker.sock')\nprint('ESCAPED')",
        ),
        (
            "ptrace iris",
            "run_python",
            "import ctypes, os\nr = ctypes.CDLL(None).ptrace(16, os.getppid(), 0, 0)\nprint('ESCAPED' if r == 0 else 'refused')",
        ),
        (
            "read iris's memory",
            "run_python",
            "import os\nopen(f'/proc/{os.getppid()}/mem', 'rb')\nprint('ESCAPED')",
        ),
        (
            "signal iris",
            "exec_command",
            "kill -0 $PPID && echo ESCAPED",
        ),
        ("unshare", "exec_command", "unshare -r true && echo ESCAPED"),
        (
            "personality",
            "exec_command",
            "setarch -R true && echo ESCAPED",
        ),
    ];
    for (name, tool, source) in cases {
        lab.check(name, tool, source);
    }
    // What must still work.
    let run = lab.call("exec_command", "echo hi > f.txt && git status --short");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("f.txt"), "{run:?}");
    let run = lab.call(
        "run_python",
        "open('g.txt', 'w').write('ok')\nprint(open('g.txt').read())",
    );
    assert!(run.code == 0 && run.stdout.contains("ok"), "{run:?}");
}

/// `iris check` says which rules of the policy this kernel enforces and with what
/// (this kernel: Landlock ABI 7, seccomp, user namespaces), in text and in JSON; with
/// `network: {allow: …}` it names the proxy's domains; a helper that cannot run makes
/// it name COMMAND_SANDBOX_UNAVAILABLE and the opt-outs; Docker mode and an agent
/// without commands have no sandbox block.
#[test]
fn iris_check_prints_what_this_kernel_enforces() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let write = |name: &str, yaml: &str| {
        std::fs::write(ws.join(name), yaml).unwrap();
        ws.join(name).to_str().unwrap().to_owned()
    };
    let default = write("default.yaml", "tools:\n  builtin: [exec.command]\n");
    let allow = write(
        "allow.yaml",
        "tools:\n  builtin: [exec.command]\ncommand:\n  sandbox:\n    network: {allow: [pypi.org, '*.pythonhosted.org']}\n",
    );
    let none = write("none.yaml", "tools:\n  builtin: [file.read]\n");
    let docker = write(
        "docker.yaml",
        "tools:\n  builtin: [file.read]\ncommand:\n  mode: docker\n",
    );
    let off = write(
        "off.yaml",
        "tools:\n  builtin: [exec.command]\ncommand:\n  sandbox: {filesystem: off, network: on}\n",
    );
    let check = |config: &str, json: bool, env: &[(&str, &str)]| {
        let mut args = vec!["--config", config];
        if json {
            args.push("--json");
        }
        args.push("check");
        iris(ws, &args, env, "")
    };

    let run = check(&default, false, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    let abi = lines[0]
        .strip_prefix("sandbox: Landlock ABI ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|abi| abi.parse::<i32>().ok())
        .unwrap_or_else(|| panic!("{run:?}"));
    assert!(abi >= 6, "{run:?}");
    assert_eq!(
        lines,
        [
            &*format!("sandbox: Landlock ABI {abi} (needs 6), seccomp yes, user namespaces yes"),
            &*format!("  enforced  file system: workspace-write [Landlock ABI 6 (found {abi})]"),
            "  enforced  deny_read paths masked, protected paths read-only [user and mount namespaces]",
            &*format!(
                "  enforced  network off: no TCP connect or bind [Landlock ABI 6 (found {abi})]"
            ),
            "  enforced  network off: no UDP, Unix, raw or packet socket [seccomp]",
            &*format!(
                "  enforced  no signal to or abstract socket of the host [Landlock ABI 6 (found {abi})]"
            ),
            "  enforced  no ptrace, namespaces, mounts, bpf, keyrings or io_uring [seccomp]",
            "ok",
        ],
        "{run:?}"
    );

    let run = check(&allow, true, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let sandbox = &report["sandbox"];
    assert_eq!(sandbox["enforced"], true, "{report}");
    assert_eq!(sandbox["kernel"]["landlock_abi"], abi);
    assert_eq!(sandbox["kernel"]["landlock_abi_needed"], 6);
    assert_eq!(sandbox["kernel"]["seccomp"]["available"], true);
    assert_eq!(sandbox["kernel"]["user_namespaces"]["available"], true);
    let rules = sandbox["rules"].as_array().unwrap();
    assert!(rules.iter().all(|r| r["enforced"] == true), "{report}");
    assert!(
        rules.iter().any(|r| r["rule"]
            == "network allow: the proxy admits only pypi.org, *.pythonhosted.org"
            && r["mechanism"] == "egress proxy on 127.0.0.1"),
        "{report}"
    );

    // The helper cannot run: the problem and the block both name it and the opt-outs.
    let missing = [("IRIS_SANDBOX_HELPER", "/nonexistent/iris-sandbox")];
    let run = check(&default, false, &missing);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout
            .contains("sandbox: the kernel could not be probed\n  error[COMMAND_SANDBOX_UNAVAILABLE]: the command sandbox cannot be enforced: IRIS_SANDBOX_HELPER names `/nonexistent/iris-sandbox`"),
        "{run:?}"
    );
    assert!(run.stdout.contains("`command.mode: docker`"), "{run:?}");
    let run = check(&default, true, &missing);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["sandbox"]["enforced"], false, "{report}");
    assert_eq!(
        report["sandbox"]["missing"]["code"],
        "COMMAND_SANDBOX_UNAVAILABLE"
    );

    let run = check(&off, false, &[]);
    assert_eq!(
        run.stdout,
        "sandbox: off (command.sandbox is filesystem: off, network: on): native commands run unrestricted\nok\n",
        "{run:?}"
    );
    let run = check(&none, false, &[]);
    assert_eq!((run.code, run.stdout.as_str()), (0, "ok\n"), "{run:?}");
    let run = check(&docker, true, &[]);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(report.get("sandbox").is_none(), "{report}");
}

/// An MCP stdio server whose override says `sandbox: true`, called through `iris call`:
/// the agent's own `command.sandbox` applies to it (its extra `deny_read` folder), the
/// agent YAML is protected from it, and its tools still work in the workspace.
#[test]
fn an_mcp_server_opted_into_the_sandbox_gets_the_agents_policy() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let ws = root.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(root.join("secrets")).unwrap();
    std::fs::write(root.join("secrets/key"), SECRET).unwrap();
    let server = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../iris-mcp/tests/fixtures/mcp/sdk_server.py")
        .display()
        .to_string();
    let mcp = serde_json::json!({"mcpServers": {
        "boxed": {"command": super::mcp::python(), "args": [server, "--file-tools"]},
    }});
    std::fs::write(ws.join("mcp.json"), mcp.to_string()).unwrap();
    let yaml = format!(
        "command:\n  sandbox:\n    deny_read: [{secrets}]\nmcp:\n  path: mcp.json\n  overrides:\n    boxed: {{sandbox: true}}\n",
        secrets = root.join("secrets").display()
    );
    std::fs::write(ws.join("iris.yaml"), &yaml).unwrap();
    let config = ws.join("iris.yaml");
    let call = |tool: &str, input: serde_json::Value| {
        iris(
            &ws,
            &[
                "--config",
                config.to_str().unwrap(),
                "call",
                tool,
                &input.to_string(),
                "--yes",
            ],
            &[],
            "",
        )
    };
    let key = root.join("secrets/key").display().to_string();
    let read = call("mcp__boxed__read_path", serde_json::json!({"path": key}));
    assert!(
        read.stdout.starts_with("refused:") && !read.stdout.contains(SECRET),
        "{read:?}"
    );
    let rewrite = call(
        "mcp__boxed__write_path",
        serde_json::json!({"path": config.display().to_string(), "text": "mcp: {}\n"}),
    );
    assert!(rewrite.stdout.starts_with("refused:"), "{rewrite:?}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), yaml);
    let note = ws.join("note.txt");
    let write = call(
        "mcp__boxed__write_path",
        serde_json::json!({"path": note.display().to_string(), "text": "in"}),
    );
    assert_eq!(write.stdout.trim(), "written", "{write:?}");
    assert_eq!(std::fs::read_to_string(&note).unwrap(), "in");
}
