//! What both tools do around one client request: pick the deadline and honour
//! cancellation.

use std::future::Future;
use std::time::Duration;

use iris_tools_core::{ToolErrorInfo, ToolExecutionContext, codes};

use crate::client::TavilyClient;
use crate::error::Error;

/// How much longer than the client's own deadline the tool definition's timeout is, so
/// the executor's cap does not cut a request the client would still report as
/// `WEB_TIMEOUT` (the more precise error).
pub(crate) const TOOL_TIMEOUT_MARGIN: Duration = Duration::from_secs(5);

/// The request deadline: the client's, shortened to the runtime's per-call deadline when
/// the context sets a usable one.
pub(crate) fn deadline(client: &TavilyClient, ctx: &ToolExecutionContext) -> Duration {
    match ctx.tool_timeout.filter(|t| !t.is_zero()) {
        Some(runtime) => runtime.min(client.timeout()),
        None => client.timeout(),
    }
}

/// Runs `request` unless the call is cancelled first; cancellation wins and drops the
/// request (closing its connection).
pub(crate) async fn until_cancelled<T>(
    ctx: &ToolExecutionContext,
    request: impl Future<Output = Result<T, Error>>,
) -> Result<T, ToolErrorInfo> {
    let outcome = match &ctx.cancellation {
        Some(signal) => {
            signal.raise_if_requested()?;
            tokio::select! {
                biased;
                () = signal.cancelled() => {
                    return Err(ToolErrorInfo::new(codes::CANCELLED, "the call was cancelled"));
                }
                outcome = request => outcome,
            }
        }
        None => request.await,
    };
    outcome.map_err(|e| e.to_info())
}
