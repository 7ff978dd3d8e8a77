//! `JevClient` against a real HTTP server on 127.0.0.1 speaking the documented wire
//! format. Nothing here contacts any other address.

use std::time::Duration;

use iris_decision::{
    BooleanQuestion, ChoiceQuestion, DecisionEvaluator, DecisionRequest, Error, JevClient,
    JevClientState, ScoreQuestion, TimeoutPhase,
};
use serde_json::{Value, json};

use crate::support::{JevServer, KEY, Reply, TestServer, code_of, status};

fn request() -> DecisionRequest {
    DecisionRequest::new(json!({"ticket": "The invoice for March is wrong."}))
        .with_question(
            "team",
            ChoiceQuestion::new("Which team should handle the invoice question?")
                .with_option("invoice", Some("Billing: invoices and refunds"))
                .with_option("shipping", None::<String>)
                .with_option("none", None::<String>),
        )
        .with_question(
            "urgent",
            BooleanQuestion::new("The customer needs an answer today."),
        )
        .with_question(
            "tone",
            ScoreQuestion::new("How upset is the customer?", ["calm", "angry"]),
        )
}

/// Every text a caller could see of an error: Display, Debug and the tool form.
fn visible(error: &Error) -> String {
    format!("{error} {error:?} {:?}", error.to_info())
}

#[tokio::test]
async fn success_sends_the_documented_request_and_validates_the_answers() {
    let server = TestServer::jev().await;
    let client = server.client(5.0);
    assert_eq!(
        client.state(),
        JevClientState::Idle,
        "construction does no I/O"
    );
    // Lazy: no HTTP client and no connection until the first call.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        server.requests().is_empty(),
        "nothing is sent before a call"
    );

    let response = client.evaluate(&request()).await.unwrap();
    assert_eq!(
        client.state(),
        JevClientState::Ready,
        "the first call builds the HTTP client"
    );
    assert_eq!(response.provider, "typesafe");
    assert_eq!(response.model, "jev-1.13.0");
    assert_eq!(response.choice("team").unwrap().choice, "invoice");
    assert_eq!(response.boolean("urgent").unwrap().probability, 0.75);
    assert_eq!(response.score("tone").unwrap().score, 1.0);
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (321, 7)
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1, "exactly one request");
    let sent = &requests[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/decisions");
    assert_eq!(
        sent.header("authorization").unwrap(),
        format!("Bearer {KEY}")
    );
    assert_eq!(sent.header("content-type").unwrap(), "application/json");
    assert_eq!(sent.header("accept").unwrap(), "application/json");
    assert!(
        sent.header("user-agent")
            .unwrap()
            .starts_with("iris-decision/")
    );
    insta::assert_json_snapshot!(sent.json());
}

#[tokio::test]
async fn the_model_comes_from_the_response_or_the_request() {
    // (model field in the response, expected DecisionResponse::model)
    for (model, expected) in [(Some("jev-1.14.0"), "jev-1.14.0"), (None, "jev-custom")] {
        let server = TestServer::with_handler(move |r| {
            let mut body = crate::support::jev_answers(&r.json());
            match model {
                Some(m) => body["model"] = json!(m),
                None => {
                    body.as_object_mut().unwrap().remove("model");
                }
            }
            // Unknown fields are ignored, so the service may add some.
            body["request_id"] = json!("req-1");
            Reply::status_json(200, body)
        })
        .await;
        let client = server.client(5.0).with_model("jev-custom").unwrap();
        let response = client.evaluate(&request()).await.unwrap();
        assert_eq!(response.model, expected);
        assert_eq!(server.requests()[0].json()["model"], "jev-custom");
    }
}

/// What a reply should turn into: code, retryability, the exact message.
struct Expect {
    code: &'static str,
    retryable: bool,
    message: &'static str,
}

async fn check_reply(
    case: &str,
    reply: impl Fn() -> Reply + Send + Sync + 'static,
    expect: Expect,
) {
    let server = TestServer::with_handler(move |_| reply()).await;
    let client = server.client(5.0);
    let error = client.evaluate(&request()).await.unwrap_err();
    assert_eq!(error.code(), expect.code, "{case}: {error}");
    assert_eq!(error.retryable(), expect.retryable, "{case}: {error}");
    assert_eq!(error.to_string(), expect.message, "{case}");
    assert!(
        !visible(&error).contains(KEY),
        "{case}: the key leaked: {}",
        visible(&error)
    );
    assert_eq!(
        server.requests().len(),
        1,
        "{case}: one request, no retry, no redirect"
    );
}

#[tokio::test]
async fn http_statuses_become_typed_errors() {
    type MakeReply = Box<dyn Fn() -> Reply + Send + Sync>;
    let cases: Vec<(&str, MakeReply, Expect)> = vec![
        (
            "401",
            Box::new(|| Reply::status_json(401, json!({"error": {"message": "invalid api key"}}))),
            Expect {
                code: "DECISION_AUTH",
                retryable: false,
                message: "decision authentication failed: the decision service rejected the API key (HTTP 401: invalid api key)",
            },
        ),
        (
            "403 without a body",
            Box::new(|| status(403, String::new())),
            Expect {
                code: "DECISION_AUTH",
                retryable: false,
                message: "decision authentication failed: the decision service rejected the API key (HTTP 403)",
            },
        ),
        (
            "400 with a plain error string",
            Box::new(|| Reply::status_json(400, json!({"error": "questions: too many"}))),
            Expect {
                code: "DECISION_HTTP_ERROR",
                retryable: false,
                message: "the decision service answered HTTP 400: questions: too many",
            },
        ),
        (
            "404 with a text body over several lines",
            Box::new(|| status(404, "no route\n  for /v1/decisions".into())),
            Expect {
                code: "DECISION_HTTP_ERROR",
                retryable: false,
                message: "the decision service answered HTTP 404: no route for /v1/decisions",
            },
        ),
        (
            "429",
            Box::new(|| Reply::status_json(429, json!({"message": "slow down"}))),
            Expect {
                code: "DECISION_HTTP_ERROR",
                retryable: true,
                message: "the decision service answered HTTP 429: slow down",
            },
        ),
        (
            "500 with a JSON body without a message",
            Box::new(|| Reply::status_json(500, json!({"code": 17}))),
            Expect {
                code: "DECISION_HTTP_ERROR",
                retryable: true,
                message: "the decision service answered HTTP 500",
            },
        ),
        (
            "503",
            Box::new(|| status(503, "overloaded".into())),
            Expect {
                code: "DECISION_HTTP_ERROR",
                retryable: true,
                message: "the decision service answered HTTP 503: overloaded",
            },
        ),
        (
            "a long message is cut to 200 characters",
            Box::new(|| status(500, "x".repeat(5000))),
            Expect {
                code: "DECISION_HTTP_ERROR",
                retryable: true,
                message: Box::leak(
                    format!(
                        "the decision service answered HTTP 500: {}…",
                        "x".repeat(200)
                    )
                    .into_boxed_str(),
                ),
            },
        ),
        (
            "a redirect is not followed (it would resend the key)",
            Box::new(|| {
                status(302, String::new()).header("location", "http://127.0.0.1:9/v1/decisions")
            }),
            Expect {
                code: "DECISION_HTTP_ERROR",
                retryable: false,
                message: "the decision service answered HTTP 302",
            },
        ),
        (
            "a service that echoes the key in an error",
            Box::new(|| {
                Reply::status_json(
                    500,
                    json!({"error": {"message": format!("bad key {KEY} for org")}}),
                )
            }),
            Expect {
                code: "DECISION_HTTP_ERROR",
                retryable: true,
                message: "the decision service answered HTTP 500: bad key [REDACTED] for org",
            },
        ),
        (
            "a service that echoes the key in a 401",
            Box::new(|| {
                Reply::status_json(
                    401,
                    json!({"error": {"message": format!("Bearer {KEY} is revoked")}}),
                )
            }),
            Expect {
                code: "DECISION_AUTH",
                retryable: false,
                message: "decision authentication failed: the decision service rejected the API key (HTTP 401: Bearer [REDACTED] is revoked)",
            },
        ),
    ];
    for (case, reply, expect) in cases {
        check_reply(case, reply, expect).await;
    }
}

#[tokio::test]
async fn malformed_or_invalid_answers_are_invalid_responses() {
    // Each case rewrites the good answer of the local service.
    type Rewrite = fn(&mut Value) -> String;
    let cases: Vec<(&str, Rewrite, &str)> = vec![
        (
            "not JSON",
            |_| "<html>oops</html>".into(),
            "is not a valid decision response: expected value at line 1 column 1",
        ),
        (
            "truncated JSON",
            |v| {
                let s = v.to_string();
                s[..s.len() / 2].to_owned()
            },
            "is not a valid decision response: EOF while parsing",
        ),
        (
            "no usage",
            |v| {
                v.as_object_mut().unwrap().remove("usage");
                v.to_string()
            },
            "is not a valid decision response: missing field `usage`",
        ),
        (
            "no answers",
            |v| {
                v.as_object_mut().unwrap().remove("answers");
                v.to_string()
            },
            "is not a valid decision response: missing field `answers`",
        ),
        (
            "unknown answer type",
            |v| {
                v["answers"]["urgent"]["type"] = json!("maybe");
                v.to_string()
            },
            "is not a valid decision response: unknown variant `maybe`",
        ),
        (
            "negative token count",
            |v| {
                v["usage"]["input_tokens"] = json!(-1);
                v.to_string()
            },
            "is not a valid decision response: invalid value: integer `-1`",
        ),
        (
            "choice not among the options",
            |v| {
                v["answers"]["team"]["choice"] = json!("legal");
                v.to_string()
            },
            "`answers.team.choice` `legal` is not an option of the question",
        ),
        (
            "a question left unanswered",
            |v| {
                v["answers"].as_object_mut().unwrap().remove("tone");
                v.to_string()
            },
            "`answers.tone` is missing; every question needs an answer",
        ),
        (
            "an answer to nothing",
            |v| {
                v["answers"]["extra"] = json!({"type": "boolean", "probability": 0.5});
                v.to_string()
            },
            "`answers.extra` answers no question that was asked",
        ),
        (
            "probabilities that do not sum to 1",
            |v| {
                v["answers"]["team"]["probabilities"] = json!({"invoice": 0.4});
                v.to_string()
            },
            "`answers.team.probabilities` sum to 0.400; must sum to 1 (±0.01)",
        ),
        (
            "kind mismatch",
            |v| {
                v["answers"]["urgent"] = json!({"type": "score", "score": 0.0, "probabilities": [1.0, 0.0], "levels": ["calm", "angry"], "confidence": 1.0});
                v.to_string()
            },
            "`answers.urgent` is a score answer to a boolean question",
        ),
        (
            "an echoed key in a bad choice",
            |v| {
                v["answers"]["team"]["choice"] = json!(KEY);
                v.to_string()
            },
            "`answers.team.choice` `[REDACTED]` is not an option of the question",
        ),
    ];
    for (case, rewrite, fragment) in cases {
        let server = TestServer::with_handler(move |r| {
            let mut body = crate::support::jev_answers(&r.json());
            status(200, rewrite(&mut body))
        })
        .await;
        let error = server.client(5.0).evaluate(&request()).await.unwrap_err();
        assert_eq!(error.code(), "DECISION_INVALID_RESPONSE", "{case}: {error}");
        assert!(error.to_string().contains(fragment), "{case}: {error}");
        assert!(!visible(&error).contains(KEY), "{case}: the key leaked");
    }
}

#[tokio::test]
async fn an_oversized_body_is_refused() {
    let server = TestServer::with_handler(|_| {
        status(200, " ".repeat(iris_decision::MAX_RESPONSE_BYTES + 1))
    })
    .await;
    let error = server.client(30.0).evaluate(&request()).await.unwrap_err();
    assert_eq!(error.code(), "DECISION_INVALID_RESPONSE");
    assert_eq!(
        error.to_string(),
        "invalid decision response: `<body>` is larger than 8388608 bytes"
    );
}

/// The deadline of the timeout cases: long enough that loopback headers always arrive
/// first even on a loaded machine, so the reported phase is deterministic.
const DEADLINE: f64 = 1.5;

/// The server's behaviour → the timeout phase the client reports.
async fn check_timeout(case: &str, reply: fn() -> Reply, phase: TimeoutPhase) {
    let server = TestServer::with_handler(move |_| reply()).await;
    let client = server.client(DEADLINE);
    // A guard far past the client's deadline: if the deadline were only an idle
    // timeout, a trickling body would never end and this guard would report it.
    let outcome = tokio::time::timeout(Duration::from_secs(60), client.evaluate(&request()))
        .await
        .unwrap_or_else(|_| panic!("{case}: the client's deadline did not end the request"));
    match outcome {
        Err(Error::Timeout {
            seconds,
            phase: got,
        }) => {
            assert_eq!(seconds, DEADLINE, "{case}");
            assert_eq!(got, phase, "{case}");
        }
        other => panic!("{case}: expected a timeout, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 1, "{case}: no retry");
}

#[tokio::test]
async fn one_total_deadline_covers_headers_and_body() {
    // The three cases are independent; running them together keeps the test short.
    tokio::join!(
        check_timeout("slow headers", || Reply::Hang, TimeoutPhase::Request),
        check_timeout(
            "slow body: half of it, then nothing",
            || Reply::PartialBody {
                declared_len: 4096,
                sent: "{\"answers\": {".into(),
            },
            TimeoutPhase::Body,
        ),
        check_timeout(
            "slow body: a byte every 20 ms, forever",
            || Reply::Trickle {
                every: Duration::from_millis(20),
            },
            TimeoutPhase::Body,
        ),
    );
}

#[tokio::test]
async fn an_unreachable_service_is_unavailable() {
    // Bind a loopback port, then free it: nothing listens there any more.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let client = JevClient::new(KEY)
        .unwrap()
        .with_base_url(&format!("http://{addr}/v1"))
        .unwrap();
    let error = client.evaluate(&request()).await.unwrap_err();
    assert_eq!(error.code(), "DECISION_UNAVAILABLE", "{error}");
    assert!(error.retryable());
    assert!(
        error
            .to_string()
            .starts_with("the decision service is unavailable: sending the request failed")
    );
    assert!(!visible(&error).contains(KEY));
}

#[tokio::test]
async fn an_invalid_request_is_refused_before_any_io() {
    let server = TestServer::jev().await;
    let client = server.client(5.0);
    let error = client
        .evaluate(&DecisionRequest::new(json!({})))
        .await
        .unwrap_err();
    assert_eq!(error.code(), "DECISION_INVALID_REQUEST");
    assert_eq!(
        client.state(),
        JevClientState::Idle,
        "no HTTP client was built"
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn close_refuses_later_calls_and_is_idempotent() {
    let server = TestServer::jev().await;
    let client = server.client(5.0);
    client.evaluate(&request()).await.unwrap();
    client.close().await;
    assert_eq!(client.state(), JevClientState::Closed);
    let error = client.evaluate(&request()).await.unwrap_err();
    assert_eq!(error.code(), "DECISION_CLOSED");
    client.close().await;
    assert_eq!(client.state(), JevClientState::Closed);
    assert_eq!(server.requests().len(), 1, "nothing was sent after close");

    // Closing a client that never sent anything is fine too.
    let idle = server.client(5.0);
    idle.close().await;
    assert_eq!(code_of(&idle.evaluate(&request()).await), "DECISION_CLOSED");
}

#[tokio::test]
async fn close_ends_a_call_in_flight() {
    let server = TestServer::with_handler(|_| Reply::Hang).await;
    let client = server.client(60.0);
    let request = request();
    let (outcome, ()) = tokio::join!(client.evaluate(&request), async {
        server.wait_for_requests(1).await;
        client.close().await;
    });
    assert_eq!(code_of(&outcome), "DECISION_CLOSED");
}

/// `with_base_url(input)` → the endpoint, or the exact error message.
fn check_base_url(input: &str, expect: Result<&str, &str>) {
    let got = JevClient::new(KEY).unwrap().with_base_url(input);
    match (got, expect) {
        (Ok(client), Ok(endpoint)) => assert_eq!(client.endpoint(), endpoint, "{input}"),
        (Err(e), Err(message)) => {
            assert_eq!(e.code(), "DECISION_INVALID_CONFIG", "{input}");
            assert_eq!(
                e.to_string(),
                format!("invalid decision configuration: `base_url` {message}"),
                "{input}"
            );
        }
        (got, expect) => panic!("{input}: got {got:?}, expected {expect:?}"),
    }
}

#[test]
fn base_url_rules() {
    let cases: [(&str, Result<&str, &str>); 13] = [
        (
            "https://api.typesafe.ai/v1",
            Ok("https://api.typesafe.ai/v1/decisions"),
        ),
        (
            "https://decide.example.com/",
            Ok("https://decide.example.com/decisions"),
        ),
        (
            "https://decide.example.com/api/v2/",
            Ok("https://decide.example.com/api/v2/decisions"),
        ),
        (
            "http://127.0.0.1:8080/v1",
            Ok("http://127.0.0.1:8080/v1/decisions"),
        ),
        (
            "http://localhost:9000",
            Ok("http://localhost:9000/decisions"),
        ),
        ("http://[::1]:9000/v1", Ok("http://[::1]:9000/v1/decisions")),
        (
            "http://decide.example.com/v1",
            Err("uses plain http to a non-loopback host; the API key needs https"),
        ),
        (
            "http://10.0.0.8/v1",
            Err("uses plain http to a non-loopback host; the API key needs https"),
        ),
        // A user part that looks like loopback: the request goes to the host after `@`.
        (
            "http://127.0.0.1@decide.example.com/v1",
            Err("uses plain http to a non-loopback host; the API key needs https"),
        ),
        (
            "ftp://decide.example.com",
            Err("has an unsupported scheme; use https"),
        ),
        (
            "https://user:hunter2@decide.example.com",
            Err("must not carry credentials; the key goes in the Authorization header"),
        ),
        (
            "https://decide.example.com/v1?key=hunter2",
            Err("must not have a query or fragment"),
        ),
        (
            "decide.example.com/v1",
            Err("is not an absolute URL: relative URL without a base"),
        ),
    ];
    for (input, expect) in cases {
        check_base_url(input, expect);
    }
    assert_eq!(
        JevClient::new(KEY).unwrap().endpoint(),
        "https://api.typesafe.ai/v1/decisions"
    );
}

#[test]
fn key_rules() {
    // (key, Ok = accepted, Err = exact message)
    let cases: [(&str, Result<(), &str>); 5] = [
        ("sk-abc_123.XYZ", Ok(())),
        ("  sk-with-newline\n", Ok(())),
        (
            "",
            Err("decision authentication failed: the typesafe API key is empty"),
        ),
        (
            " \t",
            Err("decision authentication failed: the typesafe API key is empty"),
        ),
        (
            "sk with space",
            Err(
                "decision authentication failed: the typesafe API key holds characters an HTTP header cannot carry",
            ),
        ),
    ];
    for (key, expect) in cases {
        match (JevClient::new(key), expect) {
            (Ok(client), Ok(())) => assert!(!format!("{client:?}").contains(key.trim())),
            (Err(e), Err(message)) => {
                assert_eq!(e.code(), "DECISION_AUTH", "{key:?}");
                assert_eq!(e.to_string(), message, "{key:?}");
            }
            (got, expect) => panic!("{key:?}: got {got:?}, expected {expect:?}"),
        }
    }
    // Variables read through the lookup: missing, empty, present.
    let from =
        |value: Option<&'static str>| JevClient::from_env_with(move |_| value.map(str::to_owned));
    assert_eq!(
        from(None).unwrap_err().to_string(),
        "decision authentication failed: IRIS_PROVIDER_API_KEYS__TYPESAFE is not set"
    );
    assert_eq!(
        from(Some("")).unwrap_err().to_string(),
        "decision authentication failed: IRIS_PROVIDER_API_KEYS__TYPESAFE is empty"
    );
    assert!(from(Some(KEY)).is_ok());
}

#[test]
fn settings_are_checked_and_defaults_hold() {
    let client = JevClient::new(KEY).unwrap();
    assert_eq!(client.model(), "jev-1.13.0");
    assert_eq!(client.timeout(), Duration::from_secs(5));
    assert_eq!(client.base_url(), "https://api.typesafe.ai/v1");
    for seconds in [0.0, -2.0, f64::NAN, f64::INFINITY, 1e300] {
        let e = JevClient::new(KEY)
            .unwrap()
            .with_timeout_seconds(seconds)
            .unwrap_err();
        assert_eq!(e.code(), "DECISION_INVALID_CONFIG", "{seconds}");
    }
    let client = client
        .with_timeout_seconds(0.25)
        .unwrap()
        .with_model("jev-1.13.0")
        .unwrap()
        .with_base_url("http://127.0.0.1:1/v1")
        .unwrap();
    assert_eq!(client.timeout(), Duration::from_millis(250));
    // Settings never build the HTTP client: it is made on the first call (see
    // `success_sends_the_documented_request_and_validates_the_answers`).
    assert_eq!(client.state(), JevClientState::Idle);
    assert_eq!(
        code_of(&JevClient::new(KEY).unwrap().with_model(" ")),
        "DECISION_INVALID_CONFIG"
    );
}

#[test]
fn debug_never_shows_the_key() {
    let client = JevClient::new(KEY)
        .unwrap()
        .with_base_url("http://127.0.0.1:1/v1")
        .unwrap();
    let debug = format!("{client:?}");
    assert!(!debug.contains(KEY));
    insta::assert_snapshot!(debug);
}
