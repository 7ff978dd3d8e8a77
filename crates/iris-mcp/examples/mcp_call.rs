//! Load an MCP config, start its servers, list their tools and call one.
//!
//! ```text
//! cargo run -p iris-mcp --example mcp_call -- <mcp.json|.mcp.json|config.toml> [TOOL] [JSON_ARGS]
//! ```
//!
//! With only a config path it prints the catalog; with a tool name (the Iris name,
//! `mcp__<server>__<tool>`) it also calls the tool through iris-executor's `ToolExecutor` with
//! the given JSON arguments.
//! Example with the packaged time server:
//!
//! ```text
//! echo '{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}' > /tmp/mcp.json
//! cargo run -p iris-mcp --example mcp_call -- /tmp/mcp.json mcp__time__get_current_time '{"timezone": "UTC"}'
//! ```

use std::process::ExitCode;

use iris_executor::ToolExecutor;
use iris_mcp::{MCPManager, McpOverrides, load_mcp_config};
use iris_tools_core::{ToolExecutionContext, ToolRegistry, ToolUse};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: mcp_call <config> [TOOL] [JSON_ARGS]");
        return ExitCode::from(2);
    };
    let config = match load_mcp_config(&path, &McpOverrides::new()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{}: {e}", e.code());
            return ExitCode::FAILURE;
        }
    };
    let workspace = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let registry = ToolRegistry::new();
    let manager = MCPManager::new(config, registry.clone(), &workspace, false);
    let snapshot = match manager.prepare().await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}: {e}", e.code());
            return ExitCode::FAILURE;
        }
    };
    for server in &snapshot.servers {
        println!(
            "server {} ({}): {:?}, protocol {}",
            server.name,
            server.transport,
            server.status,
            server.protocol_version.as_deref().unwrap_or("-")
        );
    }
    for tool in &snapshot.tools {
        println!("  {}  ({} / {})", tool.name, tool.server, tool.wire_name);
    }
    for d in &snapshot.diagnostics {
        println!("  ! {} {}: {}", d.server, d.code, d.message);
    }
    let mut code = ExitCode::SUCCESS;
    if let Some(name) = args.next() {
        let input = match args.next().map(|a| serde_json::from_str(&a)) {
            None => serde_json::json!({}),
            Some(Ok(v)) => v,
            Some(Err(e)) => {
                eprintln!("JSON_ARGS is not JSON: {e}");
                manager.close().await;
                return ExitCode::from(2);
            }
        };
        // The same path every tool call travels: schema validation, deadline,
        // artifacts. The example runs without a permission policy: you asked for the
        // call on the command line.
        let executor = ToolExecutor::new(registry.clone());
        let ctx = ToolExecutionContext::new(&workspace).session_id("example");
        let result = executor
            .execute_one(&ToolUse::new("call_1", name, input), &ctx, None)
            .await;
        println!("{}", result.model_content());
        if let Some(artifact) = &result.output.artifact {
            println!("(raw result: {})", artifact.path.display());
        }
        if result.is_error() {
            code = ExitCode::FAILURE;
        }
    }
    manager.close().await;
    code
}
