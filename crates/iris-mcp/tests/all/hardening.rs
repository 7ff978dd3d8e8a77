//! Issue 15, the faults a hostile server or config file could trigger: stderr that is
//! not UTF-8 or never ends a line, responses dropped for their size or depth, duplicate
//! keys, secrets in URLs, headers and `Debug` output, redirects that would carry the
//! headers elsewhere, and servers that outlive a killed iris.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use iris_mcp::{
    HostEnv, MCPManager, McpOverrides, ServerOverride, ServerStatus, ServerTransport, codes,
    load_mcp_config,
};
use iris_tools_core::{ToolExecutionContext, ToolOutput, ToolRegistry};
use serde_json::{Value, json};

use crate::support::{
    Harness, HttpServer, children_of, config, free_port, is_isolated_child, legacy_server, python,
    q, running, sdk_server, sdk_stdio, self_status_bytes, spawn_isolated, wait_isolated,
    wait_until,
};

const MIB: u64 = 1024 * 1024;

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

fn tool_timeout(secs: f64) -> ServerOverride {
    ServerOverride {
        tool_timeout_sec: Some(secs),
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

/// Runs `tool` with `input` directly, bounded by `limit` (a deadline for the test, far
/// below the call's own timeout: the call must not wait that out).
async fn run_within(
    registry: &ToolRegistry,
    ctx: &ToolExecutionContext,
    tool: &str,
    input: Value,
    limit: Duration,
) -> ToolOutput {
    let tool = registry.get(tool).unwrap();
    let input = tool.validate_input(input).unwrap();
    tokio::time::timeout(limit, tool.run(input, ctx))
        .await
        .unwrap_or_else(|_| panic!("the call was still waiting after {limit:?}"))
}

// ---------------------------------------------------------------------------------
// Fault 8: stderr.

/// The MiB of stderr the server writes without a newline.
const FLOOD_MIB: u64 = 64;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stderr_that_is_not_utf8_or_never_ends_a_line_keeps_the_server_serving() {
    if !is_isolated_child() {
        // Peak memory is per process, and the other tests of this binary move it by tens
        // of MB: measure in a process of its own.
        let child = spawn_isolated(
            "hardening::stderr_that_is_not_utf8_or_never_ends_a_line_keeps_the_server_serving",
            &[],
        );
        let (ok, out) = wait_isolated(child, Duration::from_secs(180));
        assert!(ok, "{out}");
        return;
    }
    // A reader that stopped draining makes the server block on stderr: the call would
    // then end as TOOL_TIMEOUT after 20 s instead of succeeding.
    let h = Harness::new(config(
        &[("noisy", sdk_stdio(&["--hostile-tools"]))],
        &overrides(&[("noisy", tool_timeout(20.0))]),
    ));
    h.manager.prepare().await.unwrap();
    let r = h.call("mcp__noisy__echo", json!({"text": "warm"})).await;
    assert_eq!(r.model_content(), "warm", "{r:?}");
    let before = self_status_bytes("VmHWM");

    let r = h
        .call("mcp__noisy__stderr_flood", json!({"megabytes": FLOOD_MIB}))
        .await;
    assert_eq!(r.model_content(), "flooded 64 MiB", "{r:?}");
    let r = h
        .call(
            "mcp__noisy__stderr_invalid_utf8",
            json!({"filler_lines": 32}),
        )
        .await;
    assert_eq!(r.model_content(), "survived", "{r:?}");
    for i in 0..3 {
        let text = format!("after {i}");
        let r = h.call("mcp__noisy__echo", json!({"text": text})).await;
        assert_eq!(r.model_content(), text, "{r:?}");
    }
    let grown = self_status_bytes("VmHWM").saturating_sub(before);
    println!(
        "VmHWM grew by {grown} bytes over {FLOOD_MIB} MiB of stderr; VmRSS {}",
        self_status_bytes("VmRSS")
    );
    assert!(
        grown < 24 * MIB,
        "peak RSS grew by {} MiB while the server wrote {FLOOD_MIB} MiB of stderr in one line",
        grown / MIB
    );

    // The tail shows what happened: the invalid bytes decoded lossily, the flood cut
    // to its head and marked, and the lines after both.
    let r = h.call("mcp__noisy__crash", json!({})).await;
    assert_eq!(r.error_code(), Some(codes::MCP_CONNECTION_LOST), "{r:?}");
    let stderr = r.error_info().unwrap().details["stderr"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        stderr.contains("bad \u{FFFD}\u{FFFD} bytes \u{FFFD}"),
        "{stderr}"
    );
    assert!(
        stderr.contains("fixture: after the invalid line"),
        "{stderr}"
    );
    assert!(stderr.contains("crashing on purpose"), "{stderr}");
    let flood = stderr
        .lines()
        .find(|l| l.starts_with("xxxx"))
        .unwrap_or_else(|| panic!("no flood line in {stderr}"));
    assert!(flood.len() < 1024 && flood.contains("truncated"), "{flood}");
    h.manager.close().await;
}

// ---------------------------------------------------------------------------------
// Fault 11: responses dropped for their size or depth fail the request at once.

/// A manager whose messages are capped at `max_bytes`.
fn capped(
    entries: &[(&str, String)],
    over: &McpOverrides,
    max_bytes: usize,
) -> (MCPManager, ToolRegistry, tempfile::TempDir) {
    let workspace = tempfile::tempdir().unwrap();
    let registry = ToolRegistry::new();
    let manager = MCPManager::new(
        config(entries, over),
        registry.clone(),
        workspace.path(),
        false,
    )
    .with_max_message_bytes(max_bytes);
    (manager, registry, workspace)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_over_the_message_cap_fails_the_call_at_once_over_stdio() {
    // The 64 MiB default cap, scaled down to 1 MiB so the test moves 2 MB, not 65.
    let (manager, registry, workspace) = capped(
        &[("big", sdk_stdio(&[]))],
        &overrides(&[("big", tool_timeout(60.0))]),
        1024 * 1024,
    );
    manager.prepare().await.unwrap();
    let ctx = ToolExecutionContext::new(workspace.path()).session_id("s-1");
    let limit = Duration::from_secs(20);
    let r = run_within(
        &registry,
        &ctx,
        "mcp__big__big",
        json!({"megabytes": 2}),
        limit,
    )
    .await;
    assert_eq!(r.error_code(), Some(codes::MCP_RESPONSE_TOO_LARGE), "{r:?}");
    let message = &r.error_info().unwrap().message;
    assert!(
        message.contains("`big`") && message.contains("larger than 1048576 bytes"),
        "{message}"
    );
    // The session goes on: the next call is answered.
    let r = run_within(
        &registry,
        &ctx,
        "mcp__big__echo",
        json!({"text": "after"}),
        limit,
    )
    .await;
    assert_eq!(r.model_content(), "after", "{r:?}");
    // A result under the cap still arrives whole.
    let r = run_within(
        &registry,
        &ctx,
        "mcp__big__echo",
        json!({"text": "y".repeat(400 * 1024)}),
        limit,
    )
    .await;
    assert_eq!(r.model_content().len(), 400 * 1024, "{:?}", r.error_info());
    manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_over_the_message_cap_fails_the_call_at_once_over_http() {
    for transport in ["streamable-http", "sse"] {
        let server = HttpServer::start(transport);
        let path = if transport == "sse" { "/sse" } else { "/mcp" };
        let entry = format!(
            r#"{{"type": {}, "url": {}}}"#,
            q(transport),
            q(&server.url(path))
        );
        let (manager, registry, workspace) = capped(
            &[("big", entry)],
            &overrides(&[("big", tool_timeout(60.0))]),
            1024 * 1024,
        );
        manager.prepare().await.unwrap();
        let ctx = ToolExecutionContext::new(workspace.path()).session_id("s-1");
        let limit = Duration::from_secs(20);
        let r = run_within(
            &registry,
            &ctx,
            "mcp__big__big",
            json!({"megabytes": 2}),
            limit,
        )
        .await;
        // Not "not connected": the answer was too large, and the session is fine.
        assert_eq!(
            r.error_code(),
            Some(codes::MCP_RESPONSE_TOO_LARGE),
            "{transport}: {r:?}"
        );
        let r = run_within(
            &registry,
            &ctx,
            "mcp__big__echo",
            json!({"text": "after"}),
            limit,
        )
        .await;
        assert_eq!(r.model_content(), "after", "{transport}: {r:?}");
        manager.close().await;
    }
}

fn deep_legacy(flag: &str) -> String {
    format!(
        r#"{{"command": {}, "args": [{}, {}, "100000"], "startup_timeout_sec": 60, "tool_timeout_sec": 60}}"#,
        q(python()),
        q(&legacy_server()),
        q(flag)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_deeper_than_the_json_limit_fails_startup_at_once() {
    let h = Harness::new(config(
        &[("deep", deep_legacy("--deep-init"))],
        &McpOverrides::new(),
    ));
    let err = tokio::time::timeout(Duration::from_secs(20), h.manager.prepare())
        .await
        .expect("prepare waited out the 60 s startup timeout")
        .unwrap_err();
    assert_eq!(err.code(), codes::MCP_RESPONSE_INVALID, "{err}");
    assert!(
        err.to_string()
            .starts_with("required MCP server `deep` failed to start: the handshake: "),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_list_deeper_than_the_json_limit_fails_startup_at_once() {
    let h = Harness::new(config(
        &[("deep", deep_legacy("--deep-list"))],
        &McpOverrides::new(),
    ));
    let err = tokio::time::timeout(Duration::from_secs(20), h.manager.prepare())
        .await
        .expect("prepare waited out the 60 s startup timeout")
        .unwrap_err();
    assert_eq!(err.code(), codes::MCP_RESPONSE_INVALID, "{err}");
    let msg = err.to_string();
    assert!(
        msg.starts_with("required MCP server `deep` failed to start: tools/list"),
        "{msg}"
    );
    assert!(msg.contains("not valid JSON-RPC"), "{msg}");
    assert!(
        my_children_with("--deep-list").is_empty(),
        "the server was closed"
    );

    // Optional: the same code as a diagnostic.
    let h = Harness::new(config(
        &[("deep", deep_legacy("--deep-list"))],
        &overrides(&[("deep", optional())]),
    ));
    let snap = tokio::time::timeout(Duration::from_secs(20), h.manager.prepare())
        .await
        .expect("prepare waited out the 60 s startup timeout")
        .unwrap();
    assert_eq!(snap.server("deep").unwrap().status, ServerStatus::Failed);
    assert!(
        snap.diagnostics
            .iter()
            .any(|d| d.server == "deep" && d.code == codes::MCP_RESPONSE_INVALID),
        "{:#?}",
        snap.diagnostics
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_result_deeper_than_the_json_limit_fails_the_call_at_once() {
    let h = Harness::new(config(
        &[("deep", deep_legacy("--deep-call"))],
        &McpOverrides::new(),
    ));
    h.manager.prepare().await.unwrap();
    let ctx = h.ctx("call_deep");
    let r = run_within(
        &h.registry,
        &ctx,
        "mcp__deep__echo",
        json!({"text": "x"}),
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(r.error_code(), Some(codes::MCP_RESPONSE_INVALID), "{r:?}");
    assert!(r.error_info().unwrap().message.contains("`echo`"), "{r:?}");
    h.manager.close().await;
}

// ---------------------------------------------------------------------------------
// Fault 14: duplicate keys.

#[test]
fn duplicate_keys_are_config_errors_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let rows: &[(&str, &str, &[&str])] = &[
        (
            "mcp.json",
            r#"{"mcpServers": {"a": {"command": "first"}, "a": {"command": "second"}}}"#,
            &["mcp.json: server `a`: server `a` is declared twice"],
        ),
        (
            "mcp.jsonc",
            "{\n  // two servers, one name\n  \"servers\": {\n    \"a\": {\"command\": \"first\"},\n    /* again */ \"a\": {\"command\": \"second\",},\n  },\n}\n",
            &["mcp.jsonc: server `a`: server `a` is declared twice"],
        ),
        (
            "field.json",
            r#"{"mcpServers": {"a": {"command": "first", "command": "second"}}}"#,
            &["field.json: server `a`: field `command`: key `command` appears twice"],
        ),
        (
            "env.json",
            r#"{"mcpServers": {"a": {"command": "x", "env": {"K": "1", "K": "2"}}}}"#,
            &["env.json: server `a`: field `env.K`: key `K` appears twice"],
        ),
        (
            "root.json",
            r#"{"mcpServers": {"a": {"command": "x"}}, "mcpServers": {"b": {"command": "y"}}}"#,
            &["root.json: field `mcpServers`: key `mcpServers` appears twice"],
        ),
        (
            "config.toml",
            "[mcp_servers.a]\ncommand = \"first\"\n\n[mcp_servers.a]\ncommand = \"second\"\n",
            &["config.toml: invalid TOML on line 4:", "duplicate"],
        ),
        (
            "field.toml",
            "[mcp_servers.a]\ncommand = \"first\"\ncommand = \"second\"\n",
            &["field.toml: invalid TOML on line 3:", "duplicate key"],
        ),
        (
            "inline.toml",
            "mcp_servers = { a = { command = \"first\" }, a = { command = \"second\" } }\n",
            &["inline.toml: invalid TOML on line 1:", "duplicate key"],
        ),
    ];
    for (name, text, fragments) in rows {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let err = match load_mcp_config(&path, &McpOverrides::new()) {
            Ok(c) => panic!("{name}: a duplicate key loaded silently: {:?}", c.servers),
            Err(e) => e,
        };
        assert_eq!(err.code(), codes::MCP_INVALID_CONFIG, "{name}: {err}");
        let msg = err.to_string();
        for fragment in *fragments {
            assert!(
                msg.contains(fragment),
                "{name}:\n  got: {msg}\n want: {fragment}"
            );
        }
    }

    // Inside a root key that belongs to another tool, a duplicate is only a warning:
    // Iris does not read it.
    let path = dir.path().join("other.json");
    std::fs::write(
        &path,
        r#"{"mcpServers": {"a": {"command": "x"}}, "inputs": {"k": 1, "k": 2}}"#,
    )
    .unwrap();
    let config = load_mcp_config(&path, &McpOverrides::new()).unwrap();
    assert!(
        config
            .warnings
            .iter()
            .any(|w| w.contains("field `inputs.k`: key `k` appears twice")),
        "{:?}",
        config.warnings
    );
}

// ---------------------------------------------------------------------------------
// Fault 7: secrets in errors and diagnostics.

const QUERY_SECRET: &str = "query-secret-1234";
const BEARER_SECRET: &str = "bearer-secret-5678";
const HEADER_SECRET: &str = "header-secret-9012";
const PASSWORD_SECRET: &str = "password-secret-3456";
const SECRETS: [&str; 4] = [QUERY_SECRET, BEARER_SECRET, HEADER_SECRET, PASSWORD_SECRET];

fn secret_host() -> HostEnv {
    let mut host = HostEnv::capture();
    host.set("IRIS_T_QUERY", QUERY_SECRET);
    host.set("IRIS_T_BEARER", BEARER_SECRET);
    host.set("IRIS_T_HEADER", HEADER_SECRET);
    host.set("IRIS_T_PASS", PASSWORD_SECRET);
    host
}

fn assert_no_secret(what: &str, text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{what} leaked `{secret}`: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_in_urls_and_headers_never_reach_errors_or_diagnostics() {
    // Nobody listens on the port: every connection is refused at once.
    let port = free_port();
    let http = format!(
        r#"{{"url": "http://127.0.0.1:{port}/mcp?api_key=${{IRIS_T_QUERY}}&mode=x", "bearer_token_env_var": "IRIS_T_BEARER", "headers": {{"X-Api-Key": "${{IRIS_T_HEADER}}"}}}}"#
    );
    let sse = format!(
        r#"{{"type": "sse", "url": "http://iris:${{IRIS_T_PASS}}@127.0.0.1:{port}/sse?token=${{IRIS_T_QUERY}}", "headers": {{"X-Api-Key": "${{IRIS_T_HEADER}}"}}}}"#
    );

    // Optional servers: the failures become diagnostics (what `mcp list --json` and
    // `iris check` print).
    let h = Harness::with(
        config(
            &[("http", http.clone()), ("sse", sse.clone())],
            &overrides(&[("http", optional()), ("sse", optional())]),
        ),
        false,
        secret_host(),
    );
    let snap = h.manager.prepare().await.unwrap();
    assert_eq!(snap.server("http").unwrap().status, ServerStatus::Failed);
    assert_eq!(snap.server("sse").unwrap().status, ServerStatus::Failed);
    let json = serde_json::to_string(&*snap).unwrap();
    assert_no_secret("the snapshot", &format!("{json}\n{snap:?}"));
    let message = |server: &str| {
        snap.diagnostics
            .iter()
            .find(|d| d.server == server)
            .unwrap()
            .message
            .clone()
    };
    // Still useful: the host and the parameter names are there.
    assert!(
        message("http").contains("127.0.0.1") || message("http").contains("connect"),
        "{}",
        message("http")
    );
    let sse_message = message("sse");
    assert!(
        sse_message.contains(&format!("127.0.0.1:{port}/sse?token=<redacted>")),
        "{sse_message}"
    );
    assert_no_secret(
        "live diagnostics",
        &format!("{:?}", h.manager.live_diagnostics().await),
    );

    // Required servers: the error (what ASSEMBLY_FAILED shows).
    for (name, entry) in [("http", http), ("sse", sse)] {
        let h = Harness::with(
            config(&[(name, entry)], &McpOverrides::new()),
            false,
            secret_host(),
        );
        let err = h.manager.prepare().await.unwrap_err();
        assert_no_secret(name, &format!("{err}\n{err:?}"));
    }

    // A config error quoting a URL that is not http(s).
    let err = iris_mcp::MCPConfig::from_str(
        &format!(
            r#"{{"mcpServers": {{"ftp": {{"url": "ftp://iris:{PASSWORD_SECRET}@127.0.0.1/x?key={QUERY_SECRET}"}}}}}}"#
        ),
        iris_mcp::ConfigFormat::Json,
        "/cfg/mcp.json",
        &McpOverrides::new(),
    )
    .unwrap_err();
    let text = format!("{err}\n{err:?}");
    assert_no_secret("a config error", &text);
    assert!(text.contains("is not an http(s) URL"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_a_stdio_server_prints_on_stderr_is_redacted() {
    let mut host = secret_host();
    host.set("IRIS_T_ENV_SECRET", "env-secret-7788");
    let entry = format!(
        r#"{{"command": {}, "args": [{}, "--hostile-tools"], "env": {{"API_TOKEN": "${{IRIS_T_ENV_SECRET}}"}}}}"#,
        q(python()),
        q(&sdk_server())
    );
    let h = Harness::with(
        config(&[("leaky", entry)], &McpOverrides::new()),
        false,
        host,
    );
    h.manager.prepare().await.unwrap();
    let r = h
        .call("mcp__leaky__leak_env", json!({"name": "API_TOKEN"}))
        .await;
    assert_eq!(r.error_code(), Some(codes::MCP_CONNECTION_LOST), "{r:?}");
    let text = format!("{r:?}");
    assert!(!text.contains("env-secret-7788"), "{text}");
    assert!(text.contains("fixture: leaking <redacted>"), "{text}");
    h.manager.close().await;
}

/// `{:?}` of the manager and of what it holds (config entries, the host environment,
/// values given to `set_secret`) names the keys and never shows a value.
#[test]
fn debug_output_names_keys_and_never_shows_values() {
    const HEADER: &str = "dbg-header-secret-1111";
    const ENV: &str = "dbg-env-secret-2222";
    const HOST: &str = "dbg-host-secret-3333";
    const SET: &str = "dbg-set-secret-4444";
    const ARG: &str = "dbg-arg-secret-5555";
    const QUERY: &str = "dbg-query-secret-6666";
    const ALL: [&str; 6] = [HEADER, ENV, HOST, SET, ARG, QUERY];
    let cfg = config(
        &[
            (
                "web",
                format!(
                    r#"{{"url": "http://127.0.0.1:9/mcp?key={QUERY}", "headers": {{"Authorization": "Bearer {HEADER}", "X-Api-Key": "${{IRIS_DBG_SET}}"}}}}"#
                ),
            ),
            (
                "local",
                format!(
                    r#"{{"command": "true", "args": ["--token={ARG}"], "env": {{"API_TOKEN": "{ENV}"}}}}"#
                ),
            ),
        ],
        &McpOverrides::new(),
    );
    let ServerTransport::StreamableHttp(http) = &cfg.servers["web"].transport else {
        panic!("{:?}", cfg.servers["web"].transport.kind())
    };
    let ServerTransport::Stdio(stdio) = &cfg.servers["local"].transport else {
        panic!("{:?}", cfg.servers["local"].transport.kind())
    };
    let host = HostEnv::from_iter([("IRIS_DBG_HOST", HOST)]);
    let workspace = tempfile::tempdir().unwrap();
    let manager = MCPManager::new(cfg.clone(), ToolRegistry::new(), workspace.path(), false)
        .with_host_env(host.clone());
    // No server is started: the value is only kept, and must not show either.
    assert_eq!(cfg.servers["web"].credential_vars(), ["IRIS_DBG_SET"]);
    assert!(manager.set_secret("IRIS_DBG_SET", SET).is_empty());

    let rows = [
        (
            "HttpConfig",
            format!("{http:?}"),
            vec!["authorization", "<redacted>"],
        ),
        (
            "StdioConfig",
            format!("{stdio:?}"),
            vec!["API_TOKEN", "<redacted>"],
        ),
        ("HostEnv", format!("{host:?}"), vec!["IRIS_DBG_HOST"]),
        (
            "MCPConfig",
            format!("{cfg:?}"),
            vec!["authorization", "API_TOKEN"],
        ),
        (
            "MCPManager",
            format!("{manager:?}"),
            vec![
                "authorization",
                "API_TOKEN",
                "IRIS_DBG_HOST",
                "IRIS_DBG_SET",
            ],
        ),
    ];
    for (what, text, names) in rows {
        for secret in ALL {
            assert!(!text.contains(secret), "{what} shows `{secret}`: {text}");
        }
        for name in names {
            assert!(text.contains(name), "{what} does not name `{name}`: {text}");
        }
    }
}

/// A local HTTP/1.1 listener on 127.0.0.1 that answers every request with `answer`
/// and keeps each request's head (request line and headers). Ends with the runtime.
async fn raw_http(answer: String) -> (u16, Arc<Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let heads: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = Arc::clone(&heads);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let seen = Arc::clone(&seen);
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                seen.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&head).into_owned());
                let _ = stream.write_all(answer.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (port, heads)
}

/// An SSE endpoint that answers with a redirect is refused with a startup error that
/// says so: the redirect is not followed, so the configured headers never reach the
/// address it points to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_redirect_is_refused_and_the_headers_stay_home() {
    const KEY: &str = "redirect-key-secret-7788";
    let (target_port, target_heads) = raw_http(
        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned(),
    )
    .await;
    let (port, heads) = raw_http(format!(
        "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:{target_port}/sse\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n"
    ))
    .await;
    let entry = format!(
        r#"{{"type": "sse", "url": "http://127.0.0.1:{port}/sse", "headers": {{"X-Api-Key": {}}}}}"#,
        q(KEY)
    );
    let h = Harness::new(config(&[("moved", entry)], &McpOverrides::new()));
    let err = h.manager.prepare().await.unwrap_err();
    let text = format!("{err}\n{err:?}");
    assert_eq!(err.code(), codes::MCP_STARTUP_FAILED, "{text}");
    assert!(text.contains("HTTP 307"), "{text}");
    assert!(text.contains("redirects are not followed"), "{text}");
    assert!(
        text.contains(&format!("http://127.0.0.1:{target_port}/sse")),
        "{text}"
    );
    assert!(!text.contains(KEY), "{text}");
    // The configured server was asked, with the header; the redirect's target never was.
    let asked = heads.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(
        asked[0].to_ascii_lowercase().contains("x-api-key"),
        "{asked:?}"
    );
    let followed = target_heads.lock().unwrap().clone();
    assert!(
        followed.is_empty(),
        "the redirect was followed: {followed:?}"
    );
}

// ---------------------------------------------------------------------------------
// Fault 3: servers die with the iris process.

const PIDFILE_ENV: &str = "IRIS_MCP_TEST_PIDFILE";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_servers_die_when_the_iris_process_is_killed() {
    if is_isolated_child() {
        // This process plays iris: it starts a server that ignores SIGTERM and stdin
        // EOF, says its pid, and waits to be killed without a chance to clean up.
        let stubborn = format!(
            r#"{{"command": {}, "args": [{}, "--stubborn"]}}"#,
            q(python()),
            q(&legacy_server())
        );
        let h = Harness::new(config(&[("stubborn", stubborn)], &McpOverrides::new()));
        h.manager.prepare().await.unwrap();
        let pid = h.manager.server_pids().await[0].1;
        let pidfile = std::path::PathBuf::from(std::env::var_os(PIDFILE_ENV).unwrap());
        let tmp = pidfile.with_extension("tmp");
        std::fs::write(&tmp, pid.to_string()).unwrap();
        std::fs::rename(&tmp, &pidfile).unwrap();
        std::future::pending::<()>().await;
    }
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("server.pid");
    let mut child = spawn_isolated(
        "hardening::stdio_servers_die_when_the_iris_process_is_killed",
        &[(PIDFILE_ENV, pidfile.as_os_str())],
    );
    wait_until(Duration::from_secs(60), || {
        pidfile.exists() || child.try_wait().unwrap().is_some()
    });
    if !pidfile.exists() {
        let (_, out) = wait_isolated(child, Duration::from_secs(5));
        panic!("the isolated iris never started its server: {out}");
    }
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(running(pid), "the server {pid} is not running");
    // SIGKILL: no signal handler, no close(), no Drop runs in the iris process.
    child.kill().unwrap();
    child.wait().unwrap();
    let died = wait_until(Duration::from_secs(10), || !running(pid));
    if !died {
        // Leave nothing behind, then fail.
        if let Some(group) = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }
    assert!(
        died,
        "the MCP server {pid} outlived the killed iris process"
    );
}

/// A FIFO or a device named as the config file or as a server's `envFile` is refused at
/// once (it would block the read, or never end it), and so is a config file over the
/// size cap: repository content is read bounded.
#[test]
fn special_and_oversized_config_files_are_refused_at_once() {
    use std::sync::mpsc;

    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("mcp.json");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    let env_fifo = dir.path().join("server.env");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &env_fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    let with_env_file = dir.path().join("env-file.json");
    std::fs::write(
        &with_env_file,
        r#"{"mcpServers": {"a": {"command": "x", "envFile": "server.env"}}}"#,
    )
    .unwrap();
    let big = dir.path().join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(2 * MIB)
        .unwrap();

    // (file, fragment of the error)
    let rows = [
        (fifo, "is a FIFO, not a regular file"),
        (
            std::path::PathBuf::from("/dev/zero"),
            "is a character device, not a regular file",
        ),
        (big, "is larger than the 1 MiB limit"),
    ];
    for (path, fragment) in rows {
        let (send, receive) = mpsc::channel();
        let shown = path.display().to_string();
        std::thread::spawn(move || {
            let _ = send.send(load_mcp_config(&path, &McpOverrides::default()).map(drop));
        });
        // A blocked open would never answer: bound the wait.
        let outcome = receive
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{shown}: the read did not return"));
        let err = outcome.unwrap_err();
        assert_eq!(err.code(), codes::MCP_INVALID_CONFIG, "{shown}: {err}");
        assert!(err.to_string().contains(fragment), "{shown}: {err}");
    }

    // `envFile` is read when the server's transport is resolved (at start).
    let config = load_mcp_config(&with_env_file, &McpOverrides::default()).unwrap();
    let server = config.servers["a"].clone();
    let workspace = dir.path().to_path_buf();
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(server.resolve(&workspace, &HostEnv::default()).map(drop));
    });
    let err = receive
        .recv_timeout(Duration::from_secs(10))
        .expect("resolving the envFile did not return")
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("server.env is a FIFO, not a regular file"),
        "{err}"
    );
}
