//! Error codes, retryability, messages and the tool-result form.

use iris_decision::{Error, TimeoutPhase};
use serde_json::{Value, json};

/// One error → (code, retryable, message, details of its `ToolErrorInfo`).
fn check(error: Error, code: &str, retryable: bool, message: &str, details: Value) {
    assert_eq!(error.code(), code, "{error:?}");
    assert_eq!(error.retryable(), retryable, "{error:?}");
    let info = error.to_info();
    assert_eq!(info.code, code);
    assert_eq!(info.retryable, retryable, "{error:?}");
    assert_eq!(info.message, message);
    assert_eq!(Value::Object(info.details), details, "{error:?}");
    assert!(!info.message.contains('\n'), "one line: {message}");
}

#[test]
fn every_variant_has_a_stable_code() {
    let source: Box<dyn std::error::Error + Send + Sync> = "connection refused".into();
    let cases: Vec<(Error, &str, bool, &str, Value)> = vec![
        (
            Error::InvalidRequest {
                field: "questions".into(),
                reason: "must contain at least one question".into(),
            },
            "DECISION_INVALID_REQUEST",
            false,
            "invalid decision request: `questions` must contain at least one question",
            json!({"field": "questions"}),
        ),
        (
            Error::InvalidResponse {
                field: "answers.q1.choice".into(),
                reason: "`x` is not an option of the question".into(),
            },
            "DECISION_INVALID_RESPONSE",
            false,
            "invalid decision response: `answers.q1.choice` `x` is not an option of the question",
            json!({"field": "answers.q1.choice"}),
        ),
        (
            Error::Timeout {
                seconds: 5.0,
                phase: TimeoutPhase::Request,
            },
            "DECISION_TIMEOUT",
            true,
            "the decision request timed out after 5 s before the response headers arrived",
            json!({"timeout_seconds": 5.0, "phase": "request"}),
        ),
        (
            Error::Timeout {
                seconds: 0.5,
                phase: TimeoutPhase::Body,
            },
            "DECISION_TIMEOUT",
            true,
            "the decision request timed out after 0.5 s while reading the response body",
            json!({"timeout_seconds": 0.5, "phase": "body"}),
        ),
        (
            Error::Http {
                status: 404,
                message: Some("no such route".into()),
            },
            "DECISION_HTTP_ERROR",
            false,
            "the decision service answered HTTP 404: no such route",
            json!({"status": 404}),
        ),
        (
            Error::Http {
                status: 408,
                message: None,
            },
            "DECISION_HTTP_ERROR",
            true,
            "the decision service answered HTTP 408",
            json!({"status": 408}),
        ),
        (
            Error::Http {
                status: 429,
                message: None,
            },
            "DECISION_HTTP_ERROR",
            true,
            "the decision service answered HTTP 429",
            json!({"status": 429}),
        ),
        (
            Error::Http {
                status: 502,
                message: None,
            },
            "DECISION_HTTP_ERROR",
            true,
            "the decision service answered HTTP 502",
            json!({"status": 502}),
        ),
        (
            Error::Auth {
                reason: "IRIS_PROVIDER_API_KEYS__TYPESAFE is not set".into(),
                status: None,
            },
            "DECISION_AUTH",
            false,
            "decision authentication failed: IRIS_PROVIDER_API_KEYS__TYPESAFE is not set",
            json!({"secret": "IRIS_PROVIDER_API_KEYS__TYPESAFE"}),
        ),
        (
            Error::Auth {
                reason: "the decision service rejected the API key (HTTP 401)".into(),
                status: Some(401),
            },
            "DECISION_AUTH",
            false,
            "decision authentication failed: the decision service rejected the API key (HTTP 401)",
            json!({"status": 401, "secret": "IRIS_PROVIDER_API_KEYS__TYPESAFE"}),
        ),
        (
            Error::Unavailable {
                reason: "sending the request failed".into(),
                source: Some(source),
            },
            "DECISION_UNAVAILABLE",
            true,
            "the decision service is unavailable: sending the request failed: connection refused",
            json!({}),
        ),
        (
            Error::TooManyTools {
                count: 255,
                max: 254,
            },
            "DECISION_TOO_MANY_TOOLS",
            false,
            "tool discovery got 255 deferred tools; one decision holds at most 254 (no trimming)",
            json!({"count": 255, "max": 254}),
        ),
        (
            Error::Closed,
            "DECISION_CLOSED",
            false,
            "the decision client is closed",
            json!({}),
        ),
        (
            Error::InvalidConfig {
                field: "tools.discovery".into(),
                reason: "requires deferred tools".into(),
            },
            "DECISION_INVALID_CONFIG",
            false,
            "invalid decision configuration: `tools.discovery` requires deferred tools",
            json!({"field": "tools.discovery"}),
        ),
    ];
    for (error, code, retryable, message, details) in cases {
        check(error, code, retryable, message, details);
    }
}

#[test]
fn code_constants_match_their_names() {
    use iris_decision::codes::*;
    for (constant, name) in [
        (DECISION_INVALID_REQUEST, "DECISION_INVALID_REQUEST"),
        (DECISION_INVALID_RESPONSE, "DECISION_INVALID_RESPONSE"),
        (DECISION_TIMEOUT, "DECISION_TIMEOUT"),
        (DECISION_HTTP_ERROR, "DECISION_HTTP_ERROR"),
        (DECISION_AUTH, "DECISION_AUTH"),
        (DECISION_UNAVAILABLE, "DECISION_UNAVAILABLE"),
        (DECISION_TOO_MANY_TOOLS, "DECISION_TOO_MANY_TOOLS"),
        (DECISION_CLOSED, "DECISION_CLOSED"),
        (DECISION_INVALID_CONFIG, "DECISION_INVALID_CONFIG"),
    ] {
        assert_eq!(constant, name);
    }
}
