//! One server per test: agents from YAML text in fresh folders, served on a free
//! loopback port; a client; the PostgreSQL test cluster's fresh databases.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use std::sync::Arc;

use iris_runner::{AgentConfig, HostRegistry, PostgresRunStore};
use iris_serve::{Agents, ServeOptions, Server};
use iris_tools_core::CancellationSignal;
use serde_json::{Value, json};

/// A scripted agent whose one call writes `hello.txt` (writes wait for approval:
/// `write_mode: confirm` by default), then answers.
pub(crate) const WRITE_SCRIPT: &str = "  script:\n    - text: Writing the file.\n      tool_calls: [{name: \
    write_file, arguments: {file_path: hello.txt, content: \"hi\\n\"}}]\n    - \
    {expect_tool_results: 1, text: Wrote hello.txt.}\n";

/// A scripted agent that answers at once.
pub(crate) const HELLO_SCRIPT: &str = "  script:\n    - text: Hello.\n";

/// The YAML of a scripted agent with `script` and `extra` keys.
pub(crate) fn yaml(script: &str, extra: &str) -> String {
    format!(
        "tools:\n  builtin: [file.write, human.ask]\nmodel:\n  provider: scripted\n{script}{extra}"
    )
}

/// A running server and what the test needs of it.
pub(crate) struct Serving {
    pub(crate) base: String,
    pub(crate) client: reqwest::Client,
    pub(crate) stop: CancellationSignal,
    task: Option<tokio::task::JoinHandle<iris_serve::Stopped>>,
    /// The agents' folders (kept until the test ends).
    pub(crate) dirs: Vec<PathBuf>,
    _temp: Vec<tempfile::TempDir>,
}

impl Serving {
    /// Stops the server; returns the runs it gave up.
    pub(crate) async fn shut_down(mut self) -> Vec<String> {
        self.stop.cancel();
        let stopped = self.task.take().unwrap().await.unwrap();
        stopped.closed.unwrap();
        stopped.given_up
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `GET path` → (status, JSON body).
    pub(crate) async fn get(&self, path: &str) -> (u16, Value) {
        let response = self.client.get(self.url(path)).send().await.unwrap();
        read(response).await
    }

    /// `POST path` with a JSON body → (status, JSON body).
    pub(crate) async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.post_raw(path, body.to_string()).await
    }

    /// `POST path` with `body` as it is.
    pub(crate) async fn post_raw(&self, path: &str, body: String) -> (u16, Value) {
        let response = self
            .client
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        read(response).await
    }

    /// Starts a run of `agent`; its id.
    pub(crate) async fn start_run(&self, agent: &str, input: &str) -> String {
        let (status, body) = self
            .post("/v1/runs", &json!({"agent": agent, "input": input}))
            .await;
        assert_eq!(status, 201, "{body}");
        body["run_id"].as_str().unwrap().to_owned()
    }

    /// Polls the run until its status is `status`; the run.
    pub(crate) async fn wait_for(&self, run_id: &str, status: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (code, run) = self.get(&format!("/v1/runs/{run_id}")).await;
            assert_eq!(code, 200, "{run}");
            if run["status"] == status {
                return run;
            }
            assert!(Instant::now() < deadline, "still {}: {run}", run["status"]);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A response's status and JSON body (`null` for an empty or non-JSON body).
pub(crate) async fn read(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Where the agents' runs are kept.
#[derive(Clone, Debug)]
pub(crate) enum Store {
    /// The first agent's default SQLite file (one folder for all agents).
    Sqlite,
    /// The PostgreSQL database at this URL, opened by the test and handed to the
    /// server (a test cannot set the variable a YAML's `url_env` would name).
    Postgres(String),
}

/// Serves `agents` (name, YAML) from one folder (or `dir`), on `store`, with `options`.
pub(crate) async fn serve_in(
    dir: Option<&Path>,
    agents: &[(&str, String)],
    store: &Store,
    options: impl FnOnce(ServeOptions) -> ServeOptions,
) -> Serving {
    let mut temp = Vec::new();
    let folder = match dir {
        Some(d) => d.to_path_buf(),
        None => {
            let t = tempfile::tempdir().unwrap();
            let p = t.path().to_path_buf();
            temp.push(t);
            p
        }
    };
    let mut specs = Vec::new();
    for (name, yaml) in agents {
        let file = folder.join(format!("{name}.yaml"));
        std::fs::write(&file, yaml).unwrap();
        // No IRIS_ overrides from the test process's environment.
        specs.push((
            (*name).to_owned(),
            AgentConfig::load_with_env(&file, false).unwrap(),
        ));
    }
    let agents = match store {
        Store::Sqlite => Agents::build(specs, &HostRegistry::new()).await.unwrap(),
        Store::Postgres(url) => {
            let pg = PostgresRunStore::connect(url).await.unwrap();
            Agents::with_store(specs, &HostRegistry::new(), Arc::new(pg))
                .await
                .unwrap()
        }
    };
    let options = options(ServeOptions::new("127.0.0.1:0".parse().unwrap()));
    let server = Server::new(agents, options.bind().await.unwrap());
    let addr = server.local_addr().unwrap();
    let stop = CancellationSignal::new();
    let signal = stop.clone();
    let task = tokio::spawn(async move { server.run(&signal).await });
    Serving {
        base: format!("http://{addr}"),
        client: reqwest::Client::new(),
        stop,
        task: Some(task),
        dirs: vec![folder],
        _temp: temp,
    }
}

/// Serves `agents` from a fresh folder.
pub(crate) async fn serve(agents: &[(&str, String)], store: &Store) -> Serving {
    serve_in(None, agents, store, |o| o).await
}

/// A new, empty database on the test cluster (`iris_test_support::postgres`).
pub(crate) async fn fresh_database() -> String {
    iris_test_support::postgres::fresh_database("iris_serve").await
}

/// Drops the database at `url` (made by [`fresh_database`]) under whoever uses it:
/// its connections are ended.
pub(crate) async fn drop_database(url: &str) {
    let name = url.rsplit_once('/').unwrap().1;
    let (client, conn) = tokio_postgres::connect(
        iris_test_support::postgres::cluster_url(),
        tokio_postgres::NoTls,
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    client
        .batch_execute(&format!("DROP DATABASE {name} WITH (FORCE)"))
        .await
        .unwrap();
}

/// One SSE event as a client sees it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SseEvent {
    pub(crate) id: u64,
    pub(crate) data: Value,
}

/// One block of an SSE stream: its `id`, `event` and `data` fields.
#[derive(Debug, Default)]
struct Block {
    text: String,
    id: Option<String>,
    event: Option<String>,
    data: String,
}

/// An open `text/event-stream` response, read block by block.
struct SseBlocks {
    response: reqwest::Response,
    buffer: String,
}

impl SseBlocks {
    /// Sends `request` and checks that it opened an event stream.
    async fn open(request: reqwest::RequestBuilder) -> Self {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The next block that is not a keep-alive comment; `None` when the stream ended.
    /// Panics after 30 s without one.
    async fn next(&mut self) -> Option<Block> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let text: String = self.buffer.drain(..end + 2).collect();
                let mut block = Block::default();
                for line in text.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        block.id = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("event: ") {
                        block.event = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        block.data.push_str(v);
                    }
                }
                block.text = text;
                // A keep-alive comment has no field.
                if block.id.is_some() || block.event.is_some() || !block.data.is_empty() {
                    return Some(block);
                }
                continue;
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .expect("nothing on the event stream within 30 s")
                .unwrap();
            match chunk {
                Some(bytes) => self.buffer.push_str(std::str::from_utf8(&bytes).unwrap()),
                None => return None,
            }
        }
    }
}

/// An open event stream.
pub(crate) struct EventReader {
    blocks: SseBlocks,
}

impl EventReader {
    /// `GET /v1/runs/{run_id}/events`, after `last` when given.
    pub(crate) async fn open(serving: &Serving, run_id: &str, last: Option<u64>) -> Self {
        let mut request = serving
            .client
            .get(serving.url(&format!("/v1/runs/{run_id}/events")));
        if let Some(last) = last {
            request = request.header("Last-Event-ID", last.to_string());
        }
        Self {
            blocks: SseBlocks::open(request).await,
        }
    }

    /// The next event; `None` when the stream ended. Panics after 30 s without one.
    pub(crate) async fn next(&mut self) -> Option<SseEvent> {
        let block = self.blocks.next().await?;
        let id = block
            .id
            .as_deref()
            .unwrap_or_else(|| panic!("no id: {}", block.text));
        Some(SseEvent {
            id: id.parse().unwrap(),
            data: serde_json::from_str(&block.data).unwrap(),
        })
    }

    /// Every event until the stream ends.
    pub(crate) async fn rest(&mut self) -> Vec<SseEvent> {
        let mut all = Vec::new();
        while let Some(e) = self.next().await {
            all.push(e);
        }
        all
    }
}

/// The `type`s of events, in order.
pub(crate) fn types(events: &[SseEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.data["type"].as_str().unwrap_or("?").to_owned())
        .collect()
}

/// An open runs feed (`GET /v1/events`).
pub(crate) struct FeedReader {
    blocks: SseBlocks,
}

impl FeedReader {
    /// Opens the feed.
    pub(crate) async fn open(serving: &Serving) -> Self {
        Self {
            blocks: SseBlocks::open(serving.client.get(serving.url("/v1/events"))).await,
        }
    }

    /// The next `run` item; `None` when the stream ended. Panics after 30 s without
    /// one.
    pub(crate) async fn next(&mut self) -> Option<Value> {
        let block = self.blocks.next().await?;
        assert!(block.id.is_none(), "the feed has no ids: {}", block.text);
        assert_eq!(block.event.as_deref(), Some("run"), "{}", block.text);
        Some(serde_json::from_str(&block.data).unwrap())
    }

    /// Reads items until one for `run_id` has `status`; the items for `run_id` read.
    pub(crate) async fn until(&mut self, run_id: &str, status: &str) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let item = self.next().await.expect("the feed ended");
            if item["run_id"] != run_id {
                continue;
            }
            let done = item["status"] == status;
            seen.push(item);
            if done {
                return seen;
            }
        }
    }
}
