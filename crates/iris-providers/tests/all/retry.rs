//! Tests for the `retry` area: the bounded retry helper on tokio's paused clock (no
//! I/O, so virtual time advances by itself) and `RetryPolicy` arithmetic.
// Tests report failures by panicking, so unwrap is the clearest assertion here.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use iris_providers::ProviderError;
use iris_providers::retry::{RetryPolicy, retry};

fn limited(seconds: u64) -> ProviderError {
    ProviderError::RateLimited {
        retry_after: Some(Duration::from_secs(seconds)),
        message: None,
    }
}

fn unavailable() -> ProviderError {
    ProviderError::Unavailable {
        status: Some(503),
        reason: "busy".into(),
    }
}

type Outcome = Result<&'static str, ProviderError>;

/// Runs `retry` over a fixed sequence of outcomes; returns the result and how many
/// attempts were made.
async fn run(policy: &RetryPolicy, outcomes: Vec<Outcome>) -> (Outcome, usize) {
    let mut attempts = 0;
    let result = retry(policy, || {
        let outcome = outcomes[attempts.min(outcomes.len() - 1)].clone();
        attempts += 1;
        async move { outcome }
    })
    .await;
    (result, attempts)
}

#[tokio::test(start_paused = true)]
async fn retries_honour_retry_after_and_stop_at_the_caps() {
    let policy = RetryPolicy::new(3, Duration::from_secs(60));
    // (outcomes, expected result, expected attempts)
    let cases: Vec<(Vec<Outcome>, Outcome, usize)> = vec![
        // A 30 s rate limit, then success.
        (vec![Err(limited(30)), Ok("ok")], Ok("ok"), 2),
        // Backoff for errors without a wait.
        (
            vec![Err(unavailable()), Err(unavailable()), Ok("ok")],
            Ok("ok"),
            3,
        ),
        // Three attempts, all failing: the last error comes back.
        (vec![Err(unavailable())], Err(unavailable()), 3),
        // A wait that would cross the 60 s budget is not started.
        (
            vec![Err(limited(30)), Err(limited(31)), Ok("ok")],
            Err(limited(31)),
            2,
        ),
        // Not retryable.
        (
            vec![
                Err(ProviderError::Auth {
                    status: 401,
                    message: None,
                }),
                Ok("ok"),
            ],
            Err(ProviderError::Auth {
                status: 401,
                message: None,
            }),
            1,
        ),
    ];
    for (outcomes, expected, attempts) in cases {
        let label = format!("{outcomes:?}");
        assert_eq!(
            run(&policy, outcomes).await,
            (expected, attempts),
            "{label}"
        );
    }
}

#[test]
fn backoff_doubles_up_to_its_cap_and_never_retries_when_told() {
    let policy = RetryPolicy::new(10, Duration::from_secs(600))
        .with_backoff(Duration::from_millis(100), Duration::from_millis(500));
    let delays: Vec<_> = (1..=5)
        .map(|attempt| policy.delay(attempt, Duration::ZERO, &unavailable()))
        .collect();
    let ms = |n| Some(Duration::from_millis(n));
    assert_eq!(delays, vec![ms(100), ms(200), ms(400), ms(500), ms(500)]);

    let never = RetryPolicy::never();
    assert_eq!(never.delay(1, Duration::ZERO, &limited(0)), None);
    // Timeouts are retryable too; bad answers and refusals are not.
    let policy = RetryPolicy::default();
    let timeout = ProviderError::Timeout {
        after: Duration::from_secs(1),
    };
    assert!(policy.delay(1, Duration::ZERO, &timeout).is_some());
    let bad = ProviderError::BadResponse { reason: "x".into() };
    assert_eq!(policy.delay(1, Duration::ZERO, &bad), None);
    let refused = ProviderError::Refused { message: None };
    assert_eq!(policy.delay(1, Duration::ZERO, &refused), None);
}
