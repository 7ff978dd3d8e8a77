//! `GET /v1/runs/{id}/events`: a client that disconnects and reconnects with
//! `Last-Event-ID` gets every event exactly once; secrets never reach the log; a
//! cancelled waiting run's stream ends.

use serde_json::json;

use crate::support::{EventReader, SseEvent, Store, WRITE_SCRIPT, serve, serve_in, types, yaml};

/// Reads until a `finished` event (inclusive).
async fn until_finished(reader: &mut EventReader) -> Vec<SseEvent> {
    let mut seen = Vec::new();
    while let Some(event) = reader.next().await {
        let done = event.data["type"] == "finished";
        seen.push(event);
        if done {
            return seen;
        }
    }
    panic!("the stream ended before a finished event: {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_with_last_event_id_misses_nothing() {
    let serving = serve(&[("default", yaml(WRITE_SCRIPT, ""))], &Store::Sqlite).await;
    let run_id = serving.start_run("default", "Say hi in a file").await;
    // Live from the start until the run waits; then three events, and disconnect.
    let mut reader = EventReader::open(&serving, &run_id, None).await;
    let mut seen = until_finished(&mut reader).await;
    assert_eq!(seen.last().unwrap().data["outcome"]["status"], "waiting");
    let run = serving.wait_for(&run_id, "waiting").await;
    let interaction = run["interaction"]["id"].as_str().unwrap().to_owned();
    // Reconnect in the middle of what was already seen, then the run goes on while
    // the client is away.
    let resume_from = seen[2].id;
    seen.truncate(3);
    drop(reader);
    let (status, body) = serving
        .post(
            &format!("/v1/runs/{run_id}/answer"),
            &json!({"interaction_id": interaction, "answer": "approve"}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let mut again = EventReader::open(&serving, &run_id, Some(resume_from)).await;
    seen.extend(again.rest().await);
    // Every event once, in order, ending with the completed run.
    let ids: Vec<u64> = seen.iter().map(|e| e.id).collect();
    assert_eq!(
        ids,
        (1..=seen.len() as u64).collect::<Vec<_>>(),
        "{:?}",
        types(&seen)
    );
    let whole = EventReader::open(&serving, &run_id, None)
        .await
        .rest()
        .await;
    assert_eq!(seen, whole);
    let last = seen.last().unwrap();
    assert_eq!(last.data["type"], "finished");
    assert_eq!(last.data["outcome"]["status"], "completed");
    assert_eq!(last.data["outcome"]["output"], "Wrote hello.txt.");
    // The conversation is not repeated in the log.
    assert!(
        last.data["outcome"].get("history").is_none(),
        "{}",
        last.data
    );
    // After the end there is nothing more.
    let after_end = EventReader::open(&serving, &run_id, Some(last.id))
        .await
        .rest()
        .await;
    assert!(after_end.is_empty(), "{after_end:?}");
    serving.shut_down().await;
}

/// A secret value (here: a variable the server is told to keep secret) that the model
/// puts in a question never reaches the event log or the run's view.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_values_are_masked_in_events_and_views() {
    let secret = env!("CARGO_MANIFEST_DIR");
    let script = format!(
        "  script:\n    - text: Let me ask.\n      tool_calls: [{{name: ask_question, arguments: \
         {{question: \"Greeting for {secret}?\", options: [hi, hello]}}}}]\n    - \
         {{expect_tool_results: 1, text: Greeting chosen.}}\n"
    );
    let serving = serve_in(
        None,
        &[("default", yaml(&script, ""))],
        &Store::Sqlite,
        |o| o.secret_vars(["CARGO_MANIFEST_DIR".to_owned()]),
    )
    .await;
    let run_id = serving.start_run("default", "Greet").await;
    let run = serving.wait_for(&run_id, "waiting").await;
    assert_eq!(run["interaction"]["kind"], "question");
    let text = run.to_string();
    assert!(!text.contains(secret), "{text}");
    assert!(
        run["interaction"]["question"]
            .as_str()
            .unwrap()
            .contains("<redacted>"),
        "{run}"
    );
    // A text outside the options is refused; one of them is taken.
    let path = format!("/v1/runs/{run_id}/answer");
    let interaction = run["interaction"]["id"].as_str().unwrap();
    let (status, _) = serving
        .post(
            &path,
            &json!({"interaction_id": interaction, "answer": "text", "text": "bye"}),
        )
        .await;
    assert_eq!(status, 422);
    let (status, _) = serving
        .post(
            &path,
            &json!({"interaction_id": interaction, "answer": "text", "text": "hello"}),
        )
        .await;
    assert_eq!(status, 202);
    serving.wait_for(&run_id, "completed").await;
    let events = EventReader::open(&serving, &run_id, None)
        .await
        .rest()
        .await;
    let all = serde_json::to_string(&events.iter().map(|e| &e.data).collect::<Vec<_>>()).unwrap();
    assert!(!all.contains(secret), "{all}");
    assert!(all.contains("<redacted>"), "{all}");
    serving.shut_down().await;
}

/// Cancelling a waiting run ends it `cancelled`, and its stream with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_run_is_cancelled() {
    let serving = serve(&[("default", yaml(WRITE_SCRIPT, ""))], &Store::Sqlite).await;
    let run_id = serving.start_run("default", "Say hi in a file").await;
    serving.wait_for(&run_id, "waiting").await;
    let mut reader = EventReader::open(&serving, &run_id, None).await;
    until_finished(&mut reader).await;
    let (status, run) = serving
        .post(&format!("/v1/runs/{run_id}/cancel"), &json!({}))
        .await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "cancelled");
    assert_eq!(run["interaction"], serde_json::Value::Null);
    let rest = reader.rest().await;
    assert_eq!(types(&rest), ["finished"]);
    assert_eq!(rest[0].data["outcome"]["status"], "cancelled");
    let (status, body) = serving
        .post(
            &format!("/v1/runs/{run_id}/answer"),
            &json!({"interaction_id": format!("{run_id}:call_1_1"), "answer": "approve"}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert!(!serving.dirs[0].join("hello.txt").exists());
    serving.shut_down().await;
}
