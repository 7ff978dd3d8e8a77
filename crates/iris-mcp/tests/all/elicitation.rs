//! Elicitation against the Python SDK fixture, never declined silently: form and URL
//! mode in a 2026-07-28 `input_required` result (the SDK's resolver, a hand-built
//! URL request), the standalone `elicitation/create` of an older session, each
//! accepted, declined, and asked with no handler at all.

use std::sync::{Arc, Mutex};

use iris_mcp::{
    ElicitationAnswer, ElicitationHandler, ElicitationKind, ElicitationRequest, InputRequired,
    McpElicitation, McpOverrides, codes,
};
use iris_tools_core::{BoxFuture, ToolOutput};
use serde_json::{Value, json};

use crate::support::{Harness, HttpServer, config, free_port, q, sdk_stdio};

/// A host that answers every request the same way and records what it was asked.
struct Scripted {
    answer: ElicitationAnswer,
    asked: Arc<Mutex<Vec<ElicitationRequest>>>,
}

impl ElicitationHandler for Scripted {
    fn elicit<'a>(&'a self, request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitationAnswer> {
        self.asked.lock().unwrap().push(request.clone());
        let answer = self.answer.clone();
        Box::pin(async move { answer })
    }
}

fn scripted(answer: ElicitationAnswer) -> (McpElicitation, Arc<Mutex<Vec<ElicitationRequest>>>) {
    let asked: Arc<Mutex<Vec<ElicitationRequest>>> = Arc::default();
    let handler = Scripted {
        answer,
        asked: Arc::clone(&asked),
    };
    (McpElicitation::new(handler), asked)
}

async fn call_with(h: &Harness, name: &str, handler: Option<McpElicitation>) -> ToolOutput {
    let tool = h.registry.get(name).unwrap();
    let mut ctx = h.ctx("call-e");
    if let Some(handler) = handler {
        ctx = ctx.with_extension(handler);
    }
    let input = tool.validate_input(json!({})).unwrap();
    tool.run(input, &ctx).await
}

fn notes(r: &ToolOutput) -> Vec<Value> {
    r.metadata["mcp"]["elicitations"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn stdio_harness() -> Harness {
    Harness::new(config(
        &[("f", sdk_stdio(&["--extra-tools"]))],
        &McpOverrides::new(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_elicitation_in_an_input_required_result_is_answered_by_the_host() {
    let h = stdio_harness();
    let snap = h.manager.prepare().await.unwrap();
    assert_eq!(
        snap.server("f").unwrap().protocol_version.as_deref(),
        Some("2026-07-28")
    );

    let (handler, asked) = scripted(ElicitationAnswer::accept(json!({"colour": "blue"})));
    let r = call_with(&h, "mcp__f__ask_form", Some(handler)).await;
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(r.model_content(), "action=accept colour=blue");
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "asked once: {asked:?}");
    let request = &asked[0];
    assert_eq!(request.server, "f");
    assert_eq!(request.tool, "mcp__f__ask_form");
    assert_eq!(request.call_id, "call-e");
    assert_eq!(request.message, "Pick a colour");
    let ElicitationKind::Form { requested_schema } = &request.kind else {
        panic!("{request:?}")
    };
    assert_eq!(requested_schema["properties"]["colour"]["type"], "string");
    assert_eq!(notes(&r)[0]["action"], "accept");

    // Declined by the host: the server hears `decline`, the result says why.
    let (handler, _) = scripted(ElicitationAnswer::decline("the user said no"));
    let r = call_with(&h, "mcp__f__ask_form", Some(handler)).await;
    assert!(
        r.model_content().contains("action=decline colour=-"),
        "{r:?}"
    );
    assert!(
        r.model_content()
            .contains("answered decline: the user said no"),
        "{}",
        r.model_content()
    );
    assert_eq!(notes(&r)[0]["reason"], "the user said no");
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_handler_an_elicitation_is_declined_with_a_visible_reason() {
    let h = stdio_harness();
    h.manager.prepare().await.unwrap();
    let r = call_with(&h, "mcp__f__ask_form", None).await;
    let text = r.model_content();
    assert!(text.contains("action=decline"), "{text}");
    assert!(text.contains("no one can answer here"), "{text}");
    assert_eq!(notes(&r)[0]["action"], "decline");
    let live = h.manager.live_diagnostics().await;
    assert!(
        live.iter().any(|d| d.server == "f"
            && d.code == codes::MCP_ELICITATION_DECLINED
            && d.message.contains("Pick a colour")
            && d.message.contains("mcp__f__ask_form")),
        "{live:?}"
    );
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_elicitation_shows_the_url_and_reports_the_choice() {
    let h = stdio_harness();
    h.manager.prepare().await.unwrap();
    let (handler, asked) = scripted(ElicitationAnswer::Accept { content: None });
    let r = call_with(&h, "mcp__f__ask_url", Some(handler)).await;
    assert_eq!(r.model_content(), "url action=accept", "{r:?}");
    let asked = asked.lock().unwrap().clone();
    let ElicitationKind::Url { url, .. } = &asked[0].kind else {
        panic!("{asked:?}")
    };
    assert_eq!(url, "http://127.0.0.1:9/signin");
    assert_eq!(asked[0].message, "Sign in to the fixture service");
    assert_eq!(notes(&r)[0]["url"], "http://127.0.0.1:9/signin");

    let (handler, _) = scripted(ElicitationAnswer::decline("not now"));
    let r = call_with(&h, "mcp__f__ask_url", Some(handler)).await;
    assert!(r.model_content().starts_with("url action=decline"), "{r:?}");
    let r = call_with(&h, "mcp__f__ask_url", None).await;
    assert!(r.model_content().starts_with("url action=decline"), "{r:?}");
    assert!(
        r.model_content().contains("no one can answer here"),
        "{r:?}"
    );
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standalone_elicitation_of_an_older_session_goes_to_the_calls_host() {
    // An `initialize` session over HTTP, where the server sends elicitation/create
    // while the call runs.
    let server = HttpServer::start_with(
        "streamable-http",
        free_port(),
        &["--extra-tools", "--legacy-only"],
    );
    let entry = format!(r#"{{"url": {}}}"#, q(&server.url("/mcp")));
    let h = Harness::new(config(&[("old", entry)], &McpOverrides::new()));
    let snap = h.manager.prepare().await.unwrap();
    assert_ne!(
        snap.server("old").unwrap().protocol_version.as_deref(),
        Some("2026-07-28")
    );
    let (handler, asked) = scripted(ElicitationAnswer::accept(json!({"colour": "green"})));
    let r = call_with(&h, "mcp__old__ask", Some(handler)).await;
    assert_eq!(r.model_content(), "action=accept colour=green", "{r:?}");
    assert_eq!(asked.lock().unwrap()[0].tool, "mcp__old__ask");

    // No handler: declined, and said so in the result and the diagnostics.
    let r = call_with(&h, "mcp__old__ask", None).await;
    let text = r.model_content();
    assert!(text.contains("action=decline"), "{text}");
    assert!(text.contains("no one can answer here"), "{text}");
    let live = h.manager.live_diagnostics().await;
    assert!(
        live.iter()
            .any(|d| d.server == "old" && d.code == codes::MCP_ELICITATION_DECLINED),
        "{live:?}"
    );
    h.manager.close().await;
}

/// A host that takes its time: the answer comes after `delay`.
struct Slow {
    delay: std::time::Duration,
}

impl ElicitationHandler for Slow {
    fn elicit<'a>(&'a self, _request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitationAnswer> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            ElicitationAnswer::accept(json!({"colour": "slow"}))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_time_a_person_takes_counts_against_neither_bound() {
    // Idle 1 s, cap 2 s; the person answers after 3 s, on both paths.
    let o = iris_mcp::ServerOverride {
        tool_timeout_sec: Some(1.0),
        tool_max_sec: Some(2.0),
        ..Default::default()
    };
    let h = Harness::new(config(
        &[("f", sdk_stdio(&["--extra-tools"]))],
        &[("f".to_owned(), o.clone())].into(),
    ));
    h.manager.prepare().await.unwrap();
    let slow = || {
        McpElicitation::new(Slow {
            delay: std::time::Duration::from_secs(3),
        })
    };
    let r = call_with(&h, "mcp__f__ask_form", Some(slow())).await;
    assert_eq!(r.model_content(), "action=accept colour=slow", "{r:?}");
    h.manager.close().await;

    let server = HttpServer::start_with(
        "streamable-http",
        free_port(),
        &["--extra-tools", "--legacy-only"],
    );
    let entry = format!(r#"{{"url": {}}}"#, q(&server.url("/mcp")));
    let h = Harness::new(config(&[("old", entry)], &[("old".to_owned(), o)].into()));
    h.manager.prepare().await.unwrap();
    let r = call_with(&h, "mcp__old__ask", Some(slow())).await;
    assert_eq!(r.model_content(), "action=accept colour=slow", "{r:?}");
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_waits_stops_the_call_and_a_resume_continues_it() {
    let h = stdio_harness();
    h.manager.prepare().await.unwrap();
    let (handler, _) = scripted(ElicitationAnswer::Wait {
        reason: "ask me later".into(),
    });
    let r = call_with(&h, "mcp__f__ask_form", Some(handler)).await;
    let e = r.error_info().unwrap();
    assert_eq!(e.code, codes::MCP_INPUT_REQUIRED, "{e:?}");
    let stopped = InputRequired::of(&r).expect("details.input_required");
    assert_eq!(stopped.request.message, "Pick a colour");
    assert_eq!(stopped.request.tool, "mcp__f__ask_form");

    // Later (any process; the server keeps nothing): the call again, answered.
    let resume = stopped.resume(&ElicitationAnswer::accept(json!({"colour": "amber"})));
    let tool = h.registry.get("mcp__f__ask_form").unwrap();
    let ctx = h.ctx("call-e").with_extension(resume);
    let r = tool
        .run(tool.validate_input(json!({})).unwrap(), &ctx)
        .await;
    assert_eq!(r.model_content(), "action=accept colour=amber", "{r:?}");
    h.manager.close().await;

    // An older session's server waits on the open request: declined instead.
    let server = HttpServer::start_with(
        "streamable-http",
        free_port(),
        &["--extra-tools", "--legacy-only"],
    );
    let entry = format!(r#"{{"url": {}}}"#, q(&server.url("/mcp")));
    let h = Harness::new(config(&[("old", entry)], &McpOverrides::new()));
    h.manager.prepare().await.unwrap();
    let (handler, _) = scripted(ElicitationAnswer::Wait {
        reason: "ask me later".into(),
    });
    let r = call_with(&h, "mcp__old__ask", Some(handler)).await;
    let text = r.model_content();
    assert!(text.contains("action=decline"), "{text}");
    assert!(text.contains("cannot wait for a later answer"), "{text}");
    h.manager.close().await;
}
