//! 10,000 concurrent calls complete without deadlock, through `execute_many` and
//! through many concurrent `execute_one`s. A barrier sized to all calls proves they
//! were all in flight at once.

use std::sync::Arc;
use std::time::Duration;

use iris_executor::{
    AfterOutcome, BeforeOutcome, BodyStatus, CircuitBreaker, Next, ToolExecutor,
    ToolHookDispatcher, ToolMiddleware, ToolRequest,
};
use iris_tools_core::{
    BoxFuture, ToolCapability as Cap, ToolExecutionContext, ToolOutput, ToolRegistry, ToolResult,
    ToolUse,
};
use serde_json::{Value, json};
use tokio::sync::Barrier;

use super::fixtures::{ctx, def, register};

const CALLS: usize = 10_000;

struct Passthrough;

impl ToolMiddleware for Passthrough {
    fn wrap_tool_call<'a>(&'a self, req: ToolRequest, next: Next<'a>) -> BoxFuture<'a, ToolOutput> {
        next.run(req)
    }
}

struct NoopHooks;

impl ToolHookDispatcher for NoopHooks {
    fn before_tool<'a>(
        &'a self,
        _: &'a ToolExecutionContext,
        _: &'a str,
        _: &'a str,
        _: &'a Value,
    ) -> BoxFuture<'a, BeforeOutcome> {
        Box::pin(async { BeforeOutcome::Continue })
    }

    fn after_tool<'a>(
        &'a self,
        _: &'a ToolExecutionContext,
        _: &'a str,
        _: &'a str,
        _: &'a Value,
        _: &'a ToolOutput,
        _: BodyStatus,
    ) -> BoxFuture<'a, AfterOutcome> {
        Box::pin(async { AfterOutcome::default() })
    }
}

/// Every layer that takes a lock or keeps state is on: breaker, hooks, middleware,
/// schema cache. The deadline is generous but finite, so a deadlock would surface as
/// `TOOL_TIMEOUT` results rather than a hung test.
fn barrier_executor() -> ToolExecutor {
    let registry = ToolRegistry::new();
    let barrier = Arc::new(Barrier::new(CALLS));
    register(&registry, def("read", &[Cap::Read]), move |_, ctx| {
        let barrier = Arc::clone(&barrier);
        async move {
            barrier.wait().await;
            ToolOutput::text(ctx.call_id)
        }
    });
    ToolExecutor::new(registry)
        .with_circuit_breaker(CircuitBreaker::default())
        .with_hook_dispatcher(NoopHooks)
        .with_middleware(Passthrough)
        .with_default_timeout(Duration::from_secs(120))
}

fn check_all_ok(results: &[ToolResult]) {
    assert_eq!(results.len(), CALLS);
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result.error_code(), None, "call {i}");
        assert_eq!(result.model_content(), format!("c{i}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_calls_through_execute_many() {
    let executor = barrier_executor();
    let uses: Vec<ToolUse> = (0..CALLS)
        .map(|i| ToolUse::new(format!("c{i}"), "read", json!({})))
        .collect();
    let results = executor.execute_many(&uses, &ctx()).await;
    check_all_ok(&results);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_concurrent_execute_one_calls() {
    let executor = barrier_executor();
    let ctx = Arc::new(ctx());
    let mut set = tokio::task::JoinSet::new();
    for i in 0..CALLS {
        let (executor, ctx) = (executor.clone(), Arc::clone(&ctx));
        set.spawn(async move {
            let call = ToolUse::new(format!("c{i}"), "read", json!({}));
            (i, executor.execute_one(&call, &ctx, None).await)
        });
    }
    let mut results = vec![ToolResult::default(); CALLS];
    while let Some(joined) = set.join_next().await {
        let (i, result) = joined.unwrap();
        results[i] = result;
    }
    check_all_ok(&results);
}
