//! How the durable stores write a run's history: one row per message, a turn's new
//! messages appended, a changed history written again under a new generation, and a
//! database of the previous release (history inside the record) opened and continued.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use iris_providers::chat::{History, Message};
use iris_runner::store::{RunStatus, RunStore};
use iris_runner::{MemoryRunStore, PostgresRunStore, SqliteRunStore};

use crate::durable::{fresh_database, record};

/// A SQL database the test also reads directly.
pub(crate) enum Db {
    Sqlite(tempfile::TempDir),
    Postgres(String),
}

/// What the rows of a run hold.
#[derive(Debug, PartialEq)]
struct Rows {
    history_len: i64,
    generation: i64,
    /// `(generation, seq)` of every message row of the run, ordered.
    messages: Vec<(i64, i64)>,
    /// Whether the `record` column holds the history itself.
    history_in_record: bool,
}

/// The schema of the previous release, exactly as it created it.
pub(crate) const PREVIOUS_RELEASE: &[&str] = &[
    "CREATE TABLE iris_schema_migrations (
        version BIGINT PRIMARY KEY, applied_at_ms BIGINT NOT NULL)",
    "CREATE TABLE iris_runs (
        run_id TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        created_at_ms BIGINT NOT NULL,
        updated_at_ms BIGINT NOT NULL,
        record TEXT NOT NULL,
        lease_owner TEXT,
        lease_expires_at_ms BIGINT
    )",
    "CREATE INDEX iris_runs_status ON iris_runs (status, updated_at_ms)",
    "CREATE TABLE iris_journal (
        run_id TEXT NOT NULL REFERENCES iris_runs (run_id) ON DELETE CASCADE,
        turn BIGINT NOT NULL,
        call_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        tool_name TEXT NOT NULL,
        state TEXT NOT NULL,
        result TEXT,
        PRIMARY KEY (run_id, turn, call_id)
    )",
    "INSERT INTO iris_schema_migrations (version, applied_at_ms) VALUES (1, 1), (2, 1), (3, 1)",
];

impl Db {
    pub(crate) async fn new(postgres: bool) -> Self {
        if postgres {
            Db::Postgres(fresh_database().await)
        } else {
            Db::Sqlite(tempfile::tempdir().unwrap())
        }
    }

    fn sqlite_path(dir: &tempfile::TempDir) -> PathBuf {
        dir.path().join("runs.db")
    }

    /// A store over the database, as another process would open it.
    pub(crate) async fn open(&self) -> Arc<dyn RunStore> {
        match self {
            Db::Sqlite(dir) => {
                Arc::new(SqliteRunStore::open(Self::sqlite_path(dir)).await.unwrap())
            }
            Db::Postgres(url) => Arc::new(PostgresRunStore::connect(url).await.unwrap()),
        }
    }

    /// Runs statements directly (no store involved).
    pub(crate) async fn execute(&self, statements: &[&str]) {
        match self {
            Db::Sqlite(dir) => {
                let conn = rusqlite::Connection::open(Self::sqlite_path(dir)).unwrap();
                for statement in statements {
                    conn.execute(statement, []).unwrap();
                }
            }
            Db::Postgres(url) => {
                let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                    .await
                    .unwrap();
                tokio::spawn(conn);
                for statement in statements {
                    client.batch_execute(statement).await.unwrap();
                }
            }
        }
    }

    async fn rows(&self, run_id: &str) -> Rows {
        let run = "SELECT history_len, history_generation, record FROM iris_runs WHERE run_id = $1";
        let messages = "SELECT generation, seq FROM iris_messages WHERE run_id = $1
                        ORDER BY generation, seq";
        let (history_len, generation, record, messages) = match self {
            Db::Sqlite(dir) => {
                let conn = rusqlite::Connection::open(Self::sqlite_path(dir)).unwrap();
                let (len, generation, record): (i64, i64, String) = conn
                    .query_row(&run.replace('$', "?"), [run_id], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                    })
                    .unwrap();
                let mut stmt = conn.prepare(&messages.replace('$', "?")).unwrap();
                let rows = stmt
                    .query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?)))
                    .unwrap()
                    .collect::<Result<Vec<(i64, i64)>, _>>()
                    .unwrap();
                (len, generation, record, rows)
            }
            Db::Postgres(url) => {
                let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                    .await
                    .unwrap();
                tokio::spawn(conn);
                let row = client.query_one(run, &[&run_id]).await.unwrap();
                let rows = client
                    .query(messages, &[&run_id])
                    .await
                    .unwrap()
                    .iter()
                    .map(|r| (r.get(0), r.get(1)))
                    .collect();
                (row.get(0), row.get(1), row.get::<_, String>(2), rows)
            }
        };
        let record: serde_json::Value = serde_json::from_str(&record).unwrap();
        Rows {
            history_len,
            generation,
            messages,
            history_in_record: record["history"].as_array().is_some_and(|h| !h.is_empty()),
        }
    }
}

fn messages(generation: i64, count: i64) -> Vec<(i64, i64)> {
    (0..count).map(|seq| (generation, seq)).collect()
}

/// A save appends the turn's messages (the generation stays); a history changed in
/// place is written again whole under the next generation, the old rows gone; a row
/// another process moved on meanwhile is never appended to.
async fn a_save_appends_a_turn_and_rewrites_a_changed_history(postgres: bool) {
    let db = Db::new(postgres).await;
    let (a, b) = (db.open().await, db.open().await);
    let ttl = Duration::from_millis(300);
    let mut run = record("run_h", RunStatus::Running);
    run.history.push(Message::user("go"));
    a.create(&run, "owner-a", ttl).await.unwrap();
    assert_eq!(
        db.rows("run_h").await,
        Rows {
            history_len: 1,
            generation: 0,
            messages: messages(0, 1),
            history_in_record: false
        }
    );

    run.history.push(Message::assistant("calling"));
    run.history.push(Message::user("result"));
    a.save(&run, "owner-a").await.unwrap();
    let rows = db.rows("run_h").await;
    assert_eq!((rows.history_len, rows.generation), (3, 0), "appended");
    assert_eq!(rows.messages, messages(0, 3));
    assert!(!rows.history_in_record);
    assert_eq!(b.load("run_h").await.unwrap().unwrap().history, run.history);

    // Changed, not grown: written again under the next generation.
    run.history.set(1, Message::assistant("called"));
    a.save(&run, "owner-a").await.unwrap();
    let rows = db.rows("run_h").await;
    assert_eq!((rows.history_len, rows.generation), (3, 1));
    assert_eq!(rows.messages, messages(1, 3));
    assert_eq!(b.load("run_h").await.unwrap().unwrap().history, run.history);

    // `a`'s lease lapses; `b` takes the run over and appends a message.
    tokio::time::sleep(Duration::from_millis(400)).await;
    b.acquire("run_h", "owner-b", ttl).await.unwrap();
    let mut taken = b.load("run_h").await.unwrap().unwrap();
    taken.history.push(Message::assistant("from b"));
    b.save(&taken, "owner-b").await.unwrap();
    let rows = db.rows("run_h").await;
    assert_eq!((rows.history_len, rows.generation), (4, 1), "appended by b");
    b.release("run_h", "owner-b").await.unwrap();

    // `a` takes it back and saves its own history (which b's message is not part
    // of): its append would land after a row that moved on, so it is written whole.
    a.acquire("run_h", "owner-a", ttl).await.unwrap();
    run.history.push(Message::assistant("from a"));
    a.save(&run, "owner-a").await.unwrap();
    let rows = db.rows("run_h").await;
    assert_eq!((rows.history_len, rows.generation), (4, 2));
    assert_eq!(rows.messages, messages(2, 4));
    let loaded = db.open().await.load("run_h").await.unwrap().unwrap();
    assert_eq!(loaded.history, run.history);
    assert_eq!(loaded.history[3].text(), "from a");
}

/// A database the previous release made (its schema, a waiting run with the history
/// inside the record, a journal row) opens; the run loads, lists and continues, and
/// its next save moves the history into message rows.
async fn a_database_of_the_previous_release_opens_and_its_runs_go_on(postgres: bool) {
    let db = Db::new(postgres).await;
    let mut old = record("run_old", RunStatus::Waiting);
    old.history = History::from(vec![
        Message::user("ship it"),
        Message::assistant("deploying"),
        Message::user("ok"),
    ]);
    let encoded = serde_json::to_string(&old).unwrap().replace('\'', "''");
    let insert = format!(
        "INSERT INTO iris_runs (run_id, status, agent_id, created_at_ms, updated_at_ms, record)
         VALUES ('run_old', 'waiting', 'agent', 1, 1, '{encoded}')"
    );
    let journal = "INSERT INTO iris_journal (run_id, turn, call_id, seq, tool_name, state)
                   VALUES ('run_old', 1, 'c1', 0, 'deploy', 'planned')";
    let mut statements = PREVIOUS_RELEASE.to_vec();
    statements.push(&insert);
    statements.push(journal);
    db.execute(&statements).await;

    let store = db.open().await;
    let loaded = store.load("run_old").await.unwrap().unwrap();
    assert_eq!(loaded, old);
    let listed = store.list(Some(RunStatus::Waiting), 10).await.unwrap();
    assert_eq!(listed[0].run_id, "run_old");
    assert_eq!(
        store.journal_of("run_old", 1).await.unwrap()[0].call_id,
        "c1"
    );
    assert_eq!(
        db.rows("run_old").await,
        Rows {
            history_len: 0,
            generation: 0,
            messages: Vec::new(),
            history_in_record: true
        }
    );

    let ttl = Duration::from_secs(30);
    store.acquire("run_old", "owner", ttl).await.unwrap();
    let mut run = store.load("run_old").await.unwrap().unwrap();
    run.status = RunStatus::Running;
    run.history.push(Message::assistant("deployed"));
    store.save(&run, "owner").await.unwrap();
    let rows = db.rows("run_old").await;
    assert_eq!(rows.history_len, 4);
    assert_eq!(rows.messages, messages(1, 4));
    assert!(
        !rows.history_in_record,
        "the history moved out of the record"
    );
    // From then on a turn appends.
    run.history.push(Message::user("thanks"));
    store.save(&run, "owner").await.unwrap();
    assert_eq!(db.rows("run_old").await.messages, messages(1, 5));
    assert_eq!(db.open().await.load("run_old").await.unwrap().unwrap(), run);
    // Opening it again applies nothing twice.
    db.open().await;
}

/// The memory store keeps the very messages the run holds: nothing is copied.
#[tokio::test]
async fn the_memory_store_shares_the_messages() {
    let store = MemoryRunStore::new();
    let mut run = record("run_m", RunStatus::Running);
    run.history.push(Message::user("go"));
    store
        .create(&run, "owner", Duration::from_secs(30))
        .await
        .unwrap();
    run.history.push(Message::assistant("done"));
    store.save(&run, "owner").await.unwrap();
    let loaded = store.load("run_m").await.unwrap().unwrap();
    assert!(run.history.is_prefix_of(&loaded.history));
    assert!(loaded.history.is_prefix_of(&run.history));
}

macro_rules! on_sql_stores {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() { super::$name(false).await }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() { super::$name(true).await }
            )*
        }
    };
}

on_sql_stores!(
    a_save_appends_a_turn_and_rewrites_a_changed_history,
    a_database_of_the_previous_release_opens_and_its_runs_go_on,
);
