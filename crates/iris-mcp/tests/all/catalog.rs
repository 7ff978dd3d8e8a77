//! Catalog changes with a real server: a tool added or removed at run time
//! (announced on the 2026-07-28 `subscriptions/listen` stream) bumps the manager's
//! generation; `refresh_catalog` publishes the difference with stable names and a
//! deterministic order.

use std::time::Duration;

use iris_mcp::{McpOverrides, codes};
use serde_json::json;

use crate::support::{Harness, HttpServer, config, free_port, q, sdk_stdio};

/// Waits (bounded) for the manager's generation to move past `seen`.
async fn changed_since(h: &Harness, seen: u64) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while tokio::time::Instant::now() < deadline {
        if h.manager.catalog_generation() > seen {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_refreshes_the_catalog_with_stable_names() {
    refresh_round_trip(sdk_stdio(&["--extra-tools"]), "2026-07-28").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_list_changed_notification_refreshes_the_catalog() {
    // A stateful `initialize` session over streamable HTTP (the SDK switches a
    // stdio connection to 2026-07-28 whatever it answers to discover): the change
    // arrives as a plain notification on the session's stream.
    let server = HttpServer::start_with(
        "streamable-http",
        free_port(),
        &["--extra-tools", "--legacy-only"],
    );
    let entry = format!(r#"{{"url": {}}}"#, q(&server.url("/mcp")));
    refresh_round_trip(entry, "2025-11-25").await;
}

async fn refresh_round_trip(entry: String, protocol: &str) {
    let h = Harness::new(config(
        &[("a", entry), ("b", sdk_stdio(&[]))],
        &McpOverrides::new(),
    ));
    let first = h.manager.prepare().await.unwrap();
    assert_eq!(
        first.server("a").unwrap().protocol_version.as_deref(),
        Some(protocol)
    );
    let names = |s: &iris_mcp::MCPCatalogSnapshot| -> Vec<String> {
        s.tools.iter().map(|t| t.name.clone()).collect()
    };
    let before = names(&first);
    // Nothing changed: the same snapshot.
    let same = h.manager.refresh_catalog().await.unwrap();
    assert!(std::sync::Arc::ptr_eq(&first, &same));

    let r = h.call("mcp__a__add_tool", json!({"name": "fresh"})).await;
    assert_eq!(r.model_content(), "added fresh", "{r:?}");
    assert!(changed_since(&h, first.generation).await, "no change seen");
    let second = h.manager.refresh_catalog().await.unwrap();
    assert!(second.generation > first.generation);
    let after = names(&second);
    // Every tool keeps its name and place; the new one comes last.
    assert_eq!(after[..before.len()], before[..]);
    assert_eq!(after.last().map(String::as_str), Some("mcp__a__fresh"));
    assert_eq!(
        second.server("a").unwrap().tool_count,
        first.server("a").unwrap().tool_count + 1
    );
    // The registry's order is the snapshot's: registration order.
    let registered: Vec<String> = h.registry.names();
    assert_eq!(registered, after);
    let r = h.call("mcp__a__fresh", json!({"text": "hi"})).await;
    assert_eq!(r.model_content(), "fresh: hi", "{r:?}");

    // Removed: out of the snapshot; the registered tool refuses without calling.
    let r = h.call("mcp__a__drop_tool", json!({"name": "fresh"})).await;
    assert_eq!(r.model_content(), "removed fresh", "{r:?}");
    assert!(changed_since(&h, second.generation).await);
    let third = h.manager.refresh_catalog().await.unwrap();
    assert_eq!(names(&third), before);
    let r = h.call("mcp__a__fresh", json!({"text": "hi"})).await;
    assert_eq!(r.error_code(), Some(codes::MCP_TOOL_REMOVED), "{r:?}");

    // Back again: the same name, working again.
    h.call("mcp__a__add_tool", json!({"name": "fresh"})).await;
    assert!(changed_since(&h, third.generation).await);
    let fourth = h.manager.refresh_catalog().await.unwrap();
    assert_eq!(names(&fourth), after);
    let r = h.call("mcp__a__fresh", json!({"text": "again"})).await;
    assert_eq!(r.model_content(), "fresh: again", "{r:?}");
    h.manager.close().await;
    assert_eq!(
        h.manager.refresh_catalog().await.unwrap_err().code(),
        codes::MCP_CLOSED
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_that_cannot_reach_the_server_is_retried_later() {
    let dir = tempfile::tempdir().unwrap();
    let refuse = dir.path().join("refuse");
    let refuse_arg = refuse.display().to_string();
    let h = Harness::new(config(
        &[(
            "a",
            sdk_stdio(&["--extra-tools", "--refuse-start-if", &refuse_arg]),
        )],
        &McpOverrides::new(),
    ));
    let first = h.manager.prepare().await.unwrap();
    h.call("mcp__a__add_tool", json!({"name": "fresh"})).await;
    assert!(changed_since(&h, first.generation).await);
    // The server dies before the host refreshes, and cannot start again yet.
    std::fs::write(&refuse, "").unwrap();
    let r = h.call("mcp__a__crash", json!({})).await;
    assert_eq!(r.error_code(), Some(codes::MCP_CONNECTION_LOST), "{r:?}");
    let second = h.manager.refresh_catalog().await.unwrap();
    assert!(
        second.diagnostics.iter().any(|d| d.server == "a"
            && d.code == codes::MCP_REQUEST_FAILED
            && d.message.starts_with("refreshing the tool list failed")),
        "{:#?}",
        second.diagnostics
    );
    assert_eq!(second.tools.len(), first.tools.len());
    assert!(
        h.manager.catalog_generation() > second.generation,
        "the change is still pending"
    );
    // Once the server can start, the next refresh restarts it and reads its list
    // (the restarted process never had `fresh`).
    std::fs::remove_file(&refuse).unwrap();
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let third = h.manager.refresh_catalog().await.unwrap();
    assert_eq!(third.generation, h.manager.catalog_generation());
    assert!(third.tool("a", "fresh").is_none());
    let r = h.call("mcp__a__echo", json!({"text": "back"})).await;
    assert_eq!(r.model_content(), "back", "{r:?}");
    h.manager.close().await;
}
