//! [`CircuitBreaker`]: stops calling a tool whose body keeps failing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::error::{ToolErrorInfo, codes};

/// A source of the current instant, so tests can control time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Now.
    fn now(&self) -> Instant;
}

/// The real monotonic clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

#[derive(Debug, Default, Clone)]
struct ToolState {
    consecutive_failures: u32,
    opened_at: Option<Instant>,
    probing: bool,
}

/// Opens after `failure_threshold` consecutive real body failures of one tool; while
/// open, calls get `CIRCUIT_OPEN`; after `cooldown` one probe call is let through; a
/// success clears the record, a failed probe re-opens it.
#[derive(Debug)]
pub struct CircuitBreaker {
    /// Consecutive failures that open the circuit (default 3).
    pub failure_threshold: u32,
    /// How long the circuit stays open before a probe (default 30 s).
    pub cooldown: Duration,
    clock: Arc<dyn Clock>,
    state: Mutex<HashMap<String, ToolState>>,
}

impl Default for CircuitBreaker {
    fn default() -> Self {
        Self::new(3, Duration::from_secs(30))
    }
}

impl CircuitBreaker {
    /// A breaker with the given threshold and cooldown on the system clock.
    pub fn new(failure_threshold: u32, cooldown: Duration) -> Self {
        Self {
            failure_threshold: failure_threshold.max(1),
            cooldown,
            clock: Arc::new(SystemClock),
            state: Mutex::new(HashMap::new()),
        }
    }

    /// Uses another clock (tests).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, ToolState>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a call may run now. While open, `Err(CIRCUIT_OPEN)`; after the
    /// cooldown exactly one probe is admitted until its outcome is recorded.
    pub fn check(&self, tool: &str) -> Result<(), ToolErrorInfo> {
        let mut map = self.lock();
        let Some(state) = map.get_mut(tool) else {
            return Ok(());
        };
        let Some(opened_at) = state.opened_at else {
            return Ok(());
        };
        let elapsed = self.clock.now().saturating_duration_since(opened_at);
        if elapsed >= self.cooldown && !state.probing {
            state.probing = true;
            return Ok(());
        }
        let remaining = self.cooldown.saturating_sub(elapsed);
        Err(ToolErrorInfo::new(
            codes::CIRCUIT_OPEN,
            format!(
                "`{tool}` failed {} times in a row; calls are paused for {:.1} s more",
                state.consecutive_failures,
                remaining.as_secs_f64()
            ),
        )
        .retryable(true)
        .with_detail("consecutive_failures", state.consecutive_failures)
        .with_detail("retry_after_seconds", remaining.as_secs_f64()))
    }

    /// Records a successful body: clears the tool's record.
    pub fn record_success(&self, tool: &str) {
        self.lock().remove(tool);
    }

    /// Records a failed body; opens (or re-opens) the circuit at the threshold.
    pub fn record_failure(&self, tool: &str) {
        let now = self.clock.now();
        let mut map = self.lock();
        let state = map.entry(tool.to_owned()).or_default();
        state.consecutive_failures = state.consecutive_failures.saturating_add(1);
        if state.probing || state.consecutive_failures >= self.failure_threshold {
            state.opened_at = Some(now);
            state.probing = false;
        }
    }

    /// Releases a probe slot whose call ended without a body verdict (cancelled).
    pub fn record_aborted(&self, tool: &str) {
        if let Some(state) = self.lock().get_mut(tool) {
            state.probing = false;
        }
    }

    /// Whether the circuit for a tool is currently open.
    pub fn is_open(&self, tool: &str) -> bool {
        self.lock().get(tool).is_some_and(|s| s.opened_at.is_some())
    }
}
