//! Dispatcher ordering, fail-closed before-hooks, after-hook feedback, cancellation.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use iris_executor::{BeforeOutcome, BodyStatus, ToolHookDispatcher};
use iris_hooks::{
    EventCommon, HookDispatcher, HookError, HookErrorKind, HookEvent, HookEventKind, HookFailure,
    HookRegistration, HookResult, RunStatus,
};
use iris_tools_core::{CancellationSignal, ToolExecutionContext, ToolOutput};
use serde_json::json;

type Log = Arc<Mutex<Vec<String>>>;

/// A hook that records its name and answers `answer`.
fn hook(kind: HookEventKind, name: &str, log: &Log, answer: HookResult) -> HookRegistration {
    let log = Arc::clone(log);
    let tag = name.to_owned();
    HookRegistration::builder(kind, name, move |event: HookEvent| {
        let log = Arc::clone(&log);
        let tag = tag.clone();
        let answer = answer.clone();
        async move {
            log.lock().unwrap().push(format!("{tag}:{}", event.kind()));
            Ok(answer)
        }
    })
    .build()
    .unwrap()
}

fn failing(kind: HookEventKind, name: &str) -> HookRegistration {
    HookRegistration::builder(kind, name, |_e: HookEvent| async {
        Err(HookError::failed("boom"))
    })
    .build()
    .unwrap()
}

/// A hook that panics with `hook bug`: before it returns its future when
/// `synchronous`, else on the future's first poll.
fn panicking(kind: HookEventKind, name: &str, synchronous: bool) -> HookRegistration {
    HookRegistration::builder(kind, name, move |_e: HookEvent| {
        if synchronous {
            panic!("hook bug");
        }
        async {
            if true {
                panic!("hook bug");
            }
            Ok(HookResult::None)
        }
    })
    .build()
    .unwrap()
}

fn ctx() -> ToolExecutionContext {
    ToolExecutionContext::new("/srv/ws")
        .session_id("s-1")
        .agent_id("main")
}

async fn before(d: &HookDispatcher, ctx: &ToolExecutionContext) -> BeforeOutcome {
    d.before_tool(ctx, "c1", "exec_command", &json!({"command": "ls"}))
        .await
}

/// `tool.after` of a successful `exec_command {"command": "ls"}` whose output is
/// `out`: the feedback collected.
async fn after(d: &HookDispatcher) -> Vec<String> {
    let result = ToolOutput::text("out");
    d.after_tool(
        &ctx(),
        "c1",
        "exec_command",
        &json!({"command": "ls"}),
        &result,
        BodyStatus::Success,
    )
    .await
    .feedback
}

#[tokio::test]
async fn before_hooks_run_in_order_and_first_deny_stops_the_chain() {
    use HookEventKind::ToolBefore;
    let log: Log = Log::default();
    let d = HookDispatcher::new(vec![
        hook(ToolBefore, "a", &log, HookResult::None),
        hook(ToolBefore, "b", &log, HookResult::deny("no")),
        hook(ToolBefore, "c", &log, HookResult::None),
    ]);
    assert_eq!(
        before(&d, &ctx()).await,
        BeforeOutcome::Deny("hook `b` denied the call: no".into())
    );
    assert_eq!(*log.lock().unwrap(), ["a:tool.before", "b:tool.before"]);
}

#[tokio::test]
async fn before_hooks_fail_closed() {
    use HookEventKind::ToolBefore;
    let log: Log = Log::default();
    let cases: Vec<(HookRegistration, &str)> = vec![
        (
            failing(ToolBefore, "broken"),
            "hook `broken` failed (HOOK_FAILED): boom; the call was denied",
        ),
        (
            panicking(ToolBefore, "panicky", false),
            "hook `panicky` failed (HOOK_FAILED): panicked: hook bug; the call was denied",
        ),
        (
            hook(ToolBefore, "confused", &log, HookResult::feedback("hi")),
            "hook `confused` failed (HOOK_PROTOCOL_ERROR): a tool.before hook returned a tool.after result; \
             the call was denied",
        ),
    ];
    for (reg, reason) in cases {
        let d = HookDispatcher::new(vec![reg, hook(ToolBefore, "later", &log, HookResult::None)]);
        assert_eq!(before(&d, &ctx()).await, BeforeOutcome::Deny(reason.into()));
    }
    // The hook after a failing one never ran.
    assert!(log.lock().unwrap().iter().all(|l| !l.starts_with("later")));
}

#[tokio::test(start_paused = true)]
async fn a_before_hook_past_its_deadline_denies() {
    let slow =
        HookRegistration::builder(HookEventKind::ToolBefore, "slow", |_e: HookEvent| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(HookResult::None)
        })
        .timeout_seconds(2.0)
        .build()
        .unwrap();
    let d = HookDispatcher::new(vec![slow]);
    assert_eq!(
        before(&d, &ctx()).await,
        BeforeOutcome::Deny(
            "hook `slow` failed (HOOK_TIMEOUT): timed out after 2.000 s; the call was denied"
                .into()
        )
    );
}

#[tokio::test(start_paused = true)]
async fn cancellation_stays_cancellation() {
    let signal = CancellationSignal::new();
    let trigger = signal.clone();
    let waits =
        HookRegistration::builder(HookEventKind::ToolBefore, "waits", move |_e: HookEvent| {
            let trigger = trigger.clone();
            async move {
                trigger.cancel();
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok(HookResult::None)
            }
        })
        .build()
        .unwrap();
    let d = HookDispatcher::new(vec![waits]);
    let ctx = ctx().cancellation(signal.clone());
    assert_eq!(before(&d, &ctx).await, BeforeOutcome::Cancelled);
    // Already cancelled before the first hook: no hook runs, still cancelled.
    let log: Log = Log::default();
    let d = HookDispatcher::new(vec![hook(
        HookEventKind::ToolBefore,
        "a",
        &log,
        HookResult::None,
    )]);
    assert_eq!(before(&d, &ctx).await, BeforeOutcome::Cancelled);
    assert!(log.lock().unwrap().is_empty());
}

#[tokio::test]
async fn tool_filters_select_hooks() {
    use HookEventKind::ToolBefore;
    let log: Log = Log::default();
    let only_write = HookRegistration::builder(ToolBefore, "w", |_e: HookEvent| async {
        Ok(HookResult::deny("x"))
    })
    .tools(["write_file"])
    .build()
    .unwrap();
    let d = HookDispatcher::new(vec![
        only_write,
        hook(ToolBefore, "all", &log, HookResult::None),
    ]);
    assert_eq!(before(&d, &ctx()).await, BeforeOutcome::Continue);
    assert_eq!(*log.lock().unwrap(), ["all:tool.before"]);
}

#[tokio::test]
async fn after_hooks_collect_feedback_in_order_and_survive_failures() {
    use HookEventKind::ToolAfter;
    let log: Log = Log::default();
    let seen = Arc::new(Mutex::new(None));
    let seen2 = Arc::clone(&seen);
    let inspect = HookRegistration::builder(ToolAfter, "inspect", move |e: HookEvent| {
        *seen2.lock().unwrap() = Some(e.to_json());
        async { Ok(HookResult::None) }
    })
    .build()
    .unwrap();
    let d = HookDispatcher::new(vec![
        hook(ToolAfter, "first", &log, HookResult::feedback("one")),
        failing(ToolAfter, "broken"),
        hook(ToolAfter, "wrong-type", &log, HookResult::deny("late")),
        inspect,
        hook(ToolAfter, "second", &log, HookResult::feedback("two")),
    ]);
    let feedback = after(&d).await;
    assert_eq!(feedback, ["one", "two"]);
    let wire = seen.lock().unwrap().clone().unwrap();
    assert_eq!(wire["event"], "tool.after");
    assert_eq!(wire["body_status"], "success");
    assert_eq!(wire["result"]["content"][0]["text"], "out");
    assert_eq!(wire["result"]["is_error"], false);
    // The result is the body's output: the call's identity is the event's own
    // `call_id` / `tool_name`, not repeated inside it.
    assert!(wire["result"].get("tool_use_id").is_none(), "{wire}");
    assert!(wire["result"].get("tool_name").is_none(), "{wire}");
    assert_eq!(wire["call_id"], "c1");
    assert_eq!(wire["tool_name"], "exec_command");
    assert_eq!(wire["session_id"], "s-1");
}

#[tokio::test]
async fn run_hooks_report_failures_and_go_on() {
    let log: Log = Log::default();
    let d = HookDispatcher::new(vec![
        failing(HookEventKind::RunStarted, "broken"),
        hook(HookEventKind::RunStarted, "ok", &log, HookResult::None),
        hook(
            HookEventKind::RunFinished,
            "wrong",
            &log,
            HookResult::deny("x"),
        ),
    ]);
    let common = EventCommon::from_context(&ctx());
    let failures = d
        .run_started(common.clone(), json!({}), json!("hi"))
        .await
        .failures;
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].hook, "broken");
    assert_eq!(failures[0].error.code(), "HOOK_FAILED");
    let failures = d
        .run_finished(common, json!({}), RunStatus::Completed)
        .await;
    assert_eq!(failures[0].error.code(), "HOOK_PROTOCOL_ERROR");
    assert_eq!(
        *log.lock().unwrap(),
        ["ok:run.started", "wrong:run.finished"]
    );
}

#[tokio::test]
async fn each_handler_gets_its_own_snapshot() {
    use HookEventKind::ToolBefore;
    let seen: Arc<Mutex<Vec<serde_json::Value>>> = Arc::default();
    let mk = |name: &str| {
        let seen = Arc::clone(&seen);
        HookRegistration::builder(ToolBefore, name, move |mut e: HookEvent| {
            let seen = Arc::clone(&seen);
            async move {
                // Mutating the snapshot must not leak into the next hook's event.
                if let iris_hooks::EventPayload::ToolBefore { arguments, .. } = &mut e.payload {
                    seen.lock().unwrap().push(arguments.clone());
                    *arguments = json!({"tampered": true});
                }
                Ok(HookResult::None)
            }
        })
        .build()
        .unwrap()
    };
    let d = HookDispatcher::new(vec![mk("a"), mk("b")]);
    assert_eq!(before(&d, &ctx()).await, BeforeOutcome::Continue);
    assert_eq!(
        *seen.lock().unwrap(),
        [json!({"command": "ls"}), json!({"command": "ls"})]
    );
}

/// A panic is isolated wherever the handler raises it: a closure that panics before it
/// returns its future fails exactly like one whose future panics, on every event.
#[tokio::test]
async fn a_panicking_hook_is_isolated_whether_it_panics_before_or_inside_its_future() {
    use HookEventKind::{RunFinished, RunStarted, ToolAfter, ToolBefore};
    for synchronous in [false, true] {
        let log: Log = Log::default();
        let d = HookDispatcher::new(vec![
            panicking(ToolBefore, "panicky", synchronous),
            panicking(ToolAfter, "panicky", synchronous),
            panicking(RunStarted, "panicky", synchronous),
            panicking(RunFinished, "panicky", synchronous),
            hook(ToolAfter, "later", &log, HookResult::feedback("still here")),
            hook(RunStarted, "later", &log, HookResult::None),
            hook(RunFinished, "later", &log, HookResult::None),
        ]);
        assert_eq!(
            before(&d, &ctx()).await,
            BeforeOutcome::Deny(
                "hook `panicky` failed (HOOK_FAILED): panicked: hook bug; the call was denied"
                    .into()
            ),
            "synchronous: {synchronous}"
        );
        let feedback = after(&d).await;
        assert_eq!(feedback, ["still here"], "synchronous: {synchronous}");
        let common = EventCommon::from_context(&ctx());
        let panicked = |event| {
            vec![HookFailure {
                hook: "panicky".into(),
                event,
                error: HookError::new(HookErrorKind::HandlerFailed, "panicked: hook bug"),
            }]
        };
        assert_eq!(
            d.run_started(common.clone(), json!({}), json!("hi"))
                .await
                .failures,
            panicked(RunStarted),
            "synchronous: {synchronous}"
        );
        assert_eq!(
            d.run_finished(common, json!({}), RunStatus::Completed)
                .await,
            panicked(RunFinished),
            "synchronous: {synchronous}"
        );
        assert_eq!(
            *log.lock().unwrap(),
            [
                "later:tool.after",
                "later:run.started",
                "later:run.finished"
            ],
            "synchronous: {synchronous}"
        );
    }
}
