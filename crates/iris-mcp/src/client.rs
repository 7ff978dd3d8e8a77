//! Iris's side of an MCP session: the rmcp client handler that routes progress
//! notifications to the call waiting for them, answers standalone elicitation
//! requests through the host of the call in flight, and records catalog changes.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ClientHandler;
use rmcp::model::{
    ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, ErrorData,
    ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use serde_json::Value;

use crate::elicitation::{self, ElicitationHandler, ElicitationRequest, McpElicitation};
use crate::error::codes;
use crate::transport::Diagnostics;
use iris_tools_core::{CancellationSignal, ToolExecutionContext};
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

/// A call waiting for its answer, as a standalone `elicitation/create` request of
/// an older session finds it.
pub(crate) struct InFlight {
    /// The Iris tool name.
    pub(crate) tool: String,
    /// The call id from the context.
    pub(crate) call_id: String,
    /// The host's answerer, when the call's context had one.
    pub(crate) handler: Option<Arc<dyn ElicitationHandler>>,
    /// Elicitations being answered right now: the call's timers wait for them.
    pub(crate) humans: AtomicUsize,
    /// What was asked and answered, for the call's result.
    pub(crate) notes: Mutex<Vec<Value>>,
    /// The call's cancellation (the context's), which also ends a wait for a
    /// host's answer.
    cancellation: Option<CancellationSignal>,
    /// Raised when the call ended (its [`CallGuard`] dropped), however it ended: a
    /// standalone elicitation still being answered for it stops waiting.
    ended: CancellationSignal,
}

/// An elicitation being answered for a call: its timers wait while one lives, and
/// dropping it (the answer came, or the wait was abandoned) lets them go on.
pub(crate) struct Answering<'a>(&'a AtomicUsize);

impl Drop for Answering<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl InFlight {
    /// Marks an elicitation of this call as being answered until the guard drops.
    pub(crate) fn answering(&self) -> Answering<'_> {
        self.humans.fetch_add(1, Ordering::AcqRel);
        Answering(&self.humans)
    }

    /// A call of Iris tool `tool` in `ctx`, with the context's elicitation answerer.
    pub(crate) fn new(tool: &str, ctx: &ToolExecutionContext) -> Self {
        Self {
            tool: tool.to_owned(),
            call_id: ctx.call_id.clone(),
            handler: ctx
                .extensions
                .get::<McpElicitation>()
                .map(|e| Arc::clone(&e.0)),
            humans: AtomicUsize::new(0),
            notes: Mutex::default(),
            cancellation: ctx.cancellation.clone(),
            ended: CancellationSignal::new(),
        }
    }

    /// Completes when the call was cancelled or has ended: nobody waits for an
    /// answer to its elicitations any more.
    pub(crate) async fn stopped(&self) {
        match &self.cancellation {
            Some(signal) => tokio::select! {
                () = signal.cancelled() => {}
                () = self.ended.cancelled() => {}
            },
            None => self.ended.cancelled().await,
        }
    }
}

impl std::fmt::Debug for InFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InFlight")
            .field("tool", &self.tool)
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}

impl InFlight {
    /// Whether a person is answering an elicitation of this call right now.
    pub(crate) fn waiting_for_human(&self) -> bool {
        self.humans.load(Ordering::Acquire) > 0
    }

    /// Appends a note for the call's result.
    pub(crate) fn note(&self, note: Value) {
        self.notes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(note);
    }

    /// The notes so far.
    pub(crate) fn take_notes(&self) -> Vec<Value> {
        std::mem::take(&mut *self.notes.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The calls in flight, by registration id, oldest first.
type Calls = Vec<(u64, Arc<InFlight>)>;

/// What one server's sessions report to the rest of the crate. Shared by every
/// session of the server (a restart keeps it), so a call and the catalog never
/// miss a notification because the connection was replaced.
#[derive(Debug, Clone, Default)]
pub(crate) struct ServerEvents {
    progress: Arc<Mutex<Routes>>,
    /// The calls in flight, oldest first.
    calls: Arc<Mutex<Calls>>,
    next_call: Arc<AtomicU64>,
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
            calls: Arc::default(),
            next_call: Arc::default(),
            tools_dirty: Arc::default(),
            generation,
        }
    }

    /// Lists `call` among the calls in flight until the guard is dropped; dropping
    /// it marks the call ended.
    pub(crate) fn register_call(&self, call: Arc<InFlight>) -> CallGuard {
        let id = self.next_call.fetch_add(1, Ordering::Relaxed);
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((id, Arc::clone(&call)));
        CallGuard {
            events: self.clone(),
            id,
            call,
        }
    }

    /// The newest call in flight. An older session's `elicitation/create` carries
    /// no reference to the call it belongs to; with one call in flight (the usual
    /// case) it is that one, with several the newest is taken.
    fn newest_call(&self) -> Option<Arc<InFlight>> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .last()
            .map(|(_, c)| Arc::clone(c))
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
        routes.calls.insert(token.clone(), tx.clone());
        drop(routes);
        (
            ProgressWatch {
                events: self.clone(),
                token,
                tx,
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

/// Removes a call from the calls in flight when it ends, however it ends, and
/// marks it ended.
#[derive(Debug)]
pub(crate) struct CallGuard {
    events: ServerEvents,
    id: u64,
    call: Arc<InFlight>,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.events
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(id, _)| *id != self.id);
        self.call.ended.cancel();
    }
}

/// Removes a call's progress route when the call ends, however it ends (its own
/// route only: a newer watch of the same token keeps its own).
#[derive(Debug)]
pub(crate) struct ProgressWatch {
    events: ServerEvents,
    token: ProgressToken,
    tx: mpsc::Sender<Progress>,
}

impl ProgressWatch {
    /// The token whose notifications this watch routes.
    pub(crate) fn token(&self) -> &ProgressToken {
        &self.token
    }
}

impl Drop for ProgressWatch {
    fn drop(&mut self) {
        let mut routes = self
            .events
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if routes
            .calls
            .get(&self.token)
            .is_some_and(|tx| tx.same_channel(&self.tx))
        {
            routes.calls.remove(&self.token);
        }
    }
}

/// The rmcp client handler of every Iris session.
#[derive(Debug, Clone)]
pub(crate) struct IrisClient {
    pub(crate) server: String,
    pub(crate) info: ClientConfig,
    pub(crate) events: ServerEvents,
    pub(crate) diagnostics: Diagnostics,
}

impl IrisClient {
    /// Answers a standalone `elicitation/create` (sessions before 2026-07-28)
    /// through the host of the call in flight; declines with a diagnostic and a
    /// note in the call's result when there is no host to ask. The wait for the
    /// host's answer ends when the call is cancelled or ends, or the server
    /// cancels its request (`stopped`): the server then hears `cancel`.
    async fn elicit(
        &self,
        params: &ElicitRequestParams,
        stopped: impl std::future::Future<Output = ()>,
    ) -> ElicitResult {
        let call = self.events.newest_call();
        let (tool, call_id) = call
            .as_ref()
            .map(|c| (c.tool.clone(), c.call_id.clone()))
            .unwrap_or_default();
        let request = ElicitationRequest::from_params(&self.server, &tool, &call_id, params);
        let handler = call.as_ref().and_then(|c| c.handler.clone());
        let answering = call.as_deref().map(InFlight::answering);
        let asking = elicitation::ask(handler.as_ref(), &request, false);
        let call_stopped = async {
            match &call {
                Some(c) => c.stopped().await,
                None => std::future::pending().await,
            }
        };
        let answered = tokio::select! {
            answered = asking => Some(answered),
            () = call_stopped => None,
            () = stopped => None,
        };
        drop(answering);
        let Some((answer, note)) = answered else {
            // The call was cancelled or ended, or the server withdrew the request:
            // nobody waits for this answer any more.
            tracing::info!(
                target: crate::tool::TRACING_TARGET,
                server = %request.server,
                tool = %request.tool,
                mode = request.mode(),
                "elicitation abandoned: the call was cancelled or ended before the host answered"
            );
            return ElicitResult::new(ElicitationAction::Cancel);
        };
        record(&self.diagnostics, &request, &answer, handler.is_none());
        if let Some(c) = &call {
            c.note(note);
        }
        answer.to_result()
    }
}

/// Writes a diagnostic for an elicitation nobody could answer (always) and a
/// tracing event for every one.
pub(crate) fn record(
    diagnostics: &Diagnostics,
    request: &ElicitationRequest,
    answer: &elicitation::ElicitationAnswer,
    unanswered: bool,
) {
    tracing::info!(
        target: crate::tool::TRACING_TARGET,
        server = %request.server,
        tool = %request.tool,
        mode = request.mode(),
        action = answer.action(),
        "elicitation answered"
    );
    if unanswered {
        let stored = diagnostics.push_coded(
            codes::MCP_ELICITATION_DECLINED,
            &format!(
                "the server asked for input ({} mode, \"{}\") during `{}`; it was declined: {}",
                request.mode(),
                request.message,
                if request.tool.is_empty() {
                    "no call"
                } else {
                    &request.tool
                },
                elicitation::NO_HANDLER
            ),
        );
        tracing::warn!("{stored}");
    }
}

impl ClientHandler for IrisClient {
    /// A standalone elicitation of an older session: asked through the host of the
    /// call in flight, never declined silently (rmcp's default).
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(self.elicit(&request, context.ct.cancelled()).await)
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

        // A newer watch of a token outlives an older one dropped after it.
        let token = ProgressToken(NumberOrString::Number(9));
        let (old, _old_rx) = events.watch_progress(token.clone());
        let (_new, mut new_rx) = events.watch_progress(token);
        drop(old);
        events.progress(params(9, 0.5));
        assert_eq!(new_rx.try_recv().map(|p| p.progress), Ok(0.5));
    }
}
