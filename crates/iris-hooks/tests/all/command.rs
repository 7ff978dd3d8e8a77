//! Command hooks with real processes through iris-command's native service.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use iris_command::{CommandBinding, CommandConfig, CommandService, command_tools};
use iris_executor::{
    ApprovalMode, BeforeOutcome, BodyStatus, DefaultPermissionPolicy, ToolExecutor,
    ToolHookDispatcher,
};
use iris_hooks::command::{CommandHook, command_hooks};
use iris_hooks::config::{HookFactoryRegistry, HookSpec};
use iris_hooks::{EventCommon, HookDispatcher, HookEventKind, HookRegistration, RunStatus};
use iris_tools_core::{ToolExecutionContext, ToolOutput, ToolRegistry, ToolUse};
use serde_json::json;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hooks")
        .join(name)
}

async fn native(workspace: &Path) -> CommandBinding {
    native_with(CommandConfig::default(), workspace).await
}

async fn native_with(config: CommandConfig, workspace: &Path) -> CommandBinding {
    let service = CommandService::new(config, workspace).unwrap();
    service.prepare().await.unwrap();
    CommandBinding::owned(service)
}

fn hook(
    binding: &CommandBinding,
    kind: HookEventKind,
    command: &str,
    timeout: f64,
) -> HookRegistration {
    HookRegistration::builder(kind, "guard", CommandHook::new(binding, command))
        .timeout_seconds(timeout)
        .build()
        .unwrap()
}

async fn before(d: &HookDispatcher, ws: &Path, command: &str) -> BeforeOutcome {
    let ctx = ToolExecutionContext::new(ws).session_id("s-1");
    d.before_tool(&ctx, "c1", "exec_command", &json!({"command": command}))
        .await
}

/// Runs one command hook on `tool.before` and compares the outcome with `expect`
/// (`Ok(None)` = continue, `Ok(Some(reason))` = the hook's own deny, `Err(fragment)` =
/// a fail-closed denial whose reason contains `fragment`).
async fn check(
    binding: &CommandBinding,
    ws: &Path,
    command: &str,
    expect: Result<Option<&str>, &str>,
) {
    let d = HookDispatcher::new(vec![hook(
        binding,
        HookEventKind::ToolBefore,
        command,
        10.0,
    )]);
    let got = before(&d, ws, "ls").await;
    match (expect, got) {
        (Ok(None), BeforeOutcome::Continue) => {}
        (Ok(Some(reason)), BeforeOutcome::Deny(r)) => {
            assert_eq!(
                r,
                format!("hook `guard` denied the call: {reason}"),
                "{command}"
            )
        }
        (Err(fragment), BeforeOutcome::Deny(r)) => {
            assert!(r.starts_with("hook `guard` failed ("), "{command}: {r}");
            assert!(r.contains(fragment), "{command}: {r}\n  want: {fragment}");
        }
        (expect, got) => panic!("{command}: expected {expect:?}, got {got:?}"),
    }
}

#[tokio::test]
async fn command_hook_protocol_table() {
    let ws = tempfile::tempdir().unwrap();
    let binding = native(ws.path()).await;
    let cases: Vec<(&str, Result<Option<&str>, &str>)> = vec![
        ("cat > /dev/null; printf '{}'", Ok(None)),
        // A hook that never reads stdin still works.
        ("printf '{}'", Ok(None)),
        ("printf '{\"deny_reason\": null}'", Ok(None)),
        ("printf '{\"deny_reason\": \"no\"}'", Ok(Some("no"))),
        (
            "printf 'hello'",
            Err("HOOK_PROTOCOL_ERROR): stdout: the reply is not exactly one JSON object"),
        ),
        (
            "printf '{}{}'",
            Err(
                "HOOK_PROTOCOL_ERROR): stdout: the reply is not exactly one JSON object: trailing characters",
            ),
        ),
        (
            "printf '[]'",
            Err("stdout: the reply must be a JSON object, got an array"),
        ),
        ("true", Err("stdout: the reply was empty")),
        (
            "printf '{\"feedback\": \"x\"}'",
            Err(
                "unexpected key `feedback` for a tool.before hook; allowed: `deny_reason`, `updated_input`, `ask`",
            ),
        ),
        (
            "printf '{\"updated_input\": \"ls -l\"}'",
            Err("`updated_input` must be a JSON object (the tool's whole input), got a string"),
        ),
        ("printf '{\"ask\": \" \"}'", Err("`ask` must not be empty")),
        (
            "printf '{\"deny_reason\": \"\"}'",
            Err("`deny_reason` must not be empty"),
        ),
        (
            "printf '{\"deny_reason\": 3}'",
            Err("`deny_reason` must be a string, got a number"),
        ),
        (
            "echo broken >&2; exit 3",
            Err("HOOK_COMMAND_FAILED): command exited with code 3; stderr: broken"),
        ),
        (
            "head -c 3000000 /dev/zero | tr '\\0' x",
            Err("HOOK_PROTOCOL_ERROR): stdout was truncated (3000000 bytes written)"),
        ),
        // stderr is diagnostics, never parsed: past the 1 MiB capture limit it is cut,
        // and the answer on stdout still counts.
        (
            "head -c 2000000 /dev/zero | tr '\\0' x >&2; echo '{}'",
            Ok(None),
        ),
        (
            "head -c 2000000 /dev/zero | tr '\\0' x >&2; echo '{\"deny_reason\": \"no\"}'",
            Ok(Some("no")),
        ),
        (
            "kill -9 $$",
            Err("HOOK_COMMAND_FAILED): command ended without an exit code"),
        ),
    ];
    for (command, expect) in cases {
        check(&binding, ws.path(), command, expect).await;
    }
    binding.close().await.unwrap();
}

#[tokio::test]
async fn fixture_scripts_deny_and_give_feedback() {
    let ws = tempfile::tempdir().unwrap();
    let binding = native(ws.path()).await;
    let deny = format!("sh {}", fixture("deny_rm.sh").display());
    let d = HookDispatcher::new(vec![hook(&binding, HookEventKind::ToolBefore, &deny, 10.0)]);
    assert_eq!(
        before(&d, ws.path(), "rm -rf /").await,
        BeforeOutcome::Deny("hook `guard` denied the call: rm is not allowed here".into())
    );
    assert_eq!(
        before(&d, ws.path(), "ls -la").await,
        BeforeOutcome::Continue
    );

    let python = std::env::var("IRIS_PYTHON").unwrap_or_else(|_| "python3".into());
    let feedback = format!("{python} {}", fixture("feedback.py").display());
    let d = HookDispatcher::new(vec![hook(
        &binding,
        HookEventKind::ToolAfter,
        &feedback,
        10.0,
    )]);
    let ctx = ToolExecutionContext::new(ws.path()).session_id("s-1");
    let result = ToolOutput::text("done");
    let got = d
        .after_tool(
            &ctx,
            "c1",
            "exec_command",
            &json!({}),
            &result,
            BodyStatus::Success,
        )
        .await;
    assert_eq!(got.feedback, ["exec_command finished with success"]);
    binding.close().await.unwrap();
}

#[tokio::test]
async fn the_event_arrives_on_stdin_in_the_wire_format() {
    let ws = tempfile::tempdir().unwrap();
    let binding = native(ws.path()).await;
    let out = ws.path().join("event.json");
    let command = format!(
        "sh {} {}",
        fixture("echo_event.sh").display(),
        out.display()
    );
    let d = HookDispatcher::new(vec![hook(
        &binding,
        HookEventKind::ToolBefore,
        &command,
        10.0,
    )]);
    assert_eq!(before(&d, ws.path(), "ls").await, BeforeOutcome::Continue);
    let event: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(event["version"], 1);
    assert_eq!(event["event"], "tool.before");
    assert_eq!(event["tool_name"], "exec_command");
    assert_eq!(event["arguments"], json!({"command": "ls"}));
    assert_eq!(event["session_id"], "s-1");
    binding.close().await.unwrap();
}

fn alive(pid: u32) -> bool {
    // A zombie has been killed already; only a running or sleeping process counts.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

#[tokio::test]
async fn a_hook_past_its_deadline_denies_and_its_process_tree_dies() {
    let ws = tempfile::tempdir().unwrap();
    let binding = native(ws.path()).await;
    let pid_file = ws.path().join("child.pid");
    let command = format!(
        "sh {} {}",
        fixture("sleeper.sh").display(),
        pid_file.display()
    );
    let d = HookDispatcher::new(vec![hook(
        &binding,
        HookEventKind::ToolBefore,
        &command,
        1.0,
    )]);
    let outcome = before(&d, ws.path(), "ls").await;
    assert_eq!(
        outcome,
        BeforeOutcome::Deny(
            "hook `guard` failed (HOOK_TIMEOUT): timed out after 1.000 s; the call was denied"
                .into()
        )
    );
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The kill is confirmed before the call returns; allow the kernel a bounded moment
    // to reap, polling rather than sleeping a fixed time.
    let start = Instant::now();
    while alive(pid) && start.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(pid), "grandchild {pid} survived the hook deadline");
    binding.close().await.unwrap();
}

/// The command service's root timeout caps a hook's own deadline: a hook allowed 60 s
/// on a service capped at 1 s times out after 1 s, and the error names that cap.
#[tokio::test]
async fn the_command_services_timeout_caps_a_longer_hook_deadline_and_is_named() {
    let ws = tempfile::tempdir().unwrap();
    let binding = native_with(
        CommandConfig::default().with_timeout_seconds(1.0),
        ws.path(),
    )
    .await;
    let d = HookDispatcher::new(vec![hook(
        &binding,
        HookEventKind::ToolBefore,
        "sleep 30; echo '{}'",
        60.0,
    )]);
    let start = Instant::now();
    assert_eq!(
        before(&d, ws.path(), "ls").await,
        BeforeOutcome::Deny(
            "hook `guard` failed (HOOK_TIMEOUT): timed out after 1.000 s: the command \
             service's `timeout_seconds` caps a command hook's deadline; the call was denied"
                .into()
        )
    );
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    binding.close().await.unwrap();
}

#[tokio::test]
async fn run_finished_command_hooks_run_only_for_completed_runs() {
    let ws = tempfile::tempdir().unwrap();
    let binding = native(ws.path()).await;
    let reg = HookRegistration::builder(
        HookEventKind::RunFinished,
        "mark",
        CommandHook::new(&binding, "touch marker; echo '{}'"),
    )
    .build()
    .unwrap();
    let d = HookDispatcher::new(vec![reg]);
    let common = EventCommon::from_context(&ToolExecutionContext::new(ws.path()));
    for status in [RunStatus::Failed, RunStatus::Cancelled, RunStatus::Waiting] {
        assert!(
            d.run_finished(common.clone(), json!({}), status)
                .await
                .is_empty()
        );
        assert!(
            !ws.path().join("marker").exists(),
            "{status:?} ran the hook"
        );
    }
    assert!(
        d.run_finished(common, json!({}), RunStatus::Completed)
            .await
            .is_empty()
    );
    assert!(ws.path().join("marker").exists());
    binding.close().await.unwrap();
}

#[tokio::test]
async fn a_yaml_command_hook_denies_a_real_exec_command_through_the_executor() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("keep.txt"), "precious").unwrap();
    let tools = native(ws.path()).await;
    let hooks_binding = native(ws.path()).await;

    let yaml = format!(
        "- {{name: no-rm, event: tool.before, tools: [exec_command], handler: {{type: command, command: 'sh {}'}}}}",
        fixture("deny_rm.sh").display()
    );
    let specs: Vec<HookSpec> = serde_yaml::from_str(&yaml).unwrap();
    let registrations = HookFactoryRegistry::new()
        .build(&specs, Some(&*command_hooks(&hooks_binding)))
        .unwrap();

    let registry = ToolRegistry::new();
    registry.register_many(command_tools(&tools)).unwrap();
    let executor = ToolExecutor::new(registry)
        .with_permission_policy(DefaultPermissionPolicy::new().execute_mode(ApprovalMode::Allow))
        .with_hook_dispatcher(HookDispatcher::new(registrations));
    let ctx = ToolExecutionContext::new(ws.path()).session_id("s-1");

    let denied = executor
        .execute_one(
            &ToolUse::new("c1", "exec_command", json!({"command": "rm keep.txt"})),
            &ctx,
            None,
        )
        .await;
    assert_eq!(denied.error_code(), Some("HOOK_DENIED"));
    assert!(
        denied.model_content().contains("rm is not allowed here"),
        "{}",
        denied.model_content()
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("keep.txt")).unwrap(),
        "precious"
    );

    let allowed = executor
        .execute_one(
            &ToolUse::new("c2", "exec_command", json!({"command": "cat keep.txt"})),
            &ctx,
            None,
        )
        .await;
    assert!(!allowed.is_error(), "{}", allowed.model_content());
    assert_eq!(allowed.model_content(), "precious");
    tools.close().await.unwrap();
    hooks_binding.close().await.unwrap();
}

/// A command hook's process gets the command service's allow-listed environment, not
/// the host's: a secret in the host environment (`IRIS_PROVIDER_API_KEYS__TAVILY`) and
/// any other host variable stay out; `command.env_passthrough` and `command.env` arrive.
/// The host environment is set by re-running this test as a child process (edition
/// 2024 makes `set_var` unsafe, and the workspace forbids unsafe code).
#[test]
fn a_command_hook_never_sees_the_hosts_secrets() {
    const TEST: &str = "command::a_command_hook_never_sees_the_hosts_secrets";
    if std::env::var_os("IRIS_HOOKS_TEST_CHILD").is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST, "--nocapture"])
            .env("IRIS_HOOKS_TEST_CHILD", "1")
            .env("IRIS_PROVIDER_API_KEYS__TAVILY", "secret-value")
            .env("HOST_ONLY_VAR_7F3A", "leaked-host-value")
            .env("PASS_ME", "passed")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success() && text.contains("1 passed"), "{text}");
        return;
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let ws = tempfile::tempdir().unwrap();
            let config = CommandConfig::native()
                .with_env("EXPLICIT_VAR", "explicit")
                .with_env_passthrough(["PASS_ME"]);
            let service = CommandService::new(config, ws.path()).unwrap();
            service.prepare().await.unwrap();
            let binding = CommandBinding::owned(service);
            let yaml = "- name: env-audit\n  event: tool.before\n  tools: [exec_command]\n  handler:\n    type: command\n    command: \"env > hook-env.txt; printf '{}'\"\n";
            let specs: Vec<HookSpec> = serde_yaml::from_str(yaml).unwrap();
            let registrations = HookFactoryRegistry::new()
                .build(&specs, Some(&*command_hooks(&binding)))
                .unwrap();
            let registry = ToolRegistry::new();
            registry.register_many(command_tools(&binding)).unwrap();
            let executor = ToolExecutor::new(registry)
                .with_permission_policy(
                    DefaultPermissionPolicy::new().execute_mode(ApprovalMode::Allow),
                )
                .with_hook_dispatcher(HookDispatcher::new(registrations));
            let ctx = ToolExecutionContext::new(ws.path()).session_id("s-1");
            let result = executor
                .execute_one(
                    &ToolUse::new("c1", "exec_command", json!({"command": "true"})),
                    &ctx,
                    None,
                )
                .await;
            assert!(!result.is_error(), "{}", result.model_content());
            let env = std::fs::read_to_string(ws.path().join("hook-env.txt")).unwrap();
            assert!(!env.contains("secret-value"), "the hook saw the secret:\n{env}");
            assert!(!env.contains("IRIS_"), "the hook saw an IRIS_* variable:\n{env}");
            assert!(
                !env.contains("HOST_ONLY_VAR_7F3A"),
                "the hook saw a host variable that is not allow-listed:\n{env}"
            );
            let lines: Vec<&str> = env.lines().collect();
            assert!(lines.contains(&"PASS_ME=passed"), "{env}");
            assert!(lines.contains(&"EXPLICIT_VAR=explicit"), "{env}");
            assert!(lines.iter().any(|l| l.starts_with("PATH=")), "{env}");
            binding.close().await.unwrap();
        });
}
