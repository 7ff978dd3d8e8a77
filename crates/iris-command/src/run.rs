//! The one execution driver both backends share: capture, deadline, stop, cancel, kill.
//!
//! A backend only knows how to start a process, pump its output into [`Captures`] until
//! it has exited ([`Process::wait`]) and kill its whole tree with confirmation
//! ([`Process::kill`]). Everything that makes the semantics identical across backends
//! (which event wins, what status and exit code result, how long to keep collecting
//! after a kill) lives here, once.

use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use iris_tools_core::CancellationSignal;

use crate::capture::Captures;
use crate::config::CommandMode;
use crate::request::{
    CommandChannel, CommandOrigin, CommandOutcome, CommandPayload, CommandStatus,
};
use crate::service::{ExecEntry, StopReason};

/// How long to keep collecting output after a confirmed kill. The pipes close as soon
/// as the killed processes are gone; the bound only matters for a process that escaped
/// the group (its own `setsid`) and still holds them.
const AFTER_KILL_DRAIN: Duration = Duration::from_secs(2);

/// Deadlines longer than this are treated as "no practical deadline" (about 31 years),
/// so huge configured values cannot overflow `Instant` arithmetic.
const MAX_DEADLINE_SECONDS: f64 = 1.0e9;

/// A validated execution, ready for a backend.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub(crate) call_id: String,
    pub(crate) payload: CommandPayload,
    pub(crate) cwd: PathBuf,
    pub(crate) deadline_seconds: f64,
    pub(crate) stdin: Option<Vec<u8>>,
    pub(crate) cancellation: Option<CancellationSignal>,
    pub(crate) origin: CommandOrigin,
    pub(crate) channel: Option<CommandChannel>,
    pub(crate) widening: Option<iris_sandbox::SandboxWidening>,
}

/// How [`Process::wait`] ended.
#[derive(Debug)]
pub(crate) enum WaitOutcome {
    /// The process exited and its output streams are closed. `None` means killed by a
    /// signal or an unknown exit.
    Exited(Option<i32>),
    /// The environment failed under the process (engine or stream lost).
    Lost(String),
}

/// A started process of some backend.
pub(crate) trait Process: Send {
    /// Pumps output into `out` until the process exited and its streams closed, then
    /// makes sure nothing of its process group is left. Must be cancel-safe: the driver
    /// drops it when the deadline or a stop wins, and calls it again after a kill.
    fn wait<'a>(
        &'a mut self,
        out: &'a mut Captures,
    ) -> impl Future<Output = WaitOutcome> + Send + 'a;

    /// Kills the whole process tree and returns once no process of it is left (or why
    /// that could not be confirmed).
    fn kill<'a>(
        &'a mut self,
        out: &'a mut Captures,
    ) -> impl Future<Output = Result<(), String>> + Send + 'a;

    /// Runs once at the very end, however the call ended: makes sure nothing the call
    /// started is left, including processes that left its process group (detached
    /// processes, double forks), and releases per-call resources. `Err` says what could
    /// not be confirmed.
    fn release(&mut self) -> impl Future<Output = Result<(), String>> + Send + '_;
}

enum End {
    Natural(WaitOutcome),
    Kill(CommandStatus, Option<String>),
}

/// Completes when the signal fires; never without one.
async fn cancelled(signal: Option<&CancellationSignal>) {
    match signal {
        Some(signal) => signal.cancelled().await,
        None => std::future::pending().await,
    }
}

fn deadline_instant(start: Instant, seconds: f64) -> tokio::time::Instant {
    let seconds = seconds.clamp(0.0, MAX_DEADLINE_SECONDS);
    let start = tokio::time::Instant::from_std(start);
    start + Duration::from_secs_f64(seconds)
}

/// Runs one started process to its end under the job's deadline, the entry's stop
/// requests and the job's cancellation, and builds the outcome.
pub(crate) async fn drive<P: Process>(
    mut process: P,
    job: &Job,
    entry: &ExecEntry,
    mode: CommandMode,
    limit: usize,
    started: Instant,
) -> CommandOutcome {
    let mut out = Captures::new(limit);
    let deadline = deadline_instant(started, job.deadline_seconds);
    let end = tokio::select! {
        outcome = process.wait(&mut out) => End::Natural(outcome),
        () = tokio::time::sleep_until(deadline) => End::Kill(CommandStatus::TimedOut, None),
        reason = entry.stop_requested() => End::Kill(reason.status(), reason.detail()),
        () = cancelled(job.cancellation.as_ref()) => End::Kill(CommandStatus::Cancelled, None),
    };
    let (status, exit_code, mut detail, mut confirmed) = match end {
        End::Natural(WaitOutcome::Exited(code)) => (CommandStatus::Exited, code, None, true),
        End::Natural(WaitOutcome::Lost(reason)) => {
            // Whatever is left of the tree must still go; the outcome says why it ended.
            let killed = process.kill(&mut out).await;
            let confirmed = killed.is_ok();
            let detail = match killed {
                Ok(()) => reason,
                Err(e) => format!("{reason}; killing the process tree failed: {e}"),
            };
            (
                CommandStatus::EnvironmentInterrupted,
                None,
                Some(detail),
                confirmed,
            )
        }
        End::Kill(status, detail) => {
            let killed = process.kill(&mut out).await;
            let confirmed = killed.is_ok();
            // The tree is gone: a stop operation may report it before output is drained.
            entry.mark_stopped(confirmed);
            // Collect what the dying processes wrote; their exit code is ours, not theirs.
            let _ = tokio::time::timeout(AFTER_KILL_DRAIN, process.wait(&mut out)).await;
            let detail = match (detail, killed) {
                (detail, Ok(())) => detail,
                (Some(d), Err(e)) => Some(format!("{d}; killing the process tree failed: {e}")),
                (None, Err(e)) => Some(format!("killing the process tree failed: {e}")),
            };
            (status, None, detail, confirmed)
        }
    };
    // Whatever ended the call, nothing it started may outlive it.
    if let Err(e) = process.release().await {
        tracing::warn!(call = %job.call_id, error = %e, "cleaning up the call's processes");
        confirmed = false;
        detail = Some(match detail {
            Some(d) => format!("{d}; {e}"),
            None => e,
        });
    }
    entry.mark_stopped(confirmed);
    let stats = out.stats();
    CommandOutcome {
        call_id: job.call_id.clone(),
        mode,
        status,
        exit_code,
        cwd: job.cwd.clone(),
        duration_seconds: started.elapsed().as_secs_f64(),
        deadline_seconds: job.deadline_seconds,
        stdout: out.stdout.text("stdout"),
        stderr: out.stderr.text("stderr"),
        output_truncated: stats.stdout.bytes_dropped > 0 || stats.stderr.bytes_dropped > 0,
        output_stats: stats,
        detail,
        sandbox: None,
    }
}

impl StopReason {
    fn status(self) -> CommandStatus {
        match self {
            StopReason::Abandoned => CommandStatus::Cancelled,
            StopReason::ScopeStopped | StopReason::Closed => CommandStatus::EnvironmentInterrupted,
        }
    }

    fn detail(self) -> Option<String> {
        match self {
            StopReason::Abandoned => None,
            StopReason::ScopeStopped => Some("the scope was stopped".to_owned()),
            StopReason::Closed => Some("the command service was closed".to_owned()),
        }
    }
}
