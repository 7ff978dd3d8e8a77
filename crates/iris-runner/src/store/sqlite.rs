//! [`SqliteRunStore`]: the embedded default, one SQLite file in WAL mode.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use iris_providers::chat::History;
use iris_tools_core::BoxFuture;
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use super::events::Notifier;
use super::persisted::{HistoryWrite, Persisted, PersistedRuns};
use super::{
    EventWakeups, JournalEntry, LeaseMode, MAX_EVENTS_PER_READ, MIGRATIONS, RunPage, RunQuery,
    RunRecord, RunStatus, RunStore, RunSummary, StoreError, StoreResult, StoredEvent, decode,
    decode_record, encode, encode_head, encode_messages, now_ms, ttl_ms,
};

/// Runs in one SQLite file (default `<workspace>/.iris/runs.db`), in WAL mode so
/// several processes on one machine share it; each statement waits up to 5 s for a
/// writer lock held by another process. `synchronous = NORMAL`: every commit
/// survives a crash of the process; a power loss may lose the last ones. The
/// connection runs on tokio's blocking pool.
///
/// ```
/// use iris_runner::store::{RunStore, SqliteRunStore};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let dir = tempfile::tempdir()?;
/// let store = SqliteRunStore::open(dir.path().join(".iris/runs.db")).await?;
/// assert!(store.list(None, 10).await?.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SqliteRunStore {
    path: PathBuf,
    conn: Arc<Mutex<Connection>>,
    /// What this store persisted of the runs it drives (see `persisted.rs`).
    persisted: Arc<PersistedRuns>,
    /// Wakes this process's event readers (SQLite has no cross-process notification).
    notifier: Notifier,
}

fn sql(e: rusqlite::Error) -> StoreError {
    StoreError::failed(format!("sqlite: {e}"))
}

impl SqliteRunStore {
    /// Takes or renews the lease of `run_id` for `owner` (see [`LeaseMode`]).
    fn lease(
        &self,
        run_id: &str,
        owner: &str,
        ttl: Duration,
        mode: LeaseMode,
    ) -> BoxFuture<'_, StoreResult<()>> {
        let (run_id, owner) = (run_id.to_owned(), owner.to_owned());
        self.with(move |conn| {
            let now = now_ms();
            let until = to_i64(now.saturating_add(ttl_ms(ttl)));
            let statement = match mode {
                LeaseMode::Take => {
                    "UPDATE iris_runs SET lease_owner = ?1, lease_expires_at_ms = ?2
                     WHERE run_id = ?3 AND (lease_owner IS NULL OR lease_owner = ?1
                        OR lease_expires_at_ms <= ?4)"
                }
                LeaseMode::Renew => {
                    "UPDATE iris_runs SET lease_expires_at_ms = ?2
                     WHERE run_id = ?3 AND lease_owner = ?1 AND lease_expires_at_ms > ?4"
                }
            };
            let n = conn
                .execute(statement, params![owner, until, run_id, to_i64(now)])
                .map_err(sql)?;
            if n == 1 {
                return Ok(());
            }
            let expires: Option<Option<i64>> = conn
                .query_row(
                    "SELECT lease_expires_at_ms FROM iris_runs WHERE run_id = ?1",
                    [&run_id],
                    |r| r.get(0),
                )
                .optional()
                .map_err(sql)?;
            match expires {
                None => Err(StoreError::NotFound { run_id }),
                Some(until) => Err(mode.refused(run_id, until.map(to_u64), now)),
            }
        })
    }

    /// Opens (creating it and its folder when missing) the database at `path` and
    /// applies the schema migrations.
    ///
    /// # Errors
    /// `RUN_STORE_FAILED` when the folder or file cannot be created or opened, or the
    /// file is not a database of this schema.
    pub async fn open(path: impl AsRef<Path>) -> StoreResult<Self> {
        let path = path.as_ref().to_path_buf();
        let opened = path.clone();
        let conn = tokio::task::spawn_blocking(move || -> StoreResult<Connection> {
            if let Some(folder) = opened.parent() {
                // A store inside `<workspace>/.iris/` makes that folder with its
                // ignore file first: the database holds whole conversations.
                iris_fs::state_dir::create_for(folder).map_err(|e| {
                    StoreError::failed(format!("cannot create {}: {e}", folder.display()))
                })?;
                std::fs::create_dir_all(folder).map_err(|e| {
                    StoreError::failed(format!("cannot create {}: {e}", folder.display()))
                })?;
            }
            let mut conn = Connection::open(&opened).map_err(|e| {
                StoreError::failed(format!("cannot open {}: {e}", opened.display()))
            })?;
            conn.busy_timeout(Duration::from_secs(5)).map_err(sql)?;
            conn.pragma_update(None, "journal_mode", "WAL")
                .map_err(sql)?;
            // In WAL mode NORMAL syncs at checkpoints, not at every commit: a commit
            // survives the process crashing (what the journal guards against); only a
            // power loss may drop the last commits.
            conn.pragma_update(None, "synchronous", "NORMAL")
                .map_err(sql)?;
            conn.pragma_update(None, "foreign_keys", true)
                .map_err(sql)?;
            migrate(&mut conn)?;
            Ok(conn)
        })
        .await
        .map_err(|e| StoreError::failed(format!("the open task failed: {e}")))??;
        Ok(Self {
            path,
            conn: Arc::new(Mutex::new(conn)),
            persisted: Arc::default(),
            notifier: Notifier::default(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the connection on the blocking pool.
    fn with<'a, T: Send + 'static>(
        &'a self,
        f: impl FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    ) -> BoxFuture<'a, StoreResult<T>> {
        let conn = Arc::clone(&self.conn);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
                f(&mut conn)
            })
            .await
            .map_err(|e| StoreError::failed(format!("the store task failed: {e}")))?
        })
    }
}

fn migrate(conn: &mut Connection) -> StoreResult<()> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(sql)?;
    tx.execute(
        "CREATE TABLE IF NOT EXISTS iris_schema_migrations (
            version BIGINT PRIMARY KEY, applied_at_ms BIGINT NOT NULL)",
        [],
    )
    .map_err(sql)?;
    let current: i64 = tx
        .query_row(
            "SELECT COALESCE(MAX(version), 0) FROM iris_schema_migrations",
            [],
            |r| r.get(0),
        )
        .map_err(sql)?;
    for (version, statement) in MIGRATIONS {
        if *version > current {
            tx.execute(statement, []).map_err(sql)?;
            tx.execute(
                "INSERT INTO iris_schema_migrations (version, applied_at_ms) VALUES (?1, ?2)",
                params![version, to_i64(now_ms())],
            )
            .map_err(sql)?;
        }
    }
    tx.commit().map_err(sql)
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// Why an update matched no row: the run is missing, or `owner` does not hold it.
fn missing_or(conn: &Connection, run_id: &str, held: StoreError) -> StoreError {
    let exists = conn
        .query_row(
            "SELECT 1 FROM iris_runs WHERE run_id = ?1",
            [run_id],
            |_| Ok(()),
        )
        .optional();
    match exists {
        Ok(Some(())) => held,
        Ok(None) => StoreError::NotFound {
            run_id: run_id.to_owned(),
        },
        Err(e) => sql(e),
    }
}

/// Inserts `messages` as the history's messages from `from` on, of `generation`.
fn insert_messages(
    tx: &Transaction<'_>,
    run_id: &str,
    generation: i64,
    from: usize,
    messages: &[String],
) -> StoreResult<()> {
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO iris_messages (run_id, generation, seq, message) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (run_id, generation, seq) DO UPDATE SET message = excluded.message",
        )
        .map_err(sql)?;
    for (i, message) in messages.iter().enumerate() {
        let seq = i64::try_from(from + i).unwrap_or(i64::MAX);
        insert
            .execute(params![run_id, generation, seq, message])
            .map_err(sql)?;
    }
    Ok(())
}

/// The row of a save: the record without its history, and the history.
struct Saved {
    run_id: String,
    owner: String,
    status: &'static str,
    head: String,
    updated: i64,
    history: History,
}

/// Writes a save in one transaction: the row (fenced by the lease), then the new
/// messages (`Append`, when the row still holds what this process persisted) or all
/// of them under the next generation. Returns the generation written.
fn write_save(conn: &mut Connection, saved: &Saved, plan: HistoryWrite) -> StoreResult<i64> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql)?;
    let now = to_i64(now_ms());
    let len = to_i64(saved.history.len() as u64);
    if let HistoryWrite::Append { from, generation } = plan {
        let n = tx
            .execute(
                "UPDATE iris_runs SET status = ?1, record = ?2, updated_at_ms = ?3, history_len = ?4
                 WHERE run_id = ?5 AND lease_owner = ?6 AND lease_expires_at_ms > ?7
                    AND history_len = ?8 AND history_generation = ?9",
                params![
                    saved.status,
                    saved.head,
                    saved.updated,
                    len,
                    saved.run_id,
                    saved.owner,
                    now,
                    to_i64(from as u64),
                    generation
                ],
            )
            .map_err(sql)?;
        if n == 1 {
            let messages = encode_messages(&saved.history, from)?;
            insert_messages(&tx, &saved.run_id, generation, from, &messages)?;
            tx.commit().map_err(sql)?;
            return Ok(generation);
        }
    }
    let n = tx
        .execute(
            "UPDATE iris_runs SET status = ?1, record = ?2, updated_at_ms = ?3, history_len = ?4,
                history_generation = history_generation + 1
             WHERE run_id = ?5 AND lease_owner = ?6 AND lease_expires_at_ms > ?7",
            params![
                saved.status,
                saved.head,
                saved.updated,
                len,
                saved.run_id,
                saved.owner,
                now
            ],
        )
        .map_err(sql)?;
    if n != 1 {
        let lost = StoreError::LeaseLost {
            run_id: saved.run_id.clone(),
        };
        return Err(missing_or(&tx, &saved.run_id, lost));
    }
    let generation: i64 = tx
        .query_row(
            "SELECT history_generation FROM iris_runs WHERE run_id = ?1",
            [&saved.run_id],
            |r| r.get(0),
        )
        .map_err(sql)?;
    tx.execute(
        "DELETE FROM iris_messages WHERE run_id = ?1 AND generation <> ?2",
        params![saved.run_id, generation],
    )
    .map_err(sql)?;
    let messages = encode_messages(&saved.history, 0)?;
    insert_messages(&tx, &saved.run_id, generation, 0, &messages)?;
    tx.commit().map_err(sql)?;
    Ok(generation)
}

/// A run's record with its history, read in one transaction; the flag says whether
/// the history came from the message rows, with their generation.
fn read_run(conn: &mut Connection, run_id: &str) -> StoreResult<Option<(RunRecord, Option<i64>)>> {
    let tx = conn.transaction().map_err(sql)?;
    let row: Option<(String, i64, i64)> = tx
        .query_row(
            "SELECT record, history_len, history_generation FROM iris_runs WHERE run_id = ?1",
            [run_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()
        .map_err(sql)?;
    let Some((head, len, generation)) = row else {
        return Ok(None);
    };
    let mut messages = Vec::new();
    if len > 0 {
        let mut stmt = tx
            .prepare_cached(
                "SELECT message FROM iris_messages WHERE run_id = ?1 AND generation = ?2
                    AND seq < ?3 ORDER BY seq",
            )
            .map_err(sql)?;
        let rows = stmt
            .query_map(params![run_id, generation, len], |r| r.get::<_, String>(0))
            .map_err(sql)?;
        for row in rows {
            messages.push(row.map_err(sql)?);
        }
    }
    let (record, in_rows) = decode_record(&head, &messages)?;
    if in_rows && to_i64(record.history.len() as u64) != len {
        return Err(StoreError::failed(format!(
            "run `{run_id}` has {} of its {len} messages",
            record.history.len()
        )));
    }
    Ok(Some((record, in_rows.then_some(generation))))
}

impl RunStore for SqliteRunStore {
    fn describe(&self) -> String {
        format!("sqlite {}", self.path.display())
    }

    fn create<'a>(
        &'a self,
        record: &'a RunRecord,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let encoded = encode_head(record);
        let (run_id, status, agent) = (
            record.run_id.clone(),
            record.status.as_str(),
            record.agent_id.clone(),
        );
        let (created, updated) = (to_i64(record.created_at_ms), to_i64(record.updated_at_ms));
        let owner = owner.to_owned();
        let until = to_i64(now_ms().saturating_add(ttl_ms(ttl)));
        let history = record.history.clone();
        let persisted = Arc::clone(&self.persisted);
        self.with(move |conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(sql)?;
            tx.execute(
                "INSERT INTO iris_runs (run_id, status, agent_id, created_at_ms, updated_at_ms,
                    record, lease_owner, lease_expires_at_ms, history_len, history_generation)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 0)",
                params![
                    run_id,
                    status,
                    agent,
                    created,
                    updated,
                    encoded?,
                    owner,
                    until,
                    to_i64(history.len() as u64)
                ],
            )
            .map_err(sql)?;
            insert_messages(&tx, &run_id, 0, 0, &encode_messages(&history, 0)?)?;
            tx.commit().map_err(sql)?;
            persisted.created(
                &run_id,
                Persisted {
                    generation: 0,
                    history,
                },
            );
            Ok(())
        })
    }

    fn save<'a>(&'a self, record: &'a RunRecord, owner: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let run_id = record.run_id.as_str();
            let plan = self.persisted.plan(run_id, &record.history);
            let saved = Saved {
                run_id: run_id.to_owned(),
                owner: owner.to_owned(),
                status: record.status.as_str(),
                head: encode_head(record)?,
                updated: to_i64(record.updated_at_ms),
                history: record.history.clone(),
            };
            let history = record.history.clone();
            match self.with(move |conn| write_save(conn, &saved, plan)).await {
                Ok(generation) => {
                    self.persisted.wrote(
                        run_id,
                        Persisted {
                            generation,
                            history,
                        },
                    );
                    Ok(())
                }
                Err(e) => {
                    match e {
                        StoreError::Failed { .. } => self.persisted.unknown(run_id),
                        _ => self.persisted.forget(run_id),
                    }
                    Err(e)
                }
            }
        })
    }

    fn load<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, StoreResult<Option<RunRecord>>> {
        Box::pin(async move {
            let id = run_id.to_owned();
            let Some((record, generation)) = self.with(move |conn| read_run(conn, &id)).await?
            else {
                return Ok(None);
            };
            match generation {
                Some(generation) => self.persisted.wrote(
                    run_id,
                    Persisted {
                        generation,
                        history: record.history.clone(),
                    },
                ),
                None => self.persisted.unknown(run_id),
            }
            Ok(Some(record))
        })
    }

    fn list<'a>(
        &'a self,
        status: Option<RunStatus>,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<RunSummary>>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with(move |conn| {
            let mut stmt = conn
                .prepare(
                    "SELECT record FROM iris_runs WHERE (?1 IS NULL OR status = ?1)
                     ORDER BY updated_at_ms DESC, run_id DESC LIMIT ?2",
                )
                .map_err(sql)?;
            let rows = stmt
                .query_map(params![status.map(RunStatus::as_str), limit], |r| {
                    r.get::<_, String>(0)
                })
                .map_err(sql)?;
            let mut out = Vec::new();
            for row in rows {
                let record: RunRecord = decode(&row.map_err(sql)?, "run record")?;
                out.push(RunSummary::of(&record));
            }
            Ok(out)
        })
    }

    fn acquire<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            self.lease(run_id, owner, ttl, LeaseMode::Take).await?;
            self.persisted.held(run_id);
            Ok(())
        })
    }

    fn renew<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let renewed = self.lease(run_id, owner, ttl, LeaseMode::Renew).await;
            if let Err(StoreError::LeaseLost { .. }) = &renewed {
                self.persisted.forget(run_id);
            }
            renewed
        })
    }

    fn release<'a>(&'a self, run_id: &'a str, owner: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        self.persisted.forget(run_id);
        let (run_id, owner) = (run_id.to_owned(), owner.to_owned());
        self.with(move |conn| {
            conn.execute(
                "UPDATE iris_runs SET lease_owner = NULL, lease_expires_at_ms = NULL
                 WHERE run_id = ?1 AND lease_owner = ?2",
                params![run_id, owner],
            )
            .map_err(sql)?;
            Ok(())
        })
    }

    fn journal<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        entry: &'a JournalEntry,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let result = entry.result.as_ref().map(encode).transpose();
        let (run_id, owner) = (run_id.to_owned(), owner.to_owned());
        let (turn, index) = (
            i64::from(entry.turn),
            i64::try_from(entry.index).unwrap_or(0),
        );
        let (call_id, tool, state) = (
            entry.call_id.clone(),
            entry.tool_name.clone(),
            entry.state.as_str(),
        );
        self.with(move |conn| {
            let n = conn
                .execute(
                    "INSERT INTO iris_journal (run_id, turn, call_id, seq, tool_name, state, result)
                     SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE EXISTS (
                        SELECT 1 FROM iris_runs WHERE run_id = ?1 AND lease_owner = ?8
                            AND lease_expires_at_ms > ?9)
                     ON CONFLICT (run_id, turn, call_id)
                     DO UPDATE SET state = excluded.state, result = excluded.result",
                    params![
                        run_id,
                        turn,
                        call_id,
                        index,
                        tool,
                        state,
                        result?,
                        owner,
                        to_i64(now_ms())
                    ],
                )
                .map_err(sql)?;
            if n == 1 {
                Ok(())
            } else {
                Err(missing_or(
                    conn,
                    &run_id,
                    StoreError::LeaseLost {
                        run_id: run_id.clone(),
                    },
                ))
            }
        })
    }

    fn journal_of<'a>(
        &'a self,
        run_id: &'a str,
        turn: u32,
    ) -> BoxFuture<'a, StoreResult<Vec<JournalEntry>>> {
        let run_id = run_id.to_owned();
        self.with(move |conn| {
            let mut stmt = conn
                .prepare(
                    "SELECT seq, call_id, tool_name, state, result FROM iris_journal
                     WHERE run_id = ?1 AND turn = ?2 ORDER BY seq",
                )
                .map_err(sql)?;
            let rows = stmt
                .query_map(params![run_id, i64::from(turn)], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, Option<String>>(4)?,
                    ))
                })
                .map_err(sql)?;
            let mut out = Vec::new();
            for row in rows {
                let (seq, call_id, tool_name, state, result) = row.map_err(sql)?;
                out.push(super::journal_row(
                    turn, seq, call_id, tool_name, &state, result,
                )?);
            }
            Ok(out)
        })
    }

    fn list_page<'a>(&'a self, query: &'a RunQuery) -> BoxFuture<'a, StoreResult<RunPage>> {
        let limit = query.limit.max(1);
        let status = query.status.map(RunStatus::as_str);
        let agent = query.agent_id.clone();
        let (after_ms, after_id) = match &query.after {
            Some(c) => (Some(to_i64(c.created_at_ms)), Some(c.run_id.clone())),
            None => (None, None),
        };
        self.with(move |conn| {
            let mut stmt = conn
                .prepare(
                    "SELECT record FROM iris_runs WHERE (?1 IS NULL OR status = ?1)
                        AND (?2 IS NULL OR agent_id = ?2)
                        AND (?3 IS NULL OR created_at_ms < ?3
                             OR (created_at_ms = ?3 AND run_id < ?4))
                     ORDER BY created_at_ms DESC, run_id DESC LIMIT ?5",
                )
                .map_err(sql)?;
            let rows = stmt
                .query_map(
                    params![status, agent, after_ms, after_id, to_i64(limit as u64 + 1)],
                    |r| r.get::<_, String>(0),
                )
                .map_err(sql)?;
            let mut out = Vec::new();
            for row in rows {
                let record: RunRecord = decode(&row.map_err(sql)?, "run record")?;
                out.push(RunSummary::of(&record));
            }
            Ok(RunPage::from_rows(out, limit))
        })
    }

    fn append_events<'a>(
        &'a self,
        run_id: &'a str,
        events: &'a [String],
    ) -> BoxFuture<'a, StoreResult<u64>> {
        let (id, events) = (run_id.to_owned(), events.to_vec());
        let any = !events.is_empty();
        Box::pin(async move {
            let last = self
                .with(move |conn| {
                    let tx = conn
                        .transaction_with_behavior(TransactionBehavior::Immediate)
                        .map_err(sql)?;
                    let mut last: i64 = tx
                        .query_row(
                            "SELECT COALESCE(MAX(seq), 0) FROM iris_events WHERE run_id = ?1",
                            [&id],
                            |r| r.get(0),
                        )
                        .map_err(sql)?;
                    let at = to_i64(now_ms());
                    {
                        let mut insert = tx
                            .prepare_cached(
                                "INSERT INTO iris_events (run_id, seq, at_ms, event)
                                 VALUES (?1, ?2, ?3, ?4)",
                            )
                            .map_err(sql)?;
                        for event in &events {
                            last += 1;
                            insert.execute(params![id, last, at, event]).map_err(sql)?;
                        }
                    }
                    tx.commit().map_err(sql)?;
                    Ok(to_u64(last))
                })
                .await?;
            if any {
                self.notifier.notify(run_id);
            }
            Ok(last)
        })
    }

    fn events_after<'a>(
        &'a self,
        run_id: &'a str,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<StoredEvent>>> {
        let id = run_id.to_owned();
        let limit = to_i64(limit.min(MAX_EVENTS_PER_READ) as u64);
        self.with(move |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT seq, at_ms, event FROM iris_events WHERE run_id = ?1 AND seq > ?2
                     ORDER BY seq LIMIT ?3",
                )
                .map_err(sql)?;
            let rows = stmt
                .query_map(params![id, to_i64(after), limit], |r| {
                    Ok(StoredEvent {
                        seq: to_u64(r.get(0)?),
                        at_ms: to_u64(r.get(1)?),
                        event: r.get(2)?,
                    })
                })
                .map_err(sql)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(sql)
        })
    }

    fn event_wakeups(&self) -> EventWakeups {
        self.notifier.subscribe()
    }
}
