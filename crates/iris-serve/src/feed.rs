//! `GET /v1/events`: the runs feed — one Server-Sent Event `run` per change of any
//! run, whose data is the run's [`RunListItem`] (an item of `GET /v1/runs`).
//!
//! One watcher per server ([`watch`]) notices changes two ways: the run store's event
//! wakeups (a run's log grew; PostgreSQL's `LISTEN/NOTIFY` brings those of every
//! host), and every [`LOOK_AGAIN`] a look at the runs that can still change — the
//! newest, the running and the waiting ones — which catches what no wakeup reports
//! (another process on a SQLite file, a subagent's child run, whose events are logged
//! in its parent's log). A run that was woken is read again at most once per
//! [`COALESCE`]; an item is sent when it differs from the last one sent for that run.
//! While no feed stream is open the watcher reads nothing.
//!
//! There is no replay: a client reads `GET /v1/runs` when it (re)connects, then
//! applies the feed's items. A client too slow to keep up has its stream ended, so it
//! reconnects and reads the list again.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_core::Stream;
use iris_runner::store::{RunQuery, RunStatus, RunStore, RunSummary};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};

use crate::api::RunListItem;
use crate::host::Host;
use crate::limit::Permit;
use crate::sse::KEEP_ALIVE;

/// The shortest time between two reads of one woken run: a burst of events makes one
/// feed item.
pub const COALESCE: Duration = Duration::from_millis(250);

/// How often the watcher looks at the runs that can still change.
const LOOK_AGAIN: Duration = Duration::from_secs(2);

/// Runs read per status in a look.
const LOOK_PAGE: usize = 200;

/// Items a subscriber may fall behind by before its stream is ended.
const BACKLOG: usize = 1024;

/// The feed's sending side: the watcher sends each changed item's JSON, every open
/// stream receives it.
#[derive(Debug, Clone)]
pub(crate) struct Feed {
    tx: broadcast::Sender<Arc<str>>,
}

impl Feed {
    /// Whether any feed stream is open.
    fn listened(&self) -> bool {
        self.tx.receiver_count() > 0
    }
}

impl Default for Feed {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(BACKLOG).0,
        }
    }
}

/// The watcher's memory: the last item sent per run, the runs to read again.
#[derive(Default)]
struct Seen {
    sent: HashMap<String, RunListItem>,
    dirty: HashSet<String>,
}

/// Watches the store for run changes and sends them to the feed, until the server
/// stops.
pub(crate) async fn watch(host: Arc<Host>) {
    let mut wakeups = host.store.event_wakeups();
    let mut seen = Seen::default();
    // What exists now is not news.
    look(&host, &mut seen, false).await;
    let mut next_look = tokio::time::Instant::now() + LOOK_AGAIN;
    loop {
        tokio::select! {
            () = host.stopping.cancelled() => return,
            woken = wakeups.next() => match woken {
                Some(run_id) => {
                    seen.dirty.insert(run_id);
                }
                None => next_look = tokio::time::Instant::now(),
            },
            () = tokio::time::sleep_until(next_look) => {
                // With no stream open a look would only update `seen`; the first look
                // after a client subscribes sends what changed meanwhile, and that
                // client read the list when it connected.
                if host.feed.listened() {
                    look(&host, &mut seen, true).await;
                }
                next_look = tokio::time::Instant::now() + LOOK_AGAIN;
            }
        }
        if !host.feed.listened() {
            seen.dirty.clear();
        }
        if seen.dirty.is_empty() {
            continue;
        }
        // The rest of the burst joins the first wakeup; the runs are read COALESCE
        // after it.
        let flush_at = tokio::time::Instant::now() + COALESCE;
        loop {
            tokio::select! {
                () = host.stopping.cancelled() => return,
                () = tokio::time::sleep_until(flush_at) => break,
                woken = wakeups.next() => match woken {
                    Some(run_id) => {
                        seen.dirty.insert(run_id);
                    }
                    None => next_look = tokio::time::Instant::now(),
                },
            }
        }
        flush(&host, &mut seen).await;
    }
}

/// Reads the woken runs again and sends those that changed.
async fn flush(host: &Host, seen: &mut Seen) {
    let dirty: Vec<String> = seen.dirty.drain().collect();
    for run_id in dirty {
        match host.store.load(&run_id).await {
            Ok(Some(record)) => offer(host, seen, &RunSummary::of(&record), true),
            Ok(None) => {}
            Err(e) => tracing::warn!(run_id, error = %e, "the runs feed cannot read a run"),
        }
    }
}

/// Looks at the runs that can still change (the newest, the running, the waiting);
/// sends those that changed when `send`, and forgets the runs no look holds any more
/// (ended and older than the newest page: they do not change again).
async fn look(host: &Host, seen: &mut Seen, send: bool) {
    let mut present = HashSet::new();
    for status in [None, Some(RunStatus::Running), Some(RunStatus::Waiting)] {
        let query = RunQuery {
            status,
            agent_id: None,
            after: None,
            limit: LOOK_PAGE,
        };
        match host.store.list_page(&query).await {
            Ok(page) => {
                for run in &page.runs {
                    present.insert(run.run_id.clone());
                    offer(host, seen, run, send);
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "the runs feed cannot list the runs");
                return;
            }
        }
    }
    seen.sent.retain(|id, _| present.contains(id));
}

/// Sends `run`'s item (masked, as `GET /v1/runs` shows it) when it differs from the
/// last one sent for it; only remembers it unless `send`.
fn offer(host: &Host, seen: &mut Seen, run: &RunSummary, send: bool) {
    let item = RunListItem::from(run);
    if seen.sent.get(&item.run_id) == Some(&item) {
        return;
    }
    if send {
        let masked = host
            .masker
            .value(serde_json::to_value(&item).unwrap_or(Value::Null));
        // No stream open is not an error.
        let _ = host.feed.tx.send(Arc::from(masked.to_string()));
    }
    seen.sent.insert(item.run_id.clone(), item);
}

/// The events of one feed stream, as the SSE response reads them.
struct FeedStream {
    rx: mpsc::Receiver<Event>,
}

impl Stream for FeedStream {
    type Item = Result<Event, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().rx.poll_recv(cx).map(|e| e.map(Ok))
    }
}

/// The SSE response of `GET /v1/events`; `permit` (the client's count of requests in
/// progress) is held until the stream ends.
pub(crate) fn stream(host: &Arc<Host>, permit: Arc<Permit>) -> impl IntoResponse {
    let (tx, rx) = mpsc::channel(64);
    let mut items = host.feed.tx.subscribe();
    let stopping = host.stopping.clone();
    tokio::spawn(async move {
        let _permit = permit;
        loop {
            let item = tokio::select! {
                () = stopping.cancelled() => return,
                () = tx.closed() => return,
                item = items.recv() => item,
            };
            // Lagged: the client missed items; ending the stream makes it read the
            // list again.
            let Ok(item) = item else { return };
            let event = Event::default().event("run").data(&*item);
            if tx.send(event).await.is_err() {
                return;
            }
        }
    });
    Sse::new(FeedStream { rx }).keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
}
