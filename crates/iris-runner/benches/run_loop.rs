//! Benchmarks: the run loop's own overhead per turn, with the scripted provider.
//!
//! The script: `N` tool turns, each asking for one trivial read-only `echo` call
//! (`{"text": "hi"}`), or three of them at once (one parallel window), then a final
//! answer. Every tool turn after the first checks that the request ends with the
//! previous turn's results (`expect_tool_results`), so a loop that dropped them fails.
//! `benches/openai_agents_run_loop.py` replays the same script through the OpenAI
//! Agents SDK's `Runner.run` with a fake model.
//!
//! A whole run is measured (`AgentRunner::run` driven by `block_on` on a current-thread
//! runtime) for 1 tool turn and for `N` (10) tool turns; the difference, divided by
//! `N − 1`, is the cost of one tool turn with the run's fixed costs (run id, spans,
//! the prompt, the final answer, entering the runtime) cancelled out. Two costs that
//! are not the loop's are then subtracted:
//!
//! * the model: the same `ScriptedProvider` replaying the same script alone, asked with
//!   the very requests the loop sent (captured from a run's history), 1 and `N` tool
//!   turns, the same difference;
//! * the tool body: the echo tool's `run` awaited directly, per call.
//!
//! ```text
//! per turn = ((run_N − run_1) − (model_N − model_1)) / (N − 1) − calls_per_turn × body
//! ```
//!
//! What is left is the loop's own work per turn: assembling the request (tool specs,
//! the history), the turn's events and spans, planning and executing the calls through
//! the executor (lookup, validation, permission, identity, the parallel window's tasks),
//! and putting the results back into the history.
//!
//! After divan's table the bench measures the same runs in paired rounds (each round
//! runs all five measurements back to back, so load drift hits them alike) and prints
//! one JSON line per variant in the format the Python reference prints. Run with
//! `cargo bench -p iris-runner --bench run_loop`; `IRIS_BENCH_ROUNDS` changes the
//! number of rounds (default 3,000).
#![allow(clippy::unwrap_used, clippy::expect_used)] // A broken fixture should stop the run loudly.

use std::hint::black_box;
use std::sync::{Arc, LazyLock};
use std::time::Instant;

use divan::Bencher;
use iris_discovery::{DisclosureState, SchemaBudget};
use iris_executor::ToolExecutor;
use iris_providers::chat::{CompletionRequest, Part, Role};
use iris_providers::scripted::{Script, ScriptTurn};
use iris_providers::{CompletionProvider, ScriptedProvider};
use iris_runner::{AgentRunner, RunOutcome};
use iris_tools_core::{
    FnTool, Tool, ToolCapability, ToolDefinition, ToolExecutionContext, ToolInput, ToolOutput,
    ToolRegistry, ViewFilter,
};
use serde_json::{Value, json};

fn main() {
    divan::main();
    summary();
}

/// Tool turns of the long script.
const TURNS: usize = 10;
const PROMPT: &str = "Echo hi, then answer.";
const INSTRUCTIONS: &str = "Use the echo tool when asked to.";
const FINAL: &str = "Done: every echo said hi.";
const WORKSPACE: &str = "/nonexistent/bench-workspace";

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
});

fn echo_tool() -> Arc<dyn Tool> {
    let def = ToolDefinition::new(
        "echo",
        "Echo the text back.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
    )
    .with_capabilities([ToolCapability::Read]);
    Arc::new(FnTool::new(def, |input: Value, _ctx| async move {
        ToolOutput::text(input["text"].as_str().unwrap_or_default())
    }))
}

/// `tool_turns` turns of `calls` echo calls each, then the final answer.
fn script(tool_turns: usize, calls: usize) -> Script {
    let mut turns = Vec::with_capacity(tool_turns + 1);
    for t in 0..tool_turns {
        let mut turn = ScriptTurn::default();
        for _ in 0..calls {
            turn = turn.with_tool_call("echo", json!({"text": "hi"}));
        }
        if t > 0 {
            turn = turn.expecting_tool_results(calls);
        }
        turns.push(turn);
    }
    turns.push(ScriptTurn::text(FINAL).expecting_tool_results(calls));
    Script::new(turns).expect("a valid script")
}

/// One script, the runner that plays it, and the requests a run sends.
struct Fixture {
    provider: Arc<ScriptedProvider>,
    runner: AgentRunner,
    requests: Vec<CompletionRequest>,
}

impl Fixture {
    fn new(tool_turns: usize, calls: usize) -> Self {
        let provider = Arc::new(ScriptedProvider::new(script(tool_turns, calls)));
        let registry = ToolRegistry::new();
        registry.register_arc(echo_tool()).unwrap();
        let runner = AgentRunner::builder(Arc::clone(&provider), ToolExecutor::new(registry))
            .workspace(WORKSPACE)
            .instructions(INSTRUCTIONS)
            .build();
        let mut fixture = Self {
            provider,
            runner,
            requests: Vec::new(),
        };
        let history = match fixture.run() {
            RunOutcome::Completed {
                output,
                turns,
                history,
                ..
            } => {
                assert_eq!(output, FINAL);
                assert_eq!(turns as usize, tool_turns + 1);
                history
            }
            other => panic!("the scripted run did not complete: {other:?}"),
        };
        // user, then (assistant with calls, tool results) per tool turn, then the answer.
        assert_eq!(history.len(), 2 + 2 * tool_turns);
        for pair in history[1..history.len() - 1].chunks(2) {
            assert_eq!(pair[0].role, Role::Assistant);
            assert_eq!(pair[1].role, Role::Tool);
            assert_eq!(pair[1].content.len(), calls);
            for part in &pair[1].content {
                let Part::ToolResult(block) = part else {
                    panic!("not a tool result: {part:?}")
                };
                assert!(!block.is_error, "{block:?}");
            }
        }
        // The requests the loop sent: the same model, instructions and tool specs, and
        // the history as it stood before each model turn.
        let view = fixture
            .runner
            .executor()
            .registry()
            .view(ViewFilter::default());
        let specs = DisclosureState::new()
            .request_specs(&view, SchemaBudget::chars(40_000))
            .specs;
        fixture.requests = (0..=tool_turns)
            .map(|k| {
                let mut request = CompletionRequest::new("default")
                    .with_messages(history[..1 + 2 * k].iter().cloned())
                    .with_tools(specs.clone());
                request.instructions = Some(INSTRUCTIONS.into());
                request
            })
            .collect();
        fixture
    }

    /// One whole run.
    fn run(&self) -> RunOutcome {
        self.provider.reset();
        RUNTIME.block_on(self.runner.run(PROMPT))
    }

    /// The provider alone, asked the run's requests in order.
    fn replay(&self) {
        self.provider.reset();
        RUNTIME.block_on(async {
            for request in &self.requests {
                black_box(self.provider.complete(request).await.unwrap());
            }
        });
    }
}

/// Calls of the tool body per measurement of [`body_ns`].
const BODY_BATCH: u32 = 1_000;

/// The echo body awaited directly, `BODY_BATCH` times inside one `block_on`.
fn body_batch(tool: &Arc<dyn Tool>, ctx: &ToolExecutionContext, input: &Value) {
    RUNTIME.block_on(async {
        for _ in 0..BODY_BATCH {
            black_box(tool.run(ToolInput::new(input.clone()), ctx).await);
        }
    });
}

fn body_ctx() -> ToolExecutionContext {
    ToolExecutionContext::new(WORKSPACE).session_id("bench")
}

mod one_call {
    use super::*;

    /// A whole run: `tool_turns` turns of one echo call, then the answer.
    #[divan::bench(args = [1, TURNS])]
    fn run(bencher: Bencher, tool_turns: usize) {
        let fixture = Fixture::new(tool_turns, 1);
        bencher.bench_local(|| fixture.run());
    }

    /// The scripted provider alone, replaying the same script to the same requests.
    #[divan::bench(args = [1, TURNS])]
    fn provider_alone(bencher: Bencher, tool_turns: usize) {
        let fixture = Fixture::new(tool_turns, 1);
        bencher.bench_local(|| fixture.replay());
    }
}

mod three_parallel {
    use super::*;

    /// A whole run: `tool_turns` turns of three read-only echo calls, then the answer.
    #[divan::bench(args = [1, TURNS])]
    fn run(bencher: Bencher, tool_turns: usize) {
        let fixture = Fixture::new(tool_turns, 3);
        bencher.bench_local(|| fixture.run());
    }

    /// The scripted provider alone, replaying the same script to the same requests.
    #[divan::bench(args = [1, TURNS])]
    fn provider_alone(bencher: Bencher, tool_turns: usize) {
        let fixture = Fixture::new(tool_turns, 3);
        bencher.bench_local(|| fixture.replay());
    }
}

/// The echo body awaited directly, 1,000 calls in one `block_on`.
#[divan::bench]
fn tool_body_x1000(bencher: Bencher) {
    let tool = echo_tool();
    let ctx = body_ctx();
    let input = json!({"text": "hi"});
    bencher.bench_local(|| body_batch(&tool, &ctx, &input));
}

/// Times `f`, then one 64 KiB allocation. glibc's malloc consolidates the small
/// chunks freed into its fastbins on the next large request, so without it the frees
/// of a run with a parallel window (about 8 µs of consolidation after 30 tasks) were
/// paid by whatever was measured next. Every measurement ends with the same request,
/// so its own cost cancels in the differences.
fn elapsed_ns(f: impl FnOnce()) -> f64 {
    let start = Instant::now();
    f();
    drop(black_box(Vec::<u8>::with_capacity(64 * 1024)));
    start.elapsed().as_nanos() as f64
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    let n = samples.len();
    if n % 2 == 1 {
        samples[n / 2]
    } else {
        (samples[n / 2 - 1] + samples[n / 2]) / 2.0
    }
}

fn percentile(samples: &mut [f64], q: f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    let i = ((q * samples.len() as f64) as usize).min(samples.len() - 1);
    samples[i]
}

/// The paired-round measurement and its JSON lines (the format of the Python reference).
fn summary() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return;
    }
    // Without `--bench` (`cargo test` on bench targets) divan runs each bench once as a
    // test; the summary then checks its code path with a few rounds.
    let rounds: usize = if !args.iter().any(|a| a == "--bench") {
        3
    } else {
        std::env::var("IRIS_BENCH_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or(3_000)
    };
    let warmup = (rounds / 10).max(1);
    let tool = echo_tool();
    let ctx = body_ctx();
    let input = json!({"text": "hi"});
    for (variant, calls) in [("one_call", 1), ("three_parallel", 3)] {
        let short = Fixture::new(1, calls);
        let long = Fixture::new(TURNS, calls);
        let mut run_1 = Vec::with_capacity(rounds);
        let mut run_n = Vec::with_capacity(rounds);
        let mut model_1 = Vec::with_capacity(rounds);
        let mut model_n = Vec::with_capacity(rounds);
        let mut body = Vec::with_capacity(rounds);
        for round in 0..warmup + rounds {
            let r1 = elapsed_ns(|| drop(black_box(short.run())));
            let rn = elapsed_ns(|| drop(black_box(long.run())));
            let m1 = elapsed_ns(|| short.replay());
            let mn = elapsed_ns(|| long.replay());
            let b = elapsed_ns(|| body_batch(&tool, &ctx, &input)) / f64::from(BODY_BATCH);
            if round >= warmup {
                run_1.push(r1);
                run_n.push(rn);
                model_1.push(m1);
                model_n.push(mn);
                body.push(b);
            }
        }
        let body_ns = median(&mut body);
        let steps = (TURNS - 1) as f64;
        let calls_f = calls as f64;
        let mut per_turn: Vec<f64> = (0..rounds)
            .map(|i| {
                ((run_n[i] - run_1[i]) - (model_n[i] - model_1[i])) / steps - calls_f * body_ns
            })
            .collect();
        let line = json!({
            "benchmark": "run_loop",
            "impl": "iris",
            "version": env!("CARGO_PKG_VERSION"),
            "variant": variant,
            "calls_per_turn": calls,
            "tool_turns": TURNS,
            "rounds": rounds,
            "run_1_median_ns": median(&mut run_1).round(),
            "run_n_median_ns": median(&mut run_n).round(),
            "model_1_median_ns": median(&mut model_1).round(),
            "model_n_median_ns": median(&mut model_n).round(),
            "body_median_ns": (body_ns * 10.0).round() / 10.0,
            "per_turn_overhead_median_ns": median(&mut per_turn).round(),
            "per_turn_overhead_p10_ns": percentile(&mut per_turn, 0.10).round(),
            "per_turn_overhead_p90_ns": percentile(&mut per_turn, 0.90).round(),
        });
        println!("{line}");
    }
}
