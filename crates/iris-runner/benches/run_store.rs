//! Benchmarks: what persisting a run costs per turn, and 1,000 waiting runs.
//!
//! **Per turn.** The same scripted run — `N` (10) tool turns, each with one trivial
//! read-only call, then the final answer — with no store (the in-memory loop), with
//! [`MemoryRunStore`], with SQLite (a file in a temporary folder, WAL) and with
//! PostgreSQL (the throw-away cluster `.ci/postgres.sh` starts on 127.0.0.1). A run
//! with a store writes, per tool turn: the record after the model's turn, a `planned`,
//! a `started` and a `finished` journal row per call, and the record after the turn's
//! results; plus the create and the final save per run. Per-turn overhead is
//! `(run_store − run_none) / N`, the run's fixed cost spread over its turns.
//!
//! **1,000 waiting runs.** 1,000 runs each stop waiting for an approval (SQLite); the
//! resident set is read before and after, then all 1,000 are resumed — at most 64 at
//! a time — and each completes. Reported: the time to create and to resume them, and
//! the resident-set growth, which stays bounded because a waiting run lives in the
//! store, not in memory.
//!
//! Run with `cargo bench -p iris-runner --bench run_store` (`cargo xtask bench` runs
//! it); `IRIS_BENCH_ROUNDS` sets the per-turn rounds (default 200).
#![allow(clippy::unwrap_used, clippy::expect_used)] // A broken fixture should stop the run loudly.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use iris_executor::{ApprovalMode, DefaultPermissionPolicy, ToolExecutor};
use iris_providers::ScriptedProvider;
use iris_runner::{
    AgentRunner, Answer, MemoryRunStore, PostgresRunStore, RunOutcome, RunStore, SqliteRunStore,
};
use iris_tools_core::{FnTool, ToolCapability, ToolDefinition, ToolOutput, ToolRegistry};
use serde_json::json;

const TURNS: usize = 10;

fn script() -> String {
    let mut s = String::from("- tool_calls: [{name: echo, arguments: {text: hi}}]\n");
    for _ in 1..TURNS {
        s.push_str(
            "- {expect_tool_results: 1, tool_calls: [{name: echo, arguments: {text: hi}}]}\n",
        );
    }
    s.push_str("- {expect_tool_results: 1, text: done}\n");
    s
}

fn executor() -> ToolExecutor {
    let registry = ToolRegistry::new();
    let def = ToolDefinition::new(
        "echo",
        "Echoes the text.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
    )
    .with_capabilities([ToolCapability::Read]);
    registry
        .register(FnTool::new(def, |input: serde_json::Value, _| async move {
            ToolOutput::text(input["text"].as_str().unwrap_or("").to_owned())
        }))
        .unwrap();
    let write = ToolDefinition::new("deploy", "Deploys.", json!({"type": "object"}))
        .with_capabilities([ToolCapability::Write]);
    registry
        .register(FnTool::new(write, |_, _| async {
            ToolOutput::text("deployed")
        }))
        .unwrap();
    ToolExecutor::new(registry)
        .with_permission_policy(DefaultPermissionPolicy::new().write_mode(ApprovalMode::Confirm))
}

fn runner(store: Option<Arc<dyn RunStore>>, script: &str, root: &Path) -> AgentRunner {
    let mut builder =
        AgentRunner::builder(ScriptedProvider::from_yaml(script).unwrap(), executor())
            .workspace(root);
    if let Some(store) = store {
        builder = builder.run_store(store);
    }
    builder.build()
}

/// The resident set size in KiB, from `/proc/self/status`.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
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
            .unwrap_or(200);
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let script = script();
        let sqlite: Arc<dyn RunStore> = Arc::new(SqliteRunStore::open(root.join("runs.db")).await.unwrap());
        let postgres: Arc<dyn RunStore> = Arc::new(PostgresRunStore::connect(iris_test_support::postgres::cluster_url()).await.unwrap());
        let memory: Arc<dyn RunStore> = Arc::new(MemoryRunStore::new());
        let variants: [(&str, Option<Arc<dyn RunStore>>); 4] = [
            ("none", None),
            ("memory", Some(memory)),
            ("sqlite", Some(sqlite)),
            ("postgres", Some(postgres)),
        ];
        // Paired rounds: each round runs every variant once, so drift hits all alike.
        let mut totals = [Duration::ZERO; 4];
        for _ in 0..rounds {
            for (i, (_, store)) in variants.iter().enumerate() {
                let r = runner(store.clone(), &script, &root);
                let start = Instant::now();
                let outcome = r.run("go").await;
                totals[i] += start.elapsed();
                assert!(matches!(outcome, RunOutcome::Completed { .. }), "{outcome:?}");
            }
        }
        let per_run = |i: usize| totals[i].as_secs_f64() * 1e6 / rounds as f64;
        let base = per_run(0);
        println!("run store, per tool turn ({TURNS} tool turns per run, {rounds} paired rounds):");
        for (i, (name, _)) in variants.iter().enumerate() {
            let run = per_run(i);
            println!(
                "  {name:<9} run {run:>9.1} µs   per turn {:>8.1} µs   store overhead per turn {:>8.1} µs",
                run / (TURNS as f64 + 1.0),
                (run - base) / TURNS as f64
            );
        }

        // 1,000 waiting runs, then all resumed.
        let db = root.join("waiting.db");
        let store: Arc<dyn RunStore> = Arc::new(SqliteRunStore::open(&db).await.unwrap());
        let waiting_script = "- tool_calls: [{name: deploy}]\n- {expect_tool_results: 1, text: live}\n";
        let before = rss_kib();
        let start = Instant::now();
        let mut waiting = Vec::with_capacity(1000);
        for _ in 0..1000 {
            let r = runner(Some(Arc::clone(&store)), waiting_script, &root);
            match r.run("ship").await {
                RunOutcome::Waiting { run_id, interaction } => {
                    waiting.push((run_id, interaction.id().to_owned()));
                }
                other => panic!("{other:?}"),
            }
        }
        let created = start.elapsed();
        let after_wait = rss_kib();
        let start = Instant::now();
        let semaphore = Arc::new(tokio::sync::Semaphore::new(64));
        let mut tasks = Vec::with_capacity(waiting.len());
        for (run_id, interaction_id) in waiting {
            let permit = Arc::clone(&semaphore).acquire_owned().await.unwrap();
            let r = runner(Some(Arc::clone(&store)), waiting_script, &root);
            tasks.push(tokio::spawn(async move {
                let outcome = r.resume(&run_id, &interaction_id, Answer::Approve).await.unwrap();
                drop(permit);
                outcome.output() == Some("live")
            }));
        }
        let mut completed = 0;
        for t in tasks {
            completed += usize::from(t.await.unwrap());
        }
        let resumed = start.elapsed();
        let after_resume = rss_kib();
        println!(
            "1,000 waiting runs (SQLite): created in {:.2} s, resumed (64 at a time) in {:.2} s, \
             {completed} completed; RSS {before} KiB before, {after_wait} KiB with 1,000 waiting \
             (+{} KiB, {:.1} KiB per waiting run), {after_resume} KiB after resuming all",
            created.as_secs_f64(),
            resumed.as_secs_f64(),
            after_wait.saturating_sub(before),
            after_wait.saturating_sub(before) as f64 / 1000.0,
        );
        assert_eq!(completed, 1000);
    });
}
