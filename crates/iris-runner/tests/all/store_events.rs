//! What the stores keep for `iris serve`: a run's event log (numbered from 1, read
//! from any number on, continued by another handle or process), new-event wakeups
//! (across processes on PostgreSQL), pages of runs newest first, and the tables added
//! to a database of an earlier release.

use std::sync::Arc;
use std::time::Duration;

use iris_runner::MemoryRunStore;
use iris_runner::store::{RunCursor, RunQuery, RunStatus, RunStore};

use crate::durable::record;
use crate::store_history::{Db, PREVIOUS_RELEASE};

fn texts(n: std::ops::RangeInclusive<u32>) -> Vec<String> {
    n.map(|i| format!("{{\"type\":\"e{i}\"}}")).collect()
}

/// Appends number from 1 per run; a read starts after any number and stops at its
/// limit; a second handle continues the numbering.
async fn the_event_log_numbers_and_reads(a: Arc<dyn RunStore>, b: Arc<dyn RunStore>) {
    assert_eq!(a.append_events("run_e", &[]).await.unwrap(), 0);
    assert_eq!(a.append_events("run_e", &texts(1..=3)).await.unwrap(), 3);
    assert_eq!(
        a.append_events("run_other", &texts(1..=1)).await.unwrap(),
        1
    );
    assert_eq!(b.append_events("run_e", &texts(4..=5)).await.unwrap(), 5);
    assert_eq!(a.append_events("run_e", &[]).await.unwrap(), 5);
    let after = a.events_after("run_e", 1, 3).await.unwrap();
    let seqs: Vec<u64> = after.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [2, 3, 4]);
    assert_eq!(after[2].event, "{\"type\":\"e4\"}");
    assert!(after[0].at_ms > 0);
    assert!(b.events_after("run_e", 5, 10).await.unwrap().is_empty());
    assert!(b.events_after("run_none", 0, 10).await.unwrap().is_empty());
}

/// A reader is woken by an append through another handle (on PostgreSQL another
/// connection, as another process would be). The writer appends until the reader
/// wakes: on PostgreSQL the `LISTEN` connection starts with the first reader, and an
/// append before it listens wakes nobody elsewhere.
async fn an_append_wakes_a_reader(reader: Arc<dyn RunStore>, writer: Arc<dyn RunStore>) {
    let mut wakeups = reader.event_wakeups();
    let mut waiting = tokio::spawn(async move {
        wakeups.wait_for("run_w").await;
    });
    writer
        .append_events("run_unrelated", &texts(1..=1))
        .await
        .unwrap();
    for _ in 0..300 {
        writer.append_events("run_w", &texts(1..=1)).await.unwrap();
        if tokio::time::timeout(Duration::from_millis(100), &mut waiting)
            .await
            .is_ok()
        {
            return;
        }
    }
    panic!("the reader never woke");
}

/// Pages newest first by creation time, filtered by status and agent, continued by
/// a cursor.
async fn runs_are_paged_newest_first(store: Arc<dyn RunStore>) {
    let ttl = Duration::from_secs(30);
    for (i, (status, agent)) in [
        (RunStatus::Completed, "a"),
        (RunStatus::Waiting, "a"),
        (RunStatus::Completed, "b"),
        (RunStatus::Completed, "a"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut run = record(&format!("run_{i}"), status);
        run.agent_id = agent.into();
        run.created_at_ms = 100 + i as u64;
        store.create(&run, "owner", ttl).await.unwrap();
    }
    let page = |status, agent: Option<&str>, after, limit| RunQuery {
        status,
        agent_id: agent.map(str::to_owned),
        after,
        limit,
    };
    let ids = |p: &iris_runner::store::RunPage| {
        p.runs.iter().map(|r| r.run_id.clone()).collect::<Vec<_>>()
    };
    let first = store.list_page(&page(None, None, None, 2)).await.unwrap();
    assert_eq!(ids(&first), ["run_3", "run_2"]);
    assert_eq!(first.runs[0].created_at_ms, 103);
    let cursor = first.next.clone().unwrap();
    assert_eq!(RunCursor::parse(&cursor.token()), Some(cursor.clone()));
    let second = store
        .list_page(&page(None, None, Some(cursor), 2))
        .await
        .unwrap();
    assert_eq!(ids(&second), ["run_1", "run_0"]);
    assert_eq!(second.next, None, "nothing after the last run");
    let done_a = store
        .list_page(&page(Some(RunStatus::Completed), Some("a"), None, 10))
        .await
        .unwrap();
    assert_eq!(ids(&done_a), ["run_3", "run_0"]);
    assert_eq!(done_a.next, None);
}

/// A database of an earlier release gets the event table and the index: its run
/// lists in pages and takes events.
async fn an_earlier_database_gets_the_new_tables(db: &Db) {
    let old = record("run_old", RunStatus::Waiting);
    let encoded = serde_json::to_string(&old).unwrap().replace('\'', "''");
    let insert = format!(
        "INSERT INTO iris_runs (run_id, status, agent_id, created_at_ms, updated_at_ms, record)
         VALUES ('run_old', 'waiting', 'agent', 1, 1, '{encoded}')"
    );
    let mut statements = PREVIOUS_RELEASE.to_vec();
    statements.push(&insert);
    db.execute(&statements).await;
    let store = db.open().await;
    let page = store
        .list_page(&RunQuery {
            limit: 5,
            ..RunQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(page.runs[0].run_id, "run_old");
    assert_eq!(
        store.append_events("run_old", &texts(1..=2)).await.unwrap(),
        2
    );
    assert_eq!(store.events_after("run_old", 0, 10).await.unwrap().len(), 2);
}

async fn on(postgres: bool) -> (Db, Arc<dyn RunStore>, Arc<dyn RunStore>) {
    let db = Db::new(postgres).await;
    let (a, b) = (db.open().await, db.open().await);
    (db, a, b)
}

#[tokio::test]
async fn memory_event_log_wakeups_and_pages() {
    let store: Arc<dyn RunStore> = Arc::new(MemoryRunStore::new());
    the_event_log_numbers_and_reads(Arc::clone(&store), Arc::clone(&store)).await;
    an_append_wakes_a_reader(Arc::clone(&store), Arc::clone(&store)).await;
    runs_are_paged_newest_first(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_event_log_wakeups_and_pages() {
    let (_db, a, b) = on(false).await;
    the_event_log_numbers_and_reads(Arc::clone(&a), b).await;
    // SQLite wakes the readers of its own handle.
    an_append_wakes_a_reader(Arc::clone(&a), Arc::clone(&a)).await;
    runs_are_paged_newest_first(a).await;
    an_earlier_database_gets_the_new_tables(&Db::new(false).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_event_log_wakeups_and_pages() {
    let (_db, a, b) = on(true).await;
    the_event_log_numbers_and_reads(Arc::clone(&a), Arc::clone(&b)).await;
    // Another connection's append reaches this one through LISTEN/NOTIFY.
    an_append_wakes_a_reader(Arc::clone(&a), b).await;
    runs_are_paged_newest_first(a).await;
    an_earlier_database_gets_the_new_tables(&Db::new(true).await).await;
}
