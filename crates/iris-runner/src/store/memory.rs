//! [`MemoryRunStore`]: runs in this process's memory.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use iris_tools_core::BoxFuture;

use super::events::Notifier;
use super::{
    EventWakeups, JournalEntry, LeaseMode, MAX_EVENTS_PER_READ, RunPage, RunQuery, RunRecord,
    RunStatus, RunStore, RunSummary, StoreError, StoreResult, StoredEvent, now_ms, ttl_ms,
};

#[derive(Debug)]
struct Row {
    record: RunRecord,
    lease: Option<(String, u64)>,
    journal: Vec<JournalEntry>,
}

/// Runs kept in memory: a waiting run can be resumed by the same process (the
/// default of a runner built in Rust without a store). Leases and the journal behave
/// as in the durable stores.
#[derive(Debug, Default)]
pub struct MemoryRunStore {
    rows: Mutex<HashMap<String, Row>>,
    /// Each run's event log (kept apart from `rows`: a run's first event may come
    /// before its row).
    events: Mutex<HashMap<String, Vec<StoredEvent>>>,
    notifier: Notifier,
}

impl MemoryRunStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Row>> {
        // Every operation replaces whole values, so a poisoned lock holds no half
        // update.
        self.rows.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes or renews the lease of `run_id` for `owner` (see [`LeaseMode`]).
    fn lease(&self, run_id: &str, owner: &str, ttl: Duration, mode: LeaseMode) -> StoreResult<()> {
        let mut rows = self.lock();
        let now = now_ms();
        let Some(row) = rows.get_mut(run_id) else {
            return Err(StoreError::NotFound {
                run_id: run_id.to_owned(),
            });
        };
        let live = row.lease.as_ref().filter(|(_, until)| *until > now);
        let granted = match live {
            Some((holder, _)) => holder == owner,
            None => mode == LeaseMode::Take,
        };
        if !granted {
            let until = live.map(|(_, until)| *until);
            return Err(mode.refused(run_id.to_owned(), until, now));
        }
        row.lease = Some((owner.to_owned(), now.saturating_add(ttl_ms(ttl))));
        Ok(())
    }
}

fn holds(row: &Row, owner: &str) -> bool {
    row.lease
        .as_ref()
        .is_some_and(|(o, until)| o == owner && *until > now_ms())
}

impl RunStore for MemoryRunStore {
    fn describe(&self) -> String {
        "memory".into()
    }

    fn create<'a>(
        &'a self,
        record: &'a RunRecord,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let result = {
            let mut rows = self.lock();
            if rows.contains_key(&record.run_id) {
                Err(StoreError::failed(format!(
                    "run `{}` already exists",
                    record.run_id
                )))
            } else {
                let until = now_ms().saturating_add(ttl_ms(ttl));
                rows.insert(
                    record.run_id.clone(),
                    Row {
                        record: record.clone(),
                        lease: Some((owner.to_owned(), until)),
                        journal: Vec::new(),
                    },
                );
                Ok(())
            }
        };
        Box::pin(async move { result })
    }

    fn save<'a>(&'a self, record: &'a RunRecord, owner: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        let result = {
            let mut rows = self.lock();
            match rows.get_mut(&record.run_id) {
                None => Err(StoreError::NotFound {
                    run_id: record.run_id.clone(),
                }),
                Some(row) if !holds(row, owner) => Err(StoreError::LeaseLost {
                    run_id: record.run_id.clone(),
                }),
                Some(row) => {
                    row.record = record.clone();
                    Ok(())
                }
            }
        };
        Box::pin(async move { result })
    }

    fn load<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, StoreResult<Option<RunRecord>>> {
        let found = self.lock().get(run_id).map(|r| r.record.clone());
        Box::pin(async move { Ok(found) })
    }

    fn list<'a>(
        &'a self,
        status: Option<RunStatus>,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<RunSummary>>> {
        let mut all: Vec<RunSummary> = self
            .lock()
            .values()
            .filter(|r| status.is_none_or(|s| r.record.status == s))
            .map(|r| RunSummary::of(&r.record))
            .collect();
        all.sort_by(|a, b| {
            b.updated_at_ms
                .cmp(&a.updated_at_ms)
                .then_with(|| b.run_id.cmp(&a.run_id))
        });
        all.truncate(limit);
        Box::pin(async move { Ok(all) })
    }

    fn acquire<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let result = self.lease(run_id, owner, ttl, LeaseMode::Take);
        Box::pin(async move { result })
    }

    fn renew<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let result = self.lease(run_id, owner, ttl, LeaseMode::Renew);
        Box::pin(async move { result })
    }

    fn release<'a>(&'a self, run_id: &'a str, owner: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        if let Some(row) = self.lock().get_mut(run_id)
            && row.lease.as_ref().is_some_and(|(o, _)| o == owner)
        {
            row.lease = None;
        }
        Box::pin(async { Ok(()) })
    }

    fn journal<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        entry: &'a JournalEntry,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let result = {
            let mut rows = self.lock();
            match rows.get_mut(run_id) {
                None => Err(StoreError::NotFound {
                    run_id: run_id.to_owned(),
                }),
                Some(row) if !holds(row, owner) => Err(StoreError::LeaseLost {
                    run_id: run_id.to_owned(),
                }),
                Some(row) => {
                    match row
                        .journal
                        .iter_mut()
                        .find(|e| e.turn == entry.turn && e.call_id == entry.call_id)
                    {
                        Some(existing) => *existing = entry.clone(),
                        None => row.journal.push(entry.clone()),
                    }
                    Ok(())
                }
            }
        };
        Box::pin(async move { result })
    }

    fn journal_of<'a>(
        &'a self,
        run_id: &'a str,
        turn: u32,
    ) -> BoxFuture<'a, StoreResult<Vec<JournalEntry>>> {
        let mut rows: Vec<JournalEntry> = self
            .lock()
            .get(run_id)
            .map(|r| {
                r.journal
                    .iter()
                    .filter(|e| e.turn == turn)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        rows.sort_by_key(|e| e.index);
        Box::pin(async move { Ok(rows) })
    }

    fn list_page<'a>(&'a self, query: &'a RunQuery) -> BoxFuture<'a, StoreResult<RunPage>> {
        let limit = query.limit.max(1);
        let mut all: Vec<RunSummary> = self
            .lock()
            .values()
            .filter(|r| query.status.is_none_or(|s| r.record.status == s))
            .filter(|r| {
                query
                    .agent_id
                    .as_ref()
                    .is_none_or(|a| &r.record.agent_id == a)
            })
            .filter(|r| {
                query.after.as_ref().is_none_or(|c| {
                    (r.record.created_at_ms, r.record.run_id.as_str())
                        < (c.created_at_ms, c.run_id.as_str())
                })
            })
            .map(|r| RunSummary::of(&r.record))
            .collect();
        all.sort_by(|a, b| (b.created_at_ms, &b.run_id).cmp(&(a.created_at_ms, &a.run_id)));
        all.truncate(limit + 1);
        Box::pin(async move { Ok(RunPage::from_rows(all, limit)) })
    }

    fn append_events<'a>(
        &'a self,
        run_id: &'a str,
        events: &'a [String],
    ) -> BoxFuture<'a, StoreResult<u64>> {
        let last = {
            let mut all = self.events.lock().unwrap_or_else(PoisonError::into_inner);
            let log = all.entry(run_id.to_owned()).or_default();
            let at_ms = now_ms();
            for event in events {
                let seq = log.last().map_or(1, |e| e.seq + 1);
                log.push(StoredEvent {
                    seq,
                    at_ms,
                    event: event.clone(),
                });
            }
            log.last().map_or(0, |e| e.seq)
        };
        if !events.is_empty() {
            self.notifier.notify(run_id);
        }
        Box::pin(async move { Ok(last) })
    }

    fn events_after<'a>(
        &'a self,
        run_id: &'a str,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<StoredEvent>>> {
        let found: Vec<StoredEvent> = self
            .events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(run_id)
            .map(|log| {
                log.iter()
                    .filter(|e| e.seq > after)
                    .take(limit.min(MAX_EVENTS_PER_READ))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        Box::pin(async move { Ok(found) })
    }

    fn event_wakeups(&self) -> EventWakeups {
        self.notifier.subscribe()
    }
}
