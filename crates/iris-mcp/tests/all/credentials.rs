//! Credential auto-heal: an HTTP server behind a bearer check (the SDK fixture's
//! `--bearer-file`) rejects an expired token; the call fails with
//! `MCP_AUTH_REQUIRED` naming the host variable the token comes from;
//! `MCPManager::set_secret` gives it a new value and the next call reconnects with it.

use iris_mcp::{HostEnv, McpOverrides, codes};
use serde_json::json;

use crate::support::{Harness, HttpServer, config, free_port, q};

const OLD: &str = "tok-old-0a1b2c3d";
const NEW: &str = "tok-new-4e5f6a7b";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_token_is_replaced_and_the_server_reconnects() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, format!("{OLD}\n")).unwrap();
    let server = HttpServer::start_with(
        "streamable-http",
        free_port(),
        &["--bearer-file", tokens.to_str().unwrap()],
    );
    let entry = format!(
        r#"{{"url": {}, "headers": {{"Authorization": "Bearer ${{FIXTURE_TOKEN}}"}}}}"#,
        q(&server.url("/mcp"))
    );
    let h = Harness::with(
        config(&[("secure", entry)], &McpOverrides::new()),
        false,
        HostEnv::from_iter([("FIXTURE_TOKEN", OLD)]),
    );
    h.manager.prepare().await.unwrap();
    assert_eq!(h.manager.secret_names(), ["FIXTURE_TOKEN"]);
    let ok = h.call("mcp__secure__echo", json!({"text": "one"})).await;
    assert_eq!(ok.error_code(), None, "{ok:?}");

    // The server expires the old token and accepts a new one.
    std::fs::write(&tokens, format!("{NEW}\n")).unwrap();
    let rejected = h.call("mcp__secure__echo", json!({"text": "two"})).await;
    assert_eq!(
        rejected.error_code(),
        Some(codes::MCP_AUTH_REQUIRED),
        "{rejected:?}"
    );
    let info = rejected.error_info().unwrap();
    assert_eq!(info.details["secret"], "FIXTURE_TOKEN");
    assert_eq!(info.details["status"], 401);
    assert!(
        info.message.contains("the call did not run"),
        "{}",
        info.message
    );
    assert!(
        !format!("{rejected:?}").contains(OLD),
        "the old token leaked"
    );

    assert_eq!(h.manager.set_secret("FIXTURE_TOKEN", NEW), ["secure"]);
    assert!(h.manager.set_secret("UNRELATED", "x").is_empty());
    let healed = h.call("mcp__secure__echo", json!({"text": "three"})).await;
    assert_eq!(healed.error_code(), None, "{healed:?}");
    assert!(healed.model_content().contains("three"), "{healed:?}");

    // The new token is redacted like the configured one.
    std::fs::write(&tokens, "").unwrap();
    let again = h.call("mcp__secure__echo", json!({"text": "four"})).await;
    assert_eq!(
        again.error_code(),
        Some(codes::MCP_AUTH_REQUIRED),
        "{again:?}"
    );
    let diagnostics = format!("{:?}", h.manager.live_diagnostics().await);
    for token in [OLD, NEW] {
        assert!(!format!("{again:?}").contains(token), "{token} leaked");
        assert!(
            !diagnostics.contains(token),
            "{token} leaked into {diagnostics}"
        );
    }
    h.manager.close().await;
}

/// A stdio server has no credential variables; an HTTP server lists every variable its
/// headers, `env_http_headers` and `bearer_token_env_var` read, once each.
#[test]
fn credential_variables_come_from_the_http_settings() {
    let cfg = config(
        &[
            (
                "web",
                r#"{"url": "http://127.0.0.1:9/mcp?k=${URL_KEY}", "headers": {"X-Api": "${API}", "X-Token": "t ${env:TOKEN2} ${TOKEN}"}, "env_http_headers": {"X-Org": "ORG"}, "bearer_token_env_var": "TOKEN"}"#
                    .to_owned(),
            ),
            ("local", r#"{"command": "true"}"#.to_owned()),
        ],
        &McpOverrides::new(),
    );
    let web = &cfg.servers["web"];
    assert_eq!(
        web.credential_vars(),
        ["TOKEN", "ORG", "API", "TOKEN2", "URL_KEY"]
    );
    let local = &cfg.servers["local"];
    assert!(local.credential_vars().is_empty());
}
