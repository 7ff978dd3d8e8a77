//! Deadlines (1-minute default, a tool's timeout overrides it) and
//! cancellation. Time is tokio's paused clock: no test waits for real.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use iris_executor::ToolExecutor;
use iris_tools_core::{
    CancellationSignal, FnTool, ToolCapability as Cap, ToolOutput, ToolRegistry, ToolTimeoutOwner,
    ToolUse, codes,
};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::fixtures::{ctx, def, register};

const S: fn(u64) -> Duration = Duration::from_secs;

/// One deadline case: the three bounds and the expected winner.
struct Case {
    runtime: Option<u64>,
    tool: Option<u64>,
    context: Option<Duration>,
    seconds: f64,
    bound: &'static str,
}

async fn check_deadline(case: Case) {
    let registry = ToolRegistry::new();
    let mut definition = def("hang", &[Cap::Read]);
    if let Some(t) = case.tool {
        definition = definition.with_timeout(S(t));
    }
    register(&registry, definition, |_, _| async {
        std::future::pending::<()>().await;
        ToolOutput::text("unreachable")
    });
    let mut executor = ToolExecutor::new(registry);
    if let Some(r) = case.runtime {
        executor = executor.with_default_timeout(S(r));
    }
    let mut ctx = ctx();
    ctx.tool_timeout = case.context;
    let label = format!(
        "runtime={:?} tool={:?} context={:?}",
        case.runtime, case.tool, case.context
    );

    let started = Instant::now();
    let result = executor
        .execute_one(&ToolUse::new("c", "hang", json!({})), &ctx, None)
        .await;
    let waited = started.elapsed();

    let error = result
        .output
        .error_info()
        .unwrap_or_else(|| panic!("{label}: expected a timeout"));
    assert_eq!(error.code, codes::TOOL_TIMEOUT, "{label}");
    assert!(error.retryable, "{label}: a timeout is retryable");
    assert_eq!(
        error.details["deadline_seconds"],
        json!(case.seconds),
        "{label}"
    );
    assert_eq!(error.details["bound"], json!(case.bound), "{label}");
    assert_eq!(
        waited,
        Duration::from_secs_f64(case.seconds),
        "{label}: cut exactly at the deadline"
    );
}

#[tokio::test(start_paused = true)]
async fn the_deadline_is_the_minimum_of_the_bounds() {
    let cases = [
        // Nothing set: the 60 s default.
        Case {
            runtime: None,
            tool: None,
            context: None,
            seconds: 60.0,
            bound: "default",
        },
        // A tool's own timeout overrides the default rather than being capped by it.
        Case {
            runtime: None,
            tool: Some(120),
            context: None,
            seconds: 120.0,
            bound: "tool",
        },
        Case {
            runtime: None,
            tool: Some(120),
            context: Some(S(30)),
            seconds: 30.0,
            bound: "context",
        },
        Case {
            runtime: None,
            tool: None,
            context: Some(S(5)),
            seconds: 5.0,
            bound: "context",
        },
        Case {
            runtime: None,
            tool: None,
            context: Some(Duration::from_millis(2_500)),
            seconds: 2.5,
            bound: "context",
        },
        // (The old `context: +∞` = "no bound from the context" case is the `None`
        // case above now: a `Duration` has no infinity.)
        // An explicit runtime cap takes part in every minimum.
        Case {
            runtime: Some(10),
            tool: None,
            context: None,
            seconds: 10.0,
            bound: "runtime",
        },
        Case {
            runtime: Some(10),
            tool: Some(5),
            context: Some(S(20)),
            seconds: 5.0,
            bound: "tool",
        },
        Case {
            runtime: Some(10),
            tool: Some(20),
            context: Some(S(3)),
            seconds: 3.0,
            bound: "context",
        },
        Case {
            runtime: Some(10),
            tool: Some(600),
            context: None,
            seconds: 10.0,
            bound: "runtime",
        },
        // Ties report the first bound in (runtime, tool, context) order.
        Case {
            runtime: Some(10),
            tool: Some(10),
            context: Some(S(10)),
            seconds: 10.0,
            bound: "runtime",
        },
    ];
    for case in cases {
        check_deadline(case).await;
    }
}

/// A deadline that has already passed (zero) never starts the body.
///
/// The context's deadline is a `Duration` now, so the old negative, NaN and -∞
/// seconds cases can no longer be expressed; zero is the one "already passed" value.
#[tokio::test(start_paused = true)]
async fn a_passed_context_deadline_never_starts_the_body() {
    let registry = ToolRegistry::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    register(&registry, def("read", &[Cap::Read]), move |_, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { ToolOutput::text("ran") }
    });
    let executor = ToolExecutor::new(registry);
    for timeout in [Duration::ZERO] {
        let ctx = ctx().tool_timeout(timeout);
        let result = executor
            .execute_one(&ToolUse::new("c", "read", json!({})), &ctx, None)
            .await;
        assert_eq!(
            result.error_code(),
            Some(codes::TOOL_TIMEOUT),
            "{timeout:?}"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// A `ToolTimeoutOwner::Tool` body gets the effective deadline in its context and is
/// not cut at it; only a body that never returns meets the safety net (deadline +
/// 30 s grace).
#[tokio::test(start_paused = true)]
async fn tools_that_own_their_deadline_are_not_cut_at_it() {
    let registry = ToolRegistry::new();
    let tool = FnTool::new(
        def("command", &[Cap::Execute]).with_timeout(S(600)),
        |input: Value, ctx| async move {
            let deadline = ctx.tool_timeout.unwrap_or_default();
            if input["hang"] == json!(true) {
                std::future::pending::<()>().await;
            }
            // Overrun the deadline by 10 s, as a tool that is busy killing a process tree.
            tokio::time::sleep(deadline + S(10)).await;
            ToolOutput::text(format!(
                "timed_out after {} s, cleaned up",
                deadline.as_secs_f64()
            ))
        },
    )
    .timeout_owner(ToolTimeoutOwner::Tool);
    registry.register(tool).unwrap();
    let executor = ToolExecutor::new(registry);
    let ctx = ctx().tool_timeout(S(20));

    let result = executor
        .execute_one(&ToolUse::new("c1", "command", json!({})), &ctx, None)
        .await;
    assert_eq!(result.model_content(), "timed_out after 20 s, cleaned up");

    let started = Instant::now();
    let result = executor
        .execute_one(
            &ToolUse::new("c2", "command", json!({"hang": true})),
            &ctx,
            None,
        )
        .await;
    assert_eq!(started.elapsed(), S(50), "20 s deadline + 30 s grace");
    let error = result.output.error_info().unwrap();
    assert_eq!(error.code, codes::TOOL_TIMEOUT);
    assert_eq!(error.details["safety_net"], json!(true));
    assert_eq!(error.details["bound"], json!("context"));
}

/// Sets a flag when dropped: proof that the executor dropped the body's future.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Cancellation reaches a running body: the body's future is dropped (its guard
/// observes the drop) and the call reports `CANCELLED`.
#[tokio::test]
async fn cancellation_reaches_a_running_body() {
    let registry = ToolRegistry::new();
    let started = Arc::new(Notify::new());
    let dropped = Arc::new(AtomicBool::new(false));
    let (on_start, flag) = (Arc::clone(&started), Arc::clone(&dropped));
    register(&registry, def("wait", &[Cap::Read]), move |_, _| {
        let (on_start, flag) = (Arc::clone(&on_start), Arc::clone(&flag));
        async move {
            let _guard = DropFlag(flag);
            on_start.notify_one();
            std::future::pending::<()>().await;
            ToolOutput::text("unreachable")
        }
    });
    let executor = ToolExecutor::new(registry);
    let signal = CancellationSignal::new();
    let ctx = ctx().cancellation(signal.clone());
    let call = ToolUse::new("c", "wait", json!({}));
    let (result, ()) = tokio::join!(executor.execute_one(&call, &ctx, None), async {
        started.notified().await;
        assert!(!dropped.load(Ordering::SeqCst), "the body is running");
        signal.cancel();
    });
    assert_eq!(result.error_code(), Some(codes::CANCELLED));
    assert!(
        dropped.load(Ordering::SeqCst),
        "the body's future was dropped"
    );
}

/// A call whose run was cancelled before it started never runs; neither does the
/// rest of a step.
#[tokio::test]
async fn a_call_cancelled_before_start_never_runs() {
    let registry = ToolRegistry::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    register(&registry, def("read", &[Cap::Read]), move |_, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { ToolOutput::text("ran") }
    });
    let executor = ToolExecutor::new(registry);
    let signal = CancellationSignal::new();
    signal.cancel();
    let ctx = ctx().cancellation(signal);
    let one = executor
        .execute_one(&ToolUse::new("c", "read", json!({})), &ctx, None)
        .await;
    assert_eq!(one.error_code(), Some(codes::CANCELLED));
    let uses: Vec<ToolUse> = (0..3)
        .map(|i| ToolUse::new(format!("c{i}"), "read", json!({})))
        .collect();
    let many = executor.execute_many(&uses, &ctx).await;
    assert!(
        many.iter()
            .all(|r| r.error_code() == Some(codes::CANCELLED))
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// Deadlines and heartbeat intervals too large to add to a clock (`Duration::MAX` from
/// a host, `iris call --timeout 1e19`) mean "never": a body that yields before it
/// finishes completes normally instead of panicking the executor.
#[tokio::test(start_paused = true)]
async fn a_deadline_too_large_for_the_clock_means_never() {
    let registry = ToolRegistry::new();
    register(&registry, def("slow", &[Cap::Read]), |_, _| async {
        tokio::time::sleep(S(5)).await;
        ToolOutput::text("done")
    });
    register(
        &registry,
        def("slow_own", &[Cap::Read]).with_timeout(Duration::MAX),
        |_, _| async {
            tokio::time::sleep(S(5)).await;
            ToolOutput::text("done")
        },
    );
    let executor = ToolExecutor::new(registry.clone())
        .with_default_timeout(Duration::MAX)
        .with_heartbeat_interval(Duration::MAX);
    for (tool, ctx) in [
        ("slow", ctx().tool_timeout(Duration::MAX)),
        ("slow", ctx()),
        ("slow_own", ctx()),
    ] {
        let result = executor
            .execute_one(&ToolUse::new("c", tool, json!({})), &ctx, None)
            .await;
        assert_eq!(result.output.model_content(), "done", "{tool}: {result:?}");
    }
    let plain = ToolExecutor::new(registry);
    let result = plain
        .execute_one(
            &ToolUse::new("c", "slow", json!({})),
            &ctx().tool_timeout(Duration::from_secs_f64(1e19)),
            None,
        )
        .await;
    assert_eq!(result.output.model_content(), "done", "{result:?}");
}
