//! The error statuses real failures get: a request while the server stops (503
//! `SERVE_SHUTTING_DOWN`), a run store that fails under the server (503
//! `RUN_STORE_FAILED` on every route that reads it), a workspace the server cannot
//! open (500), an answer for an agent this server does not serve (422), a cancel of a
//! run another process drives (409 `SERVE_RUN_ELSEWHERE`).

use std::time::Duration;

use iris_runner::RunStore;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{
    FeedReader, HELLO_SCRIPT, Serving, Store, WRITE_SCRIPT, drop_database, fresh_database, serve,
    serve_in, yaml,
};

/// `(status, error code)` of a response.
fn code((status, body): (u16, Value)) -> (u16, String) {
    (
        status,
        body["error"]["code"].as_str().unwrap_or("").to_owned(),
    )
}

/// A request inside the server, its body not yet sent: it asked `Expect:
/// 100-continue` and the server, reading the body, said `100 Continue`.
struct Waiting {
    stream: TcpStream,
    body: Vec<u8>,
}

impl Waiting {
    async fn post(serving: &Serving, path: &str, body: &Value) -> Self {
        let addr = serving.base.strip_prefix("http://").unwrap();
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let body = body.to_string().into_bytes();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: \
             application/json\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut seen = Vec::new();
        while !seen.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8; 1];
            assert_eq!(stream.read(&mut byte).await.unwrap(), 1, "{seen:?}");
            seen.push(byte[0]);
        }
        assert!(
            seen.starts_with(b"HTTP/1.1 100 Continue"),
            "{}",
            String::from_utf8_lossy(&seen)
        );
        Self { stream, body }
    }

    /// Sends the body; the response's status and JSON body.
    async fn finish(mut self) -> (u16, Value) {
        self.stream.write_all(&self.body).await.unwrap();
        let mut response = Vec::new();
        self.stream.read_to_end(&mut response).await.unwrap();
        let text = String::from_utf8(response).unwrap();
        let status = text.split(' ').nth(1).unwrap().parse().unwrap();
        let body = text.split_once("\r\n\r\n").unwrap().1;
        (status, serde_json::from_str(body).unwrap_or(Value::Null))
    }
}

/// Requests in progress when the server stops finish, refused: a new run and an
/// answer are `503 SERVE_SHUTTING_DOWN`, and nothing starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_while_the_server_stops_is_503() {
    let serving = serve(&[("default", yaml(WRITE_SCRIPT, ""))], &Store::Sqlite).await;
    let run_id = serving.start_run("default", "Say hi in a file").await;
    let run = serving.wait_for(&run_id, "waiting").await;
    // The feed ends when the server starts stopping: that is how the test knows.
    let mut feed = FeedReader::open(&serving).await;
    let create = Waiting::post(
        &serving,
        "/v1/runs",
        &json!({"agent": "default", "input": "Say hi in a file"}),
    )
    .await;
    let answer = Waiting::post(
        &serving,
        &format!("/v1/runs/{run_id}/answer"),
        &json!({"interaction_id": run["interaction"]["id"], "answer": "approve"}),
    )
    .await;
    serving.stop.cancel();
    while feed.next().await.is_some() {}
    assert_eq!(
        code(create.finish().await),
        (503, "SERVE_SHUTTING_DOWN".to_owned())
    );
    assert_eq!(
        code(answer.finish().await),
        (503, "SERVE_SHUTTING_DOWN".to_owned())
    );
    let dir = serving.dirs[0].clone();
    serving.shut_down().await;
    assert!(!dir.join("hello.txt").exists(), "the answer was not taken");
}

/// The PostgreSQL database dropped under the server: every route that reads the
/// store is `503 RUN_STORE_FAILED`; the server stays up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_store_that_fails_is_503_on_every_route() {
    let url = fresh_database().await;
    let serving = serve(
        &[("default", yaml(WRITE_SCRIPT, ""))],
        &Store::Postgres(url.clone()),
    )
    .await;
    let run_id = serving.start_run("default", "Say hi in a file").await;
    let run = serving.wait_for(&run_id, "waiting").await;
    drop_database(&url).await;

    let failed = (503, "RUN_STORE_FAILED".to_owned());
    assert_eq!(
        code(
            serving
                .post("/v1/runs", &json!({"agent": "default", "input": "hi"}))
                .await
        ),
        failed
    );
    assert_eq!(code(serving.get("/v1/runs").await), failed);
    assert_eq!(
        code(serving.get(&format!("/v1/runs/{run_id}")).await),
        failed
    );
    assert_eq!(
        code(
            serving
                .post(
                    &format!("/v1/runs/{run_id}/answer"),
                    &json!({"interaction_id": run["interaction"]["id"], "answer": "approve"}),
                )
                .await
        ),
        failed
    );
    assert_eq!(
        code(
            serving
                .post(&format!("/v1/runs/{run_id}/cancel"), &json!({}))
                .await
        ),
        failed
    );
    assert_eq!(
        code(serving.get(&format!("/v1/runs/{run_id}/events")).await),
        failed
    );
    assert_eq!(
        code(
            serving
                .get(&format!("/v1/runs/{run_id}/artifacts/call_1_1"))
                .await
        ),
        failed
    );
    // The server itself still answers.
    assert_eq!(serving.get("/v1/openapi.json").await.0, 200);
    serving.shut_down().await;
}

/// A scripted agent whose one call publishes `report.txt` (writes allowed).
const PUBLISH_SCRIPT: &str = "tools:\n  builtin: [file.publish]\npermissions:\n  write_mode: \
    allow\nmodel:\n  provider: scripted\n  script:\n    - tool_calls: [{name: \
    publish_artifact, arguments: {file_path: report.txt}}]\n    - {expect_tool_results: 1, \
    text: Published.}\n";

/// The agent's workspace gone from under the server: its artifacts cannot be read,
/// the server's failure (`500 SERVE_ARTIFACT_UNREADABLE`); back, they can.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_the_server_cannot_open_is_500() {
    let parent = tempfile::tempdir().unwrap();
    let ws = parent.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("report.txt"), "the report\n").unwrap();
    // PostgreSQL: the run store is not in the workspace.
    let serving = serve_in(
        Some(&ws),
        &[("default", PUBLISH_SCRIPT.to_owned())],
        &Store::Postgres(fresh_database().await),
        |o| o,
    )
    .await;
    let run_id = serving.start_run("default", "Publish").await;
    serving.wait_for(&run_id, "completed").await;
    let path = format!("/v1/runs/{run_id}/artifacts/call_1_1");
    let (status, _) = serving.get(&path).await;
    assert_eq!(status, 200);
    let away = parent.path().join("elsewhere");
    std::fs::rename(&ws, &away).unwrap();
    let (status, body) = serving.get(&path).await;
    assert_eq!(
        code((status, body.clone())),
        (500, "SERVE_ARTIFACT_UNREADABLE".to_owned()),
        "{body}"
    );
    std::fs::rename(&away, &ws).unwrap();
    assert_eq!(serving.get(&path).await.0, 200);
    serving.shut_down().await;
}

/// Two hosts on one store serving different agents: an answer for a run of an agent
/// this host does not serve is `422 SERVE_AGENT_UNKNOWN`; a cancel of a run another
/// process drives right now is `409 SERVE_RUN_ELSEWHERE`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_of_other_agents_and_other_hosts_are_refused() {
    let url = fresh_database().await;
    let store = Store::Postgres(url.clone());
    let dir = tempfile::tempdir().unwrap();
    let writer = serve_in(
        Some(dir.path()),
        &[("writer", yaml(WRITE_SCRIPT, ""))],
        &store,
        |o| o,
    )
    .await;
    let greeter = serve_in(
        Some(dir.path()),
        &[("greeter", yaml(HELLO_SCRIPT, ""))],
        &store,
        |o| o,
    )
    .await;
    let run_id = writer.start_run("writer", "Say hi in a file").await;
    let run = writer.wait_for(&run_id, "waiting").await;
    let answer = json!({"interaction_id": run["interaction"]["id"], "answer": "approve"});
    assert_eq!(
        code(
            greeter
                .post(&format!("/v1/runs/{run_id}/answer"), &answer)
                .await
        ),
        (422, "SERVE_AGENT_UNKNOWN".to_owned())
    );

    // Another process takes the run and marks it running, as a host driving it does.
    let other = iris_runner::PostgresRunStore::connect(&url).await.unwrap();
    let lease = Duration::from_secs(60);
    other
        .acquire(&run_id, "another-process", lease)
        .await
        .unwrap();
    let mut record = other.load(&run_id).await.unwrap().unwrap();
    record.status = iris_runner::store::RunStatus::Running;
    other.save(&record, "another-process").await.unwrap();
    for host in [&writer, &greeter] {
        assert_eq!(
            code(
                host.post(&format!("/v1/runs/{run_id}/cancel"), &json!({}))
                    .await
            ),
            (409, "SERVE_RUN_ELSEWHERE".to_owned())
        );
    }
    assert!(!dir.path().join("hello.txt").exists());
    writer.shut_down().await;
    greeter.shut_down().await;
}
