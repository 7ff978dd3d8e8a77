//! The serve module as a library host uses it: an executor of its own (here with a
//! short heartbeat) served over streamable HTTP, driven by the official Python SDK's
//! client (`serve_client.py`). The `iris mcp serve` command is tested in iris-cli.

use std::time::Duration;

use iris_executor::ToolExecutor;
use iris_mcp::serve::{HttpOptions, McpToolServer};
use iris_tools_core::{
    CancellationSignal, FnTool, ToolCapability, ToolDefinition, ToolOutput, ToolRegistry,
};
use serde_json::{Value, json};

use crate::support::{fixtures, python};

/// A long call's heartbeats reach the client as `notifications/progress` for its
/// token (seconds run, of the deadline), in both protocol eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_call_reports_progress_to_the_client() {
    let registry = ToolRegistry::new();
    let def = ToolDefinition::new(
        "slow",
        "Wait a moment, then answer.",
        json!({"type": "object"}),
    )
    .with_capabilities([ToolCapability::Read]);
    registry
        .register(FnTool::new(def, |_, _| async {
            tokio::time::sleep(Duration::from_millis(900)).await;
            ToolOutput::text("done")
        }))
        .unwrap();
    let executor = ToolExecutor::new(registry)
        .with_heartbeat_interval(Duration::from_millis(150))
        .with_default_timeout(Duration::from_secs(20));
    let workspace = tempfile::tempdir().unwrap();
    let server = McpToolServer::new(executor, workspace.path());
    let bound = server
        .bind_http(HttpOptions::new("127.0.0.1:0".parse().unwrap()))
        .await
        .unwrap();
    let url = format!("http://{}/mcp", bound.local_addr().unwrap());
    let shutdown = CancellationSignal::new();
    let serving = tokio::spawn({
        let shutdown = shutdown.clone();
        async move { bound.run(&shutdown).await }
    });

    for mode in ["auto", "legacy"] {
        let script = json!({
            "http": {"url": url},
            "mode": mode,
            "elicit": null,
            "steps": [{"op": "call", "name": "slow", "args": {}, "progress": true}],
        });
        let out = tokio::process::Command::new(python())
            .arg(fixtures().join("serve_client.py"))
            .arg(script.to_string())
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out: Value = serde_json::from_slice(&out.stdout).unwrap();
        let result = &out["results"][0];
        assert_eq!(result["texts"], json!(["done"]), "{out}");
        let progress = result["progress"].as_array().unwrap();
        assert!(!progress.is_empty(), "{mode}: no progress: {out}");
        let first = &progress[0];
        assert_eq!(first["total"], 20.0, "{out}");
        assert!(first["progress"].as_f64().unwrap() > 0.0, "{out}");
        assert!(
            first["message"]
                .as_str()
                .unwrap()
                .starts_with("`slow` running for"),
            "{out}"
        );
    }
    shutdown.cancel();
    serving.await.unwrap().unwrap();
}
