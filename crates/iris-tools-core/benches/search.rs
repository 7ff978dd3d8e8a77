//! Benchmarks: search.
//!
//! Before the timings it prints recall@1 and recall@5 of plain BM25 and of the Iris
//! ranking over the MCP fixture (the same `eval` code the tests assert on), then times
//! building the index over the fixture catalog, one query, and the whole query set.
// A broken fixture should stop the benchmark loudly.
#![allow(clippy::expect_used)]

use divan::{Bencher, black_box};
use iris_tools_core::ToolDefinition;
use iris_tools_core::search::{SearchIndex, eval};

const CATALOG: &str = include_str!("../tests/fixtures/mcp_catalog.json");
const QUERIES: &str = include_str!("../tests/fixtures/mcp_queries.json");

fn catalog() -> Vec<ToolDefinition> {
    eval::load_catalog(CATALOG).expect("the MCP catalog fixture loads")
}

fn queries() -> Vec<eval::LabeledQuery> {
    eval::load_queries(QUERIES).expect("the MCP query fixture loads")
}

fn main() {
    println!("{}", eval::compare(&catalog(), &queries()));
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
