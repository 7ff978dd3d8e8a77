//! Benchmarks: executor.
//!
//! * `trivial`: the executor's overhead on a tool whose body does nothing, against
//!   calling the same body directly (both driven by the same current-thread runtime,
//!   so the runtime's own cost is in both numbers and cancels out in the difference).
//! * `window`: 64 read-only calls that each wait 20 ms, run as one parallel window by
//!   `execute_many`, against a single such call. The target is a ratio ≤ 1.2.
//!
//! Run with `cargo bench -p iris-executor --bench executor`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // A broken fixture should stop the run loudly.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use divan::Bencher;
use iris_executor::{CircuitBreaker, DefaultPermissionPolicy, ToolExecutor};
use iris_tools_core::{
    FnTool, Tool, ToolCapability, ToolDefinition, ToolExecutionContext, ToolInput, ToolOutput,
    ToolRegistry, ToolUse,
};
use serde_json::{Value, json};

fn main() {
    divan::main();
}

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
});

fn read_def(name: &str) -> ToolDefinition {
    ToolDefinition::new(
        name,
        "Echo the text back.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
    )
    .with_capabilities([ToolCapability::Read])
}

fn echo_tool() -> Arc<dyn Tool> {
    Arc::new(FnTool::new(
        read_def("echo"),
        |input: Value, _ctx| async move { ToolOutput::text(input["text"].as_str().unwrap_or_default()) },
    ))
}

fn ctx() -> ToolExecutionContext {
    ToolExecutionContext::new("/nonexistent/bench-workspace").session_id("bench")
}

mod trivial {
    use super::*;

    /// The body alone: `Tool::run` on the same tool object, same input.
    #[divan::bench]
    fn direct_body(bencher: Bencher) {
        let tool = echo_tool();
        let ctx = ctx();
        let input = json!({"text": "hi"});
        bencher.bench_local(|| RUNTIME.block_on(tool.run(ToolInput::new(input.clone()), &ctx)));
    }

    /// The full path with nothing optional configured: lookup, schema validation,
    /// deadline, span, body, identity.
    #[divan::bench]
    fn execute_one(bencher: Bencher) {
        let registry = ToolRegistry::new();
        registry.register_arc(echo_tool()).unwrap();
        let executor = ToolExecutor::new(registry);
        let ctx = ctx();
        let call = ToolUse::new("call_1", "echo", json!({"text": "hi"}));
        bencher.bench_local(|| RUNTIME.block_on(executor.execute_one(&call, &ctx, None)));
    }

    /// The full path with the default permission policy and a circuit breaker.
    #[divan::bench]
    fn execute_one_with_policy_and_breaker(bencher: Bencher) {
        let registry = ToolRegistry::new();
        registry.register_arc(echo_tool()).unwrap();
        let executor = ToolExecutor::new(registry)
            .with_permission_policy(DefaultPermissionPolicy::default())
            .with_circuit_breaker(CircuitBreaker::default());
        let ctx = ctx();
        let call = ToolUse::new("call_1", "echo", json!({"text": "hi"}));
        bencher.bench_local(|| RUNTIME.block_on(executor.execute_one(&call, &ctx, None)));
    }
}

mod window {
    use super::*;

    const WAIT: Duration = Duration::from_millis(20);

    fn sleepy_executor() -> ToolExecutor {
        let registry = ToolRegistry::new();
        registry
            .register(FnTool::new(read_def("wait"), |_, _| async {
                tokio::time::sleep(WAIT).await;
                ToolOutput::text("done")
            }))
            .unwrap();
        ToolExecutor::new(registry)
    }

    fn calls(n: usize) -> Vec<ToolUse> {
        (0..n)
            .map(|i| ToolUse::new(format!("c{i}"), "wait", json!({"text": "x"})))
            .collect()
    }

    /// One read that waits 20 ms.
    #[divan::bench(sample_count = 30, sample_size = 1)]
    fn one_call(bencher: Bencher) {
        let executor = sleepy_executor();
        let call = calls(1).remove(0);
        let ctx = ctx();
        bencher.bench_local(|| RUNTIME.block_on(executor.execute_one(&call, &ctx, None)));
    }

    /// 64 such reads in one `execute_many`: one parallel window.
    #[divan::bench(sample_count = 30, sample_size = 1)]
    fn batch_of_64(bencher: Bencher) {
        let executor = sleepy_executor();
        let calls = calls(64);
        let ctx = ctx();
        bencher.bench_local(|| {
            let results = RUNTIME.block_on(executor.execute_many(&calls, &ctx));
            assert!(results.iter().all(|r| !r.is_error()));
            results
        });
    }
}
