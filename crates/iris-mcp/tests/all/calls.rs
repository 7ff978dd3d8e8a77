//! Calls against the Python SDK fixture: progress keeps a long call alive up to its
//! cap and is reported as its heartbeat; a call given up on is cancelled and the
//! server sees it (stateful and stateless); structured output is checked against
//! the output schema and projected; a huge structured result is not carried twice.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use iris_executor::ToolExecutor;
use iris_mcp::tool::MAX_INLINE_STRUCTURED_BYTES;
use iris_mcp::{McpOverrides, McpProgress, McpProgressSink, ServerOverride, codes};
use iris_tools_core::{CancellationSignal, ContentBlock, ToolInput, ToolUse, codes as core_codes};
use serde_json::{Value, json};

use crate::support::{Harness, HttpServer, config, free_port, q, sdk_stdio, wait_until};

fn timeouts(idle: f64, max: f64) -> ServerOverride {
    ServerOverride {
        tool_timeout_sec: Some(idle),
        tool_max_sec: Some(max),
        ..Default::default()
    }
}

fn one(name: &str, o: ServerOverride) -> McpOverrides {
    [(name.to_owned(), o)].into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_keeps_a_long_call_alive_and_is_its_heartbeat() {
    let h = Harness::new(config(
        &[("long", sdk_stdio(&["--extra-tools"]))],
        &one("long", timeouts(3.0, 60.0)),
    ));
    h.manager.prepare().await.unwrap();
    let seen: Arc<Mutex<Vec<McpProgress>>> = Arc::default();
    let sink = {
        let seen = Arc::clone(&seen);
        McpProgressSink::new(move |p| seen.lock().unwrap().push(p.clone()))
    };

    // Eight steps half a second apart: four seconds in all, longer than the 3 s idle
    // timeout, which each progress notification restarts. Through the executor,
    // whose deadline is the tool's cap.
    let executor = ToolExecutor::new(h.registry.clone());
    let ctx = h.ctx("").with_extension(sink);
    let call = ToolUse::new(
        "p1",
        "mcp__long__progress",
        json!({"steps": 8, "interval": 0.5}),
    );
    let r = executor.execute_one(&call, &ctx, None).await;
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(r.model_content(), "done after 8 steps");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 8, "{seen:?}");
    for (i, p) in seen.iter().enumerate() {
        let step = (i + 1) as f64;
        assert_eq!(p.progress, step);
        assert_eq!(p.total, Some(8.0));
        assert_eq!(p.message.as_deref(), Some(&*format!("step {} of 8", i + 1)));
        assert_eq!(p.tool, "mcp__long__progress");
        assert_eq!(p.server, "long");
        assert_eq!(p.call_id, "p1");
        assert_eq!(
            p.remaining,
            Duration::from_secs(3),
            "the idle window restarted"
        );
    }
    assert!(seen.windows(2).all(|w| w[0].elapsed <= w[1].elapsed));
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cap_ends_a_call_that_only_reports_progress() {
    let h = Harness::new(config(
        &[("busy", sdk_stdio(&["--extra-tools"]))],
        &one("busy", timeouts(2.0, 4.0)),
    ));
    h.manager.prepare().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("cancelled");
    let r = h
        .call(
            "mcp__busy__progress_forever",
            json!({"interval": 0.3, "marker": marker.display().to_string()}),
        )
        .await;
    assert_eq!(r.error_code(), Some(core_codes::TOOL_TIMEOUT), "{r:?}");
    let e = r.error_info().unwrap();
    assert_eq!(e.details["bound"], "cap", "{e:?}");
    assert_eq!(e.details["timeout_seconds"], 4.0);
    assert!(e.details["progress_notifications"].as_u64().unwrap() > 0);
    assert_eq!(e.details["cancellation"], "notifications/cancelled");
    assert!(e.message.contains("cap of 4.000s"), "{}", e.message);
    assert!(
        wait_until(Duration::from_secs(20), || marker.exists()),
        "the server never saw notifications/cancelled"
    );

    // Without progress the idle timeout decides.
    let marker = dir.path().join("idle");
    let r = h
        .call(
            "mcp__busy__hang",
            json!({"marker": marker.display().to_string()}),
        )
        .await;
    let e = r.error_info().unwrap();
    assert_eq!(e.code, core_codes::TOOL_TIMEOUT);
    assert_eq!(e.details["bound"], "idle", "{e:?}");
    assert_eq!(e.details["timeout_seconds"], 2.0);
    assert_eq!(e.details["progress_notifications"], 0);
    assert!(wait_until(Duration::from_secs(20), || marker.exists()));
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_over_stateless_http_closes_the_request_stream() {
    let server = HttpServer::start("streamable-http");
    let entry = format!(
        r#"{{"url": {}, "tool_timeout_sec": 1}}"#,
        q(&server.url("/mcp"))
    );
    let h = Harness::new(config(&[("web", entry)], &McpOverrides::new()));
    let snap = h.manager.prepare().await.unwrap();
    assert_eq!(
        snap.server("web").unwrap().protocol_version.as_deref(),
        Some("2026-07-28")
    );
    let dir = tempfile::tempdir().unwrap();

    // Timed out: the server sees its handler cancelled when the stream closes.
    let marker = dir.path().join("timeout");
    let r = h
        .call(
            "mcp__web__hang",
            json!({"marker": marker.display().to_string()}),
        )
        .await;
    let e = r.error_info().unwrap();
    assert_eq!(e.code, core_codes::TOOL_TIMEOUT, "{e:?}");
    assert_eq!(e.details["cancellation"], "request_stream_closed");
    assert!(
        wait_until(Duration::from_secs(20), || marker.exists()),
        "the server never noticed the closed stream"
    );

    // Cancelled by the host: the same, and the result says so.
    let started = dir.path().join("started");
    let marker = dir.path().join("cancelled");
    let signal = CancellationSignal::new();
    let ctx = h.ctx("c-web").cancellation(signal.clone());
    let tool = h.registry.get("mcp__web__hang").unwrap();
    let input =
        json!({"marker": marker.display().to_string(), "started": started.display().to_string()});
    let call = tool.run(ToolInput::new(input), &ctx);
    let cancel = async {
        while !started.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        signal.cancel();
    };
    let (r, ()) = tokio::join!(call, cancel);
    let e = r.error_info().unwrap();
    assert_eq!(e.code, core_codes::CANCELLED, "{e:?}");
    assert_eq!(e.details["cancellation"], "request_stream_closed");
    assert!(wait_until(Duration::from_secs(20), || marker.exists()));
    // The server still serves.
    let r = h.call("mcp__web__echo", json!({"text": "after"})).await;
    assert_eq!(r.model_content(), "after");
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_cancellation_over_stdio_sends_notifications_cancelled() {
    let h = Harness::new(config(&[("srv", sdk_stdio(&[]))], &McpOverrides::new()));
    h.manager.prepare().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let marker = dir.path().join("cancelled");
    let signal = CancellationSignal::new();
    let ctx = h.ctx("c-stdio").cancellation(signal.clone());
    let tool = h.registry.get("mcp__srv__hang").unwrap();
    let input =
        json!({"marker": marker.display().to_string(), "started": started.display().to_string()});
    let call = tool.run(ToolInput::new(input), &ctx);
    let cancel = async {
        while !started.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        signal.cancel();
    };
    let (r, ()) = tokio::join!(call, cancel);
    let e = r.error_info().unwrap();
    assert_eq!(e.code, core_codes::CANCELLED, "{e:?}");
    assert_eq!(e.details["cancellation"], "notifications/cancelled");
    assert!(wait_until(Duration::from_secs(20), || marker.exists()));
    // With the signal already raised, nothing is sent.
    let never = dir.path().join("never-started");
    let input =
        json!({"marker": marker.display().to_string(), "started": never.display().to_string()});
    let r = tool.run(ToolInput::new(input), &ctx).await;
    assert_eq!(r.error_code(), Some(core_codes::CANCELLED), "{r:?}");
    assert!(
        r.error_info()
            .unwrap()
            .message
            .contains("before it was sent")
    );
    let r = h.call("mcp__srv__echo", json!({"text": "after"})).await;
    assert_eq!(r.model_content(), "after");
    assert!(!never.exists(), "the server never saw the cancelled call");

    // A call whose future is dropped (the executor's safety net, a lost select) is
    // withdrawn too.
    let started = dir.path().join("started-2");
    let marker = dir.path().join("dropped");
    let input =
        json!({"marker": marker.display().to_string(), "started": started.display().to_string()});
    let ctx = h.ctx("c-drop");
    let call = tool.run(ToolInput::new(input), &ctx);
    let gave_up = tokio::select! {
        _ = call => false,
        () = async {
            while !started.exists() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        } => true,
    };
    assert!(gave_up);
    assert!(
        wait_until(Duration::from_secs(20), || marker.exists()),
        "a dropped call was not cancelled"
    );
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_output_is_checked_and_projected() {
    let h = Harness::new(config(
        &[("typed", sdk_stdio(&["--extra-tools"]))],
        &McpOverrides::new(),
    ));
    let snap = h.manager.prepare().await.unwrap();
    assert!(snap.tool("typed", "lying").unwrap().checks_output);
    assert!(snap.tool("typed", "add").unwrap().checks_output);
    assert!(!snap.tool("typed", "structured_only").unwrap().checks_output);

    // Matching the schema: inline structured content.
    let r = h.call("mcp__typed__lying", json!({"valid": true})).await;
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(r.data["structured_content"], json!({"sum": 3}));
    let r = h.call("mcp__typed__add", json!({"a": 1, "b": 2})).await;
    assert_eq!(r.data["structured_content"], json!({"sum": 3}), "{r:?}");

    // Breaking it: a typed error naming the place, the raw result still saved.
    let r = h.call("mcp__typed__lying", json!({"valid": false})).await;
    assert_eq!(
        r.error_code(),
        Some(codes::MCP_OUTPUT_SCHEMA_MISMATCH),
        "{r:?}"
    );
    let e = r.error_info().unwrap();
    assert!(e.message.contains("at `/sum`"), "{}", e.message);
    assert_eq!(e.details["violations"][0]["instance_path"], "/sum");
    let raw: Value =
        serde_json::from_str(&std::fs::read_to_string(&r.artifact.as_ref().unwrap().path).unwrap())
            .unwrap();
    assert_eq!(raw["structuredContent"], json!({"sum": "three"}));

    // No text block: the model sees the structured content as JSON text.
    let r = h.call("mcp__typed__structured_only", json!({})).await;
    assert!(!r.is_error(), "{r:?}");
    match &r.content[..] {
        [ContentBlock::Text { text, .. }] => {
            let shown: Value = serde_json::from_str(text).unwrap();
            assert_eq!(shown, json!({"answer": 42, "unit": "none"}));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        r.data["structured_content"],
        json!({"answer": 42, "unit": "none"})
    );
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_20_mb_structured_result_is_kept_once() {
    let h = Harness::new(config(&[("big", sdk_stdio(&[]))], &McpOverrides::new()));
    h.manager.prepare().await.unwrap();
    let r = h.call("mcp__big__big", json!({"megabytes": 20})).await;
    assert!(!r.is_error(), "{:?}", r.error_info());
    let artifact = r.artifact.clone().unwrap();
    // The SDK mirrors the text as `structuredContent: {"result": …}`: 20 MB twice in
    // the raw result, which the artifact keeps whole.
    let raw: Value =
        serde_json::from_str(&std::fs::read_to_string(&artifact.path).unwrap()).unwrap();
    assert_eq!(
        raw["structuredContent"]["result"].as_str().unwrap().len(),
        20 * 1024 * 1024
    );
    // `data` holds a bounded summary that names the artifact, not the value.
    assert!(
        !r.data.contains_key("structured_content"),
        "{:?}",
        r.data.keys()
    );
    let data_bytes = serde_json::to_vec(&r.data).unwrap().len();
    assert!(
        data_bytes < MAX_INLINE_STRUCTURED_BYTES,
        "data is {data_bytes} bytes"
    );
    let summary = &r.data["structured_content_summary"];
    assert_eq!(summary["type"], "object");
    assert_eq!(summary["keys"], json!(["result"]));
    assert!(summary["bytes"].as_u64().unwrap() > 20 * 1024 * 1024);
    assert_eq!(
        summary["raw_result_path"],
        json!(artifact.path.to_string_lossy())
    );
    assert!(
        summary["preview"]
            .as_str()
            .unwrap()
            .starts_with("{\"result\":\"xxx")
    );
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_over_streamable_http() {
    let server = HttpServer::start_with("streamable-http", free_port(), &["--extra-tools"]);
    let entry = format!(
        r#"{{"url": {}, "tool_timeout_sec": 3}}"#,
        q(&server.url("/mcp"))
    );
    let h = Harness::new(config(&[("web", entry)], &McpOverrides::new()));
    h.manager.prepare().await.unwrap();
    let count = Arc::new(Mutex::new(0u32));
    let sink = {
        let count = Arc::clone(&count);
        McpProgressSink::new(move |_| *count.lock().unwrap() += 1)
    };
    let tool = h.registry.get("mcp__web__progress").unwrap();
    let ctx = h.ctx("p-web").with_extension(sink);
    let r = tool
        .run(ToolInput::new(json!({"steps": 8, "interval": 0.5})), &ctx)
        .await;
    assert_eq!(r.model_content(), "done after 8 steps", "{r:?}");
    assert_eq!(*count.lock().unwrap(), 8);
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_and_cancellation_over_the_sse_transport() {
    // The legacy HTTP+SSE transport: one event stream carries every answer, so a
    // timed-out call is withdrawn with notifications/cancelled.
    let server = HttpServer::start_with("sse", free_port(), &["--extra-tools"]);
    let entry = format!(
        r#"{{"type": "sse", "url": {}, "tool_timeout_sec": 3}}"#,
        q(&server.url("/sse"))
    );
    let h = Harness::new(config(&[("old", entry)], &McpOverrides::new()));
    h.manager.prepare().await.unwrap();
    let count = Arc::new(Mutex::new(0u32));
    let sink = {
        let count = Arc::clone(&count);
        McpProgressSink::new(move |_| *count.lock().unwrap() += 1)
    };
    let tool = h.registry.get("mcp__old__progress").unwrap();
    let ctx = h.ctx("p-sse").with_extension(sink);
    let r = tool
        .run(ToolInput::new(json!({"steps": 8, "interval": 0.5})), &ctx)
        .await;
    assert_eq!(r.model_content(), "done after 8 steps", "{r:?}");
    assert_eq!(*count.lock().unwrap(), 8);

    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("cancelled");
    let r = h
        .call(
            "mcp__old__hang",
            json!({"marker": marker.display().to_string()}),
        )
        .await;
    let e = r.error_info().unwrap();
    assert_eq!(e.code, core_codes::TOOL_TIMEOUT, "{e:?}");
    assert_eq!(e.details["cancellation"], "notifications/cancelled");
    assert!(wait_until(Duration::from_secs(20), || marker.exists()));
    h.manager.close().await;
}
