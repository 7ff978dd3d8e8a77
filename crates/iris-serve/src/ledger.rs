//! [`LeaseLedger`]: the served agents' run store, remembering which leases this process
//! holds, so that a server that stops can give them up ([`LeaseLedger::release_all`])
//! and another host can take its runs over at once instead of when the leases lapse.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use iris_runner::store::{
    EventWakeups, JournalEntry, RunPage, RunQuery, RunRecord, RunStatus, RunStore, RunSummary,
    StoreResult, StoredEvent,
};
use iris_tools_core::BoxFuture;

/// A [`RunStore`] that passes every call to the store it wraps and notes the leases
/// taken through it (by [`RunStore::create`] and [`RunStore::acquire`]) until they are
/// released.
pub(crate) struct LeaseLedger {
    inner: Arc<dyn RunStore>,
    /// Run id → the owner this process holds its lease as.
    held: Mutex<HashMap<String, String>>,
}

impl std::fmt::Debug for LeaseLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseLedger")
            .field("store", &self.inner.describe())
            .finish_non_exhaustive()
    }
}

impl LeaseLedger {
    pub(crate) fn new(inner: Arc<dyn RunStore>) -> Self {
        Self {
            inner,
            held: Mutex::default(),
        }
    }

    fn note(&self, run_id: &str, owner: &str) {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(run_id.to_owned(), owner.to_owned());
    }

    /// Gives up every lease this process holds; returns the runs. The runs stay as
    /// they were saved last (a run in the middle of a turn stays `running`, its
    /// journal saying which calls started), for any host to recover.
    pub(crate) async fn release_all(&self) -> Vec<String> {
        let held: Vec<(String, String)> = self
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .collect();
        let mut released = Vec::new();
        for (run_id, owner) in held {
            match self.inner.release(&run_id, &owner).await {
                Ok(()) => released.push(run_id),
                Err(e) => tracing::warn!(run_id, error = %e, "cannot release a run's lease"),
            }
        }
        released
    }
}

impl RunStore for LeaseLedger {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn create<'a>(
        &'a self,
        record: &'a RunRecord,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            self.inner.create(record, owner, ttl).await?;
            self.note(&record.run_id, owner);
            Ok(())
        })
    }

    fn save<'a>(&'a self, record: &'a RunRecord, owner: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        self.inner.save(record, owner)
    }

    fn load<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, StoreResult<Option<RunRecord>>> {
        self.inner.load(run_id)
    }

    fn list<'a>(
        &'a self,
        status: Option<RunStatus>,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<RunSummary>>> {
        self.inner.list(status, limit)
    }

    fn acquire<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            self.inner.acquire(run_id, owner, ttl).await?;
            self.note(run_id, owner);
            Ok(())
        })
    }

    fn renew<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.inner.renew(run_id, owner, ttl)
    }

    fn release<'a>(&'a self, run_id: &'a str, owner: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            {
                let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
                if held.get(run_id).is_some_and(|o| o == owner) {
                    held.remove(run_id);
                }
            }
            self.inner.release(run_id, owner).await
        })
    }

    fn journal<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        entry: &'a JournalEntry,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.inner.journal(run_id, owner, entry)
    }

    fn journal_of<'a>(
        &'a self,
        run_id: &'a str,
        turn: u32,
    ) -> BoxFuture<'a, StoreResult<Vec<JournalEntry>>> {
        self.inner.journal_of(run_id, turn)
    }

    fn list_page<'a>(&'a self, query: &'a RunQuery) -> BoxFuture<'a, StoreResult<RunPage>> {
        self.inner.list_page(query)
    }

    fn append_events<'a>(
        &'a self,
        run_id: &'a str,
        events: &'a [String],
    ) -> BoxFuture<'a, StoreResult<u64>> {
        self.inner.append_events(run_id, events)
    }

    fn events_after<'a>(
        &'a self,
        run_id: &'a str,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<StoredEvent>>> {
        self.inner.events_after(run_id, after, limit)
    }

    fn event_wakeups(&self) -> EventWakeups {
        self.inner.event_wakeups()
    }
}
