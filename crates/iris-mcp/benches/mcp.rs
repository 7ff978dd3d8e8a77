//! Benchmarks of the MCP layer against real Python SDK servers.
//!
//! - `call_roundtrip_stdio`: one `echo` call through `McpTool::run` over stdio. Compare
//!   with `benches/python_client_roundtrip.py`, the Python SDK's own client against the
//!   same server.
//! - `startup`: `prepare` + `close` of 1, 8 and 24 servers; they start concurrently,
//!   so the ratio shows how much parallel startup saves (issue 21 compares 24 servers
//!   with the slowest single one).
//!
//! Run: `cargo bench -p iris-mcp --bench mcp` (the Python venv is created on first use).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use iris_mcp::{ConfigFormat, MCPConfig, MCPManager, McpOverrides};
use iris_tools_core::{Tool, ToolExecutionContext, ToolInput, ToolRegistry};
use serde_json::json;

fn main() {
    divan::main();
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("tokio runtime: {e}"))
    })
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp")
}

fn python() -> &'static str {
    static PY: OnceLock<String> = OnceLock::new();
    PY.get_or_init(|| {
        let out = Command::new("bash")
            .arg(fixtures().join("setup.sh"))
            .output()
            .unwrap_or_else(|e| panic!("setup.sh: {e}"));
        assert!(out.status.success(), "setup.sh failed");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    })
}

fn config(servers: usize) -> MCPConfig {
    let entry = format!(
        r#"{{"command": {}, "args": [{}]}}"#,
        serde_json::to_string(python()).unwrap_or_default(),
        serde_json::to_string(&fixtures().join("sdk_server.py")).unwrap_or_default()
    );
    let body = (0..servers)
        .map(|i| format!(r#""s{i}": {entry}"#))
        .collect::<Vec<_>>()
        .join(",");
    MCPConfig::from_str(
        &format!(r#"{{"mcpServers": {{{body}}}}}"#),
        ConfigFormat::Json,
        fixtures().join("bench.json"),
        &McpOverrides::new(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

struct Prepared {
    _manager: MCPManager,
    tool: Arc<dyn Tool>,
    ctx: ToolExecutionContext,
    _workspace: tempfile::TempDir,
}

fn prepared() -> &'static Prepared {
    static P: OnceLock<Prepared> = OnceLock::new();
    P.get_or_init(|| {
        let workspace = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let registry = ToolRegistry::new();
        let manager = MCPManager::new(config(1), registry.clone(), workspace.path(), false);
        runtime()
            .block_on(manager.prepare())
            .unwrap_or_else(|e| panic!("{e}"));
        let tool = registry
            .get("mcp__s0__echo")
            .unwrap_or_else(|e| panic!("{e}"));
        let ctx = ToolExecutionContext::new(workspace.path()).session_id("bench");
        Prepared {
            _manager: manager,
            tool,
            ctx,
            _workspace: workspace,
        }
    })
}

#[divan::bench(sample_count = 200)]
fn call_roundtrip_stdio(bencher: divan::Bencher<'_, '_>) {
    let p = prepared();
    bencher.bench(|| {
        let input = ToolInput::new(json!({"text": "ping"}));
        let r = runtime().block_on(p.tool.run(input, &p.ctx));
        assert!(!r.is_error());
        r
    });
}

#[divan::bench(args = [1, 8, 24], sample_count = 3, sample_size = 1)]
fn startup(bencher: divan::Bencher<'_, '_>, servers: usize) {
    let workspace = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    bencher.bench_local(|| {
        let manager = MCPManager::new(
            config(servers),
            ToolRegistry::new(),
            workspace.path(),
            false,
        );
        runtime().block_on(async {
            manager.prepare().await.unwrap_or_else(|e| panic!("{e}"));
            manager.close().await;
        });
    });
}
