//! Client configuration: base URL rules, deadline, key state, and `Debug` output.

use std::time::Duration;

use iris_web::{TavilyClient, codes};

/// What `with_base_url` should make of one input: the stored URL, or an error.
fn check(input: &str, expect: Result<&str, &str>) {
    let got = TavilyClient::new("k").with_base_url(input);
    match (got, expect) {
        (Ok(client), Ok(url)) => assert_eq!(client.base_url(), url, "input {input:?}"),
        (Err(e), Err(fragment)) => {
            assert_eq!(e.code(), codes::WEB_CONFIG_INVALID, "input {input:?}");
            assert_eq!(e.to_info().details["field"], "base_url");
            assert!(e.to_string().contains(fragment), "{input:?}: {e}");
        }
        (got, expect) => panic!("input {input:?}: got {got:?}, expected {expect:?}"),
    }
}

#[test]
fn base_url_rules() {
    let cases = [
        ("https://api.tavily.com", Ok("https://api.tavily.com/")),
        ("http://127.0.0.1:8080", Ok("http://127.0.0.1:8080/")),
        (
            "http://127.0.0.1:8080/tavily",
            Ok("http://127.0.0.1:8080/tavily/"),
        ),
        (
            "http://127.0.0.1:8080/tavily/",
            Ok("http://127.0.0.1:8080/tavily/"),
        ),
        ("  https://proxy.example/  ", Ok("https://proxy.example/")),
        ("http://localhost:8080", Ok("http://localhost:8080/")),
        ("http://[::1]:8080", Ok("http://[::1]:8080/")),
        ("http://127.8.9.10", Ok("http://127.8.9.10/")),
        // The key goes with every request: plain http only where it cannot cross a
        // network.
        (
            "http://api.tavily.com",
            Err("plain http to a non-loopback host"),
        ),
        (
            "http://10.0.0.7:8080",
            Err("plain http to a non-loopback host"),
        ),
        ("http://[fe80::1]", Err("plain http to a non-loopback host")),
        // A user part that looks like loopback: the request goes to the host after `@`.
        (
            "http://127.0.0.1@evil.example:8080",
            Err("plain http to a non-loopback host"),
        ),
        (
            "http://localhost.example",
            Err("plain http to a non-loopback host"),
        ),
        ("ftp://api.tavily.com", Err("must use https, not `ftp`")),
        ("api.tavily.com", Err("is not a URL")),
        ("", Err("is not a URL")),
        (
            "https://user:secret@api.tavily.com",
            Err("must not carry credentials"),
        ),
        (
            "https://api.tavily.com/?api_key=x",
            Err("must not have a query or fragment"),
        ),
        (
            "https://api.tavily.com/#x",
            Err("must not have a query or fragment"),
        ),
    ];
    for (input, expect) in cases {
        check(input, expect);
    }
}

#[test]
fn defaults() {
    let client = TavilyClient::from_env();
    assert_eq!(client.base_url(), "https://api.tavily.com/");
    assert_eq!(client.timeout(), Duration::from_secs(30));
    assert_eq!(client.secret_name(), "IRIS_PROVIDER_API_KEYS__TAVILY");
    assert_eq!(
        TavilyClient::new("k").secret_name(),
        "IRIS_PROVIDER_API_KEYS__TAVILY"
    );
    assert_eq!(
        TavilyClient::from_env_var("MY_TAVILY").secret_name(),
        "MY_TAVILY"
    );
}

#[test]
fn zero_timeout_is_refused() {
    let err = TavilyClient::new("k")
        .with_timeout(Duration::ZERO)
        .unwrap_err();
    assert_eq!(err.code(), codes::WEB_CONFIG_INVALID);
    assert_eq!(err.to_info().details["field"], "timeout");
    let client = TavilyClient::new("k")
        .with_timeout(Duration::from_millis(1))
        .unwrap();
    assert_eq!(client.timeout(), Duration::from_millis(1));
}

#[test]
fn key_state() {
    assert!(TavilyClient::new("tvly-x").has_api_key());
    assert!(!TavilyClient::new("   ").has_api_key());
    let client = TavilyClient::from_env_var("IRIS_WEB_TEST_SURELY_UNSET_VARIABLE");
    assert!(!client.has_api_key());
    client.set_api_key("tvly-healed");
    assert!(client.has_api_key());
}

#[test]
fn debug_never_shows_the_key() {
    let client = TavilyClient::new("tvly-very-secret");
    client.set_api_key("tvly-also-secret");
    let debug = format!("{client:?}");
    assert!(!debug.contains("tvly-"), "{debug}");
    insta::assert_snapshot!(debug, @r#"TavilyClient { base_url: "https://api.tavily.com/", timeout: 30s, key_source: "explicit", secret_name: "IRIS_PROVIDER_API_KEYS__TAVILY", .. }"#);
}
