//! Parallel windows and barriers (concurrency happens only inside parallel windows).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use iris_executor::ToolExecutor;
use iris_tools_core::{
    FnTool, ToolCapability as Cap, ToolOutput, ToolRegistry, ToolResult, ToolUse,
};
use serde_json::json;
use tokio::sync::Barrier;

use super::fixtures::{Log, ctx, def, register};

/// A registry with one tool per plan letter:
/// `r` read, `p` pure (no capability), `w` write, `x` execute, `n` network (a read that
/// is not read-only), `c` a read that is not concurrency-safe, `o` a write overridden
/// to read-only; `u` is left unregistered.
fn plan_registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    let ok = |_, _| async { ToolOutput::text("ok") };
    for (name, caps) in [
        ("r", vec![Cap::Read]),
        ("p", vec![]),
        ("w", vec![Cap::Write]),
        ("x", vec![Cap::Execute]),
        ("n", vec![Cap::Read, Cap::Network]),
    ] {
        register(&registry, def(name, &caps), ok);
    }
    registry
        .register(FnTool::new(def("c", &[Cap::Read]), ok).concurrency_safe(false))
        .unwrap();
    registry
        .register(FnTool::new(def("o", &[Cap::Write]), ok).read_only(true))
        .unwrap();
    registry
}

fn check_plan(calls: &str, expect: &str) {
    let executor = ToolExecutor::new(plan_registry());
    let uses: Vec<ToolUse> = calls
        .split_whitespace()
        .enumerate()
        .map(|(i, name)| ToolUse::new(format!("c{i}"), name, json!({})))
        .collect();
    let plan = executor.prepare_many(&uses, &ctx());
    assert_eq!(plan.to_string(), expect, "plan of `{calls}`");
    assert_eq!(
        plan.call_count(),
        uses.len(),
        "plan of `{calls}` covers every call"
    );
}

#[test]
fn prepare_many_cuts_parallel_windows_and_barriers() {
    let table = [
        ("", ""),
        ("r", "par[0]"),
        ("r r r", "par[0..3]"),
        ("r p r", "par[0..3]"),
        ("r w r", "par[0] seq[1] par[2]"),
        ("r r w r r", "par[0..2] seq[2] par[3..5]"),
        ("w w", "seq[0] seq[1]"),
        ("x r", "seq[0] par[1]"),
        ("r n r", "par[0] seq[1] par[2]"),
        ("r c r", "par[0] seq[1] par[2]"),
        ("r u r", "par[0] seq[1] par[2]"),
        ("o r", "par[0..2]"),
        ("r r c c r r", "par[0..2] seq[2] seq[3] par[4..6]"),
    ];
    for (calls, expect) in table {
        check_plan(calls, expect);
    }
}

/// "Read, then write, then read" keeps its order: the second read starts only after
/// the write ended, even though the write yields to the scheduler several times.
#[tokio::test]
async fn read_write_read_never_reorders() {
    let registry = ToolRegistry::new();
    let log = Log::default();
    for (name, caps) in [("read", Cap::Read), ("write", Cap::Write)] {
        let log = log.clone();
        register(&registry, def(name, &[caps]), move |input, _| {
            let log = log.clone();
            async move {
                let tag = input["tag"].as_str().unwrap_or_default().to_owned();
                log.push(format!("start {tag}"));
                for _ in 0..5 {
                    tokio::task::yield_now().await;
                }
                log.push(format!("end {tag}"));
                ToolOutput::text(tag)
            }
        });
    }
    let executor = ToolExecutor::new(registry);
    let uses = [
        ToolUse::new("1", "read", json!({"tag": "r1"})),
        ToolUse::new("2", "write", json!({"tag": "w"})),
        ToolUse::new("3", "read", json!({"tag": "r2"})),
    ];
    let results = executor.execute_many(&uses, &ctx()).await;
    let contents: Vec<String> = results.iter().map(ToolResult::model_content).collect();
    assert_eq!(contents, ["r1", "w", "r2"]);
    assert_eq!(
        log.take(),
        [
            "start r1", "end r1", "start w", "end w", "start r2", "end r2"
        ]
    );
}

/// Adjacent reads overlap: each waits on a barrier sized to its window, which only
/// opens when the whole window is in flight at once. Were they run one by one, the
/// first read would wait until its (paused-clock) deadline and time out. The write
/// between the windows sees no read in flight.
#[tokio::test(start_paused = true)]
async fn adjacent_reads_overlap_and_a_write_is_a_barrier() {
    let registry = ToolRegistry::new();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let first = Arc::new(Barrier::new(3));
    let second = Arc::new(Barrier::new(2));
    for (name, barrier) in [("read_a", first), ("read_b", second)] {
        let in_flight = Arc::clone(&in_flight);
        register(&registry, def(name, &[Cap::Read]), move |_, ctx| {
            let (in_flight, barrier) = (Arc::clone(&in_flight), Arc::clone(&barrier));
            async move {
                in_flight.fetch_add(1, Ordering::SeqCst);
                barrier.wait().await;
                in_flight.fetch_sub(1, Ordering::SeqCst);
                ToolOutput::text(ctx.call_id)
            }
        });
    }
    let seen = Arc::clone(&in_flight);
    register(&registry, def("write", &[Cap::Write]), move |_, _| {
        let seen = seen.load(Ordering::SeqCst);
        async move { ToolOutput::text(format!("in flight: {seen}")) }
    });
    let executor = ToolExecutor::new(registry);
    let uses = [
        ToolUse::new("a1", "read_a", json!({})),
        ToolUse::new("a2", "read_a", json!({})),
        ToolUse::new("a3", "read_a", json!({})),
        ToolUse::new("w", "write", json!({})),
        ToolUse::new("b1", "read_b", json!({})),
        ToolUse::new("b2", "read_b", json!({})),
    ];
    let results = executor.execute_many(&uses, &ctx()).await;
    let contents: Vec<String> = results.iter().map(ToolResult::model_content).collect();
    assert_eq!(contents, ["a1", "a2", "a3", "in flight: 0", "b1", "b2"]);
    let ids: Vec<&str> = results.iter().map(|r| r.tool_use_id.as_str()).collect();
    assert_eq!(ids, ["a1", "a2", "a3", "w", "b1", "b2"]);
}

/// Results come back in call order even when later calls of a window finish first.
#[tokio::test]
async fn window_results_keep_call_order() {
    let registry = ToolRegistry::new();
    register(
        &registry,
        def("read", &[Cap::Read]),
        |input, _| async move {
            // Later calls yield fewer times, so they finish first.
            let n = input["yields"].as_u64().unwrap_or(0);
            for _ in 0..n {
                tokio::task::yield_now().await;
            }
            ToolOutput::text(n.to_string())
        },
    );
    let executor = ToolExecutor::new(registry);
    let uses: Vec<ToolUse> = (0..8)
        .map(|i| ToolUse::new(format!("c{i}"), "read", json!({"yields": 8 - i})))
        .collect();
    let results = executor.execute_many(&uses, &ctx()).await;
    let contents: Vec<String> = results.iter().map(ToolResult::model_content).collect();
    assert_eq!(contents, ["8", "7", "6", "5", "4", "3", "2", "1"]);
}

/// An unknown tool in the middle of a step is its own barrier and still answers.
#[tokio::test]
async fn execute_many_reports_unknown_tools_in_place() {
    let registry = ToolRegistry::new();
    register(&registry, def("read", &[Cap::Read]), |_, _| async {
        ToolOutput::text("ok")
    });
    let executor = ToolExecutor::new(registry);
    let uses = [
        ToolUse::new("1", "read", json!({})),
        ToolUse::new("2", "missing", json!({})),
        ToolUse::new("3", "read", json!({})),
    ];
    let results = executor.execute_many(&uses, &ctx()).await;
    let codes: Vec<Option<&str>> = results.iter().map(ToolResult::error_code).collect();
    assert_eq!(codes, [None, Some("TOOL_NOT_FOUND"), None]);
    assert_eq!(results[1].tool_name, "missing");
}
