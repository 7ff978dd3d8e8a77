//! [`Host`]: what the routes act on — starting runs and driving them in the background,
//! answering and cancelling them, reading them back — and the runs this process drives.
//!
//! **Driving.** A run is driven by the process that holds its lease: the one that
//! started it, then whichever process accepted the answer it waited for (any host on
//! the same store). The driving process appends each event the run streams to the
//! run's event log, masked ([`crate::mask`]) and bounded ([`MAX_EVENTS_PER_RUN`],
//! [`MAX_EVENT_BYTES`]), which is what `GET /v1/runs/{id}/events` serves.
//!
//! **Stopping.** [`Host::stop`] waits [`SHUTDOWN_GRACE`] for the runs it drives to stop
//! on their own (wait for a human, end), then gives up the leases it still holds and
//! lets those runs go without saving anything more: they stay as last saved, for any
//! host to recover, instead of ending as cancelled.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use iris_runner::store::{RunCursor, RunQuery, RunStatus, RunStore};
use iris_runner::{AgentRunner, Answer, ResumeStream, RunEvent, RunInput, RunOutcome, RunStream};
use iris_tools_core::CancellationSignal;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::agents::Agents;
use crate::api::{CreateRun, ListQuery, RunList, RunListItem, RunView};
use crate::diff::Children;
use crate::error::{ApiError, codes};
use crate::feed::Feed;
use crate::ledger::LeaseLedger;
use crate::mask::Masker;

/// The most events one run's log keeps; later events are dropped, except the run's
/// `finished` events, so a reader always sees how each part of the run ended.
pub const MAX_EVENTS_PER_RUN: u64 = 10_000;

/// The longest event kept whole (its JSON); a longer one is kept as its `type`, with
/// `"truncated": true` and its size.
pub const MAX_EVENT_BYTES: usize = 64 * 1024;

/// How long a stopping server waits for the runs it drives before giving them up.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The lease a cancel of a waiting run takes while it writes the run's end.
const CANCEL_LEASE: Duration = Duration::from_secs(30);

/// How long an answer waits for this process to finish writing the run's previous
/// events, so the log stays in order.
const SETTLE_WAIT: Duration = Duration::from_secs(10);

/// The default and largest page of `GET /v1/runs`.
const DEFAULT_PAGE: usize = 50;
const MAX_PAGE: usize = 200;

/// A run this process drives.
struct Active {
    /// Which drive of the run this is (a run is driven again after each answer).
    generation: u64,
    cancel: CancellationSignal,
    /// Turns `true` when the drive's last event is in the log.
    done: watch::Receiver<bool>,
    pump: tokio::task::AbortHandle,
}

/// The events of a run being driven, new or resumed.
enum Driven {
    New(RunStream),
    Resumed(ResumeStream),
}

impl Driven {
    async fn next(&mut self) -> Option<RunEvent> {
        match self {
            Driven::New(s) => s.next().await,
            Driven::Resumed(s) => s.next().await,
        }
    }
}

/// The server's state; see the [module docs](self).
pub(crate) struct Host {
    agents: Agents,
    pub(crate) store: Arc<LeaseLedger>,
    pub(crate) masker: Masker,
    active: Mutex<HashMap<String, Active>>,
    generations: AtomicU64,
    /// Raised when the server stops: event streams end, new work is refused.
    pub(crate) stopping: CancellationSignal,
    /// The runs feed ([`crate::feed`]).
    pub(crate) feed: Feed,
    /// Subagents assembled for the diffs of the approvals they wait for.
    pub(crate) children: Children,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("agents", &self.agents)
            .finish_non_exhaustive()
    }
}

/// A run event as the log keeps it: without the conversation a `finished` event
/// carries (`GET /v1/runs/{id}` has it), masked, at most [`MAX_EVENT_BYTES`] of JSON.
fn encode(masker: &Masker, event: &Value) -> String {
    let text = masker.value(slim(event.clone())).to_string();
    if text.len() <= MAX_EVENT_BYTES {
        return text;
    }
    let mut cut = json!({
        "type": event.get("type").cloned().unwrap_or(Value::Null),
        "truncated": true,
        "bytes": text.len(),
    });
    if let Some(status) = event.pointer("/outcome/status") {
        cut["outcome"] = json!({"status": status});
    }
    cut.to_string()
}

/// `event` without `outcome.history`, in it and in the child events it wraps.
fn slim(mut event: Value) -> Value {
    if let Some(outcome) = event.get_mut("outcome").and_then(Value::as_object_mut) {
        outcome.remove("history");
    }
    if let Some(inner) = event.get_mut("event") {
        *inner = slim(inner.take());
    }
    event
}

/// Whether an event is a `finished` event (the end of one drive of the run).
fn is_finished(event: &RunEvent) -> bool {
    matches!(event, RunEvent::Finished { .. })
}

impl Host {
    pub(crate) fn new(agents: Agents, extra_secret_vars: &[String]) -> Self {
        let mut vars = agents.secret_vars.clone();
        vars.extend_from_slice(extra_secret_vars);
        Self {
            store: Arc::clone(&agents.store),
            masker: Masker::from_env(&vars),
            agents,
            active: Mutex::default(),
            generations: AtomicU64::new(0),
            stopping: CancellationSignal::new(),
            feed: Feed::default(),
            children: Children::default(),
        }
    }

    pub(crate) fn agents(&self) -> &Agents {
        &self.agents
    }

    fn runner(&self, agent: &str) -> Result<&AgentRunner, ApiError> {
        self.agents.runners.get(agent).ok_or_else(|| {
            let served: Vec<&str> = self.agents.names().collect();
            ApiError::new(
                codes::SERVE_AGENT_UNKNOWN,
                format!(
                    "this server does not serve an agent `{agent}` (it serves: {})",
                    served.join(", ")
                ),
            )
        })
    }

    fn refuse_when_stopping(&self) -> Result<(), ApiError> {
        if self.stopping.requested() {
            return Err(ApiError::new(
                codes::SERVE_SHUTTING_DOWN,
                "the server is stopping",
            ));
        }
        Ok(())
    }

    /// Starts a run; returns its id once the run is in the store.
    pub(crate) async fn start(self: &Arc<Self>, request: CreateRun) -> Result<String, ApiError> {
        self.refuse_when_stopping()?;
        let runner = self.runner(&request.agent)?;
        if request.input.trim().is_empty() {
            return Err(ApiError::new(
                iris_runner::codes::RUN_INPUT_INVALID,
                "`input` is empty; give the user's message",
            ));
        }
        if request
            .session_id
            .as_deref()
            .is_some_and(|s| s.trim().is_empty())
        {
            return Err(ApiError::invalid(
                "`session_id` is blank; leave it out or give one",
            ));
        }
        let cancel = CancellationSignal::new();
        let mut input = RunInput::new(request.input).cancellation(cancel.clone());
        if let Some(session) = request.session_id {
            input = input.session_id(session);
        }
        let mut stream = runner.run_streamed(input);
        let Some(started @ RunEvent::RunStarted { .. }) = stream.next().await else {
            return Err(ApiError::new(
                codes::SERVE_RUN_FAILED,
                "the run ended before it started",
            ));
        };
        let RunEvent::RunStarted { run_id, .. } = &started else {
            unreachable!("matched above")
        };
        let run_id = run_id.clone();
        // The run is in the store once its next event comes (the first turn's); an
        // immediate end is a run that could not be stored or started.
        let second = stream.next().await;
        if let Some(RunEvent::Finished {
            outcome: RunOutcome::Failed { error },
        }) = &second
            && self.store.load(&run_id).await.ok().flatten().is_none()
        {
            return Err(error.clone().into());
        }
        let accepted = json!({
            "type": "accepted",
            "agent": request.agent,
            "metadata": request.metadata.map(Value::Object),
        });
        let mut first = vec![accepted];
        first.extend(
            [Some(started), second]
                .into_iter()
                .flatten()
                .map(|e| serde_json::to_value(&e).unwrap_or(Value::Null)),
        );
        self.drive(&run_id, cancel, first, Driven::New(stream));
        Ok(run_id)
    }

    /// Answers a waiting run and drives it on; returns once the answer was taken.
    pub(crate) async fn answer(
        self: &Arc<Self>,
        run_id: &str,
        interaction_id: &str,
        answer: Answer,
    ) -> Result<(), ApiError> {
        self.refuse_when_stopping()?;
        let record = self.store.load(run_id).await?.ok_or_else(|| {
            ApiError::new(
                iris_runner::store::codes::RUN_NOT_FOUND,
                format!("no run `{run_id}` in the run store"),
            )
        })?;
        // A child's agent is its parent's subagent, not a served one: say so before
        // looking for it.
        if let Some(parent) = &record.parent {
            return Err(iris_runner::subagent::child_run_refused(run_id, parent).into());
        }
        let runner = self.runner(&record.agent_id)?;
        self.settle(run_id).await;
        if let Answer::Secret { value } = &answer {
            // Before anything could show it.
            self.masker.add([value.expose().to_owned()]);
        }
        let mut stream = runner.resume_streamed(run_id, interaction_id, answer);
        let Some(first) = stream.next().await else {
            let error = stream.error().await.map_or_else(
                || ApiError::new(codes::SERVE_RUN_FAILED, "the run ended without an answer"),
                ApiError::from,
            );
            return Err(error);
        };
        let cancel = stream.cancellation().clone();
        let first = vec![serde_json::to_value(&first).unwrap_or(Value::Null)];
        self.drive(run_id, cancel, first, Driven::Resumed(stream));
        Ok(())
    }

    /// Whether this process drives `run_id` right now.
    pub(crate) fn drives(&self, run_id: &str) -> bool {
        self.active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(run_id)
    }

    /// Takes over a `running` run whose host died (its lease lapsed or was given up),
    /// as [`AgentRunner::recover`] does, and drives it on. Nothing happens when it
    /// cannot be taken: another host holds the lease (`RUN_BUSY`), it is no longer
    /// running (`RUN_NOT_WAITING`), its agent is not served here, the server stops.
    pub(crate) async fn recover(self: &Arc<Self>, run_id: &str, agent: &str) {
        if self.stopping.requested() || self.drives(run_id) {
            return;
        }
        let Ok(runner) = self.runner(agent) else {
            return;
        };
        let mut stream = runner.recover_streamed(run_id);
        let Some(first) = stream.next().await else {
            if let Some(e) = stream.error().await
                && e.code != iris_runner::store::codes::RUN_BUSY
                && e.code != iris_runner::codes::RUN_NOT_WAITING
            {
                tracing::warn!(run_id, error = %e.message, code = %e.code, "cannot take a run over");
            }
            return;
        };
        tracing::info!(run_id, "took over a run whose host stopped");
        let cancel = stream.cancellation().clone();
        let first = vec![serde_json::to_value(&first).unwrap_or(Value::Null)];
        self.drive(run_id, cancel, first, Driven::Resumed(stream));
    }

    /// Waits (bounded) until this process has written the last events of its previous
    /// drive of `run_id`, if it drove it.
    async fn settle(&self, run_id: &str) {
        let done = self
            .active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(run_id)
            .map(|a| a.done.clone());
        if let Some(mut done) = done {
            let _ = tokio::time::timeout(SETTLE_WAIT, done.wait_for(|d| *d)).await;
        }
    }

    /// Writes a drive's events to the run's log in the background until it ends.
    fn drive(
        self: &Arc<Self>,
        run_id: &str,
        cancel: CancellationSignal,
        first: Vec<Value>,
        mut driven: Driven,
    ) {
        let generation = self.generations.fetch_add(1, Ordering::Relaxed);
        let (done_tx, done_rx) = watch::channel(false);
        let host = Arc::clone(self);
        let id = run_id.to_owned();
        // The entry goes in before the task can end (and take it out).
        let mut active = self.active.lock().unwrap_or_else(PoisonError::into_inner);
        let pump = tokio::spawn(async move {
            let mut log = EventLog::new(&host, &id).await;
            log.write(first.iter().collect()).await;
            let mut ended = first
                .iter()
                .any(|e| e.get("type").and_then(Value::as_str) == Some("finished"));
            while !ended {
                let Some(event) = driven.next().await else {
                    break;
                };
                let mut batch = vec![event];
                // What else is ready goes in the same append.
                while batch.len() < 256 && !batch.last().is_some_and(is_finished) {
                    tokio::select! {
                        biased;
                        next = driven.next() => match next {
                            Some(e) => batch.push(e),
                            None => break,
                        },
                        () = std::future::ready(()) => break,
                    }
                }
                ended = batch.last().is_some_and(is_finished);
                let values: Vec<Value> = batch
                    .iter()
                    .map(|e| serde_json::to_value(e).unwrap_or(Value::Null))
                    .collect();
                log.write(values.iter().collect()).await;
            }
            let _ = done_tx.send(true);
            let mut active = host.active.lock().unwrap_or_else(PoisonError::into_inner);
            if active.get(&id).is_some_and(|a| a.generation == generation) {
                active.remove(&id);
            }
            drop(driven);
        });
        active.insert(
            run_id.to_owned(),
            Active {
                generation,
                cancel,
                done: done_rx,
                pump: pump.abort_handle(),
            },
        );
    }

    /// Cancels a run: one this process drives stops (in-flight calls cancelled) and
    /// ends `cancelled`; a waiting one is marked cancelled in the store.
    pub(crate) async fn cancel(&self, run_id: &str) -> Result<RunView, ApiError> {
        let driving = self
            .active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(run_id)
            .map(|a| (a.cancel.clone(), a.done.clone()));
        if let Some((cancel, mut done)) = driving {
            cancel.cancel();
            let _ = tokio::time::timeout(SETTLE_WAIT, done.wait_for(|d| *d)).await;
            return self.view(run_id).await;
        }
        let record = self.load(run_id).await?;
        match record.status {
            RunStatus::Waiting => self.cancel_waiting(run_id).await?,
            RunStatus::Running => {
                return Err(ApiError::new(
                    codes::SERVE_RUN_ELSEWHERE,
                    format!(
                        "run `{run_id}` is driven by another process; cancel it on the host that \
                         drives it"
                    ),
                ));
            }
            done => {
                return Err(ApiError::new(
                    codes::SERVE_RUN_FINISHED,
                    format!("run `{run_id}` already ended ({done})"),
                ));
            }
        }
        self.view(run_id).await
    }

    /// Marks a waiting run cancelled under a lease of its own, and logs its end.
    async fn cancel_waiting(&self, run_id: &str) -> Result<(), ApiError> {
        static N: AtomicU64 = AtomicU64::new(0);
        let owner = format!(
            "serve-cancel-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        self.store.acquire(run_id, &owner, CANCEL_LEASE).await?;
        let result = async {
            let mut record = self.load(run_id).await?;
            if record.status != RunStatus::Waiting {
                return Err(ApiError::new(
                    codes::SERVE_RUN_FINISHED,
                    format!("run `{run_id}` is no longer waiting ({})", record.status),
                ));
            }
            record.status = RunStatus::Cancelled;
            record.interaction = None;
            record.updated_at_ms = now_ms();
            self.store.save(&record, &owner).await?;
            let finished = json!({"type": "finished", "outcome": {"status": "cancelled"}});
            EventLog::new(self, run_id)
                .await
                .write(vec![&finished])
                .await;
            Ok(())
        }
        .await;
        let _ = self.store.release(run_id, &owner).await;
        result
    }

    pub(crate) async fn load(
        &self,
        run_id: &str,
    ) -> Result<iris_runner::store::RunRecord, ApiError> {
        self.store.load(run_id).await?.ok_or_else(|| {
            ApiError::new(
                iris_runner::store::codes::RUN_NOT_FOUND,
                format!("no run `{run_id}` in the run store"),
            )
        })
    }

    /// A run, masked, with the metadata it was started with.
    pub(crate) async fn view(&self, run_id: &str) -> Result<RunView, ApiError> {
        let record = self.load(run_id).await?;
        let first = self.store.events_after(run_id, 0, 1).await?;
        let metadata = first
            .first()
            .and_then(|e| serde_json::from_str::<Value>(&e.event).ok())
            .filter(|e| e.get("type").and_then(Value::as_str) == Some("accepted"))
            .and_then(|e| e.get("metadata").cloned())
            .filter(|m| !m.is_null());
        let mut view = RunView::of(&record, metadata);
        crate::diff::add_diff(self, &mut view).await;
        crate::diff::add_child_diff(self, &mut view).await;
        let masked = self
            .masker
            .value(serde_json::to_value(&view).unwrap_or(Value::Null));
        serde_json::from_value(masked)
            .map_err(|e| ApiError::new(codes::SERVE_RUN_FAILED, e.to_string()))
    }

    /// A page of runs.
    pub(crate) async fn list(&self, query: ListQuery) -> Result<RunList, ApiError> {
        let status = query
            .status
            .as_deref()
            .map(|s| {
                RunStatus::parse(s).ok_or_else(|| {
                    ApiError::invalid(format!(
                        "`status` must be one of running, waiting, completed, failed, cancelled \
                         (got `{s}`)"
                    ))
                })
            })
            .transpose()?;
        let after = query
            .cursor
            .as_deref()
            .map(|c| {
                RunCursor::parse(c).ok_or_else(|| {
                    ApiError::invalid("`cursor` is not a cursor this server handed out")
                })
            })
            .transpose()?;
        let limit = query.limit.unwrap_or(DEFAULT_PAGE);
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(ApiError::invalid(format!(
                "`limit` must be 1 to {MAX_PAGE} (got {limit})"
            )));
        }
        let page = self
            .store
            .list_page(&RunQuery {
                status,
                agent_id: query.agent,
                after,
                limit,
            })
            .await?;
        let list = RunList {
            runs: page.runs.iter().map(RunListItem::from).collect(),
            next_cursor: page.next.map(|c| c.token()),
        };
        let masked = self
            .masker
            .value(serde_json::to_value(&list).unwrap_or(Value::Null));
        serde_json::from_value(masked)
            .map_err(|e| ApiError::new(codes::SERVE_RUN_FAILED, e.to_string()))
    }

    /// Stops: waits for the runs this process drives (up to [`SHUTDOWN_GRACE`]), then
    /// releases the leases it still holds and lets those runs go unsaved. Returns the
    /// runs given up.
    pub(crate) async fn stop(&self) -> Vec<String> {
        self.stopping.cancel();
        let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
        loop {
            let pending: Vec<watch::Receiver<bool>> = self
                .active
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .values()
                .map(|a| a.done.clone())
                .collect();
            let Some(mut done) = pending.into_iter().next() else {
                break;
            };
            if tokio::time::timeout_at(deadline, done.wait_for(|d| *d))
                .await
                .is_err()
            {
                break;
            }
            // Its pump takes the entry out right after; let it.
            tokio::task::yield_now().await;
        }
        // Leases first: once they are gone nothing these runs do is saved.
        let released = self.store.release_all().await;
        let left: Vec<Active> = self
            .active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, a)| a)
            .collect();
        for active in left {
            // Dropping the run's stream cancels what it was doing.
            active.pump.abort();
        }
        released
    }
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Appends one drive's events to a run's log, within [`MAX_EVENTS_PER_RUN`].
struct EventLog<'a> {
    host: &'a Host,
    run_id: &'a str,
    /// The log's last number as this writer knows it.
    last: u64,
}

impl<'a> EventLog<'a> {
    async fn new(host: &'a Host, run_id: &'a str) -> Self {
        let last = host.store.append_events(run_id, &[]).await.unwrap_or(0);
        Self { host, run_id, last }
    }

    async fn write(&mut self, events: Vec<&Value>) {
        let mut room = MAX_EVENTS_PER_RUN.saturating_sub(self.last);
        let kept: Vec<String> = events
            .into_iter()
            .filter(|e| {
                let finished = e.get("type").and_then(Value::as_str) == Some("finished");
                if room > 0 {
                    room -= 1;
                    true
                } else {
                    finished
                }
            })
            .map(|e| encode(&self.host.masker, e))
            .collect();
        if kept.is_empty() {
            return;
        }
        // A store that fails for a moment (a busy SQLite file, a PostgreSQL reconnect)
        // gets two more tries.
        for attempt in 0..3 {
            match self.host.store.append_events(self.run_id, &kept).await {
                Ok(last) => {
                    self.last = last;
                    return;
                }
                Err(e) if attempt < 2 => {
                    tracing::warn!(run_id = self.run_id, error = %e, "cannot append run events; trying again");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => {
                    tracing::warn!(run_id = self.run_id, error = %e, "run events lost");
                }
            }
        }
    }
}
