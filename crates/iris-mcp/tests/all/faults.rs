//! The fault matrix with real processes: exit during startup, slow startup, crash
//! mid-call, hang past the tool timeout, cancellation, garbage on stdout, a 20 MB
//! result, required vs optional failures; close and drop leave no process behind.

use std::time::Duration;

use iris_mcp::{DiagnosticSeverity, McpOverrides, ServerOverride, ServerStatus, codes};
use iris_tools_core::{CancellationSignal, ToolInput, codes as core_codes};
use serde_json::json;

use crate::support::{
    Harness, children_of, config, legacy_server, process_state, python, q, running, sdk_stdio,
    wait_until,
};

fn overrides(pairs: &[(&str, ServerOverride)]) -> McpOverrides {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

fn optional() -> ServerOverride {
    ServerOverride {
        required: Some(false),
        ..Default::default()
    }
}

/// Children of this test process whose command line mentions `needle`.
fn my_children_with(needle: &str) -> Vec<u32> {
    children_of(std::process::id())
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_failure_fails_prepare_optional_becomes_a_diagnostic() {
    // Required (the default): prepare fails, names the server, says how the process
    // ended and what it printed, and publishes nothing.
    let h = Harness::new(config(
        &[
            ("good", sdk_stdio(&["--name", "required-failure-good"])),
            ("broken", sdk_stdio(&["--exit-on-start"])),
        ],
        &McpOverrides::new(),
    ));
    let err = h.manager.prepare().await.unwrap_err();
    assert_eq!(err.code(), codes::MCP_STARTUP_FAILED);
    let msg = err.to_string();
    assert!(
        msg.starts_with("required MCP server `broken` failed to start:"),
        "{msg}"
    );
    assert!(msg.contains("exited (exit status: 3)"), "{msg}");
    assert!(msg.contains("refusing to start (--exit-on-start)"), "{msg}");
    assert!(h.registry.is_empty(), "all or nothing");
    assert!(h.manager.snapshot().is_none());
    assert!(
        my_children_with("required-failure-good").is_empty(),
        "the good server was closed too"
    );

    // Optional: a diagnostic; the other server's tools are published.
    let h = Harness::new(config(
        &[
            ("good", sdk_stdio(&[])),
            ("broken", sdk_stdio(&["--exit-on-start"])),
        ],
        &overrides(&[("broken", optional())]),
    ));
    let snap = h.manager.prepare().await.unwrap();
    assert_eq!(snap.server("broken").unwrap().status, ServerStatus::Failed);
    assert_eq!(snap.server("good").unwrap().status, ServerStatus::Ready);
    let d = snap
        .diagnostics
        .iter()
        .find(|d| d.server == "broken")
        .unwrap();
    assert_eq!(d.severity, DiagnosticSeverity::Error);
    assert_eq!(d.code, codes::MCP_STARTUP_FAILED);
    assert!(d.message.contains("exit status: 3"), "{}", d.message);
    assert!(h.registry.contains("mcp__good__echo"));
    assert!(
        !h.registry
            .names()
            .iter()
            .any(|n| n.starts_with("mcp__broken__"))
    );
    h.manager.close().await;

    // A command that does not exist, and a missing variable, fail the same way.
    let missing = r#"{"command": "/nonexistent/iris-mcp-server"}"#.to_owned();
    let unset = r#"{"command": "x", "args": ["${IRIS_SURELY_UNSET_VAR}"]}"#.to_owned();
    let h = Harness::new(config(
        &[("missing", missing), ("unset", unset)],
        &overrides(&[("missing", optional()), ("unset", optional())]),
    ));
    let snap = h.manager.prepare().await.unwrap();
    let msg = |s: &str| {
        snap.diagnostics
            .iter()
            .find(|d| d.server == s)
            .unwrap()
            .clone()
    };
    assert!(
        msg("missing")
            .message
            .contains("cannot start `/nonexistent/iris-mcp-server`"),
        "{:?}",
        msg("missing")
    );
    assert_eq!(msg("unset").code, codes::MCP_INVALID_CONFIG);
    assert!(msg("unset").message.contains(
        "server `unset`: field `args[0]`: environment variable `IRIS_SURELY_UNSET_VAR` is not set"
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_timeout_kills_the_slow_server() {
    let slow = ServerOverride {
        startup_timeout_sec: Some(2.0),
        ..Default::default()
    };
    let h = Harness::new(config(
        &[("slow", sdk_stdio(&["--slow-start", "60"]))],
        &overrides(&[("slow", slow)]),
    ));
    let err = h.manager.prepare().await.unwrap_err();
    assert_eq!(err.code(), codes::MCP_STARTUP_TIMEOUT);
    let msg = err.to_string();
    assert!(
        msg.contains("did not finish startup within 2.000s"),
        "{msg}"
    );
    assert!(
        msg.contains("sleeping 60"),
        "stderr explains the wait: {msg}"
    );
    assert!(
        my_children_with("--slow-start").is_empty(),
        "the slow server is gone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_mid_call_hang_past_timeout_and_cancellation() {
    let fast = ServerOverride {
        tool_timeout_sec: Some(1.0),
        ..Default::default()
    };
    let h = Harness::new(config(
        &[("crashy", sdk_stdio(&[])), ("slowpoke", sdk_stdio(&[]))],
        &overrides(&[("slowpoke", fast)]),
    ));
    h.manager.prepare().await.unwrap();

    // Crash mid-call: a clean error naming the exit, saying the call may have run
    // (`crash` is not trusted read-only, so it is not replayed), the stderr in details.
    let pid_of =
        |pids: Vec<(String, u32)>| pids.into_iter().find(|(s, _)| s == "crashy").unwrap().1;
    let first_pid = pid_of(h.manager.server_pids().await);
    let r = h.call("mcp__crashy__crash", json!({})).await;
    assert_eq!(r.error_code(), Some(codes::MCP_CONNECTION_LOST), "{r:?}");
    let e = r.error_info().unwrap();
    assert!(
        e.message.contains("exited (exit status: 7)"),
        "{}",
        e.message
    );
    assert!(e.message.contains("may have run"), "{}", e.message);
    assert_eq!(e.details["may_have_run"], true);
    assert!(
        e.details["stderr"]
            .as_str()
            .unwrap()
            .contains("crashing on purpose")
    );
    // The next call starts the server again and is answered.
    let r = h.call("mcp__crashy__echo", json!({"text": "x"})).await;
    assert_eq!(r.model_content(), "x", "{r:?}");
    let second_pid = pid_of(h.manager.server_pids().await);
    assert_ne!(first_pid, second_pid, "a new process serves the call");
    assert_eq!(process_state(first_pid), None, "the dead server was reaped");
    assert_eq!(h.manager.restart_counts().await["crashy"], 1);

    // Hang past tool_timeout_sec: TOOL_TIMEOUT, and the server is told to cancel.
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("cancelled");
    let r = h
        .call(
            "mcp__slowpoke__hang",
            json!({"marker": marker.display().to_string()}),
        )
        .await;
    assert_eq!(r.error_code(), Some(core_codes::TOOL_TIMEOUT), "{r:?}");
    assert!(r.error_info().unwrap().retryable);
    assert!(
        wait_until(Duration::from_secs(20), || marker.exists()),
        "the server never saw notifications/cancelled"
    );
    // The server survives and answers the next call.
    let r = h
        .call("mcp__slowpoke__echo", json!({"text": "still here"}))
        .await;
    assert_eq!(r.model_content(), "still here");

    // The definition carries the cap; the tool owns its deadline.
    let tool = h.registry.get("mcp__crashy__echo").unwrap();
    assert_eq!(tool.definition().timeout, Some(Duration::from_secs(600)));
    assert_eq!(
        tool.timeout_owner(),
        iris_tools_core::ToolTimeoutOwner::Tool
    );

    // Host cancellation mid-call: CANCELLED, and the server is told.
    let started = dir.path().join("started");
    let marker2 = dir.path().join("cancelled-2");
    let signal = CancellationSignal::new();
    let ctx = h.ctx("call_c").cancellation(signal.clone());
    let tool = h.registry.get("mcp__slowpoke__hang").unwrap();
    let input =
        json!({"marker": marker2.display().to_string(), "started": started.display().to_string()});
    let call = tool.run(ToolInput::new(input), &ctx);
    let cancel = async {
        // Wait for the event "the server is running the tool", then cancel.
        while !started.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        signal.cancel();
    };
    let (r, ()) = tokio::join!(call, cancel);
    assert_eq!(r.error_code(), Some(core_codes::CANCELLED), "{r:?}");
    assert!(
        wait_until(Duration::from_secs(20), || marker2.exists()),
        "the server never saw notifications/cancelled"
    );
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_stdout_is_reported_not_fatal() {
    let h = Harness::new(config(
        &[("noisy", sdk_stdio(&["--banner"]))],
        &McpOverrides::new(),
    ));
    let snap = h.manager.prepare().await.unwrap();
    assert_eq!(snap.server("noisy").unwrap().status, ServerStatus::Ready);
    assert!(
        snap.diagnostics.iter().any(|d| d.server == "noisy"
            && d.code == codes::MCP_PROTOCOL_WARNING
            && d.message == "ignored a stdout line that is not JSON-RPC: Fixture server v1 ready (this banner is not JSON-RPC)"),
        "{:#?}",
        snap.diagnostics
    );
    let r = h.call("mcp__noisy__garbage", json!({})).await;
    assert_eq!(r.model_content(), "still alive", "{r:?}");
    let live = h.manager.live_diagnostics().await;
    assert!(
        live.iter()
            .any(|d| d.message.contains("not JSON-RPC: this is not json-rpc")),
        "{live:#?}"
    );
    let r = h.call("mcp__noisy__echo", json!({"text": "after"})).await;
    assert_eq!(r.model_content(), "after");
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_20_mb_result_over_stdio() {
    let h = Harness::new(config(&[("big", sdk_stdio(&[]))], &McpOverrides::new()));
    h.manager.prepare().await.unwrap();
    let r = h.call("mcp__big__big", json!({"megabytes": 20})).await;
    assert!(!r.is_error(), "{:?}", r.error_info());
    assert_eq!(r.model_content().len(), 20 * 1024 * 1024);
    let artifact = r.artifact.unwrap();
    assert!(artifact.size_bytes > 20 * 1024 * 1024);
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("grandchild.pid");
    let stubborn = format!(
        r#"{{"command": {}, "args": [{}, "--stubborn"]}}"#,
        q(python()),
        q(&legacy_server())
    );
    let h = Harness::new(config(
        &[
            (
                "parent",
                sdk_stdio(&["--spawn-child", &pidfile.display().to_string()]),
            ),
            ("stubborn", stubborn),
        ],
        &McpOverrides::new(),
    ));
    h.manager.prepare().await.unwrap();
    let pids = h.manager.server_pids().await;
    assert_eq!(pids.len(), 2);
    let grandchild: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(running(grandchild));
    for (_, pid) in &pids {
        assert!(running(*pid));
    }

    // The SDK server exits on stdin EOF; the stubborn one ignores EOF and SIGTERM and
    // needs SIGKILL; the grandchild shares its parent's process group.
    h.manager.close().await;
    for (server, pid) in &pids {
        assert_eq!(
            process_state(*pid),
            None,
            "{server} ({pid}) still exists (not reaped?)"
        );
    }
    assert!(
        wait_until(Duration::from_secs(5), || !running(grandchild)),
        "the grandchild {grandchild} outlived close"
    );
    // Idempotent.
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_manager_kills_its_servers() {
    let h = Harness::new(config(&[("dropped", sdk_stdio(&[]))], &McpOverrides::new()));
    h.manager.prepare().await.unwrap();
    let pids = h.manager.server_pids().await;
    let pid = pids[0].1;
    assert!(running(pid));
    // The registry's tools hold the connection: drop both, without close().
    drop(h);
    assert!(
        wait_until(Duration::from_secs(10), || !running(pid)),
        "{pid} survived the manager"
    );
}
