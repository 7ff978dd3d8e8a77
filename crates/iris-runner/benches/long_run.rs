//! Benchmark: what one turn costs as a run grows — at turn 10, 100 and 1,000 of one
//! run — on the memory, SQLite and PostgreSQL stores, and how many bytes each turn
//! writes to the store.
//!
//! The run: a scripted model whose every turn asks for one `read_file` of the same
//! file (1 KB or 10 KB of text, so each turn adds a result of that size to the
//! history), 1,000 tool turns, then a final answer. The model stamps the time of each
//! request; the time of turn `t` is from request `t` to request `t + 1`: the loop's
//! work (the response into the history, the journal, the saves, the call through the
//! executor, the next request built from the whole history) plus the `read_file` call
//! itself and the scripted model's few microseconds, which are the same at every turn.
//! Each figure is the median of the five turns ending at 10, 100 and 1,000, then the
//! median over the rounds (`IRIS_BENCH_ROUNDS`, default 5).
//!
//! Bytes written per turn, in one more run per store and size, sampled at each
//! request: for SQLite the bytes this process passed to `write` (`wchar` in
//! `/proc/self/io`: the WAL frames, and the checkpoints into the database file), for
//! PostgreSQL the server's WAL bytes (`pg_current_wal_lsn`), on a cluster of the
//! bench's own (`.ci/postgres.sh` on port 55441), so other work on the test cluster is
//! not counted. The memory store writes no bytes: it shares the run's messages.
//!
//! `benches/openai_agents_long_run.py` runs the same script through the OpenAI Agents
//! SDK. Run with `cargo bench -p iris-runner --bench long_run` (`cargo xtask bench`
//! runs both).
#![allow(clippy::unwrap_used, clippy::expect_used)] // A broken fixture should stop the run loudly.

use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_core::Stream;
use iris_executor::ToolExecutor;
use iris_providers::chat::{
    CompletionRequest, CompletionResponse, ModelToolCall, Part, Role, StopReason, StreamEvent,
};
use iris_providers::{CompletionProvider, ProviderError, ProviderStream};
use iris_runner::{
    AgentRunner, MemoryRunStore, PostgresRunStore, RunOutcome, RunStore, SqliteRunStore,
};
use iris_tools_core::{BoxFuture, ToolRegistry};
use serde_json::json;

/// Tool turns of the run.
const TURNS: usize = 1_000;
/// The turns reported; each is the median of the five turns ending there.
const REPORTED: [usize; 3] = [10, 100, 1_000];
const WINDOW: usize = 5;
/// The bench's own PostgreSQL cluster.
const PG_PORT: u16 = 55441;

/// What the model samples at each request, besides the time.
type Probe = Box<dyn Fn() -> BoxFuture<'static, u64> + Send + Sync>;

/// Asks for `read_file` of one file `TURNS` times, then answers; checks that every
/// request after the first ends with the previous call's result.
struct ReadLoop {
    next: AtomicUsize,
    stamps: Mutex<Vec<Instant>>,
    probe: Option<Probe>,
    samples: Mutex<Vec<u64>>,
}

impl ReadLoop {
    fn new(probe: Option<Probe>) -> Self {
        Self {
            next: AtomicUsize::new(0),
            stamps: Mutex::new(Vec::with_capacity(TURNS + 2)),
            probe,
            samples: Mutex::new(Vec::with_capacity(TURNS + 2)),
        }
    }

    async fn play(&self, request: &CompletionRequest) -> Result<CompletionResponse, ProviderError> {
        self.stamps.lock().unwrap().push(Instant::now());
        if let Some(probe) = &self.probe {
            let value = probe().await;
            self.samples.lock().unwrap().push(value);
        }
        let index = self.next.fetch_add(1, Ordering::Relaxed);
        if index > 0 {
            let last = request.messages.last().expect("a history");
            let answered = last.role == Role::Tool
                && matches!(&last.content[..], [Part::ToolResult(b)] if b.tool_use_id == format!("call_{index}") && !b.is_error);
            if !answered {
                return Err(ProviderError::BadResponse {
                    reason: format!("turn {} does not follow call_{index}'s result", index + 1),
                });
            }
        }
        let mut response = CompletionResponse::default();
        if index < TURNS {
            response.tool_calls.push(ModelToolCall::from_value(
                format!("call_{}", index + 1),
                "read_file",
                json!({"file_path": "data.txt"}),
            ));
            response.stop = StopReason::ToolUse;
        } else {
            response.text = "Read it 1,000 times.".into();
        }
        Ok(response)
    }
}

/// One finished stream event.
struct Once(Option<Result<StreamEvent, ProviderError>>);

impl Stream for Once {
    type Item = Result<StreamEvent, ProviderError>;
    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.0.take())
    }
}

impl CompletionProvider for ReadLoop {
    fn name(&self) -> &str {
        "scripted"
    }

    /// The bench's runs are not streamed.
    fn stream<'a>(&'a self, _: &'a CompletionRequest) -> ProviderStream<'a> {
        Box::pin(Once(Some(Err(ProviderError::BadResponse {
            reason: "the long-run bench does not stream".into(),
        }))))
    }

    fn complete<'a>(
        &'a self,
        request: &'a CompletionRequest,
    ) -> BoxFuture<'a, Result<CompletionResponse, ProviderError>> {
        Box::pin(self.play(request))
    }
}

fn executor() -> ToolExecutor {
    let registry = ToolRegistry::new();
    for tool in iris_files::builtin_tools() {
        registry.register_arc(tool).unwrap();
    }
    ToolExecutor::new(registry)
}

/// One whole run; returns the model's stamps and samples.
async fn run(
    root: &Path,
    store: Option<Arc<dyn RunStore>>,
    probe: Option<Probe>,
) -> (Vec<Instant>, Vec<u64>) {
    let model = Arc::new(ReadLoop::new(probe));
    let mut builder = AgentRunner::builder(Arc::clone(&model), executor())
        .workspace(root)
        .max_turns(u32::try_from(TURNS + 1).unwrap());
    if let Some(store) = store {
        builder = builder.run_store(store);
    }
    let outcome = builder
        .build()
        .run("Read data.txt until told to stop.")
        .await;
    match &outcome {
        RunOutcome::Completed { turns, history, .. } => {
            assert_eq!(*turns as usize, TURNS + 1);
            assert_eq!(history.len(), 2 + 2 * TURNS);
        }
        other => panic!("the run did not complete: {other:?}"),
    }
    let stamps = std::mem::take(&mut *model.stamps.lock().unwrap());
    let samples = std::mem::take(&mut *model.samples.lock().unwrap());
    (stamps, samples)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Per-turn deltas of a series sampled at each request: `deltas[t - 1]` is turn `t`.
fn deltas(series: &[f64]) -> Vec<f64> {
    series.windows(2).map(|w| w[1] - w[0]).collect()
}

/// The median of the window of turns ending at each reported turn.
fn at_reported(per_turn: &[f64]) -> [f64; 3] {
    REPORTED.map(|t| median(per_turn[t - WINDOW..t].to_vec()))
}

/// Bytes this process passed to `write` so far.
fn wchar() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("wchar:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The bench's own PostgreSQL cluster (a port of its own, so the tests' load does not
/// reach it), and a fresh database on it.
async fn postgres_database() -> String {
    let base = iris_test_support::postgres::start_cluster(PG_PORT);
    iris_test_support::postgres::fresh_database_on(&base, "iris_long_run").await
}

/// The server's WAL position, in bytes.
fn wal_probe(url: String) -> Probe {
    let client = Arc::new(tokio::sync::OnceCell::<tokio_postgres::Client>::new());
    Box::new(move || {
        let (client, url) = (Arc::clone(&client), url.clone());
        Box::pin(async move {
            let client = client
                .get_or_init(|| async {
                    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                        .await
                        .unwrap();
                    tokio::spawn(conn);
                    client
                })
                .await;
            let row = client
                .query_one(
                    "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::BIGINT",
                    &[],
                )
                .await
                .unwrap();
            u64::try_from(row.get::<_, i64>(0)).unwrap_or(0)
        })
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Memory,
    Sqlite,
    Postgres,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Memory => "memory",
            Kind::Sqlite => "sqlite",
            Kind::Postgres => "postgres",
        }
    }
}

async fn store(kind: Kind, root: &Path, pg_url: &str) -> Arc<dyn RunStore> {
    match kind {
        Kind::Memory => Arc::new(MemoryRunStore::new()),
        Kind::Sqlite => Arc::new(SqliteRunStore::open(root.join("runs.db")).await.unwrap()),
        Kind::Postgres => Arc::new(PostgresRunStore::connect(pg_url).await.unwrap()),
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let rounds: usize = std::env::var("IRIS_BENCH_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(5);
        let pg_url = postgres_database().await;
        println!(
            "per-turn time at turns 10 / 100 / 1,000 of one {TURNS}-turn run (median of the 5 \
             turns ending there, median of {rounds} rounds), and bytes written to the store per \
             turn there:"
        );
        for size in [1_000usize, 10_000] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().canonicalize().unwrap();
            let line = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-=+*/\n";
            let text: String = line.repeat(size / line.len() + 1)[..size].to_owned();
            std::fs::write(root.join("data.txt"), text).unwrap();
            for kind in [Kind::Memory, Kind::Sqlite, Kind::Postgres] {
                let mut at = Vec::new();
                for _ in 0..rounds {
                    let store = store(kind, &root, &pg_url).await;
                    let (stamps, _) = run(&root, Some(store), None).await;
                    let times: Vec<f64> = stamps
                        .iter()
                        .map(|s| s.duration_since(stamps[0]).as_secs_f64() * 1e6)
                        .collect();
                    at.push(at_reported(&deltas(&times)));
                }
                let us: [f64; 3] =
                    std::array::from_fn(|i| median(at.iter().map(|a| a[i]).collect()));
                let probe: Option<Probe> = match kind {
                    Kind::Memory => None,
                    Kind::Sqlite => Some(Box::new(|| Box::pin(async { wchar() }))),
                    Kind::Postgres => Some(wal_probe(pg_url.clone())),
                };
                let bytes = if probe.is_some() {
                    let store = store(kind, &root, &pg_url).await;
                    let (_, samples) = run(&root, Some(store), probe).await;
                    let series: Vec<f64> = samples.iter().map(|&b| b as f64).collect();
                    Some(at_reported(&deltas(&series)))
                } else {
                    None
                };
                let bytes_text = match bytes {
                    Some(b) => format!(
                        "bytes/turn {:>8.0} {:>8.0} {:>8.0}",
                        b[0], b[1], b[2]
                    ),
                    None => "bytes/turn        0 (shared)".into(),
                };
                println!(
                    "  {:>2} KB results  {:<9} µs/turn {:>8.1} {:>8.1} {:>8.1}  (1,000 / 10: {:.2}x)  {bytes_text}",
                    size / 1000,
                    kind.name(),
                    us[0],
                    us[1],
                    us[2],
                    us[2] / us[0],
                );
                println!(
                    "{}",
                    json!({
                        "benchmark": "long_run",
                        "impl": "iris",
                        "store": kind.name(),
                        "result_bytes": size,
                        "rounds": rounds,
                        "turn_us": {"10": us[0], "100": us[1], "1000": us[2]},
                        "bytes_per_turn": bytes.map(|b| json!({"10": b[0], "100": b[1], "1000": b[2]})),
                    })
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });
}
