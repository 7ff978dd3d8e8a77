//! Inner calls that need a human: the standalone error, the approved re-run, and the
//! refusal when a re-run would repeat a side effect.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use iris_executor::{PermissionDecision, PermissionPolicy, ToolExecutor};
use iris_script::ScriptCallable;
use iris_tools_core::{
    ApprovalGrant, BoxFuture, FnTool, Tool, ToolCapability, ToolDefinition, ToolExecutionContext,
    ToolOutput, ToolUse,
};
use serde_json::{Value, json};

use crate::support::Env;

/// Asks a human for `deploy`, allows everything else.
struct DeployNeedsHuman;

impl PermissionPolicy for DeployNeedsHuman {
    fn check<'a>(
        &'a self,
        tool: &'a dyn Tool,
        _params: &'a Value,
        _ctx: &'a ToolExecutionContext,
    ) -> BoxFuture<'a, PermissionDecision> {
        let decision = if tool.definition().name == "deploy" {
            PermissionDecision::require_human("`deploy` changes production")
        } else {
            PermissionDecision::allow()
        };
        Box::pin(std::future::ready(decision))
    }
}

fn deploy(runs: Arc<AtomicUsize>) -> impl Tool + use<> {
    let def = ToolDefinition::new(
        "deploy",
        "Deploy a build.",
        json!({"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]}),
    )
    .with_capabilities([ToolCapability::Write]);
    FnTool::new(def, move |input, _ctx| {
        let runs = Arc::clone(&runs);
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            ToolOutput::text(format!(
                "deployed {}",
                input["target"].as_str().unwrap_or("?")
            ))
        }
    })
}

const DEPLOY: &str = r#"
import iris_tools
print(len(iris_tools.list_files().text.splitlines()), "files")
print(iris_tools.deploy(target="prod").text)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inner_call_needing_approval_fails_standalone_then_runs_once_when_granted() {
    let env = Env::native(ScriptCallable::listing(["deploy"])).await;
    env.write("a.txt", "a");
    let runs = Arc::new(AtomicUsize::new(0));
    env.register(deploy(Arc::clone(&runs)));
    let executor = ToolExecutor::new(env.registry.clone()).with_permission_policy(DeployNeedsHuman);

    let waiting = env.script(&executor, DEPLOY, None).await;
    assert_eq!(waiting.error_code(), Some("APPROVAL_REQUIRED"));
    assert_eq!(
        waiting.model_content(),
        "Error[APPROVAL_REQUIRED]: run_tool_script: inner call `deploy` (call_1_s2) needs approval: `deploy` changes production"
    );
    let approval = waiting
        .output
        .approval()
        .expect("the outer call waits")
        .clone();
    assert_eq!(
        approval.arguments["inner_calls"],
        json!([{"tool": "deploy", "arguments": {"target": "prod"}}])
    );
    assert_eq!(waiting.output.data["inner_tool"], "deploy");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "nothing ran without the human"
    );

    // The host re-runs the approved call with the grant the human gave.
    let ctx = env
        .ctx(&executor)
        .with_extension(ApprovalGrant::new("call_1", approval.arguments.clone()));
    let call = ToolUse::new("call_1", "run_tool_script", json!({"code": DEPLOY}));
    let done = executor.execute_one(&call, &ctx, Some("call_1")).await;
    assert!(!done.is_error(), "{}", done.model_content());
    assert_eq!(done.model_content(), "1 files\ndeployed prod\n");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // The grant covers those arguments only: another target waits again.
    let other = DEPLOY.replace("\"prod\"", "\"staging\"");
    let call = ToolUse::new("call_1", "run_tool_script", json!({"code": other}));
    let again = executor.execute_one(&call, &ctx, Some("call_1")).await;
    assert_eq!(again.error_code(), Some("APPROVAL_REQUIRED"));
    // The new request lists what was granted before and the call that asks now.
    assert_eq!(
        again.output.approval().unwrap().arguments["inner_calls"],
        json!([
            {"tool": "deploy", "arguments": {"target": "prod"}},
            {"tool": "deploy", "arguments": {"target": "staging"}}
        ])
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_after_a_side_effect_is_refused_as_not_replayable() {
    let env = Env::native(ScriptCallable::listing(["deploy", "write_file"])).await;
    let runs = Arc::new(AtomicUsize::new(0));
    env.register(deploy(Arc::clone(&runs)));
    let executor = ToolExecutor::new(env.registry.clone()).with_permission_policy(DeployNeedsHuman);
    let code = r#"
import iris_tools
iris_tools.write_file(file_path="notes.txt", content="step 1\n")
iris_tools.deploy(target="prod")
"#;
    let result = env.script(&executor, code, None).await;
    assert_eq!(
        result.error_code(),
        Some("SCRIPT_NOT_REPLAYABLE"),
        "{}",
        result.model_content()
    );
    assert!(
        result
            .model_content()
            .contains("`write_file` (call_1_s1) already ran")
    );
    assert!(
        result.output.approval().is_none(),
        "nobody is asked about a re-run that is unsafe"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    env.close().await;
}
