//! One query's embedding: `EmbeddingModel` (its own batch-of-one path, in the weight
//! format `EmbeddingModel::load` picks for this CPU) against the f32 reference (candle's `BertModel`, as `tests/reference` runs it), measured in
//! the same process, interleaved query by query, so machine load hits both alike.
//!
//! For each of the fixture's 260 queries and each variant, every round embeds the query
//! once; per variant it prints the p50 and p90 over queries of each query's fastest
//! round, the median of every timing, the single fastest, the tokenizer's share, and
//! the lowest cosine between the two variants' vectors of a query (and, first, how much
//! the resident set grows when the fast model loads). Then the fast path
//! alone, the same rounds without the reference in between, and the other weight format
//! alone (what `load` chose against).
//!
//! The model comes from `$IRIS_DISCOVERY_DATA` (see `tests/eval/mod.rs`); without it
//! the bench says so and measures nothing. Run with `cargo bench -p iris-discovery
//! --features embed --bench embed` (`cargo xtask bench` runs it).
// A broken fixture should stop the benchmark loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use iris_discovery::embed::{EmbeddingModel, WeightFormat};

#[path = "../tests/eval/mod.rs"]
mod eval;
#[path = "../tests/reference/mod.rs"]
mod reference;

const QUERIES: &str = include_str!("../tests/fixtures/mcp_queries.json");

/// Rounds per query and variant.
const ROUNDS: usize = 5;

/// What one variant's timings come to.
struct Summary {
    fastest_per_query: Vec<Duration>,
    all: Vec<Duration>,
}

impl Summary {
    fn new(queries: usize) -> Self {
        Self {
            fastest_per_query: vec![Duration::MAX; queries],
            all: Vec::with_capacity(queries * ROUNDS),
        }
    }

    fn record(&mut self, query: usize, took: Duration) {
        let fastest = &mut self.fastest_per_query[query];
        *fastest = (*fastest).min(took);
        self.all.push(took);
    }

    fn print(&mut self, name: &str) {
        self.fastest_per_query.sort();
        self.all.sort();
        let at = |v: &[Duration], p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
        println!(
            "{name:<28} fastest-of-{ROUNDS} per query: p50 {:>9.3?}  p90 {:>9.3?} | \
             all runs: median {:>9.3?}  fastest {:>9.3?}",
            at(&self.fastest_per_query, 0.5),
            at(&self.fastest_per_query, 0.9),
            at(&self.all, 0.5),
            self.all[0],
        );
    }
}

/// The process's resident set in bytes (Linux).
fn rss() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn main() {
    let dir = eval::model_dir();
    if !dir.join("model.safetensors").is_file() {
        println!(
            "(missing the model in {}; run crates/iris-discovery/data/fetch.sh)",
            dir.display()
        );
        return;
    }
    let before = rss();
    let started = Instant::now();
    let fast = EmbeddingModel::load(&dir).expect("the model loads");
    let fast_load = started.elapsed();
    black_box(fast.embed(&["warm up"]).unwrap());
    if let (Some(before), Some(after)) = (before, rss()) {
        println!(
            "EmbeddingModel resident set growth (load + first query): {:.1} MB",
            after.saturating_sub(before) as f64 / 1e6
        );
    }
    let started = Instant::now();
    let reference = reference::ReferenceModel::load(&dir).expect("the model loads");
    let reference_load = started.elapsed();
    println!(
        "load: EmbeddingModel {fast_load:.1?} ({}, the format for this CPU), f32 reference {reference_load:.1?}",
        fast.variant()
    );
    let queries: Vec<String> = eval::load_queries(QUERIES)
        .expect("the MCP query fixture loads")
        .into_iter()
        .map(|q| q.query)
        .collect();
    // Warm both up (pages, thread pools, lazily packed weights).
    for query in queries.iter().take(10) {
        black_box(fast.embed(&[query]).unwrap());
        black_box(reference.embed(&[query]).unwrap());
    }

    let mut fast_time = Summary::new(queries.len());
    let mut reference_time = Summary::new(queries.len());
    let mut tokenizer_time = Summary::new(queries.len());
    let mut lowest_cosine = f32::MAX;
    let mut pieces = Vec::with_capacity(queries.len());
    for round in 0..ROUNDS {
        for (i, query) in queries.iter().enumerate() {
            let started = Instant::now();
            let ids =
                black_box(reference.tokenize(black_box(query))).expect("the tokenizer encodes");
            tokenizer_time.record(i, started.elapsed());
            if round == 0 {
                pieces.push(ids.len());
            }
            // Alternate which variant goes first, so neither always runs on a warm cache.
            let mut run = |first: bool| {
                if first {
                    let started = Instant::now();
                    let v = black_box(fast.embed(&[black_box(query)]).unwrap());
                    fast_time.record(i, started.elapsed());
                    v
                } else {
                    let started = Instant::now();
                    let v = black_box(reference.embed(&[black_box(query)]).unwrap());
                    reference_time.record(i, started.elapsed());
                    v
                }
            };
            let order = (round + i) % 2 == 0;
            let a = run(order);
            let b = run(!order);
            if round == 0 {
                lowest_cosine = lowest_cosine.min(reference::dot(&a[0], &b[0]));
            }
        }
    }
    pieces.sort_unstable();
    println!(
        "{} queries, {} to {} word pieces (median {}), {ROUNDS} rounds, variants interleaved:",
        queries.len(),
        pieces[0],
        pieces[pieces.len() - 1],
        pieces[pieces.len() / 2],
    );
    reference_time.print("f32 reference (BertModel)");
    fast_time.print(&format!("EmbeddingModel ({})", fast.variant()));
    tokenizer_time.print("  of which the tokenizer");
    println!("lowest cosine between the two variants' query vectors: {lowest_cosine:.4}");

    // The fast path alone, as a process that serves searches runs it: no f32 matrix
    // products of the reference (and their thread pool) in between.
    alone(&fast, &queries).print(&format!("EmbeddingModel alone ({})", fast.variant()));

    // The other weight format, alone: what `load` chose against on this CPU.
    let other = match fast.format() {
        WeightFormat::Q8_0 => WeightFormat::F32,
        WeightFormat::F32 => WeightFormat::Q8_0,
    };
    let slow = EmbeddingModel::load_with(&dir, other).expect("the model loads");
    for query in queries.iter().take(10) {
        black_box(slow.embed(&[query]).unwrap());
    }
    alone(&slow, &queries).print(&format!(
        "EmbeddingModel alone ({}, not chosen)",
        slow.variant()
    ));
}

/// [`ROUNDS`] rounds of every query through `model` alone, one at a time.
fn alone(model: &EmbeddingModel, queries: &[String]) -> Summary {
    let mut time = Summary::new(queries.len());
    for _ in 0..ROUNDS {
        for (i, query) in queries.iter().enumerate() {
            let started = Instant::now();
            black_box(model.embed(&[black_box(query)]).unwrap());
            time.record(i, started.elapsed());
        }
    }
    time
}
