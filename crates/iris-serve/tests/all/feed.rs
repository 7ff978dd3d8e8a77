//! `GET /v1/events`: the runs feed — a run started on another host appears, goes to
//! `waiting` and to `completed`; items are the list's items, masked.

use serde_json::json;

use crate::support::{FeedReader, Store, WRITE_SCRIPT, fresh_database, serve_in, yaml};

/// Two hosts on one PostgreSQL database: a feed open on A sees a run B started,
/// waiting, answered on B and completed; its last item is the run's item in
/// `GET /v1/runs`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_on_one_host_sees_the_runs_of_another() {
    let store = Store::Postgres(fresh_database().await);
    let dir = tempfile::tempdir().unwrap();
    let agents = [("default", yaml(WRITE_SCRIPT, ""))];
    let a = serve_in(Some(dir.path()), &agents, &store, |o| o).await;
    let b = serve_in(Some(dir.path()), &agents, &store, |o| o).await;
    let mut feed = FeedReader::open(&a).await;

    let run_id = b.start_run("default", "Say hi in a file").await;
    let items = feed.until(&run_id, "waiting").await;
    for item in &items {
        assert_eq!(item["agent"], "default", "{item}");
        assert_eq!(item["parent_run_id"], serde_json::Value::Null);
    }
    let waiting = items.last().unwrap();
    assert!(
        waiting["waiting_for"]
            .as_str()
            .unwrap()
            .contains("write_file"),
        "{waiting}"
    );
    let run = b.wait_for(&run_id, "waiting").await;
    let (status, body) = b
        .post(
            &format!("/v1/runs/{run_id}/answer"),
            &json!({"interaction_id": run["interaction"]["id"], "answer": "approve"}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let items = feed.until(&run_id, "completed").await;
    let completed = items.last().unwrap();
    assert_eq!(completed["turns"], 2, "{completed}");
    assert_eq!(completed["waiting_for"], serde_json::Value::Null);
    let (_, list) = a.get("/v1/runs").await;
    let listed = list["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run_id"] == json!(run_id))
        .unwrap();
    assert_eq!(completed, listed);
    drop(feed);
    a.shut_down().await;
    b.shut_down().await;
}

/// On SQLite (one host): a run waiting on a question that names a secret shows in the
/// feed masked, as the list shows it; the feed's stream ends when the server stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feed_items_are_masked_and_the_feed_ends_with_the_server() {
    let secret = env!("CARGO_MANIFEST_DIR");
    let script = format!(
        "  script:\n    - tool_calls: [{{name: ask_question, arguments: {{question: \"Deploy \
         {secret}?\"}}}}]\n    - {{expect_tool_results: 1, text: Deployed.}}\n"
    );
    let serving = serve_in(
        None,
        &[("default", yaml(&script, ""))],
        &Store::Sqlite,
        |o| o.secret_vars(["CARGO_MANIFEST_DIR".to_owned()]),
    )
    .await;
    let mut feed = FeedReader::open(&serving).await;
    let run_id = serving.start_run("default", "Deploy").await;
    let items = feed.until(&run_id, "waiting").await;
    let waiting = items.last().unwrap();
    let text = waiting.to_string();
    assert!(!text.contains(secret), "{text}");
    assert!(text.contains("<redacted>"), "{text}");
    serving.shut_down().await;
    while feed.next().await.is_some() {}
}
