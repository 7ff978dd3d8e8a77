//! Deadlines: which bound decides how long one call may run.

use std::fmt;
use std::time::Duration;

use iris_tools_core::{ToolErrorInfo, codes};

/// The default cap (one minute unless overridden), used when no other bound is set.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// One heartbeat of a call whose body is still running ("running name=…
/// elapsed=…", every 30 s by default), as a [`HeartbeatListener`] receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heartbeat {
    /// The call id.
    pub call_id: String,
    /// The canonical tool name.
    pub tool_name: String,
    /// How long the body has run.
    pub elapsed: Duration,
    /// The call's deadline.
    pub deadline: Duration,
}

/// Receives the heartbeats of the calls whose context carries it (in
/// [`ToolExecutionContext::extensions`](iris_tools_core::ToolExecutionContext::extensions),
/// as an `Arc<HeartbeatListener>`): the run loop turns them into
/// `RunEvent::Heartbeat`, so users see a long call is alive, not only `tracing`.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use iris_executor::HeartbeatListener;
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// let listener = HeartbeatListener::new(move |beat| sink.lock().unwrap().push(beat.tool_name.clone()));
/// # let _ = listener;
/// ```
pub struct HeartbeatListener(Box<dyn Fn(&Heartbeat) + Send + Sync>);

impl HeartbeatListener {
    /// A listener calling `f` for each heartbeat (on the call's task: keep it short).
    pub fn new(f: impl Fn(&Heartbeat) + Send + Sync + 'static) -> Self {
        Self(Box::new(f))
    }

    /// Delivers one heartbeat.
    pub fn beat(&self, heartbeat: &Heartbeat) {
        (self.0)(heartbeat);
    }
}

impl std::fmt::Debug for HeartbeatListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeartbeatListener").finish_non_exhaustive()
    }
}

/// How often a running body reports a heartbeat (every 30 s).
pub const DEFAULT_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(30);

/// Extra time the executor grants a [`iris_tools_core::ToolTimeoutOwner::Tool`] body past its
/// deadline before dropping it.
///
/// Such tools enforce their own deadline (a command tool must kill a process tree and
/// report `timed_out` itself), so the executor does not cut them at the deadline. The
/// grace is only a safety net against a tool that never returns; it is generous so a
/// tool that is busy cleaning up is not interrupted halfway.
pub const TOOL_OWNED_DEADLINE_GRACE: Duration = Duration::from_secs(30);

/// Which bound set a call's deadline.
///
/// ```
/// use iris_executor::DeadlineBound;
/// assert_eq!(DeadlineBound::Context.as_str(), "context");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeadlineBound {
    /// The 60 s default ([`DEFAULT_TOOL_TIMEOUT`]): nothing else was set.
    Default,
    /// The executor's runtime cap, set with [`crate::ToolExecutor::with_default_timeout`].
    Runtime,
    /// The tool's own [`iris_tools_core::ToolDefinition::timeout`].
    Tool,
    /// The call context's [`iris_tools_core::ToolExecutionContext::tool_timeout`].
    Context,
}

impl DeadlineBound {
    /// `"default"`, `"runtime"`, `"tool"` or `"context"` (the value in error details).
    pub fn as_str(self) -> &'static str {
        match self {
            DeadlineBound::Default => "default",
            DeadlineBound::Runtime => "runtime",
            DeadlineBound::Tool => "tool",
            DeadlineBound::Context => "context",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            DeadlineBound::Default => "the default cap",
            DeadlineBound::Runtime => "the runtime cap",
            DeadlineBound::Tool => "the tool's timeout",
            DeadlineBound::Context => "the context's tool_timeout",
        }
    }
}

impl fmt::Display for DeadlineBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The effective deadline of one call and the bound that won.
///
/// Rules (SPEC §2 on shape): the deadline is the minimum of the
/// bounds that are set — the executor's runtime cap, the tool's own `timeout` and the
/// context's `tool_timeout`. A tool's `timeout` *overrides* the 60 s
/// default rather than being capped by it (`run_command` has 60 minutes), so
/// the 60 s default applies only when none of the three is set. On a tie the bound
/// listed first (runtime, tool, context) is reported.
///
/// ```
/// use std::time::Duration;
/// use iris_executor::{Deadline, DeadlineBound};
///
/// let d = Deadline::resolve(None, Some(Duration::from_secs(600)), Some(Duration::from_secs(20))).unwrap();
/// assert_eq!((d.duration, d.bound), (Duration::from_secs(20), DeadlineBound::Context));
///
/// let d = Deadline::resolve(None, None, None).unwrap();
/// assert_eq!((d.duration, d.bound), (Duration::from_secs(60), DeadlineBound::Default));
///
/// assert_eq!(Deadline::resolve(None, None, Some(Duration::ZERO)).unwrap_err().code, "TOOL_TIMEOUT");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    /// How long the body may run.
    pub duration: Duration,
    /// Which bound set it.
    pub bound: DeadlineBound,
}

impl Deadline {
    /// Picks the effective deadline from the three optional bounds.
    ///
    /// `context` comes from the host; a zero deadline has already passed and is
    /// reported as a `TOOL_TIMEOUT` error so the body never starts.
    pub fn resolve(
        runtime: Option<Duration>,
        tool: Option<Duration>,
        context: Option<Duration>,
    ) -> Result<Self, ToolErrorInfo> {
        if context.is_some_and(|c| c.is_zero()) {
            return Err(ToolErrorInfo::new(
                codes::TOOL_TIMEOUT,
                "the call's deadline has already passed: the context's tool_timeout is zero",
            )
            .with_detail("bound", DeadlineBound::Context.as_str())
            .with_detail("tool_timeout_seconds", 0.0));
        }
        let candidates = [
            (runtime, DeadlineBound::Runtime),
            (tool, DeadlineBound::Tool),
            (context, DeadlineBound::Context),
        ];
        let mut best: Option<Deadline> = None;
        for (duration, bound) in candidates {
            if let Some(duration) = duration
                && best.is_none_or(|b| duration < b.duration)
            {
                best = Some(Deadline { duration, bound });
            }
        }
        Ok(best.unwrap_or(Deadline {
            duration: DEFAULT_TOOL_TIMEOUT,
            bound: DeadlineBound::Default,
        }))
    }

    /// The deadline in seconds (error details and heartbeats report it so).
    pub fn seconds(&self) -> f64 {
        self.duration.as_secs_f64()
    }

    /// The `TOOL_TIMEOUT` error for a body cut at this deadline (after `ran_for`).
    pub(crate) fn timeout_error(
        &self,
        tool_name: &str,
        ran_for: Duration,
        safety_net: bool,
    ) -> ToolErrorInfo {
        let message = if safety_net {
            format!(
                "`{tool_name}` owns its deadline of {} s ({}) but had not returned {} s after it",
                fmt_secs(self.duration),
                self.bound.describe(),
                fmt_secs(TOOL_OWNED_DEADLINE_GRACE),
            )
        } else {
            format!(
                "`{tool_name}` did not finish within {} s ({})",
                fmt_secs(self.duration),
                self.bound.describe()
            )
        };
        ToolErrorInfo::new(codes::TOOL_TIMEOUT, message)
            .retryable(true)
            .with_detail("deadline_seconds", self.seconds())
            .with_detail("bound", self.bound.as_str())
            .with_detail("elapsed_seconds", ran_for.as_secs_f64())
            .with_detail("safety_net", safety_net)
    }
}

/// Seconds without a trailing `.0` for whole numbers (`60`, `2.5`).
pub(crate) fn fmt_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s}")
    }
}
