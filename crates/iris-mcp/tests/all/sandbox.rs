//! `sandbox: true` in a server's override: the stdio server runs inside the native
//! command sandbox (the real helper, the real kernel), so it cannot read a `deny_read`
//! file, write outside the workspace or reach the network under the default policy,
//! while its tools still work and it may write the workspace. The same server without
//! the override does all of that. An HTTP server cannot opt in.

use std::collections::BTreeMap;

use iris_mcp::{MCPManager, McpOverrides, SandboxPolicy, ServerOverride};
use iris_tools_core::{ToolExecutionContext, ToolRegistry};
use serde_json::{Value, json};

use crate::support::{config, sdk_stdio};

const SECRET: &str = "s3cret-value";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_server_cannot_read_secrets_write_outside_or_connect() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let ws = root.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(root.join("secrets")).unwrap();
    std::fs::create_dir_all(root.join("outside")).unwrap();
    std::fs::write(root.join("secrets/key"), SECRET).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();

    let overrides: McpOverrides = BTreeMap::from([(
        "boxed".to_owned(),
        ServerOverride {
            sandbox: Some(true),
            ..ServerOverride::default()
        },
    )]);
    let servers = [
        ("boxed", sdk_stdio(&["--file-tools"])),
        ("open", sdk_stdio(&["--file-tools"])),
    ];
    let registry = ToolRegistry::new();
    let policy = SandboxPolicy {
        deny_read: vec![root.join("secrets")],
        ..SandboxPolicy::default()
    };
    let manager = MCPManager::new(config(&servers, &overrides), registry.clone(), &ws, false)
        .with_sandbox(policy, Vec::new());
    manager.prepare().await.unwrap();
    let ctx = ToolExecutionContext::new(&ws);
    let call = |name: String, input: Value| {
        let (registry, ctx) = (registry.clone(), ctx.clone());
        async move {
            let tool = registry.get(&name).unwrap();
            let input = tool.validate_input(input).unwrap();
            let out = tool.run(input, &ctx).await;
            assert!(!out.is_error(), "{name}: {out:?}");
            out.model_content()
        }
    };
    let key = root.join("secrets/key").display().to_string();
    let outside = |server: &str| root.join(format!("outside/{server}.txt"));
    for server in ["boxed", "open"] {
        let tool = |t: &str| format!("mcp__{server}__{t}");
        let read = call(tool("read_path"), json!({"path": key})).await;
        let written = call(
            tool("write_path"),
            json!({"path": outside(server).display().to_string(), "text": "x"}),
        )
        .await;
        let connected = call(tool("connect"), json!({"port": port})).await;
        let inside = call(
            tool("write_path"),
            json!({"path": ws.join(format!("{server}.txt")).display().to_string(), "text": "in"}),
        )
        .await;
        let echoed = call(tool("echo"), json!({"text": "still works"})).await;
        assert_eq!(echoed, "still works");
        assert_eq!(inside, "written", "{server}");
        assert_eq!(
            std::fs::read_to_string(ws.join(format!("{server}.txt"))).unwrap(),
            "in"
        );
        if server == "boxed" {
            assert!(
                read.starts_with("refused:") && !read.contains(SECRET),
                "{read}"
            );
            assert!(written.starts_with("refused:"), "{written}");
            assert!(!outside(server).exists());
            assert!(connected.starts_with("refused:"), "{connected}");
        } else {
            // The owner's server outside the sandbox: everything goes through.
            assert_eq!(read, SECRET);
            assert_eq!(written, "written");
            assert!(outside(server).exists());
            assert_eq!(connected, "connected");
        }
    }
    manager.close().await;
}

#[test]
fn only_stdio_servers_and_overrides_can_ask_for_the_sandbox() {
    let over = |sandbox| -> McpOverrides {
        BTreeMap::from([(
            "web".to_owned(),
            ServerOverride {
                sandbox: Some(sandbox),
                ..ServerOverride::default()
            },
        )])
    };
    let http = r#"{"mcpServers": {"web": {"url": "http://127.0.0.1:9/mcp"}}}"#;
    let err =
        iris_mcp::MCPConfig::from_str(http, iris_mcp::ConfigFormat::Json, "mcp.json", &over(true))
            .unwrap_err();
    assert!(
        err.to_string()
            .contains("only a stdio server (a process Iris starts) can run in the sandbox"),
        "{err}"
    );
    assert!(
        iris_mcp::MCPConfig::from_str(http, iris_mcp::ConfigFormat::Json, "mcp.json", &over(false))
            .is_ok()
    );
    let in_file = r#"{"mcpServers": {"web": {"command": "x", "sandbox": true}}}"#;
    let err = iris_mcp::MCPConfig::from_str(
        in_file,
        iris_mcp::ConfigFormat::Json,
        "mcp.json",
        &McpOverrides::new(),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("sandbox is an Iris policy"),
        "{err}"
    );
}

/// Under `network: {allow: [localhost]}` a sandboxed server gets an egress proxy of its
/// own: a request to the allowed name goes through, the same server by address is
/// refused by the proxy, and a direct connection is refused by the sandbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_server_reaches_only_allowed_domains_through_its_proxy() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf).await;
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
                    )
                    .await;
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let overrides: McpOverrides = BTreeMap::from([(
        "boxed".to_owned(),
        ServerOverride {
            sandbox: Some(true),
            ..ServerOverride::default()
        },
    )]);
    let registry = ToolRegistry::new();
    let policy = SandboxPolicy {
        network: iris_sandbox::NetworkAccess::Allow(vec!["localhost".into()]),
        ..SandboxPolicy::default()
    };
    let manager = MCPManager::new(
        config(&[("boxed", sdk_stdio(&["--file-tools"]))], &overrides),
        registry.clone(),
        &ws,
        false,
    )
    .with_sandbox(policy, Vec::new());
    manager.prepare().await.unwrap();
    let ctx = ToolExecutionContext::new(&ws);
    let call = |name: &str, input: Value| {
        let (registry, ctx) = (registry.clone(), ctx.clone());
        let name = format!("mcp__boxed__{name}");
        async move {
            let tool = registry.get(&name).unwrap();
            let input = tool.validate_input(input).unwrap();
            tool.run(input, &ctx).await.model_content()
        }
    };
    let allowed = call("fetch", json!({"url": format!("http://localhost:{port}/")})).await;
    assert_eq!(allowed, "hello");
    let by_address = call("fetch", json!({"url": format!("http://127.0.0.1:{port}/")})).await;
    assert!(
        by_address.starts_with("refused:") && by_address.contains("403"),
        "{by_address}"
    );
    let direct = call("connect", json!({"port": port})).await;
    assert!(direct.starts_with("refused:"), "{direct}");
    manager.close().await;
}
