//! Tracing: one span per call with OpenTelemetry GenAI attribute names, and the
//! heartbeat event (`running name=.. elapsed=..s/..s` every 30 s).

use std::time::Duration;

use iris_executor::ToolExecutor;
use iris_tools_core::{ToolCapability as Cap, ToolOutput, ToolRegistry, ToolUse};
use serde_json::json;

use super::fixtures::{Recorder, ctx, def, register};

#[tokio::test]
async fn every_call_has_a_gen_ai_execute_tool_span() {
    let recorder = Recorder::default();
    let _guard = tracing::subscriber::set_default(recorder.clone());
    let registry = ToolRegistry::new();
    register(
        &registry,
        def("read_config", &[Cap::Read]).with_aliases(["cfg"]),
        |_, _| async { ToolOutput::text("INFO") },
    );
    let executor = ToolExecutor::new(registry);
    for call in [
        ToolUse::new("call_1", "cfg", json!({})),
        ToolUse::new("call_2", "missing", json!({})),
        ToolUse::new("call_3", "read_config", json!("not an object")),
    ] {
        executor.execute_one(&call, &ctx(), None).await;
    }
    insta::assert_json_snapshot!(recorder.spans());
}

/// (tool timeout, heartbeat interval, expected heartbeat messages)
#[tokio::test(start_paused = true)]
async fn a_running_body_reports_a_heartbeat() {
    let table: [(u64, Duration, &[&str]); 3] = [
        (
            95,
            Duration::from_secs(30),
            &[
                "running name=slow elapsed=30s/95s",
                "running name=slow elapsed=60s/95s",
                "running name=slow elapsed=90s/95s",
            ],
        ),
        (25, Duration::from_secs(30), &[]),
        (5, Duration::ZERO, &[]),
    ];
    for (timeout, interval, expect) in table {
        let recorder = Recorder::default();
        let _guard = tracing::subscriber::set_default(recorder.clone());
        let registry = ToolRegistry::new();
        register(
            &registry,
            def("slow", &[Cap::Read]).with_timeout(Duration::from_secs(timeout)),
            |_, _| async {
                std::future::pending::<()>().await;
                ToolOutput::text("unreachable")
            },
        );
        let executor = ToolExecutor::new(registry).with_heartbeat_interval(interval);
        let result = executor
            .execute_one(&ToolUse::new("c", "slow", json!({})), &ctx(), None)
            .await;
        assert_eq!(result.error_code(), Some("TOOL_TIMEOUT"));
        let beats: Vec<String> = recorder
            .events()
            .into_iter()
            .filter(|e| e.target == "iris::executor" && e.level == "INFO")
            .filter_map(|e| e.fields.get("message").cloned())
            .collect();
        assert_eq!(beats, expect, "timeout {timeout} s, interval {interval:?}");
    }
}
