//! [`PostgresRunStore`]: runs shared across processes and machines.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use iris_tools_core::BoxFuture;
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::{Client, Config, NoTls};

use super::{
    JournalEntry, LeaseMode, MIGRATIONS, RunRecord, RunStatus, RunStore, RunSummary, StoreError,
    StoreResult, decode, encode, now_ms, ttl_ms,
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
            let encoded = encode(record)?;
            let client = self.client().await?;
            let until = to_i64(now_ms().saturating_add(ttl_ms(ttl)));
            client
                .execute(
                    "INSERT INTO iris_runs (run_id, status, agent_id, created_at_ms,
                        updated_at_ms, record, lease_owner, lease_expires_at_ms)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                    &[
                        &record.run_id,
                        &record.status.as_str(),
                        &record.agent_id,
                        &to_i64(record.created_at_ms),
                        &to_i64(record.updated_at_ms),
                        &encoded,
                        &owner,
                        &until,
                    ],
                )
                .await
                .map_err(|e| pg(&e))?;
            Ok(())
        })
    }

    fn save<'a>(&'a self, record: &'a RunRecord, owner: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let encoded = encode(record)?;
            let client = self.client().await?;
            let n = client
                .execute(
                    "UPDATE iris_runs SET status = $1, record = $2, updated_at_ms = $3
                     WHERE run_id = $4 AND lease_owner = $5 AND lease_expires_at_ms > $6",
                    &[
                        &record.status.as_str(),
                        &encoded,
                        &to_i64(record.updated_at_ms),
                        &record.run_id,
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
                    run_id: record.run_id.clone(),
                };
                Err(self.missing_or(&client, &record.run_id, lost).await)
            }
        })
    }

    fn load<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, StoreResult<Option<RunRecord>>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_opt("SELECT record FROM iris_runs WHERE run_id = $1", &[&run_id])
                .await
                .map_err(|e| pg(&e))?;
            row.map(|r| decode(r.get::<_, &str>(0), "run record"))
                .transpose()
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
        self.lease(run_id, owner, ttl, LeaseMode::Take)
    }

    fn renew<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.lease(run_id, owner, ttl, LeaseMode::Renew)
    }

    fn release<'a>(&'a self, run_id: &'a str, owner: &'a str) -> BoxFuture<'a, StoreResult<()>> {
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
}
