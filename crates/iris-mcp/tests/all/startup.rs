//! The startup fault of issue 21: a slow `server/discover` answer is not a legacy
//! server. Iris never sends `initialize` on a connection after a discover the server
//! may have accepted, so a server that answers late still comes up on 2026-07-28,
//! alone or as one of many started at once on a loaded machine.

use iris_mcp::{McpOverrides, ServerOverride, ServerStatus};
use serde_json::json;

use crate::support::{CpuLoad, Harness, config, my_children_with, running, sdk_stdio};

fn startup(secs: f64) -> ServerOverride {
    ServerOverride {
        startup_timeout_sec: Some(secs),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_discover_answer_still_negotiates_2026_07_28() {
    // The fixture holds the client's first message until 48 s after it started (its
    // SDK import, slow on a machine the other tests load, is part of that). The old
    // client gave up on the probe after half the startup budget (40 s here), sent
    // `initialize` on the same connection, and the server, which had accepted the
    // discover by then, refused it with -32022. The budget's last 32 s are the margin.
    let overrides: McpOverrides = [("late".to_owned(), startup(80.0))].into();
    let h = Harness::new(config(
        &[("late", sdk_stdio(&["--slow-discover", "48"]))],
        &overrides,
    ));
    let snap = h.manager.prepare().await.unwrap();
    let s = snap.server("late").unwrap();
    assert_eq!(s.status, ServerStatus::Ready);
    assert_eq!(s.protocol_version.as_deref(), Some("2026-07-28"));
    let r = h
        .call("mcp__late__echo", json!({"text": "late but fine"}))
        .await;
    assert_eq!(r.model_content(), "late but fine", "{r:?}");
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_four_servers_start_at_once_under_cpu_load() {
    const SERVERS: usize = 24;
    let load = CpuLoad::start();
    let names: Vec<String> = (0..SERVERS).map(|i| format!("s{i:02}")).collect();
    let entries: Vec<(&str, String)> = names
        .iter()
        .map(|n| {
            let tag = format!("loaded-{n}");
            (n.as_str(), sdk_stdio(&["--name", &tag]))
        })
        .collect();
    // A generous budget: the point is that every server comes up, however long the
    // loaded machine takes, not how fast.
    let overrides: McpOverrides = names.iter().map(|n| (n.clone(), startup(300.0))).collect();
    let h = Harness::new(config(&entries, &overrides));
    let snap = h.manager.prepare().await.unwrap();
    for load_pid in load.pids() {
        assert!(running(load_pid), "the CPU load ran throughout startup");
    }
    assert_eq!(snap.servers.len(), SERVERS);
    for s in &snap.servers {
        assert_eq!(s.status, ServerStatus::Ready, "{}", s.name);
        assert_eq!(
            s.protocol_version.as_deref(),
            Some("2026-07-28"),
            "{}",
            s.name
        );
    }
    for n in &names {
        let r = h.call(&format!("mcp__{n}__echo"), json!({"text": n})).await;
        assert_eq!(&r.model_content(), n, "{r:?}");
    }
    assert_eq!(my_children_with("loaded-s").len(), SERVERS);
    h.manager.close().await;
    assert!(
        my_children_with("loaded-s").is_empty(),
        "close ended every server"
    );
    let pids = load.pids();
    drop(load);
    assert!(pids.iter().all(|p| !running(*p)), "the busy loops are gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_calling_one_tool_starts_only_its_server() {
    let long = "a.server-name-long-enough-that-every-tool-name-is-cut-short";
    let entries = [
        ("time", sdk_stdio(&["--name", "only-time"])),
        ("docs", sdk_stdio(&["--name", "only-docs"])),
        (long, sdk_stdio(&["--name", "only-long"])),
    ];
    let all = config(&entries, &McpOverrides::new());
    // Every published name maps back to its server, cut names included.
    let h = Harness::new(all.clone());
    let snap = h.manager.prepare().await.unwrap();
    assert!(
        snap.tools
            .iter()
            .any(|t| t.server == long && t.name.len() == 64)
    );
    for t in &snap.tools {
        assert_eq!(
            all.servers_for_tool(&t.name),
            std::slice::from_ref(&t.server),
            "{}",
            t.name
        );
    }
    h.manager.close().await;

    let mut one = all.clone();
    let needed = one.servers_for_tool("mcp__docs__echo");
    assert_eq!(needed, ["docs"]);
    one.retain_servers(&needed);
    let h = Harness::new(one);
    let snap = h.manager.prepare().await.unwrap();
    assert_eq!(snap.servers.len(), 1);
    assert_eq!(h.manager.server_pids().await.len(), 1);
    assert!(my_children_with("only-time").is_empty());
    let r = h.call("mcp__docs__echo", json!({"text": "just me"})).await;
    assert_eq!(r.model_content(), "just me");
    h.manager.close().await;
}
