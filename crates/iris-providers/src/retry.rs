//! Bounded retries of model requests: [`RetryPolicy`], [`retry`] and the
//! [`RetryingProvider`] wrapper.
//!
//! Only retryable failures are retried ([`ProviderError::is_retryable`]: rate limits,
//! timeouts, unavailability). A rate limit that says how long to wait is honoured
//! exactly; anything else waits an exponential backoff. Both the number of attempts and
//! the total time spent waiting are capped: a wait that would cross the cap is not
//! started, and the last error is returned as is (with its `retry_after`, so a host can
//! still decide to wait longer).
//!
//! ```
//! use std::time::Duration;
//! use iris_providers::ProviderError;
//! use iris_providers::retry::RetryPolicy;
//!
//! let policy = RetryPolicy::new(3, Duration::from_secs(30));
//! let limited = ProviderError::RateLimited { retry_after: Some(Duration::from_secs(5)), message: None };
//! // Attempt 1 failed, nothing waited yet: wait what the server asked.
//! assert_eq!(policy.delay(1, Duration::ZERO, &limited), Some(Duration::from_secs(5)));
//! // The wait would cross the 30 s budget: give up.
//! assert_eq!(policy.delay(2, Duration::from_secs(28), &limited), None);
//! // Attempts are capped too.
//! assert_eq!(policy.delay(3, Duration::ZERO, &limited), None);
//! // Not retryable at all.
//! let auth = ProviderError::Auth { status: 401, message: None };
//! assert_eq!(policy.delay(1, Duration::ZERO, &auth), None);
//! ```

use std::future::Future;
use std::time::Duration;

use iris_tools_core::BoxFuture;

use crate::chat::{CompletionRequest, CompletionResponse};
use crate::provider::{CompletionProvider, ProviderStream, next, unfold};
use crate::provider_error::ProviderError;

/// How often and how long to retry.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 = never retry).
    pub max_attempts: u32,
    /// The most time spent waiting between attempts, summed.
    pub max_total_wait: Duration,
    /// The backoff before the second attempt when the provider gave no `retry_after`;
    /// doubled for each later attempt.
    pub initial_backoff: Duration,
    /// The longest single backoff.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    /// 4 attempts, at most 60 s of waiting, backoff 500 ms doubling up to 8 s.
    fn default() -> Self {
        Self {
            max_attempts: 4,
            max_total_wait: Duration::from_secs(60),
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
        }
    }
}

impl RetryPolicy {
    /// A policy with these caps and the default backoff.
    pub fn new(max_attempts: u32, max_total_wait: Duration) -> Self {
        Self {
            max_attempts: max_attempts.max(1),
            max_total_wait,
            ..Self::default()
        }
    }

    /// A policy that never retries.
    pub fn never() -> Self {
        Self::new(1, Duration::ZERO)
    }

    /// Sets the backoff used when the provider says nothing about waiting.
    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max.max(initial);
        self
    }

    /// The wait before the next attempt after `error` ended attempt `attempt`
    /// (1-based), having waited `waited` so far; `None` means give up.
    pub fn delay(&self, attempt: u32, waited: Duration, error: &ProviderError) -> Option<Duration> {
        if attempt >= self.max_attempts || !error.is_retryable() {
            return None;
        }
        let wait = error.retry_after().unwrap_or_else(|| self.backoff(attempt));
        (waited.saturating_add(wait) <= self.max_total_wait).then_some(wait)
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(31);
        self.initial_backoff
            .saturating_mul(1_u32 << doublings)
            .min(self.max_backoff)
    }
}

/// Runs `op` until it succeeds, fails for good, or the policy gives up; waits between
/// attempts on tokio's clock.
///
/// ```
/// use std::time::Duration;
/// use iris_providers::ProviderError;
/// use iris_providers::retry::{RetryPolicy, retry};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let mut calls = 0;
/// let policy = RetryPolicy::new(3, Duration::from_secs(1)).with_backoff(Duration::ZERO, Duration::ZERO);
/// let answer = retry(&policy, || {
///     calls += 1;
///     let attempt = calls;
///     async move {
///         if attempt < 3 {
///             Err(ProviderError::Unavailable { status: Some(503), reason: "busy".into() })
///         } else {
///             Ok("done")
///         }
///     }
/// })
/// .await;
/// assert_eq!(answer, Ok("done"));
/// assert_eq!(calls, 3);
/// # });
/// ```
pub async fn retry<T, F, Fut>(policy: &RetryPolicy, mut op: F) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ProviderError>>,
{
    let mut attempt = 1;
    let mut waited = Duration::ZERO;
    loop {
        let error = match op().await {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        let Some(wait) = policy.delay(attempt, waited, &error) else {
            return Err(error);
        };
        tracing::debug!(
            code = error.code(),
            attempt,
            wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            "retrying model request"
        );
        tokio::time::sleep(wait).await;
        waited += wait;
        attempt += 1;
    }
}

/// A provider whose requests are retried under a [`RetryPolicy`].
///
/// `complete` is retried as a whole. A stream is retried only until its first event
/// arrives: once text has been handed on, a retry would repeat it, so a later failure
/// (a cut-off stream) is passed through.
#[derive(Debug, Clone)]
pub struct RetryingProvider<P> {
    inner: P,
    policy: RetryPolicy,
}

impl<P: CompletionProvider> RetryingProvider<P> {
    /// Wraps `inner`.
    pub fn new(inner: P, policy: RetryPolicy) -> Self {
        Self { inner, policy }
    }

    /// The wrapped provider.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// The policy.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }
}

enum RetryState<'a> {
    Start,
    Streaming(ProviderStream<'a>),
    Done,
}

impl<P: CompletionProvider> CompletionProvider for RetryingProvider<P> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn stream<'a>(&'a self, request: &'a CompletionRequest) -> ProviderStream<'a> {
        unfold(RetryState::Start, move |state| {
            Box::pin(async move {
                match state {
                    RetryState::Done => None,
                    RetryState::Streaming(mut stream) => {
                        let item = next(&mut stream).await?;
                        let state = if item.is_err() {
                            RetryState::Done
                        } else {
                            RetryState::Streaming(stream)
                        };
                        Some((item, state))
                    }
                    RetryState::Start => Some(self.open(request).await),
                }
            })
        })
    }

    fn complete<'a>(
        &'a self,
        request: &'a CompletionRequest,
    ) -> BoxFuture<'a, Result<CompletionResponse, ProviderError>> {
        Box::pin(retry(&self.policy, move || self.inner.complete(request)))
    }
}

impl<P: CompletionProvider> RetryingProvider<P> {
    /// Opens the inner stream until its first event, retrying failures before it.
    async fn open<'a>(
        &'a self,
        request: &'a CompletionRequest,
    ) -> (
        Result<crate::chat::StreamEvent, ProviderError>,
        RetryState<'a>,
    ) {
        let mut attempt = 1;
        let mut waited = Duration::ZERO;
        loop {
            let mut stream = self.inner.stream(request);
            let error = match next(&mut stream).await {
                Some(Ok(event)) => return (Ok(event), RetryState::Streaming(stream)),
                Some(Err(error)) => error,
                None => ProviderError::BadResponse {
                    reason: "the stream ended without a completed turn".into(),
                },
            };
            drop(stream);
            let Some(wait) = self.policy.delay(attempt, waited, &error) else {
                return (Err(error), RetryState::Done);
            };
            tracing::debug!(
                code = error.code(),
                attempt,
                wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                "retrying model stream"
            );
            tokio::time::sleep(wait).await;
            waited += wait;
            attempt += 1;
        }
    }
}
