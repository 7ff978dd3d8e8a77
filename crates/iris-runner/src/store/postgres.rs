//! [`PostgresRunStore`]: runs shared across processes and machines.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use iris_tools_core::BoxFuture;
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::{Client, Config, NoTls};

use super::events::{EVENTS_CHANNEL, Notifier};
use super::persisted::{HistoryWrite, Persisted, PersistedRuns};
use super::{
    EventWakeups, JournalEntry, LeaseMode, MAX_EVENTS_PER_READ, MIGRATIONS, RunPage, RunQuery,
    RunRecord, RunStatus, RunStore, RunSummary, StoreError, StoreResult, StoredEvent, decode,
    decode_record, encode, encode_head, encode_messages, now_ms, ttl_ms,
};

/// The advisory lock key that serializes schema migrations across processes.
const MIGRATION_LOCK: i64 = 0x1215_0017;

/// Runs in a PostgreSQL database (`run_store: {kind: postgres, url_env: …}`), so
/// processes on different machines share them; leases make exactly one of them drive
/// a run at a time.
///
/// TLS is not built in: the server must be on a loopback address or a Unix socket,
/// or the URL must say `sslmode=disable` to accept a plain-text connection to
/// another host knowingly (`RUN_STORE_FAILED` otherwise). The URL is never printed.
pub struct PostgresRunStore {
    config: Config,
    client: Mutex<Option<Arc<Client>>>,
    /// What this store persisted of the runs it drives (see `persisted.rs`).
    persisted: PersistedRuns,
    /// Wakes this process's event readers: on this store's appends, and on every
    /// process's through the `LISTEN` connection.
    notifier: Notifier,
    /// The task holding the `LISTEN` connection, started by the first reader.
    listener: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Drop for PostgresRunStore {
    fn drop(&mut self) {
        if let Some(task) = self
            .listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
    }
}

impl std::fmt::Debug for PostgresRunStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresRunStore").finish_non_exhaustive()
    }
}

fn pg(e: &tokio_postgres::Error) -> StoreError {
    // The error's Display names the failing part (connection refused, a SQL error)
    // and never the connection string.
    StoreError::failed(format!("postgres: {e}"))
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn is_local(host: &Host) -> bool {
    match host {
        Host::Unix(_) => true,
        Host::Tcp(name) => {
            let name = name.trim_start_matches('[').trim_end_matches(']');
            name.eq_ignore_ascii_case("localhost")
                || name
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
    }
}

impl PostgresRunStore {
    /// Takes or renews the lease of `run_id` for `owner` (see [`LeaseMode`]). One
    /// statement: the row lock it takes makes two racing processes see each other's
    /// lease, so exactly one of them gets it.
    fn lease<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        ttl: Duration,
        mode: LeaseMode,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let client = self.client().await?;
            let now = now_ms();
            let until = to_i64(now.saturating_add(ttl_ms(ttl)));
            let statement = match mode {
                LeaseMode::Take => {
                    "UPDATE iris_runs SET lease_owner = $1, lease_expires_at_ms = $2
                     WHERE run_id = $3 AND (lease_owner IS NULL OR lease_owner = $1
                        OR lease_expires_at_ms <= $4)"
                }
                LeaseMode::Renew => {
                    "UPDATE iris_runs SET lease_expires_at_ms = $2
                     WHERE run_id = $3 AND lease_owner = $1 AND lease_expires_at_ms > $4"
                }
            };
            let n = client
                .execute(statement, &[&owner, &until, &run_id, &to_i64(now)])
                .await
                .map_err(|e| pg(&e))?;
            if n == 1 {
                return Ok(());
            }
            let row = client
                .query_opt(
                    "SELECT lease_expires_at_ms FROM iris_runs WHERE run_id = $1",
                    &[&run_id],
                )
                .await
                .map_err(|e| pg(&e))?;
            let run_id = run_id.to_owned();
            match row {
                None => Err(StoreError::NotFound { run_id }),
                Some(row) => {
                    let until: Option<i64> = row.get(0);
                    let until = until.map(|u| u64::try_from(u).unwrap_or(0));
                    Err(mode.refused(run_id, until, now))
                }
            }
        })
    }

    /// Connects to the database at `url` (a `postgres://` URL or a key=value
    /// string) and applies the schema migrations.
    ///
    /// # Errors
    /// `RUN_STORE_FAILED` for an unparsable URL (its text is not quoted), a remote
    /// host without `sslmode=disable`, a refused connection or a failed migration.
    pub async fn connect(url: &str) -> StoreResult<Self> {
        let config: Config = url
            .parse()
            .map_err(|_| StoreError::failed("the PostgreSQL URL does not parse"))?;
        if config.get_hosts().iter().any(|h| !is_local(h))
            && config.get_ssl_mode() != SslMode::Disable
        {
            return Err(StoreError::failed(
                "the PostgreSQL server is not on a loopback address or a Unix socket, and \
                 TLS is not built in; add sslmode=disable to the URL to accept a plain-text \
                 connection",
            ));
        }
        let store = Self {
            config,
            client: Mutex::new(None),
            persisted: PersistedRuns::default(),
            notifier: Notifier::default(),
            listener: Mutex::new(None),
        };
        let client = store.client().await?;
        migrate(&client).await?;
        Ok(store)
    }

    /// The live client, reconnecting when the connection closed.
    async fn client(&self) -> StoreResult<Arc<Client>> {
        if let Some(client) = self
            .client
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .filter(|c| !c.is_closed())
        {
            return Ok(Arc::clone(client));
        }
        let (client, connection) = self.config.connect(NoTls).await.map_err(|e| pg(&e))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(error = %e, "the PostgreSQL run-store connection ended");
            }
        });
        let client = Arc::new(client);
        *self.client.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&client));
        Ok(client)
    }

    /// Writes a save: the new messages when the history only grew since what this
    /// process persisted (and the row still says so), else all of them under the next
    /// generation. Returns the generation written.
    async fn write_save(
        &self,
        record: &RunRecord,
        owner: &str,
        plan: HistoryWrite,
    ) -> StoreResult<i64> {
        let head = encode_head(record)?;
        let client = self.client().await?;
        let (status, updated) = (record.status.as_str(), to_i64(record.updated_at_ms));
        let len = to_i64(record.history.len() as u64);
        let now = to_i64(now_ms());
        if let HistoryWrite::Append { from, generation } = plan {
            let messages = encode_messages(&record.history, from)?;
            let row = client
                .query_opt(
                    SAVE_APPEND,
                    &[
                        &status,
                        &head,
                        &updated,
                        &len,
                        &record.run_id,
                        &owner,
                        &now,
                        &to_i64(from as u64),
                        &generation,
                        &seqs(from, messages.len()),
                        &messages,
                    ],
                )
                .await
                .map_err(|e| pg(&e))?;
            if let Some(row) = row {
                return Ok(row.get(0));
            }
        }
        let messages = encode_messages(&record.history, 0)?;
        let row = client
            .query_opt(
                SAVE_REWRITE,
                &[
                    &status,
                    &head,
                    &updated,
                    &len,
                    &record.run_id,
                    &owner,
                    &now,
                    &seqs(0, messages.len()),
                    &messages,
                ],
            )
            .await
            .map_err(|e| pg(&e))?;
        match row {
            Some(row) => Ok(row.get(0)),
            None => {
                let lost = StoreError::LeaseLost {
                    run_id: record.run_id.clone(),
                };
                Err(self.missing_or(&client, &record.run_id, lost).await)
            }
        }
    }

    /// Why an update matched no row: the run is missing, or the lease is not held.
    async fn missing_or(&self, client: &Client, run_id: &str, held: StoreError) -> StoreError {
        match client
            .query_opt("SELECT 1 FROM iris_runs WHERE run_id = $1", &[&run_id])
            .await
        {
            Ok(Some(_)) => held,
            Ok(None) => StoreError::NotFound {
                run_id: run_id.to_owned(),
            },
            Err(e) => pg(&e),
        }
    }
}

/// The messages' `seq` column values from `from` on, for `count` messages.
fn seqs(from: usize, count: usize) -> Vec<i64> {
    (from..from + count)
        .map(|s| i64::try_from(s).unwrap_or(i64::MAX))
        .collect()
}

/// A save whose history only grew: the row (fenced by the lease, and only while it
/// still holds `$8` messages of generation `$9`) and the new messages, in one
/// statement (the connection is shared, so no multi-statement transaction).
const SAVE_APPEND: &str = "WITH run AS (
        UPDATE iris_runs SET status = $1, record = $2, updated_at_ms = $3, history_len = $4
        WHERE run_id = $5 AND lease_owner = $6 AND lease_expires_at_ms > $7
            AND history_len = $8 AND history_generation = $9
        RETURNING run_id, history_generation
    ), added AS (
        INSERT INTO iris_messages (run_id, generation, seq, message)
        SELECT run.run_id, run.history_generation, m.seq, m.message
        FROM run, unnest($10::BIGINT[], $11::TEXT[]) AS m (seq, message)
        ON CONFLICT (run_id, generation, seq) DO UPDATE SET message = EXCLUDED.message
    )
    SELECT history_generation FROM run";

/// A save that writes the history whole under the next generation and deletes the
/// older generations' rows (different keys, so one statement does both).
const SAVE_REWRITE: &str = "WITH run AS (
        UPDATE iris_runs SET status = $1, record = $2, updated_at_ms = $3, history_len = $4,
            history_generation = history_generation + 1
        WHERE run_id = $5 AND lease_owner = $6 AND lease_expires_at_ms > $7
        RETURNING run_id, history_generation
    ), dropped AS (
        DELETE FROM iris_messages m USING run
        WHERE m.run_id = run.run_id AND m.generation <> run.history_generation
    ), added AS (
        INSERT INTO iris_messages (run_id, generation, seq, message)
        SELECT run.run_id, run.history_generation, m.seq, m.message
        FROM run, unnest($8::BIGINT[], $9::TEXT[]) AS m (seq, message)
    )
    SELECT history_generation FROM run";

/// Appends events numbered after the run's last one, in one statement; returns the
/// last number (the log's last when nothing is appended).
const APPEND_EVENTS: &str = "WITH base AS (
        SELECT COALESCE(MAX(seq), 0)::BIGINT AS last FROM iris_events WHERE run_id = $1
    ), added AS (
        INSERT INTO iris_events (run_id, seq, at_ms, event)
        SELECT $1, base.last + e.ord, $2, e.event
        FROM base, unnest($3::TEXT[]) WITH ORDINALITY AS e (event, ord)
        RETURNING seq
    )
    SELECT COALESCE((SELECT MAX(seq) FROM added), (SELECT last FROM base))::BIGINT";

/// Holds a `LISTEN` connection and hands each notification's run id to `notifier`;
/// connects again a second after the connection fails or ends. (Notifications sent
/// while it is down are lost: readers look again on a timer.)
async fn listen(config: Config, notifier: Notifier) {
    use tokio_postgres::AsyncMessage;
    loop {
        match config.connect(NoTls).await {
            Ok((client, mut connection)) => {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
                // The connection is driven here, so its notifications can be read.
                let driver = tokio::spawn(async move {
                    while let Some(Ok(message)) =
                        std::future::poll_fn(|cx| connection.poll_message(cx)).await
                    {
                        if let AsyncMessage::Notification(n) = message
                            && tx.send(n.payload().to_owned()).is_err()
                        {
                            return;
                        }
                    }
                });
                match client
                    .batch_execute(&format!("LISTEN {EVENTS_CHANNEL}"))
                    .await
                {
                    Ok(()) => {
                        while let Some(run_id) = rx.recv().await {
                            notifier.notify(&run_id);
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot LISTEN for run events");
                    }
                }
                driver.abort();
            }
            Err(e) => {
                tracing::warn!(error = %e, "the run-event LISTEN connection failed");
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

async fn migrate(client: &Client) -> StoreResult<()> {
    // One transaction under an advisory lock: two processes starting at once never
    // apply a step twice.
    client.batch_execute("BEGIN").await.map_err(|e| pg(&e))?;
    let result = async {
        client
            .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await?;
        client
            .batch_execute(
                "CREATE TABLE IF NOT EXISTS iris_schema_migrations (
                    version BIGINT PRIMARY KEY, applied_at_ms BIGINT NOT NULL)",
            )
            .await?;
        let current: i64 = client
            .query_one(
                "SELECT COALESCE(MAX(version), 0)::BIGINT FROM iris_schema_migrations",
                &[],
            )
            .await?
            .get(0);
        for (version, statement) in MIGRATIONS {
            if *version > current {
                client.batch_execute(statement).await?;
                client
                    .execute(
                        "INSERT INTO iris_schema_migrations (version, applied_at_ms) VALUES ($1, $2)",
                        &[version, &to_i64(now_ms())],
                    )
                    .await?;
            }
        }
        Ok::<(), tokio_postgres::Error>(())
    }
    .await;
    match result {
        Ok(()) => client.batch_execute("COMMIT").await.map_err(|e| pg(&e)),
        Err(e) => {
            let _ = client.batch_execute("ROLLBACK").await;
            Err(pg(&e))
        }
    }
}

impl RunStore for PostgresRunStore {
    fn describe(&self) -> String {
        "postgres".into()
    }

    fn create<'a>(
        &'a self,
        record: &'a RunRecord,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let encoded = encode_head(record)?;
            let messages = encode_messages(&record.history, 0)?;
            let client = self.client().await?;
            let until = to_i64(now_ms().saturating_add(ttl_ms(ttl)));
            client
                .execute(
                    "WITH run AS (
                        INSERT INTO iris_runs (run_id, status, agent_id, created_at_ms,
                            updated_at_ms, record, lease_owner, lease_expires_at_ms,
                            history_len, history_generation)
                        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 0)
                        RETURNING run_id
                    )
                    INSERT INTO iris_messages (run_id, generation, seq, message)
                    SELECT run.run_id, 0, m.seq, m.message
                    FROM run, unnest($10::BIGINT[], $11::TEXT[]) AS m (seq, message)",
                    &[
                        &record.run_id,
                        &record.status.as_str(),
                        &record.agent_id,
                        &to_i64(record.created_at_ms),
                        &to_i64(record.updated_at_ms),
                        &encoded,
                        &owner,
                        &until,
                        &to_i64(record.history.len() as u64),
                        &seqs(0, messages.len()),
                        &messages,
                    ],
                )
                .await
                .map_err(|e| pg(&e))?;
            self.persisted.created(
                &record.run_id,
                Persisted {
                    generation: 0,
                    history: record.history.clone(),
                },
            );
            Ok(())
        })
    }

    fn save<'a>(&'a self, record: &'a RunRecord, owner: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let run_id = record.run_id.as_str();
            let plan = self.persisted.plan(run_id, &record.history);
            match self.write_save(record, owner, plan).await {
                Ok(generation) => {
                    self.persisted.wrote(
                        run_id,
                        Persisted {
                            generation,
                            history: record.history.clone(),
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
            let client = self.client().await?;
            // One statement, so the row and its messages are one snapshot.
            let row = client
                .query_opt(
                    "SELECT r.record, r.history_len, r.history_generation,
                        ARRAY(SELECT m.message FROM iris_messages m
                              WHERE m.run_id = r.run_id AND m.generation = r.history_generation
                                AND m.seq < r.history_len
                              ORDER BY m.seq)
                     FROM iris_runs r WHERE r.run_id = $1",
                    &[&run_id],
                )
                .await
                .map_err(|e| pg(&e))?;
            let Some(row) = row else {
                return Ok(None);
            };
            let (len, generation): (i64, i64) = (row.get(1), row.get(2));
            let messages: Vec<String> = row.get(3);
            let (record, in_rows) = decode_record(row.get::<_, &str>(0), &messages)?;
            if in_rows {
                if to_i64(record.history.len() as u64) != len {
                    return Err(StoreError::failed(format!(
                        "run `{run_id}` has {} of its {len} messages",
                        record.history.len()
                    )));
                }
                self.persisted.wrote(
                    run_id,
                    Persisted {
                        generation,
                        history: record.history.clone(),
                    },
                );
            } else {
                self.persisted.unknown(run_id);
            }
            Ok(Some(record))
        })
    }

    fn list<'a>(
        &'a self,
        status: Option<RunStatus>,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<RunSummary>>> {
        Box::pin(async move {
            let client = self.client().await?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let status = status.map(RunStatus::as_str);
            let rows = client
                .query(
                    "SELECT record FROM iris_runs WHERE ($1::TEXT IS NULL OR status = $1)
                     ORDER BY updated_at_ms DESC, run_id DESC LIMIT $2",
                    &[&status, &limit],
                )
                .await
                .map_err(|e| pg(&e))?;
            rows.iter()
                .map(|r| {
                    let record: RunRecord = decode(r.get::<_, &str>(0), "run record")?;
                    Ok(RunSummary::of(&record))
                })
                .collect()
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
        Box::pin(async move {
            let client = self.client().await?;
            client
                .execute(
                    "UPDATE iris_runs SET lease_owner = NULL, lease_expires_at_ms = NULL
                     WHERE run_id = $1 AND lease_owner = $2",
                    &[&run_id, &owner],
                )
                .await
                .map_err(|e| pg(&e))?;
            Ok(())
        })
    }

    fn journal<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        entry: &'a JournalEntry,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let result = entry.result.as_ref().map(encode).transpose()?;
            let client = self.client().await?;
            let n = client
                .execute(
                    "INSERT INTO iris_journal (run_id, turn, call_id, seq, tool_name, state, result)
                     SELECT $1, $2, $3, $4, $5, $6, $7 WHERE EXISTS (
                        SELECT 1 FROM iris_runs WHERE run_id = $1 AND lease_owner = $8
                            AND lease_expires_at_ms > $9)
                     ON CONFLICT (run_id, turn, call_id)
                     DO UPDATE SET state = EXCLUDED.state, result = EXCLUDED.result",
                    &[
                        &run_id,
                        &i64::from(entry.turn),
                        &entry.call_id,
                        &i64::try_from(entry.index).unwrap_or(0),
                        &entry.tool_name,
                        &entry.state.as_str(),
                        &result,
                        &owner,
                        &to_i64(now_ms()),
                    ],
                )
                .await
                .map_err(|e| pg(&e))?;
            if n == 1 {
                Ok(())
            } else {
                let lost = StoreError::LeaseLost {
                    run_id: run_id.to_owned(),
                };
                Err(self.missing_or(&client, run_id, lost).await)
            }
        })
    }

    fn journal_of<'a>(
        &'a self,
        run_id: &'a str,
        turn: u32,
    ) -> BoxFuture<'a, StoreResult<Vec<JournalEntry>>> {
        Box::pin(async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT seq, call_id, tool_name, state, result FROM iris_journal
                     WHERE run_id = $1 AND turn = $2 ORDER BY seq",
                    &[&run_id, &i64::from(turn)],
                )
                .await
                .map_err(|e| pg(&e))?;
            rows.iter()
                .map(|r| {
                    super::journal_row(
                        turn,
                        r.get(0),
                        r.get(1),
                        r.get(2),
                        r.get::<_, &str>(3),
                        r.get(4),
                    )
                })
                .collect()
        })
    }

    fn list_page<'a>(&'a self, query: &'a RunQuery) -> BoxFuture<'a, StoreResult<RunPage>> {
        Box::pin(async move {
            let client = self.client().await?;
            let limit = query.limit.max(1);
            let status = query.status.map(RunStatus::as_str);
            let after_ms = query.after.as_ref().map(|c| to_i64(c.created_at_ms));
            let after_id = query.after.as_ref().map(|c| c.run_id.as_str());
            let rows = client
                .query(
                    "SELECT record FROM iris_runs WHERE ($1::TEXT IS NULL OR status = $1)
                        AND ($2::TEXT IS NULL OR agent_id = $2)
                        AND ($3::BIGINT IS NULL OR created_at_ms < $3
                             OR (created_at_ms = $3 AND run_id < $4::TEXT))
                     ORDER BY created_at_ms DESC, run_id DESC LIMIT $5",
                    &[
                        &status,
                        &query.agent_id,
                        &after_ms,
                        &after_id,
                        &to_i64(limit as u64 + 1),
                    ],
                )
                .await
                .map_err(|e| pg(&e))?;
            let runs = rows
                .iter()
                .map(|r| {
                    let record: RunRecord = decode(r.get::<_, &str>(0), "run record")?;
                    Ok(RunSummary::of(&record))
                })
                .collect::<StoreResult<Vec<_>>>()?;
            Ok(RunPage::from_rows(runs, limit))
        })
    }

    fn append_events<'a>(
        &'a self,
        run_id: &'a str,
        events: &'a [String],
    ) -> BoxFuture<'a, StoreResult<u64>> {
        Box::pin(async move {
            let client = self.client().await?;
            let mut attempt = 0;
            let last: i64 = loop {
                attempt += 1;
                match client
                    .query_one(APPEND_EVENTS, &[&run_id, &to_i64(now_ms()), &events])
                    .await
                {
                    Ok(row) => break row.get(0),
                    // Another process appended to the same run at the same moment:
                    // number after its events instead.
                    Err(e)
                        if attempt < 5
                            && e.code()
                                == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) => {}
                    Err(e) => return Err(pg(&e)),
                }
            };
            if !events.is_empty() {
                client
                    .execute("SELECT pg_notify($1, $2)", &[&EVENTS_CHANNEL, &run_id])
                    .await
                    .map_err(|e| pg(&e))?;
                self.notifier.notify(run_id);
            }
            Ok(u64::try_from(last).unwrap_or(0))
        })
    }

    fn events_after<'a>(
        &'a self,
        run_id: &'a str,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<StoredEvent>>> {
        Box::pin(async move {
            let client = self.client().await?;
            let limit = to_i64(limit.min(MAX_EVENTS_PER_READ) as u64);
            let rows = client
                .query(
                    "SELECT seq, at_ms, event FROM iris_events WHERE run_id = $1 AND seq > $2
                     ORDER BY seq LIMIT $3",
                    &[&run_id, &to_i64(after), &limit],
                )
                .await
                .map_err(|e| pg(&e))?;
            Ok(rows
                .iter()
                .map(|r| StoredEvent {
                    seq: u64::try_from(r.get::<_, i64>(0)).unwrap_or(0),
                    at_ms: u64::try_from(r.get::<_, i64>(1)).unwrap_or(0),
                    event: r.get(2),
                })
                .collect())
        })
    }

    fn event_wakeups(&self) -> EventWakeups {
        let wakeups = self.notifier.subscribe();
        let mut listener = self.listener.lock().unwrap_or_else(PoisonError::into_inner);
        if listener.is_none()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            *listener = Some(runtime.spawn(listen(self.config.clone(), self.notifier.clone())));
        }
        wakeups
    }
}
