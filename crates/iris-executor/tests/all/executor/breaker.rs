//! The circuit breaker through the executor: only real body outcomes count.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use iris_executor::{CircuitBreaker, ToolExecutor};
use iris_tools_core::{
    CancellationSignal, ToolCapability as Cap, ToolOutput, ToolRegistry, ToolUse, codes,
};
use serde_json::json;

use super::fixtures::{TestClock, ctx, def};

/// What one step asks the flaky tool to do.
#[derive(Clone, Copy, Debug)]
enum Body {
    Ok,
    Fail,
    Panic,
    Hang,
    /// An input the schema rejects: a short-circuit, not a body outcome.
    BadInput,
}

fn flaky_executor(clock: Arc<TestClock>) -> (ToolExecutor, Arc<AtomicUsize>) {
    let registry = ToolRegistry::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let schema =
        json!({"type": "object", "properties": {"mode": {"type": "string"}}, "required": ["mode"]});
    let mut definition = def("flaky", &[Cap::Read]).with_timeout(Duration::from_secs(5));
    definition.input_schema = schema;
    super::fixtures::register(&registry, definition, move |input, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move {
            match input["mode"].as_str() {
                Some("fail") => ToolOutput::err(codes::TOOL_FAILED, "upstream 500"),
                Some("panic") => panic!("bug"),
                Some("hang") => {
                    std::future::pending::<()>().await;
                    ToolOutput::text("unreachable")
                }
                _ => ToolOutput::text("ok"),
            }
        }
    });
    let breaker = CircuitBreaker::new(3, Duration::from_secs(30)).with_clock(clock);
    (
        ToolExecutor::new(registry).with_circuit_breaker(breaker),
        runs,
    )
}

/// Steps: (advance the breaker clock by, what the body does, expected code, total
/// body runs so far).
async fn check_steps(steps: &[(u64, Body, Option<&str>, usize)]) {
    let clock = TestClock::new();
    let (executor, runs) = flaky_executor(Arc::clone(&clock));
    for (i, (advance, body, code, total)) in steps.iter().enumerate() {
        clock.advance(Duration::from_secs(*advance));
        let input = match body {
            Body::Ok => json!({"mode": "ok"}),
            Body::Fail => json!({"mode": "fail"}),
            Body::Panic => json!({"mode": "panic"}),
            Body::Hang => json!({"mode": "hang"}),
            Body::BadInput => json!({}),
        };
        let result = executor
            .execute_one(&ToolUse::new(format!("c{i}"), "flaky", input), &ctx(), None)
            .await;
        assert_eq!(result.error_code(), *code, "step {i} ({body:?})");
        assert_eq!(
            runs.load(Ordering::SeqCst),
            *total,
            "step {i} ({body:?}): body runs"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn open_cooldown_probe_reset() {
    let open = Some(codes::CIRCUIT_OPEN);
    let failed = Some(codes::TOOL_FAILED);
    check_steps(&[
        (0, Body::Fail, failed, 1),
        (0, Body::Fail, failed, 2),
        (0, Body::Fail, failed, 3),
        // Three consecutive failures: open; the body is not called.
        (0, Body::Ok, open, 3),
        (29, Body::Ok, open, 3),
        // Cooldown over: one probe; it fails and re-opens the circuit.
        (1, Body::Fail, failed, 4),
        (0, Body::Ok, open, 4),
        // Next probe succeeds and clears the record.
        (30, Body::Ok, None, 5),
        (0, Body::Fail, failed, 6),
        (0, Body::Fail, failed, 7),
        (0, Body::Ok, None, 8),
    ])
    .await;
}

#[tokio::test(start_paused = true)]
async fn timeouts_and_panics_are_failures_short_circuits_are_not() {
    let open = Some(codes::CIRCUIT_OPEN);
    check_steps(&[
        // Invalid input never reaches the body: it counts for nothing.
        (0, Body::BadInput, Some(codes::INVALID_INPUT), 0),
        (0, Body::BadInput, Some(codes::INVALID_INPUT), 0),
        (0, Body::BadInput, Some(codes::INVALID_INPUT), 0),
        (0, Body::Ok, None, 1),
        // A timeout and a panic are real body failures.
        (0, Body::Hang, Some(codes::TOOL_TIMEOUT), 2),
        (0, Body::Panic, Some(codes::TOOL_PANICKED), 3),
        (0, Body::Fail, Some(codes::TOOL_FAILED), 4),
        (0, Body::Ok, open, 4),
    ])
    .await;
}

/// A probe whose call is cancelled has no verdict: the probe slot is released, so the
/// next call may probe instead of finding the circuit stuck.
#[tokio::test(start_paused = true)]
async fn a_cancelled_probe_releases_the_slot() {
    let clock = TestClock::new();
    let (executor, runs) = flaky_executor(Arc::clone(&clock));
    for i in 0..3 {
        let call = ToolUse::new(format!("f{i}"), "flaky", json!({"mode": "fail"}));
        executor.execute_one(&call, &ctx(), None).await;
    }
    clock.advance(Duration::from_secs(30));

    let signal = CancellationSignal::new();
    let cancel_ctx = ctx().cancellation(signal.clone());
    let probe = ToolUse::new("probe", "flaky", json!({"mode": "hang"}));
    let (result, ()) = tokio::join!(executor.execute_one(&probe, &cancel_ctx, None), async {
        // Let the probe reach its body, then cancel it.
        while runs.load(Ordering::SeqCst) < 4 {
            tokio::task::yield_now().await;
        }
        signal.cancel();
    });
    assert_eq!(result.error_code(), Some(codes::CANCELLED));
    let next = executor
        .execute_one(
            &ToolUse::new("next", "flaky", json!({"mode": "ok"})),
            &ctx(),
            None,
        )
        .await;
    assert_eq!(
        next.error_code(),
        None,
        "the released slot admits a new probe"
    );
    assert!(!executor.circuit_breaker().unwrap().is_open("flaky"));
}
