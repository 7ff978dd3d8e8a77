//! Real servers end to end: the official Python SDK over stdio, streamable HTTP and
//! SSE, the packaged `mcp-server-time`, and a legacy-only server.

use iris_mcp::{DiagnosticSeverity, HostEnv, McpOverrides, ServerOverride, ServerStatus, codes};
use iris_tools_core::{ContentBlock, ToolInput, codes as core_codes};
use serde_json::{Value, json};

use crate::support::{Harness, HttpServer, config, legacy_server, python, q, sdk_stdio, venv_bin};

fn trusted(names: &[&str]) -> McpOverrides {
    names
        .iter()
        .map(|n| {
            (
                (*n).to_owned(),
                ServerOverride {
                    trust_annotations: Some(true),
                    ..Default::default()
                },
            )
        })
        .collect()
}

fn text(result: &iris_tools_core::ToolOutput) -> String {
    result.model_content()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_sdk_server_end_to_end() {
    let mut host = HostEnv::capture();
    host.set("IRIS_TEST_SECRET", "s3cret");
    let entry = format!(
        r#"{{"command": {}, "args": [{}], "env": {{"FIXTURE_VAR": "v=${{IRIS_TEST_SECRET}}"}}}}"#,
        q(python()),
        q(&crate::support::sdk_server())
    );
    let h = Harness::with(
        config(
            &[("fixture", entry), ("plain", sdk_stdio(&[]))],
            &trusted(&["fixture"]),
        ),
        false,
        host,
    );
    assert!(h.manager.snapshot().is_none(), "no snapshot before prepare");
    let snap = h.manager.prepare().await.unwrap();
    assert_eq!(h.manager.snapshot().as_deref(), Some(&*snap));

    // Both servers negotiated the newest protocol the SDK speaks.
    for name in ["fixture", "plain"] {
        let s = snap.server(name).unwrap();
        assert_eq!(s.status, ServerStatus::Ready);
        assert_eq!(s.protocol_version.as_deref(), Some("2026-07-28"), "{name}");
        assert_eq!(s.transport, "stdio");
        assert_eq!(s.server_name.as_deref(), Some("fixture"));
        assert_eq!(s.tool_count, 13);
    }
    let echo = snap.tool("fixture", "echo").unwrap();
    assert_eq!(echo.name, "mcp__fixture__echo");
    assert!(echo.read_only, "trusted + readOnlyHint");
    assert!(
        !snap.tool("fixture", "write_note").unwrap().read_only,
        "readOnlyHint false"
    );
    assert!(
        !snap.tool("plain", "echo").unwrap().read_only,
        "hint without trust"
    );
    assert!(!snap.tool("fixture", "add").unwrap().read_only, "no hint");

    // Definitions: capability `mcp`, group, timeout, identity in metadata.
    let tool = h.registry.get("mcp__fixture__echo").unwrap();
    let def = tool.definition();
    assert_eq!(
        def.capabilities
            .iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>(),
        ["mcp"]
    );
    assert_eq!(def.group, "mcp");
    assert!(!def.deferred);
    // The definition's timeout is the cap (`tool_max_sec`, default 600 s); the idle
    // timeout (`tool_timeout_sec`) is the tool's own.
    assert_eq!(def.timeout.map(|t| t.as_secs()), Some(600));
    assert_eq!(def.metadata["mcp"]["idle_timeout_seconds"], 30.0);
    assert_eq!(def.metadata["mcp"]["server"], "fixture");
    assert_eq!(def.metadata["mcp"]["tool"], "echo");
    assert_eq!(def.input_schema["properties"]["text"]["type"], "string");
    assert!(tool.is_read_only());
    assert!(!h.registry.get("mcp__plain__echo").unwrap().is_read_only());

    // Text.
    let r = h.call("mcp__fixture__echo", json!({"text": "héllo"})).await;
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(text(&r), "héllo");
    // The raw result is saved as a JSON artifact.
    let artifact = r.artifact.clone().unwrap();
    assert_eq!(artifact.mime_type, "application/json");
    let raw: Value =
        serde_json::from_str(&std::fs::read_to_string(&artifact.path).unwrap()).unwrap();
    assert_eq!(raw["content"][0]["text"], "héllo");
    assert!(
        artifact
            .path
            .starts_with(h.workspace.path().join(".iris/tool-results/s-1"))
    );
    assert_eq!(
        r.metadata["mcp"]["raw_result_path"],
        json!(artifact.path.to_string_lossy())
    );
    assert_eq!(r.metadata["mcp"]["protocol"], "2026-07-28");

    // structuredContent lands in `data`.
    let r = h.call("mcp__fixture__add", json!({"a": 2, "b": 40})).await;
    assert_eq!(r.data["structured_content"], json!({"sum": 42}));

    // Images are projected as image blocks.
    let r = h.call("mcp__fixture__image", json!({})).await;
    assert!(
        matches!(&r.content[..], [ContentBlock::Image { mime_type, .. }] if mime_type == "image/png"),
        "{r:?}"
    );

    // isError becomes an error result that keeps the server's text.
    let r = h
        .call("mcp__fixture__fail", json!({"message": "boom"}))
        .await;
    assert!(r.is_error());
    assert_eq!(r.error_code(), Some(codes::MCP_TOOL_ERROR));
    assert!(text(&r).starts_with(
        "Error[MCP_TOOL_ERROR]: MCP tool `fail` on server `fixture` reported an error"
    ));
    assert!(text(&r).contains("boom"), "{}", text(&r));

    // A protocol-level rejection (bad arguments) is a request failure.
    let r = h.call("mcp__fixture__add", json!({"a": "x"})).await;
    assert!(r.is_error());
    assert!(
        matches!(
            r.error_code(),
            Some(codes::MCP_REQUEST_FAILED) | Some(codes::MCP_TOOL_ERROR)
        ),
        "{r:?}"
    );
    let r = h
        .call("mcp__fixture__echo", json!(["not", "an", "object"]))
        .await;
    assert_eq!(r.error_code(), Some(core_codes::INVALID_INPUT));

    // The child's environment and working directory.
    let r = h
        .call("mcp__fixture__env", json!({"name": "FIXTURE_VAR"}))
        .await;
    assert_eq!(text(&r), "v=s3cret");
    let r = h
        .call("mcp__fixture__env", json!({"name": "IRIS_TEST_SECRET"}))
        .await;
    assert_eq!(
        text(&r),
        "<unset>",
        "host variables are not inherited unless listed"
    );
    let r = h.call("mcp__fixture__cwd", json!({})).await;
    assert_eq!(
        std::fs::canonicalize(text(&r)).unwrap(),
        std::fs::canonicalize(h.workspace.path()).unwrap(),
        "cwd defaults to the workspace"
    );

    // Idempotent prepare, then close; calls afterwards fail cleanly.
    let again = h.manager.prepare().await.unwrap();
    assert!(std::sync::Arc::ptr_eq(&snap, &again));
    h.manager.close().await;
    let r = h.call("mcp__fixture__echo", json!({"text": "x"})).await;
    assert_eq!(r.error_code(), Some(codes::MCP_CONNECTION_CLOSED));
    assert_eq!(
        h.manager.prepare().await.unwrap_err().code(),
        codes::MCP_CLOSED
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packaged_time_server() {
    let command = venv_bin().join("mcp-server-time").display().to_string();
    let entry = format!(
        r#"{{"command": {}, "args": ["--local-timezone", "UTC"]}}"#,
        q(&command)
    );
    let h = Harness::new(config(&[("time", entry)], &McpOverrides::new()));
    let snap = h.manager.prepare().await.unwrap();
    let names: Vec<&str> = snap.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["mcp__time__get_current_time", "mcp__time__convert_time"]
    );
    let r = h
        .call(
            "mcp__time__get_current_time",
            json!({"timezone": "Asia/Tokyo"}),
        )
        .await;
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(r.data["structured_content"]["timezone"], "Asia/Tokyo");
    assert!(text(&r).contains("Asia/Tokyo"));
    // A tool's own error (an unknown timezone) is an error result.
    let r = h
        .call(
            "mcp__time__get_current_time",
            json!({"timezone": "Mars/Olympus"}),
        )
        .await;
    assert!(r.is_error(), "{r:?}");
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_server_falls_back_paginates_and_names() {
    let legacy = |extra: &str| {
        format!(
            r#"{{"command": {}, "args": [{}{extra}]}}"#,
            q(python()),
            q(&legacy_server())
        )
    };
    let filtered = format!(
        r#"{{"command": {}, "args": [{}], "enabled_tools": ["echo", "天气"], "disabled_tools": ["echo"]}}"#,
        q(python()),
        q(&legacy_server())
    );
    let h = Harness::new(config(
        &[
            ("legacy", legacy(r#", "--page-size", "3""#)),
            ("filtered", filtered),
            (
                "endless",
                legacy(r#", "--endless-cursor""#).replace('}', r#", "required": false}"#),
            ),
        ],
        &McpOverrides::new(),
    ));
    let snap = h.manager.prepare().await.unwrap();
    let legacy_s = snap.server("legacy").unwrap();
    assert_eq!(
        legacy_s.protocol_version.as_deref(),
        Some("2025-03-26"),
        "fell back to initialize"
    );
    assert_eq!(legacy_s.server_name.as_deref(), Some("legacy-fixture"));

    // 8 tools over 3 pages; the remote-$ref one is refused with a diagnostic.
    let wire: Vec<&str> = snap
        .tools
        .iter()
        .filter(|t| t.server == "legacy")
        .map(|t| t.wire_name.as_str())
        .collect();
    let long = "a".repeat(80);
    assert_eq!(
        wire,
        [
            "echo",
            "get-weather",
            "get.weather",
            "天气",
            long.as_str(),
            "local_ref",
            "no_description"
        ]
    );
    assert!(
        snap.diagnostics.iter().any(|d| d.server == "legacy"
            && d.code == codes::MCP_INVALID_SCHEMA
            && d.message.contains(
                "tool `remote_ref` skipped: remote $ref `https://example.com/schemas/p.json`"
            )),
        "{:#?}",
        snap.diagnostics
    );

    let name_of = |w: &str| snap.tool("legacy", w).unwrap().name.clone();
    assert_eq!(name_of("echo"), "mcp__legacy__echo");
    assert!(name_of("get-weather").starts_with("mcp__legacy__get_weather_"));
    assert!(name_of("get.weather").starts_with("mcp__legacy__get_weather_"));
    assert_ne!(name_of("get-weather"), name_of("get.weather"));
    assert!(name_of(&long).len() == 64);
    assert_eq!(
        snap.tool("legacy", "no_description").unwrap().description,
        "MCP tool `no_description` from server `legacy`."
    );

    // Calls travel under the raw wire name.
    for w in ["天气", long.as_str(), "get.weather"] {
        let r = h.call(&name_of(w), json!({"text": "x"})).await;
        let body: Value = serde_json::from_str(&text(&r)).unwrap();
        assert_eq!(body["tool"], w);
        assert_eq!(body["arguments"], json!({"text": "x"}));
    }

    // enabled_tools/disabled_tools by wire name; disabled wins.
    let filtered: Vec<&str> = snap
        .tools
        .iter()
        .filter(|t| t.server == "filtered")
        .map(|t| t.wire_name.as_str())
        .collect();
    assert_eq!(filtered, ["天气"]);

    // The whole catalog (names with their stable suffixes, schemas, diagnostics).
    insta::assert_json_snapshot!("legacy_catalog", &*snap);

    // A cursor that never ends fails that (optional) server, with a reason.
    let endless = snap.server("endless").unwrap();
    assert_eq!(endless.status, ServerStatus::Failed);
    assert!(
        snap.diagnostics.iter().any(|d| d.server == "endless"
            && d.severity == DiagnosticSeverity::Error
            && d.message
                .contains("pagination does not end: cursor `0` came back twice")),
        "{:#?}",
        snap.diagnostics
    );
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_with_headers_bearer_and_large_results() {
    let server = HttpServer::start("streamable-http");
    let mut host = HostEnv::capture();
    host.set("IRIS_TEST_TOKEN", "tok-123");
    host.set("IRIS_TEST_ORG", "acme");
    let entry = format!(
        r#"{{"type": "http", "url": {}, "headers": {{"X-Team": "iris"}}, "bearer_token_env_var": "IRIS_TEST_TOKEN", "env_http_headers": {{"X-Org": "IRIS_TEST_ORG"}}}}"#,
        q(&server.url("/mcp"))
    );
    let h = Harness::with(config(&[("web", entry)], &trusted(&["web"])), false, host);
    let snap = h.manager.prepare().await.unwrap();
    let s = snap.server("web").unwrap();
    assert_eq!(s.transport, "streamable-http");
    assert_eq!(s.protocol_version.as_deref(), Some("2026-07-28"));
    assert!(snap.tool("web", "echo").unwrap().read_only);

    let r = h.call("mcp__web__headers", json!({})).await;
    let headers: Value = serde_json::from_str(&text(&r)).unwrap();
    assert_eq!(headers["x-team"], "iris");
    assert_eq!(headers["x-org"], "acme");
    assert_eq!(headers["authorization"], "Bearer tok-123");

    // Above rmcp's 16 MiB default limit: the manager raises it.
    let r = h.call("mcp__web__big", json!({"megabytes": 17})).await;
    assert!(!r.is_error(), "{:?}", r.error_info());
    assert_eq!(text(&r).len(), 17 * 1024 * 1024);
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_survives_a_server_restart() {
    let server = HttpServer::start("streamable-http");
    let port = server.port;
    let entry = format!(r#"{{"url": {}}}"#, q(&server.url("/mcp")));
    let h = Harness::new(config(&[("web", entry)], &McpOverrides::new()));
    h.manager.prepare().await.unwrap();
    let r = h.call("mcp__web__echo", json!({"text": "before"})).await;
    assert_eq!(text(&r), "before");
    // The server restarts and forgets every session: the next call still works
    // (sessionless on 2026-07-28; a fresh handshake on older revisions).
    drop(server);
    let _server = HttpServer::start_on("streamable-http", port);
    let r = h.call("mcp__web__echo", json!({"text": "after"})).await;
    assert_eq!(text(&r), "after", "{r:?}");
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_sse_transport() {
    let server = HttpServer::start("sse");
    let entry = format!(r#"{{"type": "sse", "url": {}}}"#, q(&server.url("/sse")));
    let h = Harness::new(config(&[("events", entry)], &McpOverrides::new()));
    let snap = h.manager.prepare().await.unwrap();
    let s = snap.server("events").unwrap();
    assert_eq!(s.transport, "sse");
    assert!(s.protocol_version.is_some());
    let r = h
        .call("mcp__events__echo", json!({"text": "over sse"}))
        .await;
    assert_eq!(text(&r), "over sse");
    let r = h.call("mcp__events__image", json!({})).await;
    assert!(matches!(&r.content[..], [ContentBlock::Image { .. }]));
    h.manager.close().await;
    let r = h.call("mcp__events__echo", json!({"text": "x"})).await;
    assert_eq!(r.error_code(), Some(codes::MCP_CONNECTION_CLOSED));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deferred_publication_and_disabled_servers() {
    let off = sdk_stdio(&[]).replace('}', r#", "disabled": true}"#);
    let h = Harness::with(
        config(
            &[("on", sdk_stdio(&[])), ("off", off)],
            &McpOverrides::new(),
        ),
        true,
        HostEnv::capture(),
    );
    let snap = h.manager.prepare().await.unwrap();
    assert_eq!(snap.server("off").unwrap().status, ServerStatus::Disabled);
    assert_eq!(snap.server("off").unwrap().protocol_version, None);
    assert!(snap.tools.iter().all(|t| t.server == "on" && t.deferred));
    let tool = h.registry.get("mcp__on__echo").unwrap();
    assert!(tool.definition().deferred);
    // Deferred only delays schema disclosure: the connection is live now.
    let r = tool
        .run(ToolInput::new(json!({"text": "ready"})), &h.ctx("c1"))
        .await;
    assert_eq!(text(&r), "ready");
    h.manager.close().await;
}
