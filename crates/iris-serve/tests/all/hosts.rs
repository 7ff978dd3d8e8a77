//! Several hosts on one store: a run started on one host is answered on another and
//! driven once; a stopped host leaves its runs for the next.

use serde_json::json;

use crate::support::{EventReader, Store, WRITE_SCRIPT, fresh_database, serve_in, types, yaml};

/// Two servers on one PostgreSQL database (one folder, so one workspace): started on
/// A, answered on B; A's open event stream gets B's events; a client that moves from
/// A to B with `Last-Event-ID` misses nothing; the call ran once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_started_on_one_host_is_answered_on_another() {
    let store = Store::Postgres(fresh_database().await);
    let dir = tempfile::tempdir().unwrap();
    let agents = [("default", yaml(WRITE_SCRIPT, ""))];
    let a = serve_in(Some(dir.path()), &agents, &store, |o| o).await;
    let b = serve_in(Some(dir.path()), &agents, &store, |o| o).await;

    let run_id = a.start_run("default", "Say hi in a file").await;
    let run = b.wait_for(&run_id, "waiting").await;
    let interaction = run["interaction"]["id"].as_str().unwrap().to_owned();
    let mut on_a = EventReader::open(&a, &run_id, None).await;
    let mut seen = Vec::new();
    while let Some(event) = on_a.next().await {
        let waiting = event.data["type"] == "finished";
        seen.push(event);
        if waiting {
            break;
        }
    }
    let (status, body) = b
        .post(
            &format!("/v1/runs/{run_id}/answer"),
            &json!({"interaction_id": interaction, "answer": "approve"}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    // A's stream sees the first event B appends, then the client moves to B.
    seen.push(on_a.next().await.unwrap());
    drop(on_a);
    let last = seen.last().unwrap().id;
    seen.extend(
        EventReader::open(&b, &run_id, Some(last))
            .await
            .rest()
            .await,
    );
    let ids: Vec<u64> = seen.iter().map(|e| e.id).collect();
    assert_eq!(
        ids,
        (1..=seen.len() as u64).collect::<Vec<_>>(),
        "{:?}",
        types(&seen)
    );
    assert_eq!(seen.last().unwrap().data["outcome"]["status"], "completed");
    let calls = types(&seen)
        .iter()
        .filter(|t| *t == "tool_call_finished")
        .count();
    assert_eq!(calls, 1);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("hello.txt")).unwrap(),
        "hi\n"
    );
    let run = a.wait_for(&run_id, "completed").await;
    assert_eq!(run["output"], "Wrote hello.txt.");
    a.shut_down().await;
    b.shut_down().await;
}

/// A server that stops leaves a waiting run waiting (not cancelled); the next server
/// on the same store answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_leaves_its_runs_resumable() {
    let dir = tempfile::tempdir().unwrap();
    let agents = [("default", yaml(WRITE_SCRIPT, ""))];
    let first = serve_in(Some(dir.path()), &agents, &Store::Sqlite, |o| o).await;
    let run_id = first.start_run("default", "Say hi in a file").await;
    let run = first.wait_for(&run_id, "waiting").await;
    let interaction = run["interaction"]["id"].as_str().unwrap().to_owned();
    let given_up = first.shut_down().await;
    assert!(
        given_up.is_empty(),
        "a waiting run holds no lease: {given_up:?}"
    );

    let second = serve_in(Some(dir.path()), &agents, &Store::Sqlite, |o| o).await;
    second.wait_for(&run_id, "waiting").await;
    let (status, body) = second
        .post(
            &format!("/v1/runs/{run_id}/answer"),
            &json!({"interaction_id": interaction, "answer": "approve"}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    second.wait_for(&run_id, "completed").await;
    second.shut_down().await;
}
