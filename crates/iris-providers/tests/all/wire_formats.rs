//! Table-driven tests of what the four HTTP wire formats (Chat Completions, Responses,
//! Anthropic Messages, Gemini) do alike: HTTP statuses, the key header, timeouts,
//! unreachable servers, configuration checks and a `Debug` that hides the key. Each
//! format is one row of [`formats`], with its module's fixtures.
// Tests report failures by panicking, so unwrap is the clearest assertion here.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use iris_providers::ProviderError;

use crate::support::{Format, Reply, TEST_KEY, TestServer, assert_no_key, drain, fails_with};
use crate::{anthropic, gemini, openai_chat, openai_responses};

const OPENAI: &str = "https://api.openai.com/v1/";
const BEARER: (&str, &str) = ("authorization", "Bearer ");

fn formats() -> [Format; 4] {
    use iris_providers::{anthropic as a, gemini as g, openai_chat as c, openai_responses as r};
    [
        Format::of::<c::Client>(
            ("openai", OPENAI, "/v1", BEARER),
            openai_chat::request,
            openai_chat::answer,
            (openai_chat::STATUSES, openai_chat::error_body),
        ),
        Format::of::<r::Client>(
            ("openai-responses", OPENAI, "/v1", BEARER),
            openai_responses::request,
            openai_responses::answer,
            (openai_responses::STATUSES, openai_chat::error_body),
        ),
        Format::of::<a::Client>(
            (
                "anthropic",
                "https://api.anthropic.com/",
                "",
                ("x-api-key", ""),
            ),
            anthropic::request,
            anthropic::answer,
            (anthropic::STATUSES, anthropic::error_body),
        ),
        Format::of::<g::Client>(
            (
                "gemini",
                "https://generativelanguage.googleapis.com/v1beta/",
                "/v1beta",
                ("x-goog-api-key", ""),
            ),
            gemini::request,
            gemini::answer,
            (gemini::STATUSES, gemini::error_body),
        ),
    ]
}

#[tokio::test]
async fn http_statuses_map_to_stable_codes_without_the_key() {
    for format in formats() {
        for &(status, kind, code) in format.statuses {
            let reply = Reply::status_json(status, (format.error_body)(status, kind));
            let client = |server: &TestServer| format.client(server);
            let (_, streamed) = fails_with(client, &(format.request)(), reply, code).await;
            // The body echoed the key; the error quotes it redacted.
            assert!(
                streamed.to_string().contains("<redacted>"),
                "{} HTTP {status}: {streamed}",
                format.name
            );
        }
    }
}

#[tokio::test]
async fn the_key_goes_in_its_header_and_a_blank_key_sends_none() {
    for format in formats() {
        let server = TestServer::start(Reply::json((format.answer)("local"))).await;
        let url = format.base_url(&server.url());
        let (header, prefix) = format.key_header;

        let keyed = (format.client)(TEST_KEY, &url, None).unwrap();
        assert_eq!(
            keyed.complete(&(format.request)()).await.unwrap().text,
            "local"
        );
        let blank = (format.client)("  ", &url, None).unwrap();
        assert_eq!(
            blank.complete(&(format.request)()).await.unwrap().text,
            "local"
        );

        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{}", format.name);
        assert_eq!(
            requests[0].header(header),
            Some(format!("{prefix}{TEST_KEY}").as_str()),
            "{}",
            format.name
        );
        assert_eq!(requests[1].header(header), None, "{}", format.name);
        for request in &requests {
            assert_eq!(request.method, "POST");
            assert_eq!(request.header("content-type"), Some("application/json"));
        }
    }
}

#[tokio::test]
async fn no_answer_in_time_is_provider_timeout() {
    for format in formats() {
        let server = TestServer::start(Reply::Hang).await;
        let client = (format.client)(
            TEST_KEY,
            &format.base_url(&server.url()),
            Some(Duration::from_millis(200)),
        )
        .unwrap();
        let err = client.complete(&(format.request)()).await.unwrap_err();
        assert_eq!(
            err,
            ProviderError::Timeout {
                after: Duration::from_millis(200)
            },
            "{}",
            format.name
        );
        assert!(err.is_retryable());
        let (_, err) = drain(client.stream(&(format.request)())).await;
        assert_eq!(err.unwrap().code(), "PROVIDER_TIMEOUT", "{}", format.name);
    }
}

#[tokio::test]
async fn an_unreachable_server_is_provider_unavailable() {
    for format in formats() {
        // A port that was just free: nothing listens there any more.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let root = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        let client = (format.client)(TEST_KEY, &format.base_url(&root), None).unwrap();
        let err = client.complete(&(format.request)()).await.unwrap_err();
        assert_eq!(err.code(), "PROVIDER_UNAVAILABLE", "{}: {err}", format.name);
        assert_no_key(&err);
        let (events, err) = drain(client.stream(&(format.request)())).await;
        assert!(events.is_empty());
        let err = err.unwrap();
        assert_eq!(err.code(), "PROVIDER_UNAVAILABLE", "{}: {err}", format.name);
        assert_no_key(&err);
    }
}

#[test]
fn configuration_is_checked_and_debug_hides_the_key() {
    for format in formats() {
        let client = (format.client)(TEST_KEY, "https://example.com", None).unwrap();
        assert_eq!(client.name(), format.name);
        for (key, url, timeout) in [
            // A key never crosses a network over plain http.
            (TEST_KEY, "http://api.example.com/v1", None),
            (TEST_KEY, "https://user:pw@example.com", None),
            (TEST_KEY, "https://example.com", Some(Duration::ZERO)),
        ] {
            let err = (format.client)(key, url, timeout).err().unwrap();
            assert_eq!(
                err.code(),
                "PROVIDER_CONFIG_INVALID",
                "{} {url}",
                format.name
            );
            assert!(!err.to_string().contains("pw"), "{err}");
        }
        // Without a key, a LAN server over plain http is fine.
        assert!((format.client)("", "http://gpu-box.lan:8000/v1", None).is_ok());

        let (debug, base_url) = (format.defaults)(TEST_KEY);
        assert!(!debug.contains(TEST_KEY), "{debug}");
        assert!(debug.contains("<redacted>"), "{debug}");
        assert_eq!(base_url, format.default_base_url);
        assert!(debug.contains(format.default_base_url), "{debug}");
    }
}
