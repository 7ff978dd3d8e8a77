//! Elicitation against the Python SDK fixture, never declined silently: form and URL
//! mode in a 2026-07-28 `input_required` result (the SDK's resolver, a hand-built
//! URL request), the standalone `elicitation/create` of an older session, each
//! accepted, declined, and asked with no handler at all; a call cancelled while its
//! host is answering ends at once on every path.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use iris_mcp::{
    ElicitationAnswer, ElicitationHandler, ElicitationKind, ElicitationRequest, InputRequired,
    McpElicitation, McpOverrides, codes,
};
use iris_tools_core::{BoxFuture, CancellationSignal, ToolInput, ToolOutput, codes as core_codes};
use serde_json::{Value, json};

use crate::support::{Harness, HttpServer, config, free_port, q, sdk_stdio, wait_until};

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
    let (_server, h) = older_session(McpOverrides::new());
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

    let (_server, h) = older_session([("old".to_owned(), o)].into());
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
    let (_server, h) = older_session(McpOverrides::new());
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

/// A host that never answers: its answer's future raises `dropped` when it is
/// dropped, and `asked` is notified when it is asked.
struct Never {
    asked: Arc<tokio::sync::Notify>,
    dropped: Arc<AtomicBool>,
}

/// Raises its flag when dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl ElicitationHandler for Never {
    fn elicit<'a>(&'a self, _request: &'a ElicitationRequest) -> BoxFuture<'a, ElicitationAnswer> {
        let flag = DropFlag(Arc::clone(&self.dropped));
        self.asked.notify_one();
        Box::pin(async move {
            let _flag = flag;
            std::future::pending().await
        })
    }
}

/// Calls `tool` with `args` under a fresh cancellation signal and a host that never
/// answers, cancels once the host is asked, and checks the call ends promptly with
/// `CANCELLED` and the host's wait was dropped. The cancelled result.
async fn cancel_while_asking(h: &Harness, tool: &str, args: Value) -> ToolOutput {
    let asked = Arc::new(tokio::sync::Notify::new());
    let dropped = Arc::new(AtomicBool::new(false));
    let handler = McpElicitation::new(Never {
        asked: Arc::clone(&asked),
        dropped: Arc::clone(&dropped),
    });
    let signal = CancellationSignal::new();
    let ctx = h
        .ctx("call-x")
        .cancellation(signal.clone())
        .with_extension(handler);
    let tool = h.registry.get(tool).unwrap();
    let call = tool.run(ToolInput::new(args), &ctx);
    let cancel = async {
        asked.notified().await;
        signal.cancel();
        tokio::time::Instant::now()
    };
    // Without the race the call would wait for the answer forever: bounded here so
    // the test fails instead of hanging.
    let (r, cancelled_at) = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::join!(call, cancel)
    })
    .await
    .expect("the cancelled call kept waiting for the host's answer");
    let took = cancelled_at.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "ended {took:?} after the cancel"
    );
    assert_eq!(r.error_code(), Some(core_codes::CANCELLED), "{r:?}");
    assert!(
        wait_until(Duration::from_secs(5), || dropped.load(Ordering::SeqCst)),
        "the host's wait for an answer was left running"
    );
    r
}

/// After a cancelled call the session is fine: the next call's elicitation is
/// answered.
async fn next_call_is_answered(h: &Harness, tool: &str) {
    let (handler, _) = scripted(ElicitationAnswer::accept(json!({"colour": "teal"})));
    let r = call_with(h, tool, Some(handler)).await;
    assert_eq!(r.model_content(), "action=accept colour=teal", "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cancelled_during_an_input_required_round_ends_at_once() {
    let h = stdio_harness();
    h.manager.prepare().await.unwrap();
    let r = cancel_while_asking(&h, "mcp__f__ask_form", json!({})).await;
    // The server answered the round and keeps nothing: there was nothing to withdraw.
    let e = r.error_info().unwrap();
    assert_eq!(e.details["cancellation"], "none_in_flight", "{e:?}");
    assert!(e.message.contains("while the host was answering"), "{e:?}");
    next_call_is_answered(&h, "mcp__f__ask_form").await;
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cancelled_during_a_standalone_elicitation_ends_at_once() {
    let (_server, h) = older_session(McpOverrides::new());
    h.manager.prepare().await.unwrap();
    let r = cancel_while_asking(&h, "mcp__old__ask", json!({})).await;
    // The `tools/call` was out: the server was told to stop it.
    let e = r.error_info().unwrap();
    assert_eq!(
        e.details["cancellation"], "notifications/cancelled",
        "{e:?}"
    );
    next_call_is_answered(&h, "mcp__old__ask").await;
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_cancelled_while_its_host_answers_is_cancelled_on_the_server() {
    let h = stdio_harness();
    h.manager.prepare().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("cancelled");
    let args = json!({"seconds": 0.1, "ask": true, "marker": marker.display().to_string()});
    let r = cancel_while_asking(&h, "mcp__f__slow_task", args).await;
    let e = r.error_info().unwrap();
    assert_eq!(e.details["cancellation"], "tasks/cancel", "{e:?}");
    assert!(e.details["task_id"].is_string(), "{e:?}");
    // The task, waiting for input on the server, was stopped there.
    assert!(
        wait_until(Duration::from_secs(20), || marker.exists()),
        "the server's task was left running"
    );
    h.manager.close().await;
}

/// A streamable-HTTP server `old` that opens an `initialize` session (an older
/// protocol, where the server sends a standalone `elicitation/create` while a call
/// runs), and a harness for it with `overrides`.
fn older_session(overrides: McpOverrides) -> (HttpServer, Harness) {
    let server = HttpServer::start_with(
        "streamable-http",
        free_port(),
        &["--extra-tools", "--legacy-only"],
    );
    let entry = format!(r#"{{"url": {}}}"#, q(&server.url("/mcp")));
    let h = Harness::new(config(&[("old", entry)], &overrides));
    (server, h)
}
