//! `GET /v1/runs/{id}/events`: a run's event log as Server-Sent Events, from the start
//! or after `Last-Event-ID`, then live.
//!
//! Each SSE event is one log entry: `id:` its number in the run's log, `data:` the
//! event's JSON (`{"type": "run_started", …}`; the server's own first event is
//! `{"type": "accepted", "agent", "metadata"}`). A client that reconnects sends the
//! last id it saw as `Last-Event-ID` (browsers' `EventSource` does) and gets the
//! events after it, from whichever host it reaches. The stream ends after a
//! `finished` event whose outcome is not `waiting` (the run is over); while the run
//! waits for a human it stays open, with a comment every [`KEEP_ALIVE`].

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_core::Stream;
use iris_runner::store::RunStore;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::host::Host;
use crate::limit::Permit;

/// How often an idle stream sends a keep-alive comment.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How often a stream looks at the log without a wakeup: wakeups from other
/// processes reach PostgreSQL readers only, and a missed one costs at most this.
const LOOK_AGAIN: Duration = Duration::from_secs(2);

/// Log entries read per query.
const PAGE: usize = 200;

/// The events of one stream, as the SSE response reads them.
pub(crate) struct EventStream {
    rx: mpsc::Receiver<Event>,
}

impl Stream for EventStream {
    type Item = Result<Event, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().rx.poll_recv(cx).map(|e| e.map(Ok))
    }
}

/// Whether a logged event ends the run's stream: a `finished` whose outcome is not
/// `waiting`.
fn ends_stream(event: &Value) -> bool {
    event.get("type").and_then(Value::as_str) == Some("finished")
        && event.pointer("/outcome/status").and_then(Value::as_str) != Some("waiting")
}

/// The SSE response for `run_id` after entry `after`.
/// `permit` (the client's count of requests in progress) is held until the stream
/// ends.
pub(crate) fn stream(
    host: Arc<Host>,
    run_id: String,
    after: u64,
    permit: Arc<Permit>,
) -> impl IntoResponse {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let _permit = permit;
        // Subscribed before the first read, so no append between them goes unseen.
        let mut wakeups = host.store.event_wakeups();
        // A client that reconnects after the run's last event gets an empty stream
        // that ends, not one that waits forever.
        if after > 0
            && let Ok(seen) = host.store.events_after(&run_id, after - 1, 1).await
            && seen.first().is_some_and(|e| {
                e.seq == after
                    && serde_json::from_str::<Value>(&e.event).is_ok_and(|e| ends_stream(&e))
            })
        {
            return;
        }
        let mut last = after;
        loop {
            let batch = match host.store.events_after(&run_id, last, PAGE).await {
                Ok(batch) => batch,
                Err(e) => {
                    let error = serde_json::json!({
                        "type": "error", "code": e.code(), "message": e.to_string(),
                    });
                    let _ = tx
                        .send(Event::default().event("error").data(error.to_string()))
                        .await;
                    return;
                }
            };
            let full = batch.len() == PAGE;
            for entry in batch {
                last = entry.seq;
                let end =
                    serde_json::from_str::<Value>(&entry.event).is_ok_and(|e| ends_stream(&e));
                let event = Event::default().id(entry.seq.to_string()).data(entry.event);
                if tx.send(event).await.is_err() || end {
                    return;
                }
            }
            if full {
                continue;
            }
            tokio::select! {
                () = wakeups.wait_for(&run_id) => {}
                () = tokio::time::sleep(LOOK_AGAIN) => {}
                () = host.stopping.cancelled() => return,
                () = tx.closed() => return,
            }
        }
    });
    Sse::new(EventStream { rx }).keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
}
