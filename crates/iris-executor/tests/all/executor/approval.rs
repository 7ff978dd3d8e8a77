//! Permission and approval: deny, `RequireHuman` → `APPROVAL_REQUIRED`, and the
//! re-check with the current policy and identity when an approved call comes back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use iris_executor::{
    ApprovalMode, DefaultPermissionPolicy, PermissionDecision, PermissionPolicy, ToolExecutor,
};
use iris_tools_core::{
    BoxFuture, Tool, ToolCapability as Cap, ToolExecutionContext, ToolOutput, ToolRegistry,
    ToolUse, codes,
};
use serde_json::{Value, json};

use super::fixtures::{Log, ctx, def, register};

/// A policy whose decision the test changes between calls; it logs the identity it
/// was asked with.
#[derive(Clone)]
struct Switch {
    decision: Arc<Mutex<PermissionDecision>>,
    seen: Log,
}

impl PermissionPolicy for Switch {
    fn check<'a>(
        &'a self,
        tool: &'a dyn Tool,
        params: &'a Value,
        ctx: &'a ToolExecutionContext,
    ) -> BoxFuture<'a, PermissionDecision> {
        self.seen.push(format!(
            "{} {} {} agent={}",
            ctx.call_id,
            tool.definition().name,
            params,
            ctx.agent_id
        ));
        Box::pin(std::future::ready(self.decision.lock().unwrap().clone()))
    }
}

fn edit_executor() -> (ToolExecutor, Switch, Arc<AtomicUsize>) {
    let registry = ToolRegistry::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    register(&registry, def("edit_file", &[Cap::Write]), move |_, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { ToolOutput::text("edited") }
    });
    let policy = Switch {
        decision: Arc::new(Mutex::new(PermissionDecision::allow())),
        seen: Log::default(),
    };
    let executor = ToolExecutor::new(registry).with_permission_policy(policy.clone());
    (executor, policy, runs)
}

#[tokio::test]
async fn require_human_becomes_a_structured_awaiting_approval_result() {
    let (executor, policy, runs) = edit_executor();
    *policy.decision.lock().unwrap() =
        PermissionDecision::require_human("editing app.toml needs approval");
    let call = ToolUse::new("call_3", "edit_file", json!({"file_path": "app.toml"}));
    let result = executor.execute_one(&call, &ctx(), None).await;
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(result.error_code(), Some(codes::APPROVAL_REQUIRED));
    assert!(!result.approved);
    let approval = result.output.approval().expect("an approval request");
    assert_eq!(approval.reason, "editing app.toml needs approval");
    assert_eq!(approval.arguments, json!({"file_path": "app.toml"}));
    insta::assert_json_snapshot!(result);
}

/// The approval table: each step sets the policy's *current* decision and calls with
/// an optional approved id; an approval never overrides a decision that now denies.
#[tokio::test]
async fn approved_calls_recheck_the_current_policy() {
    let ask = PermissionDecision::require_human("needs approval");
    let deny = PermissionDecision::deny("edits are frozen");
    let allow = PermissionDecision::allow();
    // (decision now, approved id, expected code, expected total body runs)
    let steps = [
        (ask.clone(), None, Some(codes::APPROVAL_REQUIRED), 0),
        (
            ask.clone(),
            Some("another_call"),
            Some(codes::APPROVAL_REQUIRED),
            0,
        ),
        (ask.clone(), Some("call_3"), None, 1),
        (
            deny.clone(),
            Some("call_3"),
            Some(codes::PERMISSION_DENIED),
            1,
        ),
        (deny, None, Some(codes::PERMISSION_DENIED), 1),
        (allow.clone(), None, None, 2),
        (allow, Some("call_3"), None, 3),
    ];
    let (executor, policy, runs) = edit_executor();
    let call = ToolUse::new("call_3", "edit_file", json!({"file_path": "app.toml"}));
    for (i, (decision, approved, code, total_runs)) in steps.into_iter().enumerate() {
        *policy.decision.lock().unwrap() = decision;
        let ctx = ctx().agent_id(format!("agent-{i}"));
        let result = executor.execute_one(&call, &ctx, approved).await;
        assert_eq!(result.error_code(), code, "step {i}");
        assert_eq!(runs.load(Ordering::SeqCst), total_runs, "step {i}: runs");
        // The re-check saw this call's identity as it is now.
        let seen = policy.seen.take();
        assert_eq!(
            seen,
            [format!(
                r#"call_3 edit_file {{"file_path":"app.toml"}} agent=agent-{i}"#
            )],
            "step {i}: policy input"
        );
        // Only the call that ran on the human's approval is marked approved (step 6
        // ran because the policy now allows, not because of the approval).
        let expect_used = code.is_none() && i == 2;
        assert_eq!(result.approved, expect_used, "step {i}: approval recorded");
    }
}

/// The default permission policy through the executor: reads run, writes ask (confirm)
/// or are denied, depending on the write mode.
#[tokio::test]
async fn the_default_policy_through_the_executor() {
    let table = [
        (ApprovalMode::Confirm, "read_file", None),
        (
            ApprovalMode::Confirm,
            "write_file",
            Some(codes::APPROVAL_REQUIRED),
        ),
        (
            ApprovalMode::Deny,
            "write_file",
            Some(codes::PERMISSION_DENIED),
        ),
        (ApprovalMode::Allow, "write_file", None),
    ];
    for (write_mode, tool, code) in table {
        let registry = ToolRegistry::new();
        register(&registry, def("read_file", &[Cap::Read]), |_, _| async {
            ToolOutput::text("r")
        });
        register(&registry, def("write_file", &[Cap::Write]), |_, _| async {
            ToolOutput::text("w")
        });
        let policy = DefaultPermissionPolicy {
            write_mode,
            ..DefaultPermissionPolicy::default()
        };
        let executor = ToolExecutor::new(registry).with_permission_policy(policy);
        let result = executor
            .execute_one(&ToolUse::new("c", tool, json!({})), &ctx(), None)
            .await;
        assert_eq!(result.error_code(), code, "{write_mode:?} {tool}");
    }
}

/// Sets the arguments to a fixed value, as a rewriting middleware would.
struct SetArguments(Value);

impl iris_executor::ToolMiddleware for SetArguments {
    fn wrap_tool_call<'a>(
        &'a self,
        mut req: iris_executor::ToolRequest,
        next: iris_executor::Next<'a>,
    ) -> BoxFuture<'a, ToolOutput> {
        req.input.set_value(self.0.clone());
        next.run(req)
    }
}

/// An approval covers the arguments the human was shown: a middleware that rewrites
/// an approved call's arguments makes it wait for a new approval of the new
/// arguments; a rewrite to the same arguments keeps the approval.
#[tokio::test]
async fn an_approval_does_not_cover_rewritten_arguments() {
    let shown = json!({"x": 1});
    for (rewritten, runs, approved) in [(json!({"x": 2}), 0, false), (shown.clone(), 1, true)] {
        let (executor, policy, count) = edit_executor();
        *policy.decision.lock().unwrap() = PermissionDecision::require_human("edits need a human");
        let executor = executor.with_middleware(SetArguments(rewritten.clone()));
        let call = ToolUse::new("c1", "edit_file", shown.clone());
        let result = executor.execute_one(&call, &ctx(), Some("c1")).await;
        assert_eq!(
            count.load(Ordering::SeqCst),
            runs,
            "rewritten to {rewritten}"
        );
        assert_eq!(result.approved, approved, "rewritten to {rewritten}");
        if approved {
            assert_eq!(result.model_content(), "edited");
        } else {
            assert_eq!(result.error_code(), Some(codes::APPROVAL_REQUIRED));
            let approval = result.output.approval().unwrap();
            assert_eq!(
                approval.arguments, rewritten,
                "the human is asked about what would run"
            );
        }
    }
}
