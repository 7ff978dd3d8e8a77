//! MCP tools through iris-executor's `ToolExecutor`, end to end: schema validation, the default
//! permission policy (MCP auto-allowed only when trusted read-only), parallel windows,
//! the runtime deadline with cancellation sent to the server, and large results saved
//! as artifacts.

use std::time::Duration;

use iris_executor::DefaultPermissionPolicy;
use iris_executor::ToolExecutor;
use iris_mcp::{McpOverrides, ServerOverride, codes};
use iris_tools_core::{ToolUse, codes as core_codes};
use serde_json::json;

use crate::support::{Harness, config, sdk_stdio, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_run_through_the_executor() {
    let trusted = ServerOverride {
        trust_annotations: Some(true),
        ..Default::default()
    };
    let overrides: McpOverrides = [("srv".to_owned(), trusted)].into_iter().collect();
    let h = Harness::new(config(&[("srv", sdk_stdio(&[]))], &overrides));
    h.manager.prepare().await.unwrap();
    let executor = ToolExecutor::new(h.registry.clone())
        .with_permission_policy(DefaultPermissionPolicy::default());
    let ctx = h.ctx("");

    // Trusted read-only calls are auto-allowed and form one parallel window; an
    // untrusted MCP tool needs a human.
    let calls = vec![
        ToolUse::new("c1", "mcp__srv__echo", json!({"text": "one"})),
        ToolUse::new("c2", "mcp__srv__echo", json!({"text": "two"})),
        ToolUse::new("c3", "mcp__srv__add", json!({"a": 1, "b": 2})),
    ];
    let plan = executor.prepare_many(&calls, &ctx);
    assert!(plan.batches()[0].is_parallel() && plan.batches()[0].len() == 2);
    let results = executor.execute_many(&calls, &ctx).await;
    assert_eq!(results[0].model_content(), "one");
    assert_eq!(results[1].model_content(), "two");
    assert_eq!(
        (
            results[0].tool_use_id.as_str(),
            results[0].tool_name.as_str()
        ),
        ("c1", "mcp__srv__echo")
    );
    assert_eq!(
        results[2].error_code(),
        Some(core_codes::APPROVAL_REQUIRED),
        "{:?}",
        results[2]
    );

    // Approved, it runs; structured content and the raw-result artifact come through.
    let add = &calls[2];
    let r = executor.execute_one(add, &ctx, Some("c3")).await;
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(r.output.data["structured_content"], json!({"sum": 3}));
    assert!(
        r.output
            .artifact
            .as_ref()
            .unwrap()
            .path
            .ends_with("c3.mcp.json")
    );

    // The executor validates the input against the server's schema before any call.
    let bad = ToolUse::new("c4", "mcp__srv__echo", json!({"text": 5}));
    let r = executor.execute_one(&bad, &ctx, None).await;
    assert_eq!(r.error_code(), Some(core_codes::INVALID_INPUT), "{r:?}");

    // The runtime deadline cuts a hanging call, and the server is told to cancel.
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("cancelled");
    let hang = ToolUse::new(
        "c5",
        "mcp__srv__hang",
        json!({"marker": marker.display().to_string()}),
    );
    let short = h.ctx("").tool_timeout(Duration::from_secs(1));
    let r = executor.execute_one(&hang, &short, Some("c5")).await;
    assert_eq!(r.error_code(), Some(core_codes::TOOL_TIMEOUT), "{r:?}");
    assert!(
        wait_until(Duration::from_secs(20), || marker.exists()),
        "no notifications/cancelled"
    );

    // isError is an error result through the executor too.
    let fail = ToolUse::new("c6", "mcp__srv__fail", json!({"message": "nope"}));
    let r = executor.execute_one(&fail, &ctx, Some("c6")).await;
    assert_eq!(r.error_code(), Some(codes::MCP_TOOL_ERROR));

    // A 20 MB body is saved whole and replaced by a preview; the artifact keeps the
    // raw MCP result and gains the saved body's path.
    let big = ToolUse::new("c7", "mcp__srv__big", json!({"megabytes": 20}));
    let r = executor.execute_one(&big, &ctx, Some("c7")).await;
    assert!(!r.is_error(), "{:?}", r.output.error_info());
    assert!(r.model_content().len() < 100_000);
    let saved = r.output.artifact.as_ref().unwrap();
    assert!(saved.path.ends_with("c7.mcp.json"), "{saved:?}");
    let body = saved.text_path.as_ref().unwrap();
    assert_eq!(std::fs::metadata(body).unwrap().len(), 20 * 1024 * 1024);
    let raw = r.output.metadata["mcp"]["raw_result_path"]
        .as_str()
        .unwrap();
    assert_eq!(std::path::Path::new(raw), saved.path);
    h.manager.close().await;
}
