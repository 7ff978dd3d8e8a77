//! Every way a request can fail, as the tools report it: code, retryable, details, and
//! a one-line message that never contains the key.

use std::net::TcpListener;
use std::time::Duration;

use iris_tools_core::{CancellationSignal, ToolOutput};
use iris_web::TavilyClient;
use serde_json::{Value, json};
use std::sync::Arc;

use crate::support::{
    Reply, TEST_KEY, TestServer, call, call_with, client, ctx, fetch_tool, impatient_client,
    result_json, search_tool,
};

/// What one failure should look like.
struct Expect {
    code: &'static str,
    retryable: bool,
    /// Entries `details` must hold.
    details: Value,
    /// Text the message must contain.
    message: &'static str,
}

fn check_failure(result: &ToolOutput, expect: &Expect, what: &str) {
    assert!(result.is_error(), "{what}: {result:?}");
    let error = result.error_info().unwrap();
    assert_eq!(error.code, expect.code, "{what}: {}", error.message);
    assert_eq!(error.retryable, expect.retryable, "{what}");
    for (key, value) in expect.details.as_object().unwrap() {
        assert_eq!(
            error.details.get(key),
            Some(value),
            "{what}: details.{key} in {:?}",
            error.details
        );
    }
    assert!(
        error.message.contains(expect.message),
        "{what}: {}",
        error.message
    );
    assert!(
        !error.message.contains('\n'),
        "{what}: one line: {}",
        error.message
    );
    let serialized = result_json(result).to_string();
    assert!(
        !serialized.contains(TEST_KEY),
        "{what}: the key leaked: {serialized}"
    );
}

/// Runs both tools against a server that answers `reply` and checks both results.
async fn check(reply: Reply, expect: Expect) {
    let what = format!("{reply:?}");
    let server = TestServer::start(reply).await;
    let search = call(&search_tool(client(&server)), json!({"query": "q"})).await;
    check_failure(&search, &expect, &format!("search {what}"));
    let fetch = call(
        &fetch_tool(client(&server)),
        json!({"urls": ["https://a.example/"]}),
    )
    .await;
    check_failure(&fetch, &expect, &format!("fetch {what}"));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn http_statuses() {
    let cases = [
        (
            Reply::status_json(
                401,
                json!({"detail": {"error": "Unauthorized: missing or invalid API key."}}),
            ),
            Expect {
                code: "WEB_AUTH_REQUIRED",
                retryable: false,
                details: json!({"secret": "IRIS_PROVIDER_API_KEYS__TAVILY", "reason": "rejected", "status": 401, "provider": "tavily"}),
                message: "the host must provide a valid secret `IRIS_PROVIDER_API_KEYS__TAVILY`",
            },
        ),
        (
            Reply::status_json(403, json!({"detail": {"error": "Forbidden"}})),
            Expect {
                code: "WEB_AUTH_REQUIRED",
                retryable: false,
                details: json!({"secret": "IRIS_PROVIDER_API_KEYS__TAVILY", "reason": "rejected", "status": 403}),
                message: "rejected the API key (HTTP 403)",
            },
        ),
        (
            Reply::status_json(429, json!({"detail": {"error": "Too many requests"}}))
                .header("retry-after", "7"),
            Expect {
                code: "WEB_RATE_LIMITED",
                retryable: true,
                details: json!({"status": 429, "retry_after_seconds": 7}),
                message: "retry after 7 s",
            },
        ),
        (
            Reply::status_json(429, json!({})),
            Expect {
                code: "WEB_RATE_LIMITED",
                retryable: true,
                details: json!({"status": 429, "retry_after_seconds": null}),
                message: "rate limit",
            },
        ),
        (
            Reply::status_json(500, json!({"detail": {"error": "Internal\nserver error"}})),
            Expect {
                code: "WEB_HTTP_ERROR",
                retryable: true,
                details: json!({"status": 500}),
                message: "HTTP 500: Internal server error",
            },
        ),
        (
            Reply::raw(502, "text/html", "<html><body>Bad gateway</body></html>"),
            Expect {
                code: "WEB_HTTP_ERROR",
                retryable: true,
                details: json!({"status": 502}),
                message: "HTTP 502: <html><body>Bad gateway</body></html>",
            },
        ),
        (
            Reply::status_json(400, json!({"detail": {"error": "Invalid topic"}})),
            Expect {
                code: "WEB_HTTP_ERROR",
                retryable: false,
                details: json!({"status": 400}),
                message: "HTTP 400: Invalid topic",
            },
        ),
        (
            Reply::status_json(
                432,
                json!({"detail": {"error": "This request exceeds your plan's set usage limit."}}),
            ),
            Expect {
                code: "WEB_HTTP_ERROR",
                retryable: false,
                details: json!({"status": 432}),
                message: "exceeds your plan",
            },
        ),
        (
            Reply::raw(503, "text/plain", ""),
            Expect {
                code: "WEB_HTTP_ERROR",
                retryable: true,
                details: json!({"status": 503}),
                message: "the Tavily API answered HTTP 503",
            },
        ),
    ];
    for (reply, expect) in cases {
        check(reply, expect).await;
    }
}

#[tokio::test]
async fn malformed_answers() {
    let cases = [
        Reply::raw(200, "application/json", "{not json"),
        Reply::raw(200, "text/html", "<html>captive portal</html>"),
        Reply::raw(200, "application/json", ""),
        Reply::json(json!({"answer": "no results key"})),
        Reply::json(json!({"results": "not a list"})),
        Reply::json(json!({"results": [{"title": "no url"}]})),
        Reply::json(json!([1, 2, 3])),
    ];
    for reply in cases {
        check(
            reply,
            Expect {
                code: "WEB_INVALID_RESPONSE",
                retryable: false,
                details: json!({}),
                message: "unreadable",
            },
        )
        .await;
    }
}

#[tokio::test]
async fn a_server_slower_than_the_deadline_times_out() {
    let server = TestServer::start(Reply::Hang).await;
    let expect = Expect {
        code: "WEB_TIMEOUT",
        retryable: true,
        details: json!({"timeout_seconds": 0.05}),
        message: "did not answer within 50 ms",
    };
    let search = call(
        &search_tool(impatient_client(&server)),
        json!({"query": "q"}),
    )
    .await;
    check_failure(&search, &expect, "search");
    let fetch = call(
        &fetch_tool(impatient_client(&server)),
        json!({"urls": ["https://a.example/"]}),
    )
    .await;
    check_failure(&fetch, &expect, "fetch");
}

#[tokio::test]
async fn the_deadline_covers_reading_the_body() {
    // The status line and headers arrive at once; the body never completes. A deadline
    // that only covered the head would wait forever.
    let server = TestServer::start(Reply::PartialBody {
        declared_len: 1000,
        sent: "{\"results\": [".into(),
    })
    .await;
    let result = call(
        &search_tool(impatient_client(&server)),
        json!({"query": "q"}),
    )
    .await;
    assert_eq!(result.error_code(), Some("WEB_TIMEOUT"), "{result:?}");
}

#[tokio::test]
async fn an_oversized_answer_is_refused() {
    let huge = format!(
        "{{\"results\": [], \"pad\": \"{}\"}}",
        "x".repeat(33 * 1024 * 1024)
    );
    let server = TestServer::start(Reply::raw(200, "application/json", &huge)).await;
    let result = call(&search_tool(client(&server)), json!({"query": "q"})).await;
    assert_eq!(
        result.error_code(),
        Some("WEB_INVALID_RESPONSE"),
        "{:?}",
        result.error_info()
    );
    assert!(
        result
            .error_info()
            .unwrap()
            .message
            .contains("larger than 33554432 bytes")
    );
}

#[tokio::test]
async fn the_runtime_deadline_shortens_the_client_deadline() {
    let server = TestServer::start(Reply::Hang).await;
    // The client would wait 30 s; the runtime gives the call 40 ms.
    let ctx = ctx().tool_timeout(Duration::from_millis(40));
    let result = call_with(&search_tool(client(&server)), json!({"query": "q"}), &ctx).await;
    assert_eq!(result.error_code(), Some("WEB_TIMEOUT"));
    assert_eq!(
        result.error_info().unwrap().details["timeout_seconds"],
        0.04
    );
}

#[tokio::test]
async fn an_unreachable_server() {
    // A port that was just free: nothing listens there any more.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = Arc::new(
        TavilyClient::new(TEST_KEY)
            .with_base_url(&format!("http://127.0.0.1:{port}"))
            .unwrap(),
    );
    let result = call(&search_tool(client), json!({"query": "q"})).await;
    check_failure(
        &result,
        &Expect {
            code: "WEB_UNREACHABLE",
            retryable: true,
            details: json!({}),
            message: "could not reach the Tavily API at http://127.0.0.1",
        },
        "unreachable",
    );
}

#[tokio::test]
async fn cancellation_before_the_call_sends_nothing() {
    let server = TestServer::start(Reply::json(json!({"results": []}))).await;
    let signal = CancellationSignal::new();
    signal.cancel();
    let ctx = ctx().cancellation(signal);
    let result = call_with(&search_tool(client(&server)), json!({"query": "q"}), &ctx).await;
    assert_eq!(result.error_code(), Some("CANCELLED"));
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn cancellation_during_the_call_stops_waiting() {
    let server = TestServer::start(Reply::Hang).await;
    let signal = CancellationSignal::new();
    let ctx = ctx().cancellation(signal.clone());
    let tool = search_tool(client(&server));
    let call = call_with(&tool, json!({"query": "q"}), &ctx);
    let cancel = async {
        server.wait_for_requests(1).await;
        signal.cancel();
    };
    let (result, ()) = tokio::join!(call, cancel);
    assert_eq!(result.error_code(), Some("CANCELLED"));
}

#[tokio::test]
async fn a_key_echoed_by_the_server_is_redacted() {
    let server = TestServer::start(Reply::status_json(
        500,
        json!({"detail": {"error": format!("backend rejected {TEST_KEY} for no reason")}}),
    ))
    .await;
    let result = call(&search_tool(client(&server)), json!({"query": "q"})).await;
    let message = &result.error_info().unwrap().message;
    assert_eq!(
        message,
        "the Tavily API answered HTTP 500: backend rejected <redacted> for no reason"
    );
    assert!(!result_json(&result).to_string().contains(TEST_KEY));
}

#[tokio::test]
async fn the_client_api_reports_the_deadline_it_was_given() {
    let server = TestServer::start(Reply::Hang).await;
    let client = TavilyClient::new(TEST_KEY)
        .with_base_url(&server.url())
        .unwrap()
        .with_timeout(Duration::from_millis(1))
        .unwrap();
    let err = client
        .search(&iris_web::SearchRequest::new("q"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "WEB_TIMEOUT");
    assert_eq!(err.to_string(), "the Tavily API did not answer within 1 ms");
    assert_eq!(err.to_info().details["timeout_seconds"], 0.001);
}

/// A redirect is reported, never followed: following it would send the key to a host
/// the configuration never named.
#[tokio::test]
async fn a_redirect_is_an_error_and_is_not_followed() {
    let elsewhere = TestServer::start(Reply::json(crate::support::search_answer())).await;
    for status in [301, 302, 303, 307, 308] {
        let target = format!("{}/search", elsewhere.url());
        let server = TestServer::start(
            Reply::raw(status, "text/plain", "moved").header("location", &target),
        )
        .await;
        let result = call(&search_tool(client(&server)), json!({"query": "q"})).await;
        check_failure(
            &result,
            &Expect {
                code: "WEB_HTTP_ERROR",
                retryable: false,
                details: json!({"status": status}),
                message: "the Tavily API answered HTTP 30",
            },
            &format!("redirect {status}"),
        );
        assert_eq!(server.requests().len(), 1);
    }
    assert!(elsewhere.requests().is_empty(), "a redirect was followed");
}
