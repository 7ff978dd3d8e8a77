//! The leave-one-set-out protocol pinned (issue 29): on every development set left out,
//! the ranking the other sets choose is not below a BM25 written here, independently of
//! `tests/eval`, and keeps a floor taken from its left-out result; the shipped default
//! and "no tool" threshold are what the protocol chooses over every set.
#![allow(clippy::expect_used, clippy::unwrap_used)] // Tests fail loudly on purpose.

use std::collections::HashMap;

use serde_json::Value;

use iris_discovery::DEFAULT_MIN_RELEVANCE;
use iris_discovery::search::{SearchIndex, Tuning, thesaurus_groups};
use iris_tools_core::ToolDefinition;

use crate::eval::{self, EvalSet, QueryKind, protocol};

/// The steps that survived the protocol's first round (`cargo xtask bench` prints the
/// round; `docs/benchmarks.md` has it). The second round, pinned here, chooses among
/// these only.
const SURVIVORS: [&str; 3] = ["stop words", "thesaurus", "verb-object bonus"];

/// The thesaurus groups that survived the first round (bit `g` for group `g`): all but
/// list/show/get (1) and search/find (2), which lost on `bfcl-parallel` left out.
const SURVIVING_GROUPS: u64 = !((1 << 1) | (1 << 2));

/// Per set: the left-out R@1 floor, the left-out R@1 the protocol measured rounded
/// down to two decimals.
const FLOORS: [(&str, f64); 5] = [
    ("fixture", 0.58),
    ("packaged", 0.45),
    ("bfcl-multiple", 0.78),
    ("bfcl-simple", 0.83),
    ("bfcl-parallel", 0.84),
];

/// Left-out sets where the protocol's ranking is behind BM25 on all queries, and by how
/// many queries at most (`docs/benchmarks.md` says so): `bfcl-simple`, 4 of 550.
const BEHIND: [(&str, usize); 1] = [("bfcl-simple", 4)];

/// Queries behind BM25 summed over the query kinds of at least
/// `protocol::MIN_KIND_QUERIES` queries on every left-out set, at most: `bfcl-multiple`
/// direct 2, `bfcl-simple` direct 1, partial 1, paraphrase 2.
const KIND_DEFICIT: usize = 6;

/// Textbook Okapi BM25 (k1 1.2, b 0.75) over one bag of words per tool: its name,
/// group, tags, description and every property name and description of its input
/// schema, split on anything but letters and digits and lower-cased. Returns the index
/// of the best tool for `query` (the first on a tie), if any word matches.
struct Okapi {
    docs: Vec<HashMap<String, f64>>,
    lengths: Vec<f64>,
    df: HashMap<String, f64>,
}

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

fn schema_words(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(obj) => {
            if let Some(Value::Object(props)) = obj.get("properties") {
                for (key, sub) in props {
                    out.extend(words(key));
                    if let Some(Value::String(d)) = sub.get("description") {
                        out.extend(words(d));
                    }
                    schema_words(sub, out);
                }
            }
            for key in ["items", "anyOf", "oneOf", "allOf", "$defs", "definitions"] {
                if let Some(v) = obj.get(key) {
                    schema_words(v, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| schema_words(v, out)),
        _ => {}
    }
}

impl Okapi {
    fn new(tools: &[ToolDefinition]) -> Self {
        let mut docs = Vec::new();
        let mut lengths = Vec::new();
        let mut df: HashMap<String, f64> = HashMap::new();
        for tool in tools {
            let mut bag: Vec<String> = words(&tool.name).chain(words(&tool.group)).collect();
            for tag in tool.tags() {
                bag.extend(words(tag));
            }
            bag.extend(words(&tool.description));
            schema_words(&tool.input_schema, &mut bag);
            lengths.push(bag.len() as f64);
            let mut tf: HashMap<String, f64> = HashMap::new();
            for w in bag {
                *tf.entry(w).or_default() += 1.0;
            }
            for w in tf.keys() {
                *df.entry(w.clone()).or_default() += 1.0;
            }
            docs.push(tf);
        }
        Self { docs, lengths, df }
    }

    fn best(&self, query: &str) -> Option<usize> {
        let n = self.docs.len() as f64;
        let avg = self.lengths.iter().sum::<f64>() / n.max(1.0);
        let query: Vec<String> = words(query).collect();
        let mut best: Option<(usize, f64)> = None;
        for (i, tf) in self.docs.iter().enumerate() {
            let norm = 0.25 + 0.75 * self.lengths[i] / avg;
            let score: f64 = query
                .iter()
                .filter_map(|w| {
                    let f = *tf.get(w)?;
                    let df = self.df[w];
                    let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                    Some(idf * f * 2.2 / (f + 1.2 * norm))
                })
                .sum();
            if score > 0.0 && best.is_none_or(|(_, s)| score > s) {
                best = Some((i, score));
            }
        }
        best.map(|(i, _)| i)
    }
}

/// R@1 of BM25 and of `tuning` over the cases of `set` that `keep` admits.
fn at1(set: &EvalSet, tuning: Tuning, keep: impl Fn(QueryKind) -> bool) -> (usize, usize, usize) {
    let okapi = Okapi::new(&set.tools);
    let index = SearchIndex::with_tuning(&set.tools, tuning);
    let (mut n, mut bm25, mut ours) = (0, 0, 0);
    for case in set.cases.iter().filter(|c| keep(c.kind)) {
        n += 1;
        let right = |i: Option<usize>| i.is_some_and(|i| case.is_right(&set.tools[i].name));
        bm25 += usize::from(right(okapi.best(&case.query)));
        ours += usize::from(right(index.search(&case.query, 1).first().map(|h| h.index)));
    }
    (n, bm25, ours)
}

fn sets() -> Vec<EvalSet> {
    eval::development_sets().expect("the development sets load (run .ci/setup)")
}

#[test]
fn every_left_out_set_ranks_at_least_as_well_as_bm25() {
    let sets = sets();
    let refs: Vec<&EvalSet> = sets.iter().collect();
    let folds = protocol::folds(&refs, Some(&SURVIVORS), SURVIVING_GROUPS);
    assert_eq!(folds.len(), FLOORS.len());
    let mut kind_deficit = 0;
    for (fold, (set, (name, floor))) in folds.iter().zip(sets.iter().zip(FLOORS)) {
        assert_eq!(fold.set, name);
        let (n, bm25, ours) = at1(set, fold.choice.tuning, |_| true);
        let allowed = BEHIND
            .iter()
            .find(|(s, _)| *s == name)
            .map_or(0, |(_, q)| *q);
        eprintln!("{name}: {ours} vs BM25 {bm25} of {n}");
        assert!(
            ours + allowed >= bm25,
            "{name}: {ours} vs BM25 {bm25} of {n}"
        );
        let r1 = ours as f64 / n as f64;
        assert!(r1 >= floor, "{name}: R@1 {r1} below its floor {floor}");
        for kind in QueryKind::ALL {
            let (n, bm25, ours) = at1(set, fold.choice.tuning, |k| k == kind);
            if n >= protocol::MIN_KIND_QUERIES {
                eprintln!("{name} {kind:?}: {ours} vs BM25 {bm25} of {n}");
                kind_deficit += bm25.saturating_sub(ours);
            }
        }
    }
    // More than the shortfalls docs/benchmarks.md reports would be a regression.
    assert!(
        kind_deficit <= KIND_DEFICIT,
        "{kind_deficit} queries behind BM25 in some kind"
    );
}

#[test]
fn the_default_is_what_the_protocol_chooses_over_every_set() {
    let sets = sets();
    let refs: Vec<&EvalSet> = sets.iter().collect();
    let chosen = protocol::select(&refs, Some(&SURVIVORS), SURVIVING_GROUPS).tuning;
    let shipped = Tuning::DEFAULT;
    let groups = thesaurus_groups().len();
    for g in 0..groups {
        assert_eq!(chosen.uses_group(g), shipped.uses_group(g), "group {g}");
    }
    assert_eq!(
        Tuning {
            thesaurus_groups: shipped.thesaurus_groups,
            ..chosen
        },
        shipped
    );
    // The plain BM25F the protocol starts from is stock.
    let stock = protocol::stock();
    assert_eq!(
        (stock.k1, stock.field_b, stock.field_weights),
        (1.2, [0.75; 6], [1.0; 6])
    );
}

#[test]
fn no_tool_threshold_refuses_at_most_one_percent_of_answerable_intents() {
    let sets = sets();
    let tops: Vec<Vec<Option<f64>>> = sets
        .iter()
        .map(|s| protocol::top_relevance(s, Tuning::DEFAULT))
        .collect();
    assert_eq!(protocol::nested_threshold(&tops), DEFAULT_MIN_RELEVANCE);
    for (set, tops) in sets.iter().zip(&tops) {
        let refused = protocol::false_none(tops, DEFAULT_MIN_RELEVANCE);
        assert!(
            refused <= protocol::MAX_FALSE_NONE,
            "{}: {refused}",
            set.name
        );
    }
    // Chosen on the other sets, each left-out set keeps within 1 % too.
    for (i, set) in sets.iter().enumerate() {
        let others: Vec<Vec<Option<f64>>> = tops
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, t)| t.clone())
            .collect();
        let t = protocol::nested_threshold(&others);
        let refused = protocol::false_none(&tops[i], t);
        assert!(
            refused <= protocol::MAX_FALSE_NONE,
            "{} left out, threshold {t}: {refused}",
            set.name
        );
    }
}
