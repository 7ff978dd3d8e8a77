//! Recovery with real servers: a stdio server that dies is restarted by the next
//! call (with backoff after a failed restart); a call in flight when it died is
//! replayed only for trusted read-only or idempotent tools; an expired streamable
//! HTTP session is re-established; `close` still ends every process.

use std::time::Duration;

use iris_mcp::{McpOverrides, ServerOverride, codes};
use serde_json::json;

use crate::support::{
    Harness, HttpServer, config, free_port, my_children_with, process_state, q, sdk_stdio,
};

fn trusted() -> ServerOverride {
    ServerOverride {
        trust_annotations: Some(true),
        ..Default::default()
    }
}

fn pid_of(pids: &[(String, u32)], server: &str) -> u32 {
    pids.iter().find(|(s, _)| s == server).unwrap().1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_lost_with_the_server_is_replayed_only_when_safe() {
    let overrides: McpOverrides = [("safe".to_owned(), trusted())].into();
    let h = Harness::new(config(
        &[
            (
                "safe",
                sdk_stdio(&["--extra-tools", "--name", "replay-safe"]),
            ),
            (
                "plain",
                sdk_stdio(&["--extra-tools", "--name", "replay-plain"]),
            ),
        ],
        &overrides,
    ));
    let snap = h.manager.prepare().await.unwrap();
    assert!(
        snap.tool("safe", "crash_once_read")
            .unwrap()
            .replays_on_reconnect
    );
    assert!(
        snap.tool("safe", "crash_once_idempotent")
            .unwrap()
            .replays_on_reconnect
    );
    assert!(
        !snap
            .tool("safe", "crash_once_write")
            .unwrap()
            .replays_on_reconnect
    );
    assert!(
        !snap
            .tool("plain", "crash_once_read")
            .unwrap()
            .replays_on_reconnect,
        "hints count only with trust_annotations"
    );
    let dir = tempfile::tempdir().unwrap();
    let marker = |n: &str| dir.path().join(n).display().to_string();

    // Trusted read-only: the first run kills the server; the call is sent again to
    // the restarted server and answered, as if nothing happened.
    let before = pid_of(&h.manager.server_pids().await, "safe");
    let r = h
        .call(
            "mcp__safe__crash_once_read",
            json!({"marker": marker("read")}),
        )
        .await;
    assert_eq!(r.model_content(), "ran 2 times", "{r:?}");
    let after = pid_of(&h.manager.server_pids().await, "safe");
    assert_ne!(before, after);
    assert_eq!(process_state(before), None, "the dead server was reaped");
    // Trusted idempotent: the same.
    let r = h
        .call(
            "mcp__safe__crash_once_idempotent",
            json!({"marker": marker("idem")}),
        )
        .await;
    assert_eq!(r.model_content(), "ran 2 times", "{r:?}");
    assert_eq!(h.manager.restart_counts().await["safe"], 2);
    let live = h.manager.live_diagnostics().await;
    assert!(
        live.iter().any(|d| d.server == "safe"
            && d.code == codes::MCP_SERVER_RESTARTED
            && d.message.starts_with("the server was restarted after its session broke: the server process exited (exit status: 7)")),
        "{live:?}"
    );

    // A write that is not idempotent: not repeated, and the result says it may have
    // run. The next call restarts the server and runs normally.
    let r = h
        .call(
            "mcp__safe__crash_once_write",
            json!({"marker": marker("write")}),
        )
        .await;
    assert_eq!(r.error_code(), Some(codes::MCP_CONNECTION_LOST), "{r:?}");
    let e = r.error_info().unwrap();
    assert!(e.message.contains("may have run"), "{}", e.message);
    assert_eq!(e.details["may_have_run"], true);
    assert_eq!(e.details["replayed"], false);
    assert_eq!(std::fs::read_to_string(marker("write")).unwrap(), "1");
    let r = h
        .call(
            "mcp__safe__crash_once_write",
            json!({"marker": marker("write")}),
        )
        .await;
    assert_eq!(r.model_content(), "ran 2 times", "{r:?}");

    // Untrusted hints are not enough to replay.
    let r = h
        .call(
            "mcp__plain__crash_once_read",
            json!({"marker": marker("plain")}),
        )
        .await;
    assert_eq!(r.error_code(), Some(codes::MCP_CONNECTION_LOST), "{r:?}");

    // close ends the restarted processes too.
    let pids = h.manager.server_pids().await;
    h.manager.close().await;
    for (server, pid) in &pids {
        assert_eq!(process_state(*pid), None, "{server} ({pid}) outlived close");
    }
    assert!(my_children_with("replay-").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_restart_backs_off_then_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let refuse = dir.path().join("refuse");
    let refuse_arg = refuse.display().to_string();
    let h = Harness::new(config(
        &[(
            "flaky",
            sdk_stdio(&["--refuse-start-if", &refuse_arg, "--name", "backoff-flaky"]),
        )],
        &McpOverrides::new(),
    ));
    h.manager.prepare().await.unwrap();
    std::fs::write(&refuse, "").unwrap();
    let r = h.call("mcp__flaky__crash", json!({})).await;
    assert_eq!(r.error_code(), Some(codes::MCP_CONNECTION_LOST), "{r:?}");

    // The restart fails: the call is not sent, and the error says why.
    let r = h.call("mcp__flaky__echo", json!({"text": "x"})).await;
    assert_eq!(r.error_code(), Some(codes::MCP_CONNECTION_CLOSED), "{r:?}");
    let message = &r.error_info().unwrap().message;
    assert!(
        message.contains("restarting the server failed"),
        "{message}"
    );
    assert!(message.contains("exit status: 3"), "{message}");
    let live = h.manager.live_diagnostics().await;
    assert!(
        live.iter().any(|d| d.code == codes::MCP_STARTUP_FAILED
            && d.message.starts_with("restarting the server failed")),
        "{live:?}"
    );
    // At once again: inside the backoff, no new process is started.
    let r = h.call("mcp__flaky__echo", json!({"text": "x"})).await;
    let message = &r.error_info().unwrap().message;
    assert!(message.contains("the next attempt is in"), "{message}");
    assert!(my_children_with("backoff-flaky").is_empty());

    // Once the server can start and the backoff (1 s after one failure) passed, the
    // next call restarts it.
    std::fs::remove_file(&refuse).unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let r = h.call("mcp__flaky__echo", json!({"text": "back"})).await;
    assert_eq!(r.model_content(), "back", "{r:?}");
    assert_eq!(h.manager.restart_counts().await["flaky"], 1);
    h.manager.close().await;
    assert!(my_children_with("backoff-flaky").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_http_session_is_re_established() {
    // A server that predates 2026-07-28 opens a stateful session, and expires it
    // after one idle second: its id then answers 404 "Session not found".
    let server = HttpServer::start_with(
        "streamable-http",
        free_port(),
        &["--legacy-only", "--session-idle", "1"],
    );
    let entry = format!(r#"{{"url": {}}}"#, q(&server.url("/mcp")));
    let h = Harness::new(config(&[("web", entry)], &McpOverrides::new()));
    let snap = h.manager.prepare().await.unwrap();
    let protocol = snap
        .server("web")
        .unwrap()
        .protocol_version
        .clone()
        .unwrap();
    assert!(
        protocol.as_str() < "2026-07-28",
        "a stateful session: {protocol}"
    );
    let r = h.call("mcp__web__echo", json!({"text": "one"})).await;
    assert_eq!(r.model_content(), "one", "{r:?}");
    // Idle past the server's timeout: the session is gone server-side.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let r = h.call("mcp__web__echo", json!({"text": "two"})).await;
    assert_eq!(r.model_content(), "two", "{r:?}");
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_that_dies_mid_call() {
    let port = free_port();
    let server = HttpServer::start_with("streamable-http", port, &["--extra-tools"]);
    let entry = format!(r#"{{"url": {}}}"#, q(&server.url("/mcp")));
    let overrides: McpOverrides = [("web".to_owned(), trusted())].into();
    let h = Harness::new(config(&[("web", entry)], &overrides));
    h.manager.prepare().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("write").display().to_string();

    // The response stream breaks with the process: the call may have run.
    let r = h
        .call("mcp__web__crash_once_write", json!({"marker": marker}))
        .await;
    assert_eq!(r.error_code(), Some(codes::MCP_CONNECTION_LOST), "{r:?}");
    let e = r.error_info().unwrap();
    assert_eq!(e.details["may_have_run"], true);
    assert!(e.message.contains("error sending request"), "{}", e.message);
    assert!(!e.message.contains("rmcp::"), "{}", e.message);

    // Nobody listens: the call never left, and the error says so (not "may have
    // run"), even for a tool that would be replayed.
    drop(server);
    let r = h.call("mcp__web__echo", json!({"text": "down"})).await;
    assert_eq!(r.error_code(), Some(codes::MCP_CONNECTION_CLOSED), "{r:?}");
    let e = r.error_info().unwrap();
    assert!(
        e.message.contains("cannot connect to the server"),
        "{}",
        e.message
    );
    assert!(!e.details.contains_key("may_have_run"));

    // The server is back on its port: calls work again.
    let _server = HttpServer::start_with("streamable-http", port, &["--extra-tools"]);
    let r = h.call("mcp__web__echo", json!({"text": "up"})).await;
    assert_eq!(r.model_content(), "up", "{r:?}");
    h.manager.close().await;
}
