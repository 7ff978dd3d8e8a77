//! [`CircuitBreaker`]: stops calling a tool whose body keeps failing.
//!
//! The executor asks [`CircuitBreaker::check`] before running a body and reports the
//! body's outcome with [`CircuitBreaker::record_success`] or
//! [`CircuitBreaker::record_failure`]. Only real body failures count: a call refused by
//! permission, a hook, invalid input or the breaker itself never reaches the body and
//! is not recorded. Time comes from a [`Clock`], so tests drive it with a
//! [`ManualClock`] instead of sleeping.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use iris_tools_core::{ToolErrorInfo, codes};

/// Default number of consecutive body failures that open a circuit.
pub const DEFAULT_FAILURE_THRESHOLD: u32 = 3;
/// Default time a circuit stays open before one probe call is admitted.
pub const DEFAULT_COOLDOWN: Duration = Duration::from_secs(30);

/// A source of the current instant, so tests can control time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current instant.
    fn now(&self) -> Instant;
}

/// The real monotonic clock ([`Instant::now`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that only moves when told to, for deterministic tests of anything that
/// waits (the breaker's cooldown, an executor's breaker).
///
/// Clones share the same time, so a test keeps one clone and hands another to the
/// code under test.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use iris_executor::breaker::{Clock, ManualClock};
///
/// let clock = ManualClock::new();
/// let shared = clock.clone();
/// let start = clock.now();
/// shared.advance(Duration::from_secs(30));
/// assert_eq!(clock.now() - start, Duration::from_secs(30));
/// let _as_dyn: Arc<dyn Clock> = Arc::new(clock);
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<Mutex<Instant>>,
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl ManualClock {
    /// A clock frozen at the current instant.
    pub fn new() -> Self {
        Self {
            now: Arc::new(Mutex::new(Instant::now())),
        }
    }

    /// Moves the clock forward. An advance past what [`Instant`] can represent on this
    /// platform (hundreds of years) leaves the clock where it is.
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(later) = now.checked_add(by) {
            *now = later;
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The state of one tool's circuit, as [`CircuitBreaker::state`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CircuitState {
    /// Calls run; failures (if any) are below the threshold.
    Closed,
    /// Calls are refused with `CIRCUIT_OPEN` until the cooldown ends.
    Open,
    /// The cooldown is over: the next call is admitted as a probe, or a probe is
    /// already running and other calls are refused until it reports.
    HalfOpen,
}

#[derive(Debug, Default, Clone)]
struct ToolState {
    consecutive_failures: u32,
    /// When the circuit (re-)opened; `None` while closed.
    opened_at: Option<Instant>,
    /// When the running probe was admitted; `None` when no probe is running.
    probe_started: Option<Instant>,
}

/// Opens after `failure_threshold` consecutive real body failures of one tool; while
/// open, calls get a retryable `CIRCUIT_OPEN` error; after `cooldown` exactly one probe
/// call is admitted; the probe's success closes the circuit, its failure re-opens it
/// for a new cooldown. A success at any time clears the tool's record. Every tool has
/// its own circuit, keyed by canonical name.
///
/// A probe that reports nothing (neither outcome nor [`CircuitBreaker::record_aborted`])
/// for a whole cooldown is presumed lost and another probe is admitted, so a lost
/// report can never close a tool for good.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use iris_executor::CircuitBreaker;
/// use iris_executor::breaker::ManualClock;
///
/// let clock = ManualClock::new();
/// let breaker = CircuitBreaker::default().with_clock(Arc::new(clock.clone()));
/// for _ in 0..3 {
///     assert!(breaker.check("fetch").is_ok());
///     breaker.record_failure("fetch");
/// }
/// assert_eq!(breaker.check("fetch").unwrap_err().code, "CIRCUIT_OPEN");
/// clock.advance(Duration::from_secs(30));
/// assert!(breaker.check("fetch").is_ok()); // the probe
/// assert!(breaker.check("fetch").is_err()); // only one at a time
/// breaker.record_success("fetch");
/// assert!(breaker.check("fetch").is_ok());
/// ```
#[derive(Debug)]
pub struct CircuitBreaker {
    /// Consecutive failures that open the circuit (default 3; 0 behaves as 1).
    pub failure_threshold: u32,
    /// How long the circuit stays open before a probe (default 30 s).
    pub cooldown: Duration,
    clock: Arc<dyn Clock>,
    state: Mutex<HashMap<String, ToolState>>,
}

impl Default for CircuitBreaker {
    fn default() -> Self {
        Self::new(DEFAULT_FAILURE_THRESHOLD, DEFAULT_COOLDOWN)
    }
}

impl CircuitBreaker {
    /// A breaker with the given threshold (at least 1) and cooldown on the system clock.
    pub fn new(failure_threshold: u32, cooldown: Duration) -> Self {
        Self {
            failure_threshold: failure_threshold.max(1),
            cooldown,
            clock: Arc::new(SystemClock),
            state: Mutex::new(HashMap::new()),
        }
    }

    /// Uses another clock (a [`ManualClock`] in tests).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, ToolState>> {
        // Every critical section leaves the map consistent, so a panic elsewhere
        // while the lock was held cannot have left half an update behind.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a call of `tool` may run now.
    ///
    /// `Ok` while closed. While open, `Err(CIRCUIT_OPEN)` (retryable, with
    /// `consecutive_failures` and `retry_after_seconds` in its details). Once the
    /// cooldown is over, exactly one caller gets `Ok` as the probe; everyone else keeps
    /// getting `CIRCUIT_OPEN` until the probe's outcome is recorded.
    pub fn check(&self, tool: &str) -> Result<(), ToolErrorInfo> {
        let now = self.clock.now();
        let mut map = self.lock();
        let Some(state) = map.get_mut(tool) else {
            return Ok(());
        };
        let Some(opened_at) = state.opened_at else {
            return Ok(());
        };
        let failures = state.consecutive_failures;
        let elapsed = now.saturating_duration_since(opened_at);
        if elapsed < self.cooldown {
            let remaining = self.cooldown - elapsed;
            return Err(open_error(
                tool,
                failures,
                remaining,
                format!("calls are paused for {:.1} s more", remaining.as_secs_f64()),
            ));
        }
        match state.probe_started {
            Some(started) if now.saturating_duration_since(started) < self.cooldown => {
                let remaining = self.cooldown - now.saturating_duration_since(started);
                Err(open_error(
                    tool,
                    failures,
                    remaining,
                    "a probe call is running; retry after it finishes".to_owned(),
                ))
            }
            _ => {
                state.probe_started = Some(now);
                Ok(())
            }
        }
    }

    /// Records a successful body: clears the tool's record (closes its circuit).
    pub fn record_success(&self, tool: &str) {
        self.lock().remove(tool);
    }

    /// Records a failed body. Opens the circuit at the threshold; a failed probe
    /// re-opens it for a new cooldown.
    pub fn record_failure(&self, tool: &str) {
        let now = self.clock.now();
        let mut map = self.lock();
        let state = map.entry(tool.to_owned()).or_default();
        state.consecutive_failures = state.consecutive_failures.saturating_add(1);
        if state.probe_started.is_some() || state.consecutive_failures >= self.failure_threshold {
            state.opened_at = Some(now);
            state.probe_started = None;
        }
    }

    /// Releases a probe slot whose call ended without a body verdict (the run was
    /// cancelled), so the next call may probe instead. A body that timed out did fail:
    /// record that with [`CircuitBreaker::record_failure`], since a tool that keeps
    /// hanging is what the breaker is for.
    pub fn record_aborted(&self, tool: &str) {
        if let Some(state) = self.lock().get_mut(tool) {
            state.probe_started = None;
        }
    }

    /// Whether the circuit for `tool` is open or half-open (not closed).
    pub fn is_open(&self, tool: &str) -> bool {
        self.state(tool) != CircuitState::Closed
    }

    /// The current state of `tool`'s circuit.
    pub fn state(&self, tool: &str) -> CircuitState {
        let now = self.clock.now();
        match self.lock().get(tool).and_then(|s| s.opened_at) {
            None => CircuitState::Closed,
            Some(opened_at) if now.saturating_duration_since(opened_at) < self.cooldown => {
                CircuitState::Open
            }
            Some(_) => CircuitState::HalfOpen,
        }
    }

    /// The number of consecutive body failures recorded for `tool` since its last
    /// success.
    pub fn consecutive_failures(&self, tool: &str) -> u32 {
        self.lock().get(tool).map_or(0, |s| s.consecutive_failures)
    }
}

fn open_error(tool: &str, failures: u32, retry_after: Duration, why: String) -> ToolErrorInfo {
    ToolErrorInfo::new(
        codes::CIRCUIT_OPEN,
        format!("`{tool}` failed {failures} times in a row; {why}"),
    )
    .retryable(true)
    .with_detail("consecutive_failures", failures)
    .with_detail("retry_after_seconds", retry_after.as_secs_f64())
}
