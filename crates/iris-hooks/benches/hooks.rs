//! Per-call overhead of a `tool.before` hook: in-process and command (`cargo bench -p iris-hooks`).

use iris_command::{CommandBinding, CommandConfig, CommandService};
use iris_executor::{BeforeOutcome, ToolHookDispatcher};
use iris_hooks::command::CommandHook;
use iris_hooks::{HookDispatcher, HookEvent, HookEventKind, HookRegistration, HookResult};
use iris_tools_core::ToolExecutionContext;
use serde_json::json;

fn main() {
    divan::main();
}

fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("cannot build a runtime: {e}"),
    }
}

fn run(rt: &tokio::runtime::Runtime, d: &HookDispatcher, ctx: &ToolExecutionContext) {
    let args = json!({"command": "ls"});
    let outcome = rt.block_on(d.before_tool(ctx, "c1", "exec_command", &args));
    assert_eq!(outcome, BeforeOutcome::Continue);
}

#[divan::bench]
fn no_hooks(bencher: divan::Bencher) {
    let rt = runtime();
    let d = HookDispatcher::default();
    let ctx = ToolExecutionContext::new("/tmp");
    bencher.bench_local(|| run(&rt, &d, &ctx));
}

#[divan::bench]
fn in_process_hook(bencher: divan::Bencher) {
    let rt = runtime();
    let reg = HookRegistration::builder(HookEventKind::ToolBefore, "noop", |_e: HookEvent| async {
        Ok(HookResult::None)
    })
    .build();
    let d = HookDispatcher::new(reg.into_iter().collect());
    let ctx = ToolExecutionContext::new("/tmp");
    bencher.bench_local(|| run(&rt, &d, &ctx));
}

#[divan::bench(sample_count = 30)]
fn command_hook(bencher: divan::Bencher) {
    let rt = runtime();
    let ws = std::env::temp_dir();
    let binding = rt.block_on(async {
        let service = CommandService::new(CommandConfig::default(), &ws).ok()?;
        service.prepare().await.ok()?;
        Some(CommandBinding::owned(service))
    });
    let Some(binding) = binding else {
        panic!("native command service unavailable")
    };
    let reg = HookRegistration::builder(
        HookEventKind::ToolBefore,
        "cmd",
        CommandHook::new(&binding, "echo '{}'"),
    )
    .build();
    let d = HookDispatcher::new(reg.into_iter().collect());
    let ctx = ToolExecutionContext::new(&ws);
    bencher.bench_local(|| run(&rt, &d, &ctx));
}
