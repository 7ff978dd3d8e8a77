//! Sandbox escalation (`command.sandbox.escalation: ask`) through the real executor and
//! the default permission policy under `execute_mode: allow`: the `sandbox` parameter
//! is in `exec_command`'s schema only under `ask`; a call that asks for more waits for
//! a human with the widening in the reason, runs nothing until approved, and then runs
//! with the wider policy (and only that call); under `never` the parameter is invalid.

use std::path::PathBuf;

use iris_command::{CommandBinding, CommandConfig, CommandService, SandboxPolicy, command_tools};
use iris_executor::{ApprovalMode, DefaultPermissionPolicy, ToolExecutor};
use iris_sandbox::Escalation;
use iris_tools_core::{ToolExecutionContext, ToolRegistry, ToolResult, ToolUse};
use serde_json::{Value, json};

struct Lab {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    executor: ToolExecutor,
    binding: CommandBinding,
}

impl Lab {
    async fn new(escalation: Escalation) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        let policy = SandboxPolicy {
            escalation,
            ..SandboxPolicy::default()
        };
        let service =
            CommandService::new(CommandConfig::native().with_sandbox(policy), &ws).unwrap();
        let binding = CommandBinding::owned(service);
        binding.prepare().await.unwrap();
        let registry = ToolRegistry::new();
        registry.register_many(command_tools(&binding)).unwrap();
        let executor = ToolExecutor::new(registry).with_permission_policy(
            DefaultPermissionPolicy::new().execute_mode(ApprovalMode::Allow),
        );
        Self {
            _dir: dir,
            root,
            ws,
            executor,
            binding,
        }
    }

    async fn call(&self, id: &str, input: Value, approved: bool) -> ToolResult {
        let call = ToolUse::new(id, "exec_command", input);
        let ctx = ToolExecutionContext::new(&self.ws);
        self.executor
            .execute_one(&call, &ctx, approved.then_some(id))
            .await
    }

    fn schema(&self, tool: &str) -> Value {
        self.executor
            .registry()
            .get(tool)
            .unwrap()
            .definition()
            .input_schema
            .clone()
    }
}

/// A loopback listener the command connects to; `network: off` refuses the connect.
fn listener() -> (std::net::TcpListener, u16) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

fn connect(port: u16) -> String {
    format!(
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 5); print(\"connected\")'"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_puts_sandbox_in_the_schema_and_never_leaves_it_out() {
    let ask = Lab::new(Escalation::Ask).await;
    insta::assert_json_snapshot!(
        "exec_command_schema_escalation_ask",
        ask.schema("exec_command")
    );
    let exec = ask.executor.registry().get("exec_command").unwrap();
    assert_eq!(
        iris_providers::lint::lint_definition(exec.definition()),
        vec![]
    );
    // run_python never has it: a program that needs more runs through exec_command.
    assert!(
        ask.schema("run_python")["properties"]
            .get("sandbox")
            .is_none()
    );
    let never = Lab::new(Escalation::Never).await;
    assert!(
        never.schema("exec_command")["properties"]
            .get("sandbox")
            .is_none()
    );
    // Under `never` a call carrying it fails validation and nothing runs.
    let result = never
        .call(
            "call_1",
            json!({"command": "touch ran", "sandbox": {"network": "on"}}),
            false,
        )
        .await;
    assert_eq!(result.error_code(), Some("INVALID_INPUT"), "{result:?}");
    assert!(!never.ws.join("ran").exists());
    // Under `ask` a malformed request is invalid too.
    for bad in [json!({}), json!({"network": "off"}), json!({"net": "on"})] {
        let result = ask
            .call(
                "call_2",
                json!({"command": "touch ran", "sandbox": bad}),
                false,
            )
            .await;
        assert_eq!(
            result.error_code(),
            Some("INVALID_INPUT"),
            "{bad}: {result:?}"
        );
    }
    assert!(!ask.ws.join("ran").exists());
    ask.binding.close().await.unwrap();
    never.binding.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_widening_waits_for_a_human_and_applies_to_the_approved_call_only() {
    let lab = Lab::new(Escalation::Ask).await;
    let (_listener, port) = listener();
    let wide = json!({"command": connect(port), "sandbox": {"network": "on"}});

    // Without approval: waits (even under execute_mode: allow), names the widening,
    // runs nothing.
    let waiting = lab.call("call_1", wide.clone(), false).await;
    let approval = waiting.output.approval().expect("an approval request");
    assert_eq!(
        approval.reason,
        "tool `exec_command` asks to widen its sandbox: network: on (policy: off)"
    );
    assert_eq!(approval.arguments["sandbox"], json!({"network": "on"}));
    let marker = json!({"command": "touch ran", "sandbox": {"filesystem": "off"}});
    let waiting = lab.call("call_2", marker, false).await;
    assert!(waiting.output.approval().is_some(), "{waiting:?}");
    assert!(!lab.ws.join("ran").exists());

    // Approved: runs with the network on, and says so.
    let ran = lab.call("call_1", wide, true).await;
    assert_eq!(ran.error_code(), None, "{ran:?}");
    assert!(ran.approved);
    assert_eq!(ran.model_content().trim(), "connected");
    let report = &ran.output.data["sandbox"];
    assert_eq!(report["network"], "on");
    assert_eq!(report["filesystem"], "workspace-write");
    assert_eq!(report["widening"], json!({"network": "on"}));

    // The next call without the parameter is back under the policy.
    let plain = lab
        .call("call_3", json!({"command": connect(port)}), false)
        .await;
    assert_eq!(plain.error_code(), Some("COMMAND_FAILED"), "{plain:?}");
    assert!(!plain.approved);
    assert_eq!(plain.output.data["sandbox"]["network"], "off");

    // `filesystem: off`, approved: a write outside the workspace goes through.
    let outside = lab.root.join("outside/written");
    let write = json!({
        "command": format!("echo x > {}", outside.display()),
        "sandbox": {"filesystem": "off"}
    });
    let refused = lab
        .call("call_4", json!({"command": write["command"]}), false)
        .await;
    assert_eq!(refused.error_code(), Some("COMMAND_FAILED"), "{refused:?}");
    assert!(!outside.exists());
    let ran = lab.call("call_5", write, true).await;
    assert_eq!(ran.error_code(), None, "{ran:?}");
    assert!(outside.exists());
    assert_eq!(ran.output.data["sandbox"]["filesystem"], "off");
    lab.binding.close().await.unwrap();
}

#[test]
fn docker_mode_refuses_ask() {
    let err = serde_json::from_value::<CommandConfig>(
        json!({"mode": "docker", "sandbox": {"escalation": "ask"}}),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("invalid command config `sandbox.escalation`"),
        "{err}"
    );
}
