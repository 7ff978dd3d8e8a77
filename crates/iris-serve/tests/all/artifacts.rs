//! `GET /v1/runs/{id}/artifacts/{call_id}`: the file a call's result recorded, as a
//! download — typed, masked, confined to the agent's workspace — and a subagent's
//! child run's files under the child's id.

use serde_json::{Value, json};

use crate::support::{EventReader, Serving, Store, serve_in};

/// A scripted agent that publishes three files in one turn (writes allowed), then
/// answers.
const PUBLISHER: &str = "tools:\n  builtin: [file.read, file.publish]\npermissions:\n  \
    write_mode: allow\nmodel:\n  provider: scripted\n  script:\n    - text: Publishing.\n      \
    tool_calls:\n        - {name: publish_artifact, arguments: {file_path: report.txt}}\n        \
    - {name: publish_artifact, arguments: {file_path: data.json}}\n        - {name: \
    publish_artifact, arguments: {file_path: \"odd \\\"name\\\".bin\"}}\n        - {name: \
    read_file, arguments: {file_path: report.txt}}\n    - {expect_tool_results: 4, text: \
    Published.}\n";

/// The `(call id, tool name)` of each finished call in `run_id`'s log (or of the child
/// run `child` wrapped in it), in order.
async fn calls(serving: &Serving, run_id: &str, child: Option<&str>) -> Vec<(String, String)> {
    let events = EventReader::open(serving, run_id, None).await.rest().await;
    let mut out = Vec::new();
    for event in events {
        let mut data = &event.data;
        if let Some(child) = child {
            if data["type"] != "subagent" || data["child_run_id"] != child {
                continue;
            }
            data = &data["event"];
        }
        if data["type"] == "tool_call_finished" {
            out.push((
                data["result"]["tool_use_id"].as_str().unwrap().to_owned(),
                data["result"]["tool_name"].as_str().unwrap().to_owned(),
            ));
        }
    }
    out
}

/// `GET path` → (status, headers, bytes).
async fn download(serving: &Serving, path: &str) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let response = serving.client.get(serving.url(path)).send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.bytes().await.unwrap().to_vec())
}

/// The error code of a JSON error body.
fn code(bytes: &[u8]) -> String {
    let body: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
    body["error"]["code"].as_str().unwrap_or("").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calls_artifact_is_downloaded_typed_masked_and_confined() {
    let secret = env!("CARGO_MANIFEST_DIR");
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    std::fs::write(ws.join("report.txt"), format!("built in {secret}\n")).unwrap();
    std::fs::write(ws.join("data.json"), "{\"n\": 1}\n").unwrap();
    std::fs::write(ws.join("odd \"name\".bin"), [0u8, 159, 146, 150, 255]).unwrap();
    let serving = serve_in(
        Some(ws),
        &[("default", PUBLISHER.to_owned())],
        &Store::Sqlite,
        |o| o.secret_vars(["CARGO_MANIFEST_DIR".to_owned()]),
    )
    .await;
    let run_id = serving.start_run("default", "Publish").await;
    serving.wait_for(&run_id, "completed").await;
    let calls = calls(&serving, &run_id, None).await;
    let names: Vec<&str> = calls.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(
        names,
        [
            "publish_artifact",
            "publish_artifact",
            "publish_artifact",
            "read_file"
        ]
    );
    let url = |call: &str| format!("/v1/runs/{run_id}/artifacts/{call}");

    // Text: typed as text, masked like the events.
    let (status, headers, body) = download(&serving, &url(&calls[0].0)).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
    assert_eq!(
        headers["content-disposition"],
        format!("attachment; filename=\"{}-report.txt\"", calls[0].0).as_str()
    );
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(String::from_utf8(body).unwrap(), "built in <redacted>\n");
    // The published copy, not the file it was copied from.
    std::fs::write(ws.join("report.txt"), "changed\n").unwrap();
    let (_, _, body) = download(&serving, &url(&calls[0].0)).await;
    assert_eq!(String::from_utf8(body).unwrap(), "built in <redacted>\n");

    let (status, headers, body) = download(&serving, &url(&calls[1].0)).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(
        headers["content-disposition"],
        format!("attachment; filename=\"{}-data.json\"", calls[1].0).as_str()
    );
    assert_eq!(body, b"{\"n\": 1}\n");

    // Anything else is bytes, as they are; the name is a safe one.
    let (status, headers, body) = download(&serving, &url(&calls[2].0)).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/octet-stream");
    assert_eq!(
        headers["content-disposition"],
        format!("attachment; filename=\"{}-odd__name_.bin\"", calls[2].0).as_str()
    );
    assert_eq!(body, [0u8, 159, 146, 150, 255]);

    // A call without an artifact, a call the run never made, a run that does not exist.
    for (path, status_want, code_want) in [
        (url(&calls[3].0), 404, "SERVE_ARTIFACT_NOT_FOUND"),
        (url("call_99_1"), 404, "SERVE_ARTIFACT_NOT_FOUND"),
        (
            "/v1/runs/run_nope/artifacts/call_1_1".to_owned(),
            404,
            "RUN_NOT_FOUND",
        ),
    ] {
        let (status, headers, body) = download(&serving, &path).await;
        assert_eq!(
            (status, code(&body).as_str()),
            (status_want, code_want),
            "{path}"
        );
        assert_eq!(headers["content-type"], "application/json");
    }

    // Where the recorded files are: the published copies.
    let report = walk(ws, "-report.txt");
    assert!(report.starts_with(ws.join(".iris/published")), "{report:?}");

    // A recorded file swapped for a symlink to a file outside the workspace is refused.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("passwd"), "root:x:0:0\n").unwrap();
    std::fs::remove_file(&report).unwrap();
    std::os::unix::fs::symlink(outside.path().join("passwd"), &report).unwrap();
    let (status, _, body) = download(&serving, &url(&calls[0].0)).await;
    assert_eq!(
        (status, code(&body).as_str()),
        (403, "SERVE_ARTIFACT_REFUSED")
    );
    assert!(!String::from_utf8_lossy(&body).contains("root:x"));

    // One over the size limit is refused; one that is gone is not found.
    let data = walk(ws, "-data.json");
    let file = std::fs::OpenOptions::new().write(true).open(&data).unwrap();
    file.set_len(iris_serve::MAX_ARTIFACT_BYTES + 1).unwrap();
    let (status, _, body) = download(&serving, &url(&calls[1].0)).await;
    assert_eq!(
        (status, code(&body).as_str()),
        (403, "SERVE_ARTIFACT_REFUSED")
    );
    std::fs::remove_file(&data).unwrap();
    let (status, _, body) = download(&serving, &url(&calls[1].0)).await;
    assert_eq!(
        (status, code(&body).as_str()),
        (404, "SERVE_ARTIFACT_NOT_FOUND")
    );
    serving.shut_down().await;
}

/// The file whose name ends with `suffix` under `<ws>/.iris` (a published copy).
fn walk(ws: &std::path::Path, suffix: &str) -> std::path::PathBuf {
    let mut stack = vec![ws.join(".iris")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(entry.path());
            } else if entry.file_name().to_string_lossy().ends_with(suffix) {
                return entry.path();
            }
        }
    }
    panic!("no published *{suffix} under {}", ws.display());
}

/// A lead whose one call runs the `publisher` subagent, which publishes a file.
const LEAD: &str = "tools:\n  subagent: agents.yaml\npermissions:\n  write_mode: allow\ncommand:\n  \
    sandbox: {filesystem: off, network: on}\nmodel:\n  \
    provider: scripted\n  script:\n    - tool_calls: [{name: subagent, arguments: {prompt: \
    Publish the notes.}}]\n    - {expect_tool_results: 1, text: Done.}\n";

const CHILD: &str = "tools:\n  builtin: [file.publish]\npermissions:\n  write_mode: allow\nmodel:\n  \
    provider: scripted\n  script:\n    - tool_calls: [{name: publish_artifact, arguments: \
    {file_path: notes.txt}}]\n    - {expect_tool_results: 1, text: Published notes.txt.}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_runs_artifact_is_fetched_with_the_child_runs_id() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    std::fs::write(ws.join("notes.txt"), "two tasks\n").unwrap();
    std::fs::write(ws.join("publisher.yaml"), CHILD).unwrap();
    std::fs::write(
        ws.join("agents.yaml"),
        "default: publisher\nagents:\n  publisher:\n    path: publisher.yaml\n    description: \
         Publishes files.\n",
    )
    .unwrap();
    let serving = serve_in(
        Some(ws),
        &[("default", LEAD.to_owned())],
        &Store::Sqlite,
        |o| o,
    )
    .await;
    let run_id = serving.start_run("default", "Publish the notes").await;
    serving.wait_for(&run_id, "completed").await;
    let (_, list) = serving.get("/v1/runs").await;
    let child = list["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["parent_run_id"] == json!(run_id))
        .expect("the child run is listed")["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let child_calls = calls(&serving, &run_id, Some(&child)).await;
    assert_eq!(child_calls.len(), 1, "{child_calls:?}");
    let call = &child_calls[0].0;
    let (status, headers, body) =
        download(&serving, &format!("/v1/runs/{child}/artifacts/{call}")).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
    assert_eq!(body, b"two tasks\n");
    // The child's call is not the parent's.
    let (status, _, body) =
        download(&serving, &format!("/v1/runs/{run_id}/artifacts/{call}")).await;
    assert_eq!(
        (status, code(&body).as_str()),
        (404, "SERVE_ARTIFACT_NOT_FOUND")
    );
    serving.shut_down().await;
}
