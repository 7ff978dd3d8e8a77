//! What a host keeps beside a run for the runs it serves over HTTP (`iris serve`): the
//! run's event log ([`StoredEvent`], appended by whoever drives the run, read from any
//! sequence number on), new-event wakeups ([`EventWakeups`]) and pages of runs
//! ([`RunQuery`], [`RunPage`], [`RunCursor`]).
//!
//! Events are opaque JSON text to the store: the host decides what an event holds
//! (and masks secrets before appending). Each run's events are numbered from 1 in
//! append order; a reader asks for the events after the last number it saw, so a
//! client that reconnects (to this or another process) misses nothing.
//!
//! **Wakeups.** Appending notifies every reader of the same store handle in this
//! process; [`PostgresRunStore`](super::PostgresRunStore) also sends a PostgreSQL
//! `NOTIFY` and listens for other processes' (`LISTEN`), so a reader on one machine
//! wakes when another appends. SQLite and memory wake only this process's readers: a
//! reader should also look again now and then.

use std::fmt;

use serde::Serialize;
use tokio::sync::broadcast;

use super::{RunStatus, RunSummary};

/// The PostgreSQL channel new-event notifications travel on; the payload is the run id.
pub(crate) const EVENTS_CHANNEL: &str = "iris_events";

/// How many run ids a wakeup channel buffers before a slow reader is told it lagged.
const WAKEUP_BUFFER: usize = 1024;

/// One event of a run's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredEvent {
    /// Its number in the run's log, from 1.
    pub seq: u64,
    /// When it was appended, milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The event as the host appended it (JSON text).
    pub event: String,
}

/// Which runs a page lists ([`RunStore::list_page`](super::RunStore::list_page)):
/// newest first by creation time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunQuery {
    /// Only runs in this state.
    pub status: Option<RunStatus>,
    /// Only runs of this agent id.
    pub agent_id: Option<String>,
    /// Only runs after this one in the order (the previous page's
    /// [`RunPage::next`]).
    pub after: Option<RunCursor>,
    /// At most this many runs (at least 1).
    pub limit: usize,
}

/// A place in the newest-first order of runs: a run's creation time and id. Its text
/// form ([`RunCursor::token`]) is what an API hands out as an opaque cursor.
///
/// ```
/// use iris_runner::store::RunCursor;
/// let cursor = RunCursor { created_at_ms: 1700000000000, run_id: "run_a_b_1".into() };
/// assert_eq!(RunCursor::parse(&cursor.token()), Some(cursor));
/// assert_eq!(RunCursor::parse("nonsense"), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCursor {
    /// The run's creation time.
    pub created_at_ms: u64,
    /// The run's id.
    pub run_id: String,
}

impl RunCursor {
    /// The cursor of a listed run.
    pub fn of(summary: &RunSummary) -> Self {
        Self {
            created_at_ms: summary.created_at_ms,
            run_id: summary.run_id.clone(),
        }
    }

    /// `<created_at_ms>.<run_id>`.
    pub fn token(&self) -> String {
        format!("{}.{}", self.created_at_ms, self.run_id)
    }

    /// Reads [`RunCursor::token`]'s form; `None` for anything else.
    pub fn parse(token: &str) -> Option<Self> {
        let (ms, run_id) = token.split_once('.')?;
        if run_id.is_empty() || !ms.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(Self {
            created_at_ms: ms.parse().ok()?,
            run_id: run_id.to_owned(),
        })
    }
}

/// One page of runs.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPage {
    /// The runs, newest first.
    pub runs: Vec<RunSummary>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<RunCursor>,
}

impl RunPage {
    /// A page of `runs` read with one more than `limit` asked for: the extra run only
    /// says there is a next page.
    pub(crate) fn from_rows(mut runs: Vec<RunSummary>, limit: usize) -> Self {
        let next = (runs.len() > limit).then(|| {
            runs.truncate(limit);
            runs.last().map(RunCursor::of)
        });
        Self {
            runs,
            next: next.flatten(),
        }
    }
}

/// Tells readers which runs got new events ([`RunStore::event_wakeups`](super::RunStore::event_wakeups)).
#[derive(Debug)]
pub struct EventWakeups {
    rx: broadcast::Receiver<String>,
}

impl EventWakeups {
    /// Returns when `run_id` may have new events: a wakeup for it, or missed wakeups
    /// (the reader lagged). Never returns once the store is gone; a reader bounds its
    /// wait with a timeout and looks again.
    pub async fn wait_for(&mut self, run_id: &str) {
        loop {
            match self.rx.recv().await {
                Ok(id) if id == run_id => return,
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(_)) => return,
                Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
            }
        }
    }

    /// Returns the next run that may have new events, whichever it is (a reader of
    /// every run, such as a feed of run changes), or `None` when wakeups were missed
    /// (the reader lagged: any run may have changed). Never returns once the store is
    /// gone; a reader bounds its wait with a timeout and looks again.
    pub async fn next(&mut self) -> Option<String> {
        match self.rx.recv().await {
            Ok(id) => Some(id),
            Err(broadcast::error::RecvError::Lagged(_)) => None,
            Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
        }
    }
}

/// The sending side of a store's wakeups, shared by its clones.
#[derive(Clone)]
pub(crate) struct Notifier {
    tx: broadcast::Sender<String>,
}

impl fmt::Debug for Notifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notifier")
            .field("readers", &self.tx.receiver_count())
            .finish()
    }
}

impl Default for Notifier {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(WAKEUP_BUFFER).0,
        }
    }
}

impl Notifier {
    /// Wakes this process's readers of `run_id`.
    pub(crate) fn notify(&self, run_id: &str) {
        // No reader is not an error.
        let _ = self.tx.send(run_id.to_owned());
    }

    /// A new reader.
    pub(crate) fn subscribe(&self) -> EventWakeups {
        EventWakeups {
            rx: self.tx.subscribe(),
        }
    }
}
