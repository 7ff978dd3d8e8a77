//! The tasks extension (SEP-2663) against the Python SDK fixture: a tool the server
//! runs as a task is polled to completion within the call's deadline, and a task
//! given up on (the cap, the host's cancellation) is cancelled on the server; a
//! task's progress notifications and status messages reach the host's sink.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use iris_mcp::ServerOverride;
use iris_tools_core::{CancellationSignal, ToolInput, codes as core_codes};
use serde_json::json;

use crate::support::{Harness, config, sdk_stdio, wait_until};

fn harness(max: f64) -> Harness {
    let o = ServerOverride {
        tool_timeout_sec: Some(max.min(30.0)),
        tool_max_sec: Some(max),
        ..Default::default()
    };
    Harness::new(config(
        &[("t", sdk_stdio(&["--extra-tools"]))],
        &[("t".to_owned(), o)].into(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_polled_to_completion() {
    let h = harness(60.0);
    h.manager.prepare().await.unwrap();
    let r = h.call("mcp__t__slow_task", json!({"seconds": 1.0})).await;
    assert!(!r.is_error(), "{r:?}");
    // The inline body would say "done inline": this answer came from tasks/get.
    assert_eq!(r.model_content(), "task done after 1.0s");
    let mcp = &r.metadata["mcp"];
    assert!(
        mcp["task_id"].as_str().is_some_and(|t| !t.is_empty()),
        "{mcp}"
    );
    assert!(mcp["task_polls"].as_u64().unwrap() >= 1, "{mcp}");
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_past_its_cap_is_cancelled_on_the_server() {
    let h = harness(2.0);
    h.manager.prepare().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("cap");
    let r = h
        .call(
            "mcp__t__slow_task",
            json!({"seconds": 3600.0, "marker": marker.display().to_string()}),
        )
        .await;
    let e = r.error_info().unwrap();
    assert_eq!(e.code, core_codes::TOOL_TIMEOUT, "{e:?}");
    assert_eq!(e.details["cancellation"], "tasks/cancel");
    assert_eq!(e.details["bound"], "cap");
    assert!(
        wait_until(Duration::from_secs(20), || marker.exists()),
        "the server never saw tasks/cancel"
    );
    h.manager.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_cancelled_by_the_host_is_cancelled_on_the_server() {
    let h = harness(600.0);
    h.manager.prepare().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("host");
    let signal = CancellationSignal::new();
    let ctx = h.ctx("c-task").cancellation(signal.clone());
    let tool = h.registry.get("mcp__t__slow_task").unwrap();
    let input = json!({"seconds": 3600.0, "marker": marker.display().to_string()});
    let call = tool.run(ToolInput::new(input), &ctx);
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        signal.cancel();
    };
    let (r, ()) = tokio::join!(call, cancel);
    let e = r.error_info().unwrap();
    assert_eq!(e.code, core_codes::CANCELLED, "{e:?}");
    assert_eq!(e.details["cancellation"], "tasks/cancel");
    assert!(wait_until(Duration::from_secs(20), || marker.exists()));
    h.manager.close().await;
}

/// A sink keeping every progress report.
fn recording() -> (
    iris_mcp::McpProgressSink,
    Arc<Mutex<Vec<iris_mcp::McpProgress>>>,
) {
    let seen: Arc<Mutex<Vec<iris_mcp::McpProgress>>> = Arc::default();
    let sink = {
        let seen = Arc::clone(&seen);
        iris_mcp::McpProgressSink::new(move |p| seen.lock().unwrap().push(p.clone()))
    };
    (sink, seen)
}

/// What a task of `steps` steps reported: the status message it was created with
/// ("queued", before any progress), its three progress notifications ("step N of
/// 3", from the token of the `tools/call`) and its three status messages ("phase N
/// of 3", from `tasks/get`, each once, with the last progress value seen), all for
/// the call's id and tool.
fn assert_task_reported(seen: &[iris_mcp::McpProgress], call_id: &str) {
    let messages: Vec<&str> = seen.iter().filter_map(|p| p.message.as_deref()).collect();
    assert_eq!(
        seen.first()
            .map(|p| (p.message.as_deref(), p.progress, p.total)),
        Some((Some("queued"), 0.0, None)),
        "{messages:?}"
    );
    for step in 1..=3 {
        let note = format!("step {step} of 3");
        let p = seen
            .iter()
            .find(|p| p.message.as_deref() == Some(&note))
            .unwrap_or_else(|| panic!("no `{note}` in {messages:?}"));
        assert_eq!((p.progress, p.total), (f64::from(step), Some(3.0)), "{p:?}");
        let phase = format!("phase {step} of 3");
        let statuses: Vec<_> = seen
            .iter()
            .filter(|p| p.message.as_deref() == Some(&phase))
            .collect();
        assert_eq!(statuses.len(), 1, "`{phase}` once: {messages:?}");
        assert!(statuses[0].progress <= f64::from(step), "{:?}", statuses[0]);
    }
    assert_eq!(seen.len(), 7, "{messages:?}");
    assert!(
        seen.windows(2).all(|w| w[0].progress <= w[1].progress),
        "the value never goes back: {seen:?}"
    );
    for p in seen {
        assert_eq!(
            (p.tool.as_str(), p.server.as_str(), p.call_id.as_str()),
            ("mcp__t__slow_task", "t", call_id)
        );
        assert!(p.remaining <= Duration::from_secs(60), "{p:?}");
    }
}

/// A task polled in place reports its progress like an ordinary call: the
/// server's notifications for the call's token and each new status message. The
/// 1 s idle timeout bounds each `tasks/get`, not the 1.5 s task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_polled_task_reports_progress_and_status_to_the_host() {
    let o = ServerOverride {
        tool_timeout_sec: Some(1.0),
        tool_max_sec: Some(60.0),
        ..Default::default()
    };
    let h = Harness::new(config(
        &[("t", sdk_stdio(&["--extra-tools"]))],
        &[("t".to_owned(), o)].into(),
    ));
    h.manager.prepare().await.unwrap();
    let (sink, seen) = recording();
    let ctx = h.ctx("c-prog").with_extension(sink);
    let tool = h.registry.get("mcp__t__slow_task").unwrap();
    let input = json!({"seconds": 1.5, "steps": 3});
    let r = tool.run(ToolInput::new(input), &ctx).await;
    assert_eq!(r.model_content(), "task done after 1.5s", "{r:?}");
    assert!(r.metadata["mcp"]["task_id"].is_string(), "{r:?}");
    // A notification sent just before the last poll may be read just after it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_task_reported(&seen.lock().unwrap(), "c-prog");
    h.manager.close().await;
}

/// A host that answers every elicitation with one colour.
struct Colour;

impl iris_mcp::ElicitationHandler for Colour {
    fn elicit<'a>(
        &'a self,
        request: &'a iris_mcp::ElicitationRequest,
    ) -> iris_tools_core::BoxFuture<'a, iris_mcp::ElicitationAnswer> {
        assert_eq!(request.message, "Pick a colour for the task");
        Box::pin(async { iris_mcp::ElicitationAnswer::accept(json!({"colour": "violet"})) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_asks_for_input_is_answered_with_tasks_update() {
    let h = harness(60.0);
    h.manager.prepare().await.unwrap();
    let tool = h.registry.get("mcp__t__slow_task").unwrap();
    let ctx = h
        .ctx("c-ask")
        .with_extension(iris_mcp::McpElicitation::new(Colour));
    let input = json!({"seconds": 0.2, "ask": true});
    let r = tool.run(ToolInput::new(input), &ctx).await;
    assert_eq!(
        r.model_content(),
        "task done after 0.2s (accept violet)",
        "{r:?}"
    );
    assert_eq!(r.metadata["mcp"]["elicitations"][0]["action"], "accept");

    // Nobody to ask: declined (a task cannot wait for a later answer), and it goes on.
    let r = h
        .call("mcp__t__slow_task", json!({"seconds": 0.2, "ask": true}))
        .await;
    assert_eq!(
        r.model_content().lines().next(),
        Some("task done after 0.2s (decline -)"),
        "{r:?}"
    );
    h.manager.close().await;
}

/// A host that takes background work into a channel (what a run loop does).
fn handoff(
    cancel: &CancellationSignal,
) -> (
    iris_tools_core::BackgroundHandoff,
    tokio::sync::mpsc::UnboundedReceiver<iris_tools_core::BackgroundWork>,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let handoff = iris_tools_core::BackgroundHandoff::new(cancel.clone(), move |w| {
        tx.send(w).map_err(|e| e.0)
    });
    (handoff, rx)
}

/// Inside a host that takes background work, a call the server makes a task answers
/// at once with a receipt naming the task, and the handed-off work resolves to the
/// task's result; the task can be followed again by id (`McpTool::follow`). An inner
/// call of another tool (`parent_call_id` set) is still polled within the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_inside_a_run_loop_answers_with_a_receipt_and_is_followed_later() {
    let h = harness(60.0);
    h.manager.prepare().await.unwrap();
    let (handoff, mut rx) = handoff(&CancellationSignal::new());
    let ctx = h.ctx("c-bg").with_extension(handoff);
    let tool = h.registry.get("mcp__t__slow_task").unwrap();
    let receipt = tool
        .run(ToolInput::new(json!({"seconds": 1.0})), &ctx)
        .await;
    assert!(!receipt.is_error(), "{receipt:?}");
    let background = &receipt.data["background"];
    assert_eq!(background["task_id"], "c-bg");
    assert_eq!(background["status"], "running");
    assert_eq!(background["mcp_task"]["server"], "t");
    assert_eq!(background["mcp_task"]["status"], "working");
    let task_id = background["mcp_task"]["task_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(receipt.model_content().contains(&task_id));
    let work = rx.try_recv().expect("the follow-up was handed off");
    assert_eq!(work.call_id, "c-bg");
    assert_eq!(work.tool_name, "mcp__t__slow_task");
    let reference = iris_mcp::McpTaskRef::from_reference(work.reference.as_ref().unwrap()).unwrap();
    assert_eq!(
        (
            reference.server.as_str(),
            reference.tool.as_str(),
            reference.task_id.as_str()
        ),
        ("t", "slow_task", task_id.as_str())
    );
    let done = work.work.await;
    assert_eq!(done.model_content(), "task done after 1.0s", "{done:?}");
    assert_eq!(done.metadata["mcp"]["task_id"], task_id.as_str());

    // Followed again by id (what a resumed run does): the server still has it.
    let again = h
        .manager
        .tool("t", "slow_task")
        .await
        .unwrap()
        .follow(&reference, &h.ctx("c-bg"))
        .await;
    assert_eq!(again.model_content(), "task done after 1.0s", "{again:?}");

    // An inner call of another tool keeps today's path: polled within the call.
    let mut inner = ctx.clone();
    inner.parent_call_id = Some("outer".into());
    let r = tool
        .run(ToolInput::new(json!({"seconds": 0.2})), &inner)
        .await;
    assert_eq!(r.model_content(), "task done after 0.2s", "{r:?}");
    assert!(rx.try_recv().is_err(), "nothing was handed off");
    h.manager.close().await;
}

/// Handed off to a host, the follow-up takes the call's progress route along: the
/// task's progress and status messages reach the sink while the host awaits the
/// work, after the receipt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_off_task_reports_progress_while_it_runs() {
    let h = harness(60.0);
    h.manager.prepare().await.unwrap();
    let (handoff, mut rx) = handoff(&CancellationSignal::new());
    let (sink, seen) = recording();
    let ctx = h.ctx("c-bgp").with_extension(handoff).with_extension(sink);
    let tool = h.registry.get("mcp__t__slow_task").unwrap();
    let input = json!({"seconds": 1.5, "steps": 3});
    let receipt = tool.run(ToolInput::new(input), &ctx).await;
    assert_eq!(
        receipt.data["background"]["status"], "running",
        "{receipt:?}"
    );
    let done = rx.try_recv().unwrap().work.await;
    assert_eq!(done.model_content(), "task done after 1.5s", "{done:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_task_reported(&seen.lock().unwrap(), "c-bgp");
    h.manager.close().await;
}

/// Handed-off work answers to the host's signal, not the call's: cancelling it sends
/// `tasks/cancel`, which the server sees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handed_off_task_work_is_cancelled_by_its_host() {
    let h = harness(600.0);
    h.manager.prepare().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("bg");
    let host = CancellationSignal::new();
    let (handoff, mut rx) = handoff(&host);
    let ctx = h.ctx("c-bg").with_extension(handoff);
    let tool = h.registry.get("mcp__t__slow_task").unwrap();
    let input = json!({"seconds": 3600.0, "marker": marker.display().to_string()});
    let receipt = tool.run(ToolInput::new(input), &ctx).await;
    assert_eq!(
        receipt.data["background"]["status"], "running",
        "{receipt:?}"
    );
    let work = rx.try_recv().unwrap();
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        host.cancel();
    };
    let (out, ()) = tokio::join!(work.work, cancel);
    let e = out.error_info().unwrap();
    assert_eq!(e.code, core_codes::CANCELLED, "{e:?}");
    assert_eq!(e.details["cancellation"], "tasks/cancel");
    assert!(
        wait_until(Duration::from_secs(20), || marker.exists()),
        "the server never saw tasks/cancel"
    );
    h.manager.close().await;
}

/// A handed-off task's result is bounded like any call's (it does not pass through
/// the executor): a body past `max_result_chars` is saved and previewed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_handed_off_task_result_is_saved_and_previewed() {
    let h = harness(60.0);
    h.manager.prepare().await.unwrap();
    let (handoff, mut rx) = handoff(&CancellationSignal::new());
    let ctx = h.ctx("c-big").with_extension(handoff);
    let tool = h.registry.get("mcp__t__slow_task").unwrap();
    let max = tool.definition().max_result_chars;
    let input = json!({"seconds": 0.1, "pad": max + 1000});
    let receipt = tool.run(ToolInput::new(input), &ctx).await;
    assert_eq!(
        receipt.data["background"]["status"], "running",
        "{receipt:?}"
    );
    let done = rx.try_recv().unwrap().work.await;
    let shown = done.model_content();
    assert!(shown.chars().count() < max, "{}", shown.len());
    assert!(shown.starts_with("task done after 0.1s"), "{shown:.80}");
    let saved = done
        .artifact
        .as_ref()
        .and_then(|a| a.text_path.clone())
        .unwrap();
    let body = std::fs::read_to_string(saved).unwrap();
    assert_eq!(
        body.chars().count(),
        "task done after 0.1s".len() + max + 1000
    );
    h.manager.close().await;
}
