//! The tasks extension (SEP-2663) against the Python SDK fixture: a tool the server
//! runs as a task is polled to completion within the call's deadline, and a task
//! given up on (the cap, the host's cancellation) is cancelled on the server.

use std::time::Duration;

use iris_mcp::ServerOverride;
use iris_tools_core::{CancellationSignal, ToolInput, codes as core_codes};
use serde_json::json;

use crate::support::{Harness, config, sdk_stdio, wait_until};

fn harness(max: f64) -> Harness {
    let o = ServerOverride {
        tool_timeout_sec: Some(max.min(30.0)),
        tool_max_sec: Some(max),
        ..Default::default()
    };
    Harness::new(config(
        &[("t", sdk_stdio(&["--extra-tools"]))],
        &[("t".to_owned(), o)].into(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_polled_to_completion() {
    let h = harness(60.0);
    h.manager.prepare().await.unwrap();
    let r = h.call("mcp__t__slow_task", json!({"seconds": 1.0})).await;
    assert!(!r.is_error(), "{r:?}");
    // The inline body would say "done inline": this answer came from tasks/get.
    assert_eq!(r.model_content(), "task done after 1.0s");
    let mcp = &r.metadata["mcp"];
    assert!(
        mcp["task_id"].as_str().is_some_and(|t| !t.is_empty()),
        "{mcp}"
    );
    assert!(mcp["task_polls"].as_u64().unwrap() >= 1, "{mcp}");
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_past_its_cap_is_cancelled_on_the_server() {
    let h = harness(2.0);
    h.manager.prepare().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("cap");
    let r = h
        .call(
            "mcp__t__slow_task",
            json!({"seconds": 3600.0, "marker": marker.display().to_string()}),
        )
        .await;
    let e = r.error_info().unwrap();
    assert_eq!(e.code, core_codes::TOOL_TIMEOUT, "{e:?}");
    assert_eq!(e.details["cancellation"], "tasks/cancel");
    assert_eq!(e.details["bound"], "cap");
    assert!(
        wait_until(Duration::from_secs(20), || marker.exists()),
        "the server never saw tasks/cancel"
    );
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_cancelled_by_the_host_is_cancelled_on_the_server() {
    let h = harness(600.0);
    h.manager.prepare().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("host");
    let signal = CancellationSignal::new();
    let ctx = h.ctx("c-task").cancellation(signal.clone());
    let tool = h.registry.get("mcp__t__slow_task").unwrap();
    let input = json!({"seconds": 3600.0, "marker": marker.display().to_string()});
    let call = tool.run(ToolInput::new(input), &ctx);
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        signal.cancel();
    };
    let (r, ()) = tokio::join!(call, cancel);
    let e = r.error_info().unwrap();
    assert_eq!(e.code, core_codes::CANCELLED, "{e:?}");
    assert_eq!(e.details["cancellation"], "tasks/cancel");
    assert!(wait_until(Duration::from_secs(20), || marker.exists()));
    h.manager.close().await;
}

/// A host that answers every elicitation with one colour.
struct Colour;

impl iris_mcp::ElicitationHandler for Colour {
    fn elicit<'a>(
        &'a self,
        request: &'a iris_mcp::ElicitationRequest,
    ) -> iris_tools_core::BoxFuture<'a, iris_mcp::ElicitationAnswer> {
        assert_eq!(request.message, "Pick a colour for the task");
        Box::pin(async { iris_mcp::ElicitationAnswer::accept(json!({"colour": "violet"})) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_asks_for_input_is_answered_with_tasks_update() {
    let h = harness(60.0);
    h.manager.prepare().await.unwrap();
    let tool = h.registry.get("mcp__t__slow_task").unwrap();
    let ctx = h
        .ctx("c-ask")
        .with_extension(iris_mcp::McpElicitation::new(Colour));
    let input = json!({"seconds": 0.2, "ask": true});
    let r = tool.run(ToolInput::new(input), &ctx).await;
    assert_eq!(
        r.model_content(),
        "task done after 0.2s (accept violet)",
        "{r:?}"
    );
    assert_eq!(r.metadata["mcp"]["elicitations"][0]["action"], "accept");

    // Nobody to ask: declined (a task cannot wait for a later answer), and it goes on.
    let r = h
        .call("mcp__t__slow_task", json!({"seconds": 0.2, "ask": true}))
        .await;
    assert_eq!(
        r.model_content().lines().next(),
        Some("task done after 0.2s (decline -)"),
        "{r:?}"
    );
    h.manager.close().await;
}
