//! Every endpoint and its error statuses: a run started, waiting for approval,
//! refused a wrong or stale answer, approved over HTTP and finished (SQLite and
//! PostgreSQL); bad input; paging; auth.

use serde_json::{Value, json};

use crate::support::{
    EventReader, HELLO_SCRIPT, Store, WRITE_SCRIPT, fresh_database, serve, serve_in, types, yaml,
};

/// The approval round trip on `store`.
async fn approval_round_trip(store: Store) {
    let serving = serve(&[("default", yaml(WRITE_SCRIPT, ""))], &store).await;
    let run_id = serving.start_run("default", "Say hi in a file").await;
    let run = serving.wait_for(&run_id, "waiting").await;
    assert_eq!(run["agent"], "default");
    assert_eq!(run["interaction"]["kind"], "approval", "{run}");
    assert_eq!(run["interaction"]["tool_name"], "write_file");
    let interaction = run["interaction"]["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/runs/{run_id}/answer");

    // The wrong kind of answer, a stale id, a body without an answer.
    let (status, body) = serving
        .post(
            &path,
            &json!({"interaction_id": interaction, "answer": "text", "text": "yes"}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("RUN_ANSWER_INVALID")),
        "{body}"
    );
    let (status, body) = serving
        .post(
            &path,
            &json!({"interaction_id": format!("{run_id}:call_9"), "answer": "approve"}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("RUN_INTERACTION_STALE")),
        "{body}"
    );
    let (status, body) = serving
        .post(&path, &json!({"interaction_id": interaction}))
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("SERVE_REQUEST_INVALID")),
        "{body}"
    );
    assert!(
        !serving.dirs[0].join("hello.txt").exists(),
        "nothing ran yet"
    );

    let (status, body) = serving
        .post(
            &path,
            &json!({"interaction_id": interaction, "answer": "approve"}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["run_id"], run_id);
    let run = serving.wait_for(&run_id, "completed").await;
    assert_eq!(run["output"], "Wrote hello.txt.");
    assert_eq!(run["interaction"], Value::Null);
    assert_eq!(run["turns"], 2);
    assert!(run["usage"].is_object(), "{run}");
    assert_eq!(
        std::fs::read_to_string(serving.dirs[0].join("hello.txt")).unwrap(),
        "hi\n"
    );
    // Answered already: the same answer again is refused, and the call ran once.
    let (status, body) = serving
        .post(
            &path,
            &json!({"interaction_id": interaction, "answer": "approve"}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "RUN_NOT_WAITING");

    // The whole log, from the start: both drives, in order, numbered 1, 2, 3, ….
    let events = EventReader::open(&serving, &run_id, None)
        .await
        .rest()
        .await;
    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    assert_eq!(ids, (1..=events.len() as u64).collect::<Vec<_>>());
    let types = types(&events);
    assert_eq!(
        types[..3],
        ["accepted", "run_started", "turn_started"],
        "{types:?}"
    );
    let finished: Vec<&Value> = events
        .iter()
        .filter(|e| e.data["type"] == "finished")
        .map(|e| &e.data["outcome"]["status"])
        .collect();
    assert_eq!(
        finished,
        [&json!("waiting"), &json!("completed")],
        "{types:?}"
    );
    assert_eq!(types.last().unwrap(), "finished");
    assert!(
        types.contains(&"approval_requested".to_owned()),
        "{types:?}"
    );
    let calls = types.iter().filter(|t| *t == "tool_call_finished").count();
    assert_eq!(calls, 1, "the approved call ran once: {types:?}");
    serving.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waits_is_answered_over_http_and_finishes_on_sqlite() {
    approval_round_trip(Store::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waits_is_answered_over_http_and_finishes_on_postgres() {
    approval_round_trip(Store::Postgres(fresh_database().await)).await;
}

/// Bad requests get typed errors with fitting statuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_typed_errors() {
    let serving = serve(&[("default", yaml(HELLO_SCRIPT, ""))], &Store::Sqlite).await;
    let code = |(status, body): (u16, Value)| {
        (
            status,
            body["error"]["code"].as_str().unwrap_or("").to_owned(),
        )
    };
    let expect = |status: u16, code: &str| (status, code.to_owned());

    assert_eq!(
        code(
            serving
                .post("/v1/runs", &json!({"agent": "nobody", "input": "hi"}))
                .await
        ),
        expect(422, "SERVE_AGENT_UNKNOWN")
    );
    assert_eq!(
        code(
            serving
                .post("/v1/runs", &json!({"agent": "default", "input": "  "}))
                .await
        ),
        expect(422, "RUN_INPUT_INVALID")
    );
    assert_eq!(
        code(
            serving
                .post(
                    "/v1/runs",
                    &json!({"agent": "default", "input": "hi", "colour": 1})
                )
                .await
        ),
        expect(400, "SERVE_REQUEST_INVALID")
    );
    assert_eq!(
        code(
            serving
                .post(
                    "/v1/runs",
                    &json!({"agent": "default", "input": "hi", "metadata": [1]})
                )
                .await
        ),
        expect(400, "SERVE_REQUEST_INVALID")
    );
    assert_eq!(
        code(serving.post_raw("/v1/runs", "{not json".into()).await),
        expect(400, "SERVE_REQUEST_INVALID")
    );
    let huge = json!({"agent": "default", "input": "x".repeat(iris_serve::MAX_BODY_BYTES + 1)});
    assert_eq!(
        code(serving.post("/v1/runs", &huge).await),
        expect(413, "SERVE_REQUEST_TOO_LARGE")
    );
    let huge = json!({"interaction_id": "x", "answer": "text", "text": "x".repeat(iris_serve::MAX_BODY_BYTES + 1)});
    assert_eq!(
        code(serving.post("/v1/runs/run_nope/answer", &huge).await),
        expect(413, "SERVE_REQUEST_TOO_LARGE")
    );
    assert_eq!(
        code(serving.get("/v1/runs/run_nope").await),
        expect(404, "RUN_NOT_FOUND")
    );
    assert_eq!(
        code(
            serving
                .post(
                    "/v1/runs/run_nope/answer",
                    &json!({"interaction_id": "x", "answer": "approve"})
                )
                .await
        ),
        expect(404, "RUN_NOT_FOUND")
    );
    assert_eq!(
        code(serving.post("/v1/runs/run_nope/cancel", &json!({})).await),
        expect(404, "RUN_NOT_FOUND")
    );
    assert_eq!(
        code(serving.get("/v1/runs/run_nope/events").await),
        expect(404, "RUN_NOT_FOUND")
    );
    assert_eq!(
        code(serving.get("/v1/runs/run_nope/artifacts/call_1_1").await),
        expect(404, "RUN_NOT_FOUND")
    );
    assert_eq!(
        code(serving.get("/v1/runs?status=done").await),
        expect(400, "SERVE_REQUEST_INVALID")
    );
    assert_eq!(
        code(serving.get("/v1/runs?cursor=zzz").await),
        expect(400, "SERVE_REQUEST_INVALID")
    );
    assert_eq!(
        code(serving.get("/v1/runs?limit=0").await),
        expect(400, "SERVE_REQUEST_INVALID")
    );
    assert_eq!(
        code(serving.get("/v1/runs?colour=red").await),
        expect(400, "SERVE_REQUEST_INVALID")
    );
    assert_eq!(
        code(serving.get("/v1/nothing").await),
        expect(404, "SERVE_NOT_FOUND")
    );
    let put = serving
        .client
        .put(serving.url("/v1/runs"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        code(crate::support::read(put).await),
        expect(405, "SERVE_METHOD_NOT_ALLOWED")
    );

    let run_id = serving.start_run("default", "hi").await;
    serving.wait_for(&run_id, "completed").await;
    let bad_id = serving
        .client
        .get(serving.url(&format!("/v1/runs/{run_id}/events")))
        .header("Last-Event-ID", "seven")
        .send()
        .await
        .unwrap();
    assert_eq!(
        code(crate::support::read(bad_id).await),
        expect(400, "SERVE_REQUEST_INVALID")
    );
    assert_eq!(
        code(
            serving
                .post(&format!("/v1/runs/{run_id}/cancel"), &json!({}))
                .await
        ),
        expect(409, "SERVE_RUN_FINISHED")
    );
    assert_eq!(
        code(
            serving
                .post(
                    &format!("/v1/runs/{run_id}/answer"),
                    &json!({"interaction_id": "x", "answer": "approve"})
                )
                .await
        ),
        expect(409, "RUN_NOT_WAITING")
    );

    let (status, doc) = serving.get("/v1/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    for path in [
        "/v1/runs",
        "/v1/runs/{id}",
        "/v1/runs/{id}/answer",
        "/v1/runs/{id}/cancel",
        "/v1/runs/{id}/events",
        "/v1/runs/{id}/artifacts/{call_id}",
        "/v1/events",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} missing");
    }
    serving.shut_down().await;
}

/// Runs list newest first, a page at a time, filtered by status and agent; metadata
/// and the session come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_are_listed_in_pages_and_filtered() {
    let agents = [
        ("default", yaml(HELLO_SCRIPT, "")),
        ("writer", yaml(WRITE_SCRIPT, "")),
    ];
    let serving = serve(&agents, &Store::Sqlite).await;
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(serving.start_run("default", &format!("hi {i}")).await);
    }
    let (status, body) = serving
        .post(
            "/v1/runs",
            &json!({"agent": "writer", "input": "write", "session_id": "s-7", "metadata": {"ticket": 42}}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let writer = body["run_id"].as_str().unwrap().to_owned();
    let run = serving.wait_for(&writer, "waiting").await;
    assert_eq!(run["metadata"], json!({"ticket": 42}));
    assert_eq!(run["session_id"], "s-7");
    assert_eq!(run["agent"], "writer");
    for id in &ids {
        serving.wait_for(id, "completed").await;
    }

    let (_, first) = serving.get("/v1/runs?agent=default&limit=2").await;
    let page: Vec<&str> = first["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(page, [ids[2].as_str(), ids[1].as_str()], "{first}");
    let cursor = first["next_cursor"].as_str().unwrap();
    let (_, second) = serving
        .get(&format!("/v1/runs?agent=default&limit=2&cursor={cursor}"))
        .await;
    let page: Vec<&str> = second["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(page, [ids[0].as_str()], "{second}");
    assert_eq!(second["next_cursor"], Value::Null);

    let (_, waiting) = serving.get("/v1/runs?status=waiting").await;
    let runs = waiting["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{waiting}");
    assert_eq!(runs[0]["run_id"], writer);
    assert_eq!(runs[0]["agent"], "writer");
    assert!(
        runs[0]["waiting_for"]
            .as_str()
            .unwrap()
            .contains("write_file"),
        "{waiting}"
    );
    let (_, all) = serving.get("/v1/runs").await;
    assert_eq!(all["runs"].as_array().unwrap().len(), 4);
    serving.shut_down().await;
}

/// With a token every request needs it; a loopback server answers only requests
/// for localhost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_required_and_foreign_hosts_are_refused() {
    let serving = serve_in(
        None,
        &[("default", yaml(HELLO_SCRIPT, ""))],
        &Store::Sqlite,
        |o| o.bearer_token("t0ken-for-tests"),
    )
    .await;
    for (method, path) in ROUTES {
        let (status, body) = on_route(&serving, method, path, |r| r).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (401, Some("SERVE_UNAUTHORIZED")),
            "{method} {path}"
        );
    }
    let wrong = serving
        .client
        .get(serving.url("/v1/runs"))
        .bearer_auth("t0ken-for-test")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    assert_eq!(wrong.headers()["www-authenticate"], "Bearer");
    let right = serving
        .client
        .get(serving.url("/v1/runs"))
        .bearer_auth("t0ken-for-tests")
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 200);
    let rebinding = serving
        .client
        .get(serving.url("/v1/runs"))
        .bearer_auth("t0ken-for-tests")
        .header("host", "evil.example:80")
        .send()
        .await
        .unwrap();
    let (status, body) = crate::support::read(rebinding).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (403, Some("SERVE_HOST_REFUSED"))
    );
    for (method, path) in ROUTES {
        let (status, body) = on_route(&serving, method, path, |r| {
            r.bearer_auth("t0ken-for-tests")
                .header("host", "evil.example:80")
        })
        .await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (403, Some("SERVE_HOST_REFUSED")),
            "{method} {path}"
        );
    }
    serving.shut_down().await;
}

/// Every route of the API, on a run and a call that do not exist.
const ROUTES: [(&str, &str); 9] = [
    ("POST", "/v1/runs"),
    ("GET", "/v1/runs"),
    ("GET", "/v1/runs/run_1"),
    ("POST", "/v1/runs/run_1/answer"),
    ("POST", "/v1/runs/run_1/cancel"),
    ("GET", "/v1/runs/run_1/events"),
    ("GET", "/v1/runs/run_1/artifacts/call_1_1"),
    ("GET", "/v1/events"),
    ("GET", "/v1/openapi.json"),
];

/// `method path` (a POST with an empty JSON object), as `configure` sets it up →
/// (status, JSON body).
async fn on_route(
    serving: &crate::support::Serving,
    method: &str,
    path: &str,
    configure: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
) -> (u16, Value) {
    let request = match method {
        "POST" => serving
            .client
            .post(serving.url(path))
            .header("content-type", "application/json")
            .body("{}"),
        _ => serving.client.get(serving.url(path)),
    };
    crate::support::read(configure(request).send().await.unwrap()).await
}

/// A client may have `max_per_client` requests in progress; an open event stream
/// counts until it closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_is_limited_to_its_requests_in_progress() {
    let serving = serve_in(
        None,
        &[("default", yaml(WRITE_SCRIPT, ""))],
        &Store::Sqlite,
        |o| o.max_per_client(1),
    )
    .await;
    let run_id = serving.start_run("default", "Say hi in a file").await;
    serving.wait_for(&run_id, "waiting").await;
    // The stream stays open while the run waits.
    let stream = EventReader::open(&serving, &run_id, None).await;
    for (method, path) in ROUTES {
        let (status, body) = on_route(&serving, method, path, |r| r).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (429, Some("SERVE_TOO_MANY_REQUESTS")),
            "{method} {path}: {body}"
        );
    }
    drop(stream);
    permit_given_back(&serving).await;
    // The runs feed holds a permit too while it is open.
    let feed = crate::support::FeedReader::open(&serving).await;
    let (status, body) = serving.get("/v1/runs").await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (429, Some("SERVE_TOO_MANY_REQUESTS")),
        "{body}"
    );
    drop(feed);
    permit_given_back(&serving).await;
    serving.shut_down().await;
}

/// Waits until the server let a closed stream's permit go (it does once it sees the
/// stream closed): `GET /v1/runs` is taken again.
async fn permit_given_back(serving: &crate::support::Serving) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (status, body) = serving.get("/v1/runs").await;
        if status == 200 {
            break;
        }
        assert_eq!(status, 429, "{body}");
        assert!(
            std::time::Instant::now() < deadline,
            "the stream's permit was never given back"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// An answer while another process holds the run's lease is `409 RUN_BUSY`; once the
/// lease is released the same answer is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_while_another_process_holds_the_lease_is_busy() {
    use iris_runner::RunStore;
    let url = fresh_database().await;
    let serving = serve(
        &[("default", yaml(WRITE_SCRIPT, ""))],
        &Store::Postgres(url.clone()),
    )
    .await;
    let run_id = serving.start_run("default", "Say hi in a file").await;
    let run = serving.wait_for(&run_id, "waiting").await;
    let interaction = run["interaction"]["id"].as_str().unwrap().to_owned();
    // Another process's store on the same database takes the lease.
    let other = iris_runner::PostgresRunStore::connect(&url).await.unwrap();
    other
        .acquire(
            &run_id,
            "another-process",
            std::time::Duration::from_secs(60),
        )
        .await
        .unwrap();
    let path = format!("/v1/runs/{run_id}/answer");
    let answer = json!({"interaction_id": interaction, "answer": "approve"});
    let (status, body) = serving.post(&path, &answer).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("RUN_BUSY")),
        "{body}"
    );
    assert!(!serving.dirs[0].join("hello.txt").exists());
    other.release(&run_id, "another-process").await.unwrap();
    let (status, body) = serving.post(&path, &answer).await;
    assert_eq!(status, 202, "{body}");
    serving.wait_for(&run_id, "completed").await;
    serving.shut_down().await;
}
