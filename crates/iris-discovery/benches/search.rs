//! Benchmarks: search.
//!
//! Before the timings it prints recall@1 and recall@5 of plain BM25 and of the Iris
//! ranking over the MCP fixture (the same `eval` code the tests assert on), then the
//! per-query latency distribution over a 10,000-tool catalog, then times building the
//! index over the fixture catalog, one query, and the whole query set.
//!
//! The 10,000-tool catalog is the fixture's 377 tools copied 27 times (cut at 10,000)
//! under other server names (`mcp__github_k3__create_issue`, group `github_k3`), each
//! copy's description perturbed by a seeded generator: one word dropped, two
//! neighbours swapped, and two words from the fixture's own vocabulary inserted. So
//! the vocabulary and the posting lists look like a large real deployment rather than
//! 27 identical blocks.
//!
//! Run with `cargo bench -p iris-discovery --bench search`. Target: p50 ≤ 100 µs per
//! query over 10,000 tools.
// A broken fixture should stop the benchmark loudly.
#![allow(clippy::expect_used)]

use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use divan::{Bencher, black_box};
use iris_discovery::search::SearchIndex;
use iris_discovery::{ToolSearchInput, ToolSearchTool};
use iris_tools_core::{FnTool, ToolDefinition, ToolOutput, ToolRegistry, ViewFilter};

/// The evaluation scaffolding the search tests share.
#[path = "../tests/eval/mod.rs"]
mod eval;

const CATALOG: &str = include_str!("../tests/fixtures/mcp_catalog.json");
const QUERIES: &str = include_str!("../tests/fixtures/mcp_queries.json");

/// Tools in the large catalog.
const LARGE: usize = 10_000;

fn catalog() -> Vec<ToolDefinition> {
    eval::load_catalog(CATALOG).expect("the MCP catalog fixture loads")
}

fn queries() -> Vec<eval::LabeledQuery> {
    eval::load_queries(QUERIES).expect("the MCP query fixture loads")
}

/// The fixture catalog grown to `size` tools (see `eval::large_catalog`).
fn large_catalog(size: usize) -> Vec<ToolDefinition> {
    eval::large_catalog(&catalog(), size)
}

static LARGE_CATALOG: LazyLock<Vec<ToolDefinition>> = LazyLock::new(|| large_catalog(LARGE));
static LARGE_INDEX: LazyLock<SearchIndex> = LazyLock::new(|| SearchIndex::new(&LARGE_CATALOG));

/// Per-query latency over the large catalog: each fixture query is timed as the
/// fastest of a few runs (the noise-free cost of that query), then the distribution
/// over queries is reported.
fn print_large_latency() {
    let index = &*LARGE_INDEX;
    let queries = queries();
    let mut per_query: Vec<Duration> = queries
        .iter()
        .map(|q| {
            (0..15)
                .map(|_| {
                    let started = Instant::now();
                    black_box(index.search(black_box(&q.query), 1));
                    started.elapsed()
                })
                .min()
                .unwrap_or_default()
        })
        .collect();
    per_query.sort();
    let at = |p: f64| per_query[((per_query.len() - 1) as f64 * p).round() as usize];
    println!(
        "{} queries over {} tools, top-1 search: p50 {:?}, p90 {:?}, p99 {:?}, max {:?}",
        per_query.len(),
        index.len(),
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    );
}

fn main() {
    // The recall tables, "no tool" and the latency targets are in `benches/eval.rs`.
    print_large_latency();
    divan::main();
}

/// Building the index over every fixture tool (what one `search_deferred` call does).
#[divan::bench]
fn build_index(bencher: Bencher) {
    let defs = catalog();
    bencher.bench(|| SearchIndex::new(black_box(&defs)));
}

/// One query against a built index.
#[divan::bench]
fn one_query(bencher: Bencher) {
    let index = SearchIndex::new(&catalog());
    bencher.bench(|| index.search(black_box("open a Jira ticket for the login bug"), 10));
}

/// Every fixture query against a built index.
#[divan::bench]
fn all_fixture_queries(bencher: Bencher) {
    let index = SearchIndex::new(&catalog());
    let queries = queries();
    bencher.bench(|| {
        for q in &queries {
            black_box(index.search(black_box(&q.query), 5));
        }
    });
}

/// The plain BM25 baseline on the same query, for scale.
#[divan::bench]
fn bm25_one_query(bencher: Bencher) {
    let bm25 = eval::Bm25::new(&catalog());
    bencher.bench(|| bm25.search(black_box("open a Jira ticket for the login bug"), 10));
}

/// The 10,000-tool catalog: building its index (once per candidate set; `tool_search`
/// keeps it), one top-1 query per representative fixture query, and a whole
/// `tool_search` call over a registry of 10,000 deferred tools.
mod large {
    use super::*;

    /// Every 26th fixture query: ten intents of different length and vocabulary.
    fn sample(i: usize) -> String {
        queries()[i * 26].query.clone()
    }

    #[divan::bench(sample_count = 10, sample_size = 1)]
    fn build_index_10k(bencher: Bencher) {
        let defs = &*LARGE_CATALOG;
        bencher.bench(|| SearchIndex::new(black_box(defs)));
    }

    /// Top-1 search over 10,000 tools: what `tool_search` pays per query.
    #[divan::bench(args = 0..10)]
    fn query_10k(bencher: Bencher, i: usize) {
        let index = &*LARGE_INDEX;
        let query = sample(i);
        bencher.bench(|| index.search(black_box(&query), 1));
    }

    /// A whole one-query `tool_search` (candidates from the live view, cached index,
    /// threshold, output) over a registry of 10,000 deferred tools.
    #[divan::bench]
    fn tool_search_call_10k(bencher: Bencher) {
        let registry = ToolRegistry::new();
        for def in LARGE_CATALOG.iter() {
            registry
                .register(FnTool::new(def.clone(), |_, _| async {
                    ToolOutput::text("ok")
                }))
                .expect("the large catalog registers");
        }
        let tool = Arc::new(ToolSearchTool::new(registry.view(ViewFilter::default())));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime");
        let input = ToolSearchInput::new(["open a Jira ticket for the login bug"]);
        // Warm the index cache: the first call builds it.
        runtime
            .block_on(tool.search(&input))
            .expect("the search succeeds");
        bencher.bench(|| runtime.block_on(tool.search(black_box(&input))));
    }
}
