//! The credential path: missing, blank, malformed, rejected and healed keys, the
//! environment variable, and the secret name hosts see (the auto-heal flow).

use std::sync::Arc;

use iris_web::{TavilyClient, WebSearchTool};
use serde_json::{Value, json};

use crate::support::{Reply, TestServer, call, fetch_tool, search_answer, search_tool};

/// A variable no test environment sets.
const UNSET_VAR: &str = "IRIS_WEB_TEST_SURELY_UNSET_VARIABLE";

fn at(server: &TestServer, client: TavilyClient) -> Arc<TavilyClient> {
    Arc::new(client.with_base_url(&server.url()).unwrap())
}

/// Runs both tools with `client` against a server that would answer, and checks that
/// each fails with WEB_AUTH_REQUIRED and these details, without sending anything.
async fn check(client: TavilyClient, secret: &str, reason: &str) {
    let server = TestServer::start(Reply::json(search_answer())).await;
    let client = at(&server, client);
    for result in [
        call(&search_tool(Arc::clone(&client)), json!({"query": "q"})).await,
        call(
            &fetch_tool(Arc::clone(&client)),
            json!({"urls": ["https://a.example/"]}),
        )
        .await,
    ] {
        assert_eq!(result.error_code(), Some("WEB_AUTH_REQUIRED"), "{result:?}");
        let error = result.error_info().unwrap();
        assert!(!error.retryable);
        assert_eq!(error.details["secret"], secret);
        assert_eq!(error.details["reason"], reason);
        assert!(
            error.message.contains(&format!("`{secret}`")),
            "{}",
            error.message
        );
    }
    assert!(
        server.requests().is_empty(),
        "a missing key costs no request"
    );
}

#[tokio::test]
async fn missing_keys() {
    let cases = [
        (TavilyClient::from_env_var(UNSET_VAR), UNSET_VAR, "missing"),
        (
            TavilyClient::new(""),
            "IRIS_PROVIDER_API_KEYS__TAVILY",
            "missing",
        ),
        (
            TavilyClient::new(" \t "),
            "IRIS_PROVIDER_API_KEYS__TAVILY",
            "missing",
        ),
        (
            TavilyClient::new("tvly-a\nb"),
            "IRIS_PROVIDER_API_KEYS__TAVILY",
            "malformed",
        ),
    ];
    for (client, secret, reason) in cases {
        check(client, secret, reason).await;
    }
}

#[tokio::test]
async fn missing_key_message_tells_the_host_what_to_do() {
    let server = TestServer::start(Reply::json(search_answer())).await;
    let tool = WebSearchTool::new(at(&server, TavilyClient::from_env_var(UNSET_VAR)));
    let result = call(&tool, json!({"query": "q"})).await;
    insta::assert_json_snapshot!(result.error_info(), @r#"
    {
      "code": "WEB_AUTH_REQUIRED",
      "message": "no Tavily API key is configured; the host must provide the secret `IRIS_WEB_TEST_SURELY_UNSET_VARIABLE`",
      "retryable": false,
      "details": {
        "provider": "tavily",
        "reason": "missing",
        "secret": "IRIS_WEB_TEST_SURELY_UNSET_VARIABLE"
      }
    }
    "#);
}

#[tokio::test]
async fn the_key_is_read_from_the_environment_at_call_time() {
    // Edition 2024 makes `set_var` unsafe and the workspace forbids unsafe code, so the
    // test reads a variable Cargo sets for every test process.
    let var = "CARGO_PKG_NAME";
    let value = std::env::var(var).expect("cargo sets CARGO_PKG_NAME for tests");
    let server = TestServer::start(Reply::json(search_answer())).await;
    let result = call(
        &search_tool(at(&server, TavilyClient::from_env_var(var))),
        json!({"query": "q"}),
    )
    .await;
    assert!(!result.is_error(), "{result:?}");
    let sent = server.requests()[0]
        .header("authorization")
        .map(str::to_owned);
    assert_eq!(sent, Some(format!("Bearer {value}")));
}

#[tokio::test]
async fn a_host_heals_the_tools_with_set_api_key() {
    let server = TestServer::with_handler(|r| {
        if r.header("authorization") == Some("Bearer tvly-healed") {
            Reply::json(search_answer())
        } else {
            Reply::status_json(401, json!({"detail": {"error": "invalid API key"}}))
        }
    })
    .await;
    let client = at(&server, TavilyClient::new("tvly-expired"));
    let tool = search_tool(Arc::clone(&client));

    // Round one: the old key is rejected, and the error names the secret to ask for.
    let first = call(&tool, json!({"query": "q"})).await;
    assert_eq!(first.error_code(), Some("WEB_AUTH_REQUIRED"));
    let details = &first.error_info().unwrap().details;
    assert_eq!(details["secret"], "IRIS_PROVIDER_API_KEYS__TAVILY");
    assert_eq!(details["status"], 401);

    // The host stores the secret it asked the user for; the same tool now works.
    client.set_api_key("tvly-healed");
    let second = call(&tool, json!({"query": "q"})).await;
    assert!(!second.is_error(), "{second:?}");
    let keys: Vec<Option<String>> = server
        .requests()
        .iter()
        .map(|r| r.header("authorization").map(str::to_owned))
        .collect();
    assert_eq!(
        keys,
        [
            Some("Bearer tvly-expired".to_owned()),
            Some("Bearer tvly-healed".to_owned())
        ]
    );
}

#[tokio::test]
async fn a_blank_override_does_not_hide_the_configured_key() {
    let server = TestServer::start(Reply::json(search_answer())).await;
    let client = at(&server, TavilyClient::new("tvly-configured"));
    client.set_api_key("  ");
    let result = call(&search_tool(client), json!({"query": "q"})).await;
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer tvly-configured")
    );
}

#[test]
fn keys_never_print() {
    let key = iris_web::ApiKey::new("tvly-do-not-print");
    assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
    let tool = search_tool(Arc::new(TavilyClient::new("tvly-do-not-print")));
    let printed: Value = json!(format!("{tool:?}"));
    assert!(
        !printed.to_string().contains("tvly-do-not-print"),
        "{printed}"
    );
}
