//! Startup of 24 Python-SDK stdio servers at once against the slowest of the same
//! servers started alone (issue 21): with concurrent startup, `prepare` of 24
//! should cost about the slowest single server plus the machine's contention, not
//! the sum.
//!
//! Each round starts the 24 servers one at a time (`prepare` + `close` of a
//! one-server manager each, timed separately) and then all 24 in one manager. It
//! prints, per round, the slowest and the median single startup, their sum, and
//! the wall time of all 24 at once with its ratio to the slowest single one.
//!
//! Run with `cargo bench -p iris-mcp --bench startup` (`IRIS_STARTUP_SERVERS`,
//! default 24; `IRIS_STARTUP_ROUNDS`, default 3). It fails when a server does not
//! start.
#![allow(clippy::unwrap_used, clippy::expect_used)] // A broken fixture should stop the run loudly.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use iris_mcp::{ConfigFormat, MCPConfig, MCPManager, McpOverrides};
use iris_tools_core::ToolRegistry;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp")
}

fn python() -> String {
    let out = Command::new("bash")
        .arg(fixtures().join("setup.sh"))
        .output()
        .expect("run setup.sh");
    assert!(out.status.success(), "setup.sh failed");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A config of the servers `names`, each the SDK fixture, with a startup budget
/// wide enough for a loaded machine.
fn config(python: &str, names: &[String]) -> MCPConfig {
    let entry = format!(
        r#"{{"command": {}, "args": [{}], "startup_timeout_sec": 300}}"#,
        serde_json::to_string(python).unwrap(),
        serde_json::to_string(&fixtures().join("sdk_server.py")).unwrap()
    );
    let body = names
        .iter()
        .map(|n| format!(r#""{n}": {entry}"#))
        .collect::<Vec<_>>()
        .join(",");
    MCPConfig::from_str(
        &format!(r#"{{"mcpServers": {{{body}}}}}"#),
        ConfigFormat::Json,
        fixtures().join("bench.json"),
        &McpOverrides::new(),
    )
    .unwrap()
}

/// `prepare` + `close` of one manager over `names`; its wall time.
async fn start(python: &str, names: &[String], workspace: &Path) -> Duration {
    let manager = MCPManager::new(config(python, names), ToolRegistry::new(), workspace, false);
    let began = Instant::now();
    let snapshot = manager.prepare().await.unwrap();
    let took = began.elapsed();
    assert_eq!(snapshot.servers.len(), names.len());
    manager.close().await;
    took
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> ExitCode {
    let servers = env_usize("IRIS_STARTUP_SERVERS", 24).max(1);
    let rounds = env_usize("IRIS_STARTUP_ROUNDS", 3).max(1);
    let python = python();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..servers).map(|i| format!("s{i:02}")).collect();
    println!(
        "| round | slowest single | median single | sum of singles | {servers} at once | at once / slowest |"
    );
    println!("|---|---|---|---|---|---|");
    for round in 1..=rounds {
        let mut singles: Vec<Duration> = runtime.block_on(async {
            let mut out = Vec::new();
            for name in &names {
                out.push(start(&python, std::slice::from_ref(name), workspace.path()).await);
            }
            out
        });
        singles.sort();
        let slowest = *singles.last().unwrap();
        let median = singles[singles.len() / 2];
        let sum: Duration = singles.iter().sum();
        let all = runtime.block_on(start(&python, &names, workspace.path()));
        println!(
            "| {round} | {:.2} s | {:.2} s | {:.1} s | {:.2} s | {:.1}× |",
            slowest.as_secs_f64(),
            median.as_secs_f64(),
            sum.as_secs_f64(),
            all.as_secs_f64(),
            all.as_secs_f64() / slowest.as_secs_f64()
        );
    }
    ExitCode::SUCCESS
}
