//! Code mode's costs (issue 20), printed as a table for docs/benchmarks.md:
//!
//! 1. **Per inner call overhead**: a program making `N` sequential calls to a trivial
//!    read-only tool, minus a program making none, divided by `N`, against the mean of
//!    a direct `ToolExecutor::execute_one` of the same tool. The difference is the
//!    socket round trip plus the Python side (JSON, one connection per call).
//! 2. **Context saved on the example task**: examples/code-mode's program runs on a copy
//!    of its `src/`; a middleware adds up what each inner call's result would have put
//!    in the model's context had the model made the call itself, against the one
//!    result the script returns.
//!
//! Run with `cargo bench -p iris-script --bench script` (`IRIS_SCRIPT_CALLS`, default
//! 1000, changes `N`). A real python3 runs natively through the command service.
#![allow(clippy::unwrap_used, clippy::expect_used)] // A broken fixture should stop the run loudly.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use iris_command::{CommandBinding, CommandConfig, CommandService};
use iris_executor::{Next, ToolExecutor, ToolMiddleware, ToolRequest};
use iris_script::{RunToolScriptTool, ScriptCallable, ScriptHost};
use iris_tools_core::{
    BoxFuture, FnTool, ToolCapability, ToolDefinition, ToolExecutionContext, ToolOutput,
    ToolRegistry, ToolUse,
};
use serde_json::json;

const ROUNDS: usize = 5;

/// Adds up the model-facing size of every inner call's result.
#[derive(Default)]
struct InnerBytes {
    bytes: AtomicUsize,
    calls: AtomicUsize,
}

impl ToolMiddleware for InnerBytes {
    fn wrap_tool_call<'a>(&'a self, req: ToolRequest, next: Next<'a>) -> BoxFuture<'a, ToolOutput> {
        let inner = req.ctx.parent_call_id.is_some();
        Box::pin(async move {
            let output = next.run(req).await;
            if inner {
                self.bytes
                    .fetch_add(output.model_content().len(), Ordering::Relaxed);
                self.calls.fetch_add(1, Ordering::Relaxed);
            }
            output
        })
    }
}

fn echo() -> impl iris_tools_core::Tool + use<> {
    let def = ToolDefinition::new(
        "echo",
        "Echo the text.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
    )
    .with_capabilities([ToolCapability::Read]);
    FnTool::new(def, |input, _ctx| {
        std::future::ready(ToolOutput::text(
            input["text"].as_str().unwrap_or("").to_owned(),
        ))
    })
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

async fn script(
    executor: &ToolExecutor,
    ctx: &ToolExecutionContext,
    code: &str,
) -> (Duration, iris_tools_core::ToolResult) {
    let call = ToolUse::new("call_1", "run_tool_script", json!({"code": code}));
    let started = Instant::now();
    let result = executor.execute_one(&call, ctx, None).await;
    assert!(!result.is_error(), "{}", result.model_content());
    (started.elapsed(), result)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn main() {
    let calls: usize = std::env::var("IRIS_SCRIPT_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/code-mode");
        copy_dir(&example.join("src"), &dir.path().join("src"));
        let service = CommandService::new(CommandConfig::native(), dir.path()).unwrap();
        service.prepare().await.unwrap();
        let binding = CommandBinding::owned(service);
        let registry = ToolRegistry::new();
        registry.register(echo()).unwrap();
        registry.register_many(iris_files::builtin_tools()).unwrap();
        registry.register_many(iris_command::command_tools(&binding)).unwrap();
        let callable = ScriptCallable::listing(["exec_command", "run_python"]);
        registry
            .register(RunToolScriptTool::new(binding.clone(), callable))
            .unwrap();
        let counter = Arc::new(InnerBytes::default());
        let executor = ToolExecutor::new(registry).with_middleware(Arc::clone(&counter));
        let ctx = ScriptHost::attach(ToolExecutionContext::new(dir.path()).session_id("bench"), &executor);

        // 1. Direct execute_one.
        let direct_n = 2000;
        let call = ToolUse::new("d", "echo", json!({"text": "x"}));
        let started = Instant::now();
        for _ in 0..direct_n {
            let r = executor.execute_one(&call, &ctx, None).await;
            assert!(!r.is_error());
        }
        let direct = started.elapsed() / direct_n;

        // Programs with no call, N sequential calls, N calls from 8 threads.
        let empty = "import iris_tools\n";
        let sequential = format!("import iris_tools\nfor i in range({calls}):\n    iris_tools.echo(text='x')\n");
        let pooled = format!(
            "import iris_tools\nfrom concurrent.futures import ThreadPoolExecutor\n\
             with ThreadPoolExecutor(8) as pool:\n    list(pool.map(lambda i: iris_tools.echo(text='x'), range({calls})))\n"
        );
        let mut base = Vec::new();
        let mut seq = Vec::new();
        let mut par = Vec::new();
        for _ in 0..ROUNDS {
            base.push(script(&executor, &ctx, empty).await.0);
            seq.push(script(&executor, &ctx, &sequential).await.0);
            par.push(script(&executor, &ctx, &pooled).await.0);
        }
        let (base, seq, par) = (median(base), median(seq), median(par));
        let per_call = seq.saturating_sub(base) / calls as u32;
        let per_call_par = par.saturating_sub(base) / calls as u32;

        // 2. The example task.
        let yaml: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(example.join("iris.yaml")).unwrap()).unwrap();
        let code = yaml["model"]["script"][0]["tool_calls"][0]["arguments"]["code"]
            .as_str()
            .unwrap()
            .to_owned();
        counter.bytes.store(0, Ordering::Relaxed);
        counter.calls.store(0, Ordering::Relaxed);
        let (took, result) = script(&executor, &ctx, &code).await;
        let inner_bytes = counter.bytes.load(Ordering::Relaxed);
        let inner_calls = counter.calls.load(Ordering::Relaxed);
        let script_bytes = result.model_content().len();

        println!("| measurement | value |");
        println!("|---|---|");
        println!("| direct `execute_one` of a trivial tool (mean of {direct_n}) | {:.1} µs |", direct.as_secs_f64() * 1e6);
        println!("| program start, no inner call (median of {ROUNDS}) | {:.1} ms |", base.as_secs_f64() * 1e3);
        println!("| per inner call, sequential ({calls} calls) | {:.1} µs |", per_call.as_secs_f64() * 1e6);
        println!("| per inner call, 8 threads ({calls} calls) | {:.1} µs |", per_call_par.as_secs_f64() * 1e6);
        println!("| inner-call overhead over direct (sequential) | {:.1}× |", per_call.as_secs_f64() / direct.as_secs_f64().max(1e-9));
        println!("| example task: inner calls | {inner_calls} |");
        println!("| example task: bytes the model reads, direct calls | {inner_bytes} |");
        println!("| example task: bytes the model reads, one script | {script_bytes} |");
        println!(
            "| example task: context saved | {:.0}% ({} bytes, ~{} tokens at 4 bytes/token) |",
            100.0 * (1.0 - script_bytes as f64 / inner_bytes.max(1) as f64),
            inner_bytes.saturating_sub(script_bytes),
            inner_bytes.saturating_sub(script_bytes) / 4
        );
        println!("| example task: wall time of the script | {:.1} ms |", took.as_secs_f64() * 1e3);
        binding.close().await.unwrap();
    });
}
