//! Iris's side of an MCP session: the rmcp client handler that routes progress
//! notifications to the call waiting for them and records catalog changes.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ClientHandler;
use rmcp::model::{
    ClientConfig, ElicitRequestParams, ElicitResult, ErrorCode, ErrorData,
    ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};

use crate::transport::Diagnostics;
use tokio::sync::mpsc;

/// One progress notification, as the call waiting for it sees it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Progress {
    pub(crate) progress: f64,
    pub(crate) total: Option<f64>,
    pub(crate) message: Option<String>,
}

/// Progress notifications buffered per call before older ones are dropped: a call
/// only needs to know that progress happened, and the latest values.
const PROGRESS_BUFFER: usize = 16;

/// Progress notifications kept for tokens no call watches yet. rmcp makes the token
/// while sending the request, so the call can watch it only once the request is
/// out; a server that reports progress at once may be faster than that.
const EARLY_PROGRESS: usize = 64;

/// Where progress goes: the calls waiting, and what came before its call watched.
#[derive(Debug, Default)]
struct Routes {
    calls: HashMap<ProgressToken, mpsc::Sender<Progress>>,
    early: VecDeque<(ProgressToken, Progress)>,
}

/// What one server's sessions report to the rest of the crate. Shared by every
/// session of the server (a restart keeps it), so a call and the catalog never
/// miss a notification because the connection was replaced.
#[derive(Debug, Clone, Default)]
pub(crate) struct ServerEvents {
    progress: Arc<Mutex<Routes>>,
    /// The server said its tool list changed and the catalog has not re-read it.
    tools_dirty: Arc<AtomicBool>,
    /// Bumped on every change of any server of the manager.
    generation: Arc<AtomicU64>,
}

impl ServerEvents {
    /// Events feeding the manager-wide `generation` counter.
    pub(crate) fn new(generation: Arc<AtomicU64>) -> Self {
        Self {
            progress: Arc::default(),
            tools_dirty: Arc::default(),
            generation,
        }
    }

    /// Routes the progress notifications carrying `token` to the returned receiver
    /// until the guard is dropped.
    pub(crate) fn watch_progress(
        &self,
        token: ProgressToken,
    ) -> (ProgressWatch, mpsc::Receiver<Progress>) {
        let (tx, rx) = mpsc::channel(PROGRESS_BUFFER);
        let mut routes = self.progress.lock().unwrap_or_else(PoisonError::into_inner);
        let early = std::mem::take(&mut routes.early);
        for (t, p) in early {
            if t == token {
                let _ = tx.try_send(p);
            } else {
                routes.early.push_back((t, p));
            }
        }
        routes.calls.insert(token.clone(), tx);
        drop(routes);
        (
            ProgressWatch {
                events: self.clone(),
                token,
            },
            rx,
        )
    }

    /// rmcp hands each notification to its own task, so one the server sent just
    /// before its answer can arrive after the call ended; it then has no route and
    /// waits among the early ones until newer ones push it out (the answer already
    /// ended the wait it would have extended).
    fn progress(&self, params: ProgressNotificationParam) {
        let progress = Progress {
            progress: params.progress,
            total: params.total,
            message: params.message,
        };
        let mut routes = self.progress.lock().unwrap_or_else(PoisonError::into_inner);
        match routes.calls.get(&params.progress_token) {
            // A full buffer means the call has not looked yet; it will see the
            // earlier ones, which reset its idle timer just as well.
            Some(tx) => {
                let _ = tx.try_send(progress);
            }
            None => {
                tracing::debug!(token = ?params.progress_token, "progress for no waiting call (yet)");
                if routes.early.len() == EARLY_PROGRESS {
                    routes.early.pop_front();
                }
                routes.early.push_back((params.progress_token, progress));
            }
        }
    }

    /// The server's tool list changed (a notification, or a restart that listed
    /// different tools).
    pub(crate) fn tools_changed(&self) {
        self.tools_dirty.store(true, Ordering::Release);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Whether the tool list changed since the last [`ServerEvents::take_dirty`].
    pub(crate) fn is_dirty(&self) -> bool {
        self.tools_dirty.load(Ordering::Acquire)
    }

    /// Clears the changed flag, returning whether it was set.
    pub(crate) fn take_dirty(&self) -> bool {
        self.tools_dirty.swap(false, Ordering::AcqRel)
    }
}

/// Removes a call's progress route when the call ends, however it ends.
#[derive(Debug)]
pub(crate) struct ProgressWatch {
    events: ServerEvents,
    token: ProgressToken,
}

impl Drop for ProgressWatch {
    fn drop(&mut self) {
        self.events
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .calls
            .remove(&self.token);
    }
}

/// The rmcp client handler of every Iris session.
#[derive(Debug, Clone)]
pub(crate) struct IrisClient {
    pub(crate) info: ClientConfig,
    pub(crate) events: ServerEvents,
    pub(crate) diagnostics: Diagnostics,
}

impl IrisClient {
    /// Refuses an elicitation loudly: the server gets a JSON-RPC error saying why,
    /// and the user a diagnostic.
    fn refuse_elicitation(&self) -> ErrorData {
        let message = "iris cannot answer elicitation requests yet (it did not declare the capability); the request was refused";
        let stored = self.diagnostics.push(&format!(
            "the server sent an elicitation request: {message}"
        ));
        tracing::warn!("{stored}");
        ErrorData::new(ErrorCode::METHOD_NOT_FOUND, message, None)
    }
}

impl ClientHandler for IrisClient {
    /// Elicitation is not declared, so a server should not ask; one that does is
    /// refused with a reason rather than silently declined (rmcp's default).
    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Err(self.refuse_elicitation())
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.events.progress(params);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.events.tools_changed();
    }

    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::NumberOrString;

    use super::*;

    fn params(token: i64, progress: f64) -> ProgressNotificationParam {
        ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(token)), progress)
    }

    #[test]
    fn progress_before_the_watch_is_delivered_and_strangers_age_out() {
        let events = ServerEvents::new(Arc::default());
        events.progress(params(1, 0.5));
        for i in 0..EARLY_PROGRESS {
            events.progress(params(1000 + i as i64, 1.0));
        }
        // Token 1's early notification was pushed out by the 64 newer ones.
        let (_watch, mut rx) = events.watch_progress(ProgressToken(NumberOrString::Number(1)));
        assert!(rx.try_recv().is_err());
        drop(_watch);

        events.progress(params(7, 0.25));
        let (watch, mut rx) = events.watch_progress(ProgressToken(NumberOrString::Number(7)));
        assert_eq!(rx.try_recv().map(|p| p.progress), Ok(0.25));
        events.progress(params(7, 0.75));
        assert_eq!(rx.try_recv().map(|p| p.progress), Ok(0.75));
        drop(watch);
        // Unwatched again: it waits among the early ones instead.
        events.progress(params(7, 1.0));
        assert!(rx.try_recv().is_err());
    }
}
