//! Runs blocking work (file I/O, tree walks) off the async workers, once, in one
//! helper, and stops it when nobody waits any more.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use iris_tools_core::{CancellationSignal, ToolErrorInfo, ToolExecutionContext, codes};

/// Tells long-running work (walks, searches) to stop early: set when the call is
/// cancelled or when its future was dropped (a timeout, or the caller gave up).
#[derive(Debug, Clone)]
pub struct Stop {
    abandoned: Arc<AtomicBool>,
    cancel: Option<CancellationSignal>,
}

impl Stop {
    fn new(cancel: Option<CancellationSignal>) -> Self {
        Self {
            abandoned: Arc::new(AtomicBool::new(false)),
            cancel,
        }
    }

    /// Whether the work should stop now.
    pub fn requested(&self) -> bool {
        self.abandoned.load(Ordering::Relaxed)
            || self
                .cancel
                .as_ref()
                .is_some_and(CancellationSignal::requested)
    }

    /// `Err(CANCELLED)` once the work should stop.
    pub fn check(&self) -> Result<(), ToolErrorInfo> {
        if self.requested() {
            Err(ToolErrorInfo::new(
                codes::CANCELLED,
                "the call was cancelled",
            ))
        } else {
            Ok(())
        }
    }
}

/// Marks the work abandoned when the awaiting future is dropped.
struct AbandonOnDrop(Arc<AtomicBool>);

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs `work` on Tokio's blocking pool when a runtime is present (file I/O and
/// tree walks would otherwise stall the async workers), or inline without one so
/// the tools also work under other executors.
pub async fn run_blocking<T, F>(ctx: &ToolExecutionContext, work: F) -> Result<T, ToolErrorInfo>
where
    T: Send + 'static,
    F: FnOnce(&Stop) -> Result<T, ToolErrorInfo> + Send + 'static,
{
    let stop = Stop::new(ctx.cancellation.clone());
    stop.check()?;
    let _guard = AbandonOnDrop(Arc::clone(&stop.abandoned));
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            let task_stop = stop.clone();
            match handle.spawn_blocking(move || work(&task_stop)).await {
                Ok(result) => result,
                Err(e) => Err(ToolErrorInfo::new(
                    codes::TOOL_PANICKED,
                    format!("file tool worker failed: {e}"),
                )),
            }
        }
        Err(_) => work(&stop),
    }
}

/// Runs uncancellable blocking work (an artifact write, a path resolution) on Tokio's
/// blocking pool when a runtime is present, or inline without one.
pub async fn run_blocking_io<T, F>(work: F) -> Result<T, ToolErrorInfo>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle.spawn_blocking(work).await.map_err(|e| {
            ToolErrorInfo::new(codes::TOOL_PANICKED, format!("blocking worker failed: {e}"))
        }),
        Err(_) => Ok(work()),
    }
}
