//! Load test (issue 15): 10,000 concurrent calls through one [`ToolExecutor`] with
//! hooks and artifacts, reporting peak RSS and latency percentiles, and failing when
//! the calls do not all complete within a bound (a deadlock or a lost wake-up).
//!
//! Every call is its own task, spawned at once on a multi-thread runtime, so each
//! latency includes the time the call waited for the runtime: what a host firing a
//! whole model turn's calls at once sees. The executor has the default permission
//! policy, a circuit breaker, and a hook dispatcher whose `tool.before` and
//! `tool.after` each do a little async work (a yield and a short sleep, and feedback on
//! every 100th call). One call in ten returns a body over its `max_result_chars`, so
//! the executor saves it as an artifact file (atomic write with `fsync`, on the
//! blocking pool) and hands back a preview.
//!
//! Run with `cargo bench -p iris-executor --bench load`. `IRIS_LOAD_CALLS` (default
//! 10000) and `IRIS_LOAD_ROUNDS` (default 3) change the size; `IRIS_LOAD_WORKERS` the
//! runtime's worker threads (default: the machine's cores).
#![allow(clippy::unwrap_used, clippy::expect_used)] // A broken fixture should stop the run loudly.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use iris_executor::{
    AfterOutcome, BeforeOutcome, BodyStatus, CircuitBreaker, DefaultPermissionPolicy, ToolExecutor,
    ToolHookDispatcher,
};
use iris_tools_core::{
    BoxFuture, FnTool, ToolCapability, ToolDefinition, ToolExecutionContext, ToolOutput,
    ToolRegistry, ToolResult, ToolUse,
};
use serde_json::{Value, json};

/// No round may take longer than this: 10,000 calls finish in well under a second
/// on two cores, so reaching it means calls are stuck.
const DEADLOCK_BOUND: Duration = Duration::from_secs(120);
/// One call in this many is a large one.
const LARGE_EVERY: usize = 10;
/// The large tool's `max_result_chars`, and the size of its body.
const MAX_RESULT_CHARS: usize = 2_000;
const LARGE_BODY_CHARS: usize = 8_000;

/// How many calls each hook point saw.
#[derive(Default)]
struct Counters {
    before: AtomicUsize,
    after: AtomicUsize,
}

/// Hooks that do a little async work and count what they saw.
struct LoadHooks(Arc<Counters>);

impl ToolHookDispatcher for LoadHooks {
    fn before_tool<'a>(
        &'a self,
        _ctx: &'a ToolExecutionContext,
        _call_id: &'a str,
        _tool_name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, BeforeOutcome> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            // A policy lookup's worth of work: read the arguments.
            let _ = arguments.get("n").and_then(Value::as_u64);
            tokio::time::sleep(Duration::from_micros(200)).await;
            self.0.before.fetch_add(1, Ordering::Relaxed);
            BeforeOutcome::Continue
        })
    }

    fn after_tool<'a>(
        &'a self,
        _ctx: &'a ToolExecutionContext,
        _call_id: &'a str,
        _tool_name: &'a str,
        arguments: &'a Value,
        result: &'a ToolOutput,
        _status: BodyStatus,
    ) -> BoxFuture<'a, AfterOutcome> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            let n = self.0.after.fetch_add(1, Ordering::Relaxed);
            let _ = result.is_error();
            AfterOutcome {
                feedback: if n.is_multiple_of(100) {
                    vec![format!("audited call {}", arguments["n"])]
                } else {
                    Vec::new()
                },
                additional_context: Vec::new(),
            }
        })
    }
}

fn definition(name: &str, max_result_chars: usize) -> ToolDefinition {
    ToolDefinition::new(
        name,
        "Answer after a short wait.",
        json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"]}),
    )
    .with_capabilities([ToolCapability::Read])
    .with_max_result_chars(max_result_chars)
}

fn executor(counters: Arc<Counters>) -> ToolExecutor {
    let registry = ToolRegistry::new();
    registry
        .register(FnTool::new(
            definition("small", 50_000),
            |input: Value, _ctx| async move {
                let n = input["n"].as_u64().unwrap_or_default();
                // Bodies wait 0–2 ms, like a quick local read.
                tokio::time::sleep(Duration::from_micros(n % 2_000)).await;
                ToolOutput::text(format!("small {n}"))
            },
        ))
        .unwrap();
    registry
        .register(FnTool::new(
            definition("large", MAX_RESULT_CHARS),
            |input: Value, _ctx| async move {
                let n = input["n"].as_u64().unwrap_or_default();
                tokio::task::yield_now().await;
                let line = format!("line of call {n}\n");
                ToolOutput::text(line.repeat(LARGE_BODY_CHARS / line.len() + 1))
            },
        ))
        .unwrap();
    ToolExecutor::new(registry)
        .with_permission_policy(DefaultPermissionPolicy::default())
        .with_circuit_breaker(CircuitBreaker::default())
        .with_hook_dispatcher(LoadHooks(counters))
}

/// `VmHWM` (peak resident set) or `VmRSS` of this process, in KiB.
fn proc_status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or_else(|| "n/a".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|v| *v > 0)
        .unwrap_or(default)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

struct Round {
    wall: Duration,
    latencies: Vec<Duration>,
    artifacts: usize,
}

/// Fires `calls` calls at once and waits for all of them, or fails after the bound.
async fn round(
    executor: &ToolExecutor,
    ctx: &ToolExecutionContext,
    round: usize,
    calls: usize,
) -> Result<Round, String> {
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(calls);
    for i in 0..calls {
        let executor = executor.clone();
        let ctx = ctx.clone();
        let tool = if i.is_multiple_of(LARGE_EVERY) {
            "large"
        } else {
            "small"
        };
        let call = ToolUse::new(format!("r{round}-c{i}"), tool, json!({"n": i}));
        tasks.push(tokio::spawn(async move {
            let t = Instant::now();
            let result: ToolResult = executor.execute_one(&call, &ctx, None).await;
            (t.elapsed(), result)
        }));
    }
    let all = async {
        let mut out = Vec::with_capacity(calls);
        for task in tasks {
            out.push(task.await.map_err(|e| format!("a call task failed: {e}"))?);
        }
        Ok::<_, String>(out)
    };
    let results = tokio::time::timeout(DEADLOCK_BOUND, all)
        .await
        .map_err(|_| {
            format!(
                "DEADLOCK: {calls} calls did not all complete within {} s",
                DEADLOCK_BOUND.as_secs()
            )
        })??;
    let wall = started.elapsed();
    let mut latencies = Vec::with_capacity(calls);
    let mut artifacts = 0;
    for (i, (latency, result)) in results.into_iter().enumerate() {
        if result.is_error() {
            return Err(format!("call {i} failed: {}", result.model_content()));
        }
        if i.is_multiple_of(LARGE_EVERY) {
            let artifact = result.output.artifact.as_ref().ok_or_else(|| {
                format!(
                    "large call {i} kept its whole body: {:?}",
                    result.output.artifact_error
                )
            })?;
            let path = artifact
                .text_path
                .as_ref()
                .ok_or("an artifact without a path")?;
            if std::fs::metadata(path).map(|m| m.len()).unwrap_or(0) < LARGE_BODY_CHARS as u64 {
                return Err(format!("artifact {} is missing or short", path.display()));
            }
            artifacts += 1;
        }
        latencies.push(latency);
    }
    latencies.sort_unstable();
    Ok(Round {
        wall,
        latencies,
        artifacts,
    })
}

fn main() -> ExitCode {
    // `cargo bench` passes `--bench`; a plain harness has nothing to filter.
    let calls = env_usize("IRIS_LOAD_CALLS", 10_000);
    let rounds = env_usize("IRIS_LOAD_ROUNDS", 3);
    let workers = env_usize(
        "IRIS_LOAD_WORKERS",
        std::thread::available_parallelism().map_or(2, usize::from),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("a multi-thread runtime");
    let workspace = tempfile::tempdir().expect("a temporary workspace");
    let hooks = Arc::new(Counters::default());
    let executor = executor(Arc::clone(&hooks));
    let ctx = ToolExecutionContext::new(workspace.path()).session_id("load");
    let baseline = proc_status_kib("VmRSS:");

    println!(
        "load: {calls} concurrent calls per round, {rounds} rounds, {workers} worker threads, \
         1 in {LARGE_EVERY} saved as an artifact"
    );
    println!(
        "| round | wall | throughput | p50 | p90 | p99 | max | artifacts | peak RSS (VmHWM) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut all = Vec::new();
    for r in 1..=rounds {
        // A watchdog outside the runtime: it fires even if every worker thread is stuck
        // in a synchronous deadlock, where the runtime's own timer could not.
        let (done, watch) = std::sync::mpsc::channel::<()>();
        let watchdog = std::thread::spawn(move || {
            if watch.recv_timeout(DEADLOCK_BOUND + Duration::from_secs(10))
                == Err(RecvTimeoutError::Timeout)
            {
                eprintln!("load: FAILED: DEADLOCK: round {r} is still running past the bound");
                std::process::exit(2);
            }
        });
        let outcome = runtime.block_on(round(&executor, &ctx, r, calls));
        let _ = done.send(());
        let _ = watchdog.join();
        let round = match outcome {
            Ok(round) => round,
            Err(message) => {
                eprintln!("load: FAILED: {message}");
                return ExitCode::FAILURE;
            }
        };
        let l = &round.latencies;
        println!(
            "| {r} | {} | {:.0} calls/s | {} | {} | {} | {} | {} | {} |",
            ms(round.wall),
            calls as f64 / round.wall.as_secs_f64(),
            ms(percentile(l, 50.0)),
            ms(percentile(l, 90.0)),
            ms(percentile(l, 99.0)),
            ms(percentile(l, 100.0)),
            round.artifacts,
            mib(proc_status_kib("VmHWM:")),
        );
        all.extend(round.latencies);
    }
    all.sort_unstable();
    let expected = calls * rounds;
    let (before, after) = (
        hooks.before.load(Ordering::Relaxed),
        hooks.after.load(Ordering::Relaxed),
    );
    println!(
        "all rounds: p50 {}, p99 {}, max {}; hooks before/after {before}/{after} of {expected}; \
         RSS before the first round {}, peak {}",
        ms(percentile(&all, 50.0)),
        ms(percentile(&all, 99.0)),
        ms(percentile(&all, 100.0)),
        mib(baseline),
        mib(proc_status_kib("VmHWM:")),
    );
    if before != expected || after != expected {
        eprintln!("load: FAILED: the hooks saw {before}/{after} calls, expected {expected}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
