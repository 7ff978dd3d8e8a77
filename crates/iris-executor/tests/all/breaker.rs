//! Tests for the `breaker` area: the circuit's life (open → cooldown → probe → reset),
//! probe failure re-opening, single probe under concurrency, per-tool independence.
//! Time is a `ManualClock`; nothing sleeps.
// Tests report failures by panicking, so unwrap/expect are the clearest assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Barrier};
use std::time::Duration;

use iris_executor::CircuitBreaker;
use iris_executor::breaker::{
    CircuitState, DEFAULT_COOLDOWN, DEFAULT_FAILURE_THRESHOLD, ManualClock,
};
use iris_tools_core::codes;
use serde_json::json;

/// One step of a breaker script.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// `check` must admit the call.
    Runs(&'static str),
    /// `check` must refuse with `CIRCUIT_OPEN`.
    Refused(&'static str),
    /// The body failed.
    Fail(&'static str),
    /// The body succeeded.
    Succeed(&'static str),
    /// The call ended without a body verdict.
    Abort(&'static str),
    /// Time passes.
    Wait(Duration),
    /// The circuit is in this state with this many recorded failures.
    Is(&'static str, CircuitState, u32),
}

use CircuitState::{Closed, HalfOpen, Open};
use Step::{Abort, Fail, Is, Refused, Runs, Succeed, Wait};

const fn secs(s: u64) -> Step {
    Wait(Duration::from_secs(s))
}

/// A call that runs and fails: what the executor does for a failing body.
fn failing_call(tool: &'static str) -> [Step; 2] {
    [Runs(tool), Fail(tool)]
}

/// Runs a script against a default breaker (threshold 3, cooldown 30 s) on a manual
/// clock; `threshold` overrides the threshold.
fn check(label: &str, threshold: Option<u32>, steps: &[Step]) {
    let clock = ManualClock::new();
    let breaker = match threshold {
        Some(t) => CircuitBreaker::new(t, DEFAULT_COOLDOWN),
        None => CircuitBreaker::default(),
    }
    .with_clock(Arc::new(clock.clone()));
    for (i, step) in steps.iter().enumerate() {
        let at = format!("{label}, step {i} {step:?}");
        match *step {
            Runs(tool) => assert_eq!(breaker.check(tool), Ok(()), "{at}"),
            Refused(tool) => {
                let err = breaker.check(tool).unwrap_err();
                assert_eq!(err.code, codes::CIRCUIT_OPEN, "{at}");
                assert!(err.retryable, "{at}");
            }
            Fail(tool) => breaker.record_failure(tool),
            Succeed(tool) => breaker.record_success(tool),
            Abort(tool) => breaker.record_aborted(tool),
            Wait(d) => clock.advance(d),
            Is(tool, state, failures) => {
                assert_eq!(breaker.state(tool), state, "{at}");
                assert_eq!(breaker.is_open(tool), state != Closed, "{at}");
                assert_eq!(breaker.consecutive_failures(tool), failures, "{at}");
            }
        }
    }
}

/// Three failing calls of `tool`: what opens a default breaker.
fn open_it(tool: &'static str) -> Vec<Step> {
    [failing_call(tool), failing_call(tool), failing_call(tool)].concat()
}

fn script(parts: &[&[Step]]) -> Vec<Step> {
    parts.concat()
}

#[test]
fn circuit_life() {
    let t = "fetch";
    let cases: Vec<(&str, Option<u32>, Vec<Step>)> = vec![
        (
            "unknown tool is closed",
            None,
            vec![Is(t, Closed, 0), Runs(t), Runs(t)],
        ),
        (
            "below the threshold stays closed",
            None,
            script(&[
                &failing_call(t),
                &failing_call(t),
                &[Is(t, Closed, 2), Runs(t)],
            ]),
        ),
        (
            "the third consecutive failure opens",
            None,
            script(&[&open_it(t), &[Is(t, Open, 3), Refused(t), Refused(t)]]),
        ),
        (
            "a success resets the count",
            None,
            script(&[
                &failing_call(t),
                &failing_call(t),
                &[Runs(t), Succeed(t), Is(t, Closed, 0)],
                &failing_call(t),
                &failing_call(t),
                &[Is(t, Closed, 2), Runs(t)],
            ]),
        ),
        (
            "open → cooldown → one probe → success closes",
            None,
            script(&[
                &open_it(t),
                &[
                    Wait(Duration::from_millis(29_999)),
                    Refused(t),
                    Is(t, Open, 3),
                ],
                &[Wait(Duration::from_millis(1)), Is(t, HalfOpen, 3)],
                &[Runs(t), Refused(t), Refused(t), Is(t, HalfOpen, 3)],
                &[Succeed(t), Is(t, Closed, 0), Runs(t), Runs(t)],
            ]),
        ),
        (
            "a failed probe re-opens for a new full cooldown",
            None,
            script(&[
                &open_it(t),
                &[secs(30), Runs(t), Fail(t), Is(t, Open, 4), Refused(t)],
                &[secs(29), Refused(t), secs(1), Runs(t), Refused(t)],
                &[
                    Fail(t),
                    Is(t, Open, 5),
                    secs(30),
                    Runs(t),
                    Succeed(t),
                    Runs(t),
                ],
            ]),
        ),
        (
            "a long wait still admits exactly one probe",
            None,
            script(&[&open_it(t), &[secs(3_600), Runs(t), Refused(t)]]),
        ),
        (
            "an aborted probe frees the slot",
            None,
            script(&[
                &open_it(t),
                &[secs(30), Runs(t), Refused(t), Abort(t), Runs(t), Refused(t)],
            ]),
        ),
        (
            "a probe that never reports is presumed lost after a cooldown",
            None,
            script(&[
                &open_it(t),
                &[secs(30), Runs(t), secs(29), Refused(t), secs(1), Runs(t)],
            ]),
        ),
        (
            "abort without an open circuit changes nothing",
            None,
            script(&[
                &failing_call(t),
                &[Abort(t), Abort("other"), Is(t, Closed, 1)],
            ]),
        ),
        (
            "a late success while open closes",
            None,
            script(&[
                &open_it(t),
                &[Refused(t), Succeed(t), Is(t, Closed, 0), Runs(t)],
            ]),
        ),
        (
            "threshold 1 opens on the first failure",
            Some(1),
            script(&[&failing_call(t), &[Is(t, Open, 1), Refused(t)]]),
        ),
        (
            "threshold 0 behaves as 1",
            Some(0),
            script(&[&failing_call(t), &[Is(t, Open, 1), Refused(t)]]),
        ),
        (
            "tools are independent",
            None,
            script(&[
                &open_it("a"),
                &failing_call("b"),
                &[
                    Refused("a"),
                    Runs("b"),
                    Is("a", Open, 3),
                    Is("b", Closed, 1),
                ],
                &[secs(30), Runs("a"), Runs("b"), Runs("b"), Refused("a")],
                &[Succeed("a"), Is("a", Closed, 0), Is("b", Closed, 1)],
            ]),
        ),
    ];
    for (label, threshold, steps) in &cases {
        check(label, *threshold, steps);
    }
}

#[test]
fn defaults_match_the_seed() {
    let breaker = CircuitBreaker::default();
    assert_eq!(breaker.failure_threshold, 3);
    assert_eq!(DEFAULT_FAILURE_THRESHOLD, 3);
    assert_eq!(breaker.cooldown, Duration::from_secs(30));
    assert_eq!(DEFAULT_COOLDOWN, Duration::from_secs(30));
}

#[test]
fn open_error_says_why_and_when() {
    let clock = ManualClock::new();
    let breaker = CircuitBreaker::default().with_clock(Arc::new(clock.clone()));
    for _ in 0..3 {
        breaker.record_failure("web_fetch");
    }
    let cases = [
        (
            0,
            "`web_fetch` failed 3 times in a row; calls are paused for 30.0 s more",
            30.0,
        ),
        (
            10,
            "`web_fetch` failed 3 times in a row; calls are paused for 20.0 s more",
            20.0,
        ),
        (
            15,
            "`web_fetch` failed 3 times in a row; calls are paused for 5.0 s more",
            5.0,
        ),
    ];
    for (wait, message, retry_after) in cases {
        clock.advance(Duration::from_secs(wait));
        let err = breaker.check("web_fetch").unwrap_err();
        assert_eq!(err.code, codes::CIRCUIT_OPEN);
        assert_eq!(err.message, message);
        assert!(err.retryable);
        assert_eq!(err.details["consecutive_failures"], json!(3));
        assert_eq!(err.details["retry_after_seconds"], json!(retry_after));
    }
    clock.advance(Duration::from_secs(5));
    breaker.check("web_fetch").unwrap();
    clock.advance(Duration::from_secs(12));
    let err = breaker.check("web_fetch").unwrap_err();
    assert_eq!(
        err.message,
        "`web_fetch` failed 3 times in a row; a probe call is running; retry after it finishes"
    );
    assert_eq!(err.details["retry_after_seconds"], json!(18.0));
}

#[test]
fn concurrent_callers_get_exactly_one_probe() {
    const CALLERS: usize = 8;
    for round in 0..20 {
        let clock = ManualClock::new();
        let breaker = CircuitBreaker::default().with_clock(Arc::new(clock.clone()));
        for _ in 0..3 {
            breaker.record_failure("t");
        }
        clock.advance(DEFAULT_COOLDOWN);
        let start = Barrier::new(CALLERS);
        let admitted = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..CALLERS)
                .map(|_| {
                    scope.spawn(|| {
                        start.wait();
                        breaker.check("t").is_ok()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .filter(|ok| *ok)
                .count()
        });
        assert_eq!(admitted, 1, "round {round}");
    }
}

#[test]
fn manual_clock_is_shared_and_never_panics() {
    use iris_executor::Clock;
    let clock = ManualClock::default();
    let other = clock.clone();
    let start = clock.now();
    assert_eq!(clock.now(), start, "frozen until advanced");
    other.advance(Duration::from_millis(1_500));
    assert_eq!(clock.now() - start, Duration::from_millis(1_500));
    // Far beyond what `Instant` can hold: ignored, not a panic.
    clock.advance(Duration::MAX);
    assert_eq!(clock.now() - start, Duration::from_millis(1_500));
}
