//! Evaluation scaffolding shared by the search tests and benchmarks: fixture and BFCL
//! loading, the deterministic tune/test split, query kinds, a plain Okapi BM25
//! baseline, recall@k, MRR and "no tool" precision/recall.
#![allow(dead_code, unreachable_pub)] // Each user takes a different subset.
use std::collections::HashMap;
use std::fmt;

use serde::Deserialize;
use serde_json::Value;

use iris_discovery::search::{SearchHit, SearchIndex};
use iris_tools_core::{ToolCapability, ToolDefinition};

pub mod protocol;

/// What loading a fixture fails with: bad JSON or an invalid definition.
#[derive(Debug)]
pub enum Error {
    /// The file is not the expected JSON.
    Json(serde_json::Error),
    /// A tool of the catalog breaks a definition rule.
    Definition(iris_tools_core::Error),
}

impl Error {
    /// The stable code: `INVALID_INPUT` for bad JSON, the definition's own code
    /// (`INVALID_DEFINITION`) otherwise.
    pub fn code(&self) -> &str {
        match self {
            Error::Json(_) => iris_tools_core::codes::INVALID_INPUT,
            Error::Definition(e) => e.code(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Json(e) => write!(f, "bad fixture JSON: {e}"),
            Error::Definition(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Json(e)
    }
}

impl From<iris_tools_core::Error> for Error {
    fn from(e: iris_tools_core::Error) -> Self {
        Error::Definition(e)
    }
}

/// Shorthand result type of the loaders.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Deserialize)]
struct CatalogFile {
    tools: Vec<CatalogTool>,
}

#[derive(Deserialize)]
struct CatalogTool {
    name: String,
    description: String,
    group: String,
    #[serde(default)]
    tags: Vec<String>,
    input_schema: Value,
}

/// Loads a catalog file (`{"tools": [{name, description, group, tags,
/// input_schema}]}`) as deferred MCP tool definitions, validating each.
pub fn load_catalog(json: &str) -> Result<Vec<ToolDefinition>> {
    let file: CatalogFile = serde_json::from_str(json)?;
    file.tools
        .into_iter()
        .map(|t| {
            let def = ToolDefinition::new(t.name, t.description, t.input_schema)
                .with_group(t.group)
                .with_capabilities([ToolCapability::Mcp])
                .with_deferred(true)
                .with_metadata("tags", t.tags);
            def.validate()?;
            Ok(def)
        })
        .collect()
}

/// One labelled intent: a query and the one tool it should find.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct LabeledQuery {
    /// What the user asked for.
    pub query: String,
    /// The canonical name of the tool that answers it.
    pub expected: String,
}

#[derive(Deserialize)]
struct QueryFile {
    queries: Vec<LabeledQuery>,
}

/// Loads a query file (`{"queries": [{query, expected}]}`).
pub fn load_queries(json: &str) -> Result<Vec<LabeledQuery>> {
    let file: QueryFile = serde_json::from_str(json)?;
    Ok(file.queries)
}

/// Plain Okapi BM25 (k1 = 1.2, b = 0.75) over the same text the Iris ranking indexes
/// (name, group, tags, description, argument names and descriptions, concatenated into
/// one field) with a lower-casing tokenizer that splits on anything but letters and
/// digits, no stemming, no stop words, no synonyms: the baseline the ranking must beat.
#[derive(Debug)]
pub struct Bm25 {
    docs: Vec<HashMap<String, f64>>,
    lengths: Vec<f64>,
    avg_len: f64,
    df: HashMap<String, f64>,
}

fn simple_tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Every text [`SearchIndex`] reads from a definition, as one string.
pub fn indexed_text(def: &ToolDefinition) -> String {
    fn schema_text(schema: &Value, out: &mut String, depth: usize) {
        if depth > 32 {
            return;
        }
        match schema {
            Value::Object(obj) => {
                if let Some(Value::Object(props)) = obj.get("properties") {
                    for (key, sub) in props {
                        out.push(' ');
                        out.push_str(key);
                        if let Some(Value::String(d)) = sub.get("description") {
                            out.push(' ');
                            out.push_str(d);
                        }
                        schema_text(sub, out, depth + 1);
                    }
                }
                for key in ["items", "anyOf", "oneOf", "allOf", "$defs", "definitions"] {
                    if let Some(v) = obj.get(key) {
                        schema_text(v, out, depth + 1);
                    }
                }
            }
            Value::Array(items) => {
                for item in items {
                    schema_text(item, out, depth + 1);
                }
            }
            _ => {}
        }
    }
    let mut text = format!("{} {} {}", def.name, def.group, def.tags().join(" "));
    text.push(' ');
    text.push_str(&def.description);
    schema_text(&def.input_schema, &mut text, 0);
    text
}

impl Bm25 {
    const K1: f64 = 1.2;
    const B: f64 = 0.75;

    /// Indexes the [`indexed_text`] of each definition.
    pub fn new(defs: &[ToolDefinition]) -> Self {
        let mut docs = Vec::with_capacity(defs.len());
        let mut lengths = Vec::with_capacity(defs.len());
        let mut df: HashMap<String, f64> = HashMap::new();
        for def in defs {
            let tokens = simple_tokens(&indexed_text(def));
            lengths.push(tokens.len() as f64);
            let mut tf: HashMap<String, f64> = HashMap::new();
            for t in tokens {
                *tf.entry(t).or_default() += 1.0;
            }
            for t in tf.keys() {
                *df.entry(t.clone()).or_default() += 1.0;
            }
            docs.push(tf);
        }
        let avg_len = lengths.iter().sum::<f64>() / lengths.len().max(1) as f64;
        Self {
            docs,
            lengths,
            avg_len,
            df,
        }
    }

    /// The best `limit` hits, best first; ties keep candidate order.
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        let n = self.docs.len() as f64;
        let query = simple_tokens(query);
        let mut hits: Vec<SearchHit> = self
            .docs
            .iter()
            .enumerate()
            .filter_map(|(index, tf)| {
                let norm = 1.0 - Self::B + Self::B * self.lengths[index] / self.avg_len;
                let score: f64 = query
                    .iter()
                    .filter_map(|q| {
                        let f = *tf.get(q)?;
                        let df = self.df.get(q).copied().unwrap_or(0.0);
                        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                        Some(idf * f * (Self::K1 + 1.0) / (f + Self::K1 * norm))
                    })
                    .sum();
                (score > 0.0).then_some(SearchHit { index, score })
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
        hits.truncate(limit);
        hits
    }
}

/// Recall of one ranking over a labelled query set.
#[derive(Debug, Clone, PartialEq)]
pub struct Recall {
    /// Share of queries whose expected tool ranks first.
    pub at1: f64,
    /// Share of queries whose expected tool ranks in the top five.
    pub at5: f64,
    /// Queries whose expected tool is not in the top five, with the top hit (if any).
    pub missed: Vec<(String, String, Option<String>)>,
}

/// Measures recall@1 and recall@5 of `rank(query, limit)` over `queries`.
pub fn recall(
    defs: &[ToolDefinition],
    queries: &[LabeledQuery],
    rank: impl Fn(&str, usize) -> Vec<SearchHit>,
) -> Recall {
    let (mut at1, mut at5) = (0usize, 0usize);
    let mut missed = Vec::new();
    for q in queries {
        let hits = rank(&q.query, 5);
        let position = hits.iter().position(|h| defs[h.index].name == q.expected);
        match position {
            Some(0) => {
                at1 += 1;
                at5 += 1;
            }
            Some(_) => at5 += 1,
            None => missed.push((
                q.query.clone(),
                q.expected.clone(),
                hits.first().map(|h| defs[h.index].name.clone()),
            )),
        }
    }
    let n = queries.len().max(1) as f64;
    Recall {
        at1: at1 as f64 / n,
        at5: at5 as f64 / n,
        missed,
    }
}

/// Recall of the BM25 baseline and of [`SearchIndex`] on the same fixture.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The plain BM25 baseline.
    pub bm25: Recall,
    /// The Iris ranking.
    pub iris: Recall,
    /// Number of queries.
    pub queries: usize,
    /// Number of candidate tools.
    pub tools: usize,
}

/// Runs both rankings over the catalog and queries.
pub fn compare(defs: &[ToolDefinition], queries: &[LabeledQuery]) -> Comparison {
    let bm25 = Bm25::new(defs);
    let iris = SearchIndex::new(defs);
    Comparison {
        bm25: recall(defs, queries, |q, k| bm25.search(q, k)),
        iris: recall(defs, queries, |q, k| iris.search(q, k)),
        queries: queries.len(),
        tools: defs.len(),
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} queries over {} tools", self.queries, self.tools)?;
        writeln!(f, "ranking | recall@1 | recall@5")?;
        writeln!(f, "--------|----------|---------")?;
        writeln!(
            f,
            "BM25    | {:>8.3} | {:>8.3}",
            self.bm25.at1, self.bm25.at5
        )?;
        writeln!(
            f,
            "Iris    | {:>8.3} | {:>8.3}",
            self.iris.at1, self.iris.at5
        )
    }
}

// ---------------------------------------------------------------------------------
// Honest evaluation: halves, kinds, metrics, external sets.

/// Which half of a labelled set an item belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Half {
    /// Weights, thresholds and synonyms may be tuned on it.
    Tune,
    /// Held out: only reported.
    Test,
}

/// FNV-1a (64 bit) of `key`: a hash that is the same on every platform and run.
pub fn fnv1a(key: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The half of an item with this key (the fixture: the query text; BFCL: the entry
/// id): [`Half::Tune`] when the FNV-1a hash of the key is even, else [`Half::Test`].
/// Deterministic, independent of order, and stable when items are added.
pub fn half_of(key: &str) -> Half {
    if fnv1a(key).is_multiple_of(2) {
        Half::Tune
    } else {
        Half::Test
    }
}

/// How a query relates to the name of the tool it should find, computed from the
/// text (never hand-labelled): the expected tool's own name (the last `__` segment)
/// is analysed like the index analyses it, and so is the query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QueryKind {
    /// Every word of the tool's own name occurs in the query.
    Direct,
    /// Some but not all of them do.
    Partial,
    /// None does: the query paraphrases the tool.
    Paraphrase,
}

impl QueryKind {
    /// All kinds, in report order.
    pub const ALL: [QueryKind; 3] = [QueryKind::Direct, QueryKind::Partial, QueryKind::Paraphrase];

    /// Classifies `query` against the expected tool's canonical name.
    pub fn of(query: &str, expected: &str) -> QueryKind {
        let own = expected.rsplit("__").next().unwrap_or(expected);
        let name = iris_discovery::search::analyze(own);
        let words = iris_discovery::search::analyze(query);
        let found = name.iter().filter(|w| words.contains(w)).count();
        if !name.is_empty() && found == name.len() {
            QueryKind::Direct
        } else if found > 0 {
            QueryKind::Partial
        } else {
            QueryKind::Paraphrase
        }
    }

    /// Lower-case label for reports.
    pub fn label(self) -> &'static str {
        match self {
            QueryKind::Direct => "direct",
            QueryKind::Partial => "partial",
            QueryKind::Paraphrase => "paraphrase",
        }
    }
}

/// One labelled ranking query of an [`EvalSet`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// What the user asked for.
    pub query: String,
    /// The canonical name of the one tool that answers it.
    pub expected: String,
    /// How the query relates to that tool's name.
    pub kind: QueryKind,
    /// The half it belongs to.
    pub half: Half,
    /// Other tools counted as right for it (empty but in an "equivalents accepted" set,
    /// see [`accept_equivalents`]).
    pub accepted: Vec<String>,
}

impl Case {
    /// Whether `name` answers this case: the expected tool or an accepted one.
    pub fn is_right(&self, name: &str) -> bool {
        name == self.expected || self.accepted.iter().any(|a| a == name)
    }
}

/// A catalog and labelled queries over it.
#[derive(Debug, Clone)]
pub struct EvalSet {
    /// Short name for reports (`fixture`, `bfcl-multiple`).
    pub name: String,
    /// The candidates, all searched by every query.
    pub tools: Vec<ToolDefinition>,
    /// The labelled queries.
    pub cases: Vec<Case>,
}

impl EvalSet {
    /// The set's queries of one half.
    pub fn half(&self, half: Half) -> Vec<&Case> {
        self.cases.iter().filter(|c| c.half == half).collect()
    }
}

/// The fixture (`mcp_catalog.json` + `mcp_queries.json`) as an [`EvalSet`], split by
/// query text.
pub fn fixture_set(catalog: &str, queries: &str) -> Result<EvalSet> {
    let tools = load_catalog(catalog)?;
    let cases = load_queries(queries)?
        .into_iter()
        .map(|q| Case {
            kind: QueryKind::of(&q.query, &q.expected),
            half: half_of(&q.query),
            query: q.query,
            expected: q.expected,
            accepted: Vec::new(),
        })
        .collect();
    Ok(EvalSet {
        name: "fixture".to_owned(),
        tools,
        cases,
    })
}

/// R@1, R@5 and MRR of a ranking over some queries.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Metrics {
    /// Number of queries.
    pub n: usize,
    /// Share whose expected tool ranks first.
    pub at1: f64,
    /// Share whose expected tool ranks in the top five.
    pub at5: f64,
    /// Mean reciprocal rank of the expected tool within the top ten (0 beyond).
    pub mrr: f64,
}

/// How many hits [`metrics`] asks a ranking for.
pub const MRR_DEPTH: usize = 10;

/// Measures `rank(query, limit)` (candidate indices, best first) over `cases`.
pub fn metrics(
    tools: &[ToolDefinition],
    cases: &[&Case],
    mut rank: impl FnMut(&str, usize) -> Vec<usize>,
) -> Metrics {
    let (mut at1, mut at5, mut rr) = (0usize, 0usize, 0.0f64);
    for case in cases {
        let hits = rank(&case.query, MRR_DEPTH);
        if let Some(p) = hits.iter().position(|&i| case.is_right(&tools[i].name)) {
            at1 += usize::from(p == 0);
            at5 += usize::from(p < 5);
            rr += 1.0 / (p + 1) as f64;
        }
    }
    let n = cases.len().max(1) as f64;
    Metrics {
        n: cases.len(),
        at1: at1 as f64 / n,
        at5: at5 as f64 / n,
        mrr: rr / n,
    }
}

/// One "is there a tool for this?" question: a query, the candidates it is asked
/// against, and the right answer (`None`: no candidate serves it).
#[derive(Debug, Clone)]
pub struct NoneCase {
    /// What the user asked for.
    pub query: String,
    /// The candidates (shared by every question over the same catalog).
    pub tools: std::sync::Arc<[ToolDefinition]>,
    /// The tool that serves it, or `None`.
    pub expected: Option<String>,
    /// The half it belongs to.
    pub half: Half,
}

/// "No tool" precision and recall, and the accuracy of the selections made.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct NoneMetrics {
    /// Questions asked.
    pub n: usize,
    /// Questions no tool serves.
    pub negatives: usize,
    /// Of the "no tool" answers, the share that were right.
    pub precision: f64,
    /// Of the questions no tool serves, the share answered "no tool".
    pub recall: f64,
    /// Of the questions a tool serves, the share answered with exactly that tool.
    pub positive_accuracy: f64,
}

/// Scores `answer(query, tools)` (the selected tool, or `None`) over `cases`.
pub fn none_metrics(
    cases: &[&NoneCase],
    mut answer: impl FnMut(&NoneCase) -> Option<String>,
) -> NoneMetrics {
    let (mut said_none, mut right_none, mut negatives, mut right_tool) = (0, 0, 0, 0);
    for case in cases {
        let got = answer(case);
        negatives += usize::from(case.expected.is_none());
        if got.is_none() {
            said_none += 1;
            right_none += usize::from(case.expected.is_none());
        } else if got == case.expected {
            right_tool += 1;
        }
    }
    let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    NoneMetrics {
        n: cases.len(),
        negatives,
        precision: ratio(right_none, said_none),
        recall: ratio(right_none, negatives),
        positive_accuracy: ratio(right_tool, cases.len() - negatives),
    }
}

// ---------------------------------------------------------------------------------
// BFCL v4 (the `bfcl-eval` package's non-live files).

#[derive(Deserialize)]
struct BfclEntry {
    id: String,
    question: Vec<Vec<BfclTurn>>,
    function: Vec<BfclFunction>,
}

#[derive(Deserialize)]
struct BfclTurn {
    role: String,
    content: String,
}

#[derive(Deserialize)]
struct BfclFunction {
    name: String,
    description: String,
    #[serde(default)]
    parameters: Value,
}

#[derive(Deserialize)]
struct BfclAnswer {
    id: String,
    ground_truth: Vec<serde_json::Map<String, Value>>,
}

/// A BFCL function name as a tool name: every character outside `[A-Za-z0-9_]`
/// becomes `_` (`math.factorial` is `math_factorial`).
pub fn bfcl_tool_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out.truncate(64); // The longest valid tool name.
    out
}

/// BFCL's parameter schemas use Python, Java and JavaScript type names (`dict`,
/// `float`, `tuple`, `any`, `String`, `HashMap`, `long`, …); they become JSON Schema
/// ones so the definitions read like MCP tools'.
fn bfcl_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(obj) => Value::Object(
            obj.iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("type", Value::String(t)) => Value::String(
                            match t.as_str() {
                                "dict" | "HashMap" => "object",
                                "float" | "double" => "number",
                                "long" => "integer",
                                "tuple" | "Array" | "ArrayList" => "array",
                                "String" | "char" | "any" | "" => "string",
                                "Boolean" => "boolean",
                                other => other,
                            }
                            .to_owned(),
                        ),
                        _ => bfcl_schema(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(bfcl_schema).collect()),
        other => other.clone(),
    }
}

fn bfcl_definition(f: &BfclFunction) -> Result<ToolDefinition> {
    let mut schema = bfcl_schema(&f.parameters);
    if !schema.is_object() {
        schema = serde_json::json!({"type": "object"});
    }
    if let Some(obj) = schema.as_object_mut() {
        obj.insert("type".to_owned(), Value::String("object".to_owned()));
    }
    let def = ToolDefinition::new(bfcl_tool_name(&f.name), f.description.clone(), schema)
        .with_group("bfcl")
        .with_deferred(true);
    def.validate()?;
    Ok(def)
}

fn bfcl_entries(jsonl: &str) -> Result<Vec<BfclEntry>> {
    jsonl
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| Ok(serde_json::from_str(l)?))
        .collect()
}

/// The user's words of a BFCL entry: every user turn of the first round, joined.
fn bfcl_query(entry: &BfclEntry) -> String {
    entry
        .question
        .first()
        .map(|turns| {
            turns
                .iter()
                .filter(|t| t.role == "user")
                .map(|t| t.content.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// The single ground-truth function of each `possible_answer` entry, by id.
fn bfcl_answers(jsonl: &str) -> Result<HashMap<String, String>> {
    Ok(bfcl_answer_lists(jsonl)?
        .into_iter()
        .filter_map(|(id, mut names)| (!names.is_empty()).then(|| (id, names.swap_remove(0))))
        .collect())
}

/// Every function an entry's ground truth calls, keyed by entry id: its tool names in
/// call order, each once (a `parallel` entry calls one function several times, a
/// `parallel_multiple` entry several functions).
fn bfcl_answer_lists(jsonl: &str) -> Result<HashMap<String, Vec<String>>> {
    let mut out = HashMap::new();
    for line in jsonl.lines().filter(|l| !l.trim().is_empty()) {
        let answer: BfclAnswer = serde_json::from_str(line)?;
        let mut names: Vec<String> = Vec::new();
        for name in answer.ground_truth.iter().flat_map(|m| m.keys()) {
            let name = bfcl_tool_name(name);
            if !names.contains(&name) {
                names.push(name);
            }
        }
        out.insert(answer.id, names);
    }
    Ok(out)
}

/// The ground-truth call of each `possible_answer` entry, keyed by its question: the
/// function's tool name and the names of the parameters it is given a value for (a
/// parameter whose only acceptable value is `""`, "leave it out", is not given).
fn bfcl_calls(files: &[(&str, &str)]) -> Result<HashMap<String, (String, Vec<String>)>> {
    let mut out = HashMap::new();
    for (questions, answers) in files {
        let mut by_id = HashMap::new();
        for line in answers.lines().filter(|l| !l.trim().is_empty()) {
            let answer: BfclAnswer = serde_json::from_str(line)?;
            if let Some((name, args)) = answer.ground_truth.first().and_then(|m| m.iter().next()) {
                let given = args
                    .as_object()
                    .map(|args| {
                        args.iter()
                            .filter(|(_, v)| match v {
                                Value::Array(values) => values.iter().any(|v| v != ""),
                                _ => true,
                            })
                            .map(|(k, _)| k.clone())
                            .collect()
                    })
                    .unwrap_or_default();
                by_id.insert(answer.id, (bfcl_tool_name(name), given));
            }
        }
        for entry in bfcl_entries(questions)? {
            if let Some(call) = by_id.remove(&entry.id) {
                out.entry(bfcl_query(&entry)).or_insert(call);
            }
        }
    }
    Ok(out)
}

/// Name words that say how a tool works (`get`, `calculate`) or name no subject
/// (`info`, `data`), not what it is about: [`accept_equivalents`] leaves them out when
/// it compares two names.
const OPERATION_WORDS: &[&str] = &[
    "get",
    "calculate",
    "calc",
    "compute",
    "find",
    "search",
    "fetch",
    "retrieve",
    "create",
    "make",
    "check",
    "lookup",
    "info",
    "details",
    "data",
];

/// A parameter or name word reduced for comparison: lower-case letters and digits,
/// one trailing plural `s` dropped (`units` and `unit`, `Radius` and `radius`).
fn comparable(word: &str) -> String {
    let mut w: String = word
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if w.len() > 3 && w.ends_with('s') {
        w.pop();
    }
    w
}

/// A pooled BFCL set (as labelled or twins merged) where a tool that does the same job
/// as the labelled one also counts as right: the set named `<name>, equivalents
/// accepted`. A pooled catalog offers many tools from different entries for one job
/// (`calculate_circumference` and `geometry_circumference`, `solve_quadratic_equation`
/// and `math_roots_quadratic`), and a question's label names only its own entry's.
/// The rule is mechanical, the same for every ranking, and strict: another tool `B` is
/// accepted for a question when `B` requires at least one parameter, the question's
/// ground-truth call gives a value to a parameter of the same name for every one `B`
/// requires (names compared by [`comparable`]), and the words of one name beyond the
/// [`OPERATION_WORDS`] are all words of the other (`circumference` of
/// `geometry_circumference`). Near misses stay wrong: `calculate_derivative(func,
/// x_value)` for `calculus_derivative(function, value)`, `math_roots_quadratic` for
/// `solve_quadratic_equation`; so do neighbours (`math_gcd` for `math_lcm`,
/// `restaurant_find_nearby` for `library_find_nearby`). `files` are the `(questions,
/// answers)` pairs the set was pooled from.
pub fn accept_equivalents(set: &EvalSet, files: &[(&str, &str)]) -> Result<EvalSet> {
    let calls = bfcl_calls(files)?;
    let topic = |name: &str| -> std::collections::HashSet<String> {
        name_words(name)
            .iter()
            .map(|w| comparable(w))
            .filter(|w| !OPERATION_WORDS.contains(&w.as_str()))
            .collect()
    };
    let required: Vec<Vec<String>> = set
        .tools
        .iter()
        .map(|t| {
            t.input_schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).map(comparable).collect())
                .unwrap_or_default()
        })
        .collect();
    let cases = set
        .cases
        .iter()
        .map(|case| {
            let mut case = case.clone();
            if let Some((_, given)) = calls.get(&case.query) {
                let given: Vec<String> = given.iter().map(|g| comparable(g)).collect();
                let expected = topic(&case.expected);
                case.accepted = set
                    .tools
                    .iter()
                    .zip(&required)
                    .filter(|(tool, required)| {
                        tool.name != case.expected
                            && !required.is_empty()
                            && required.iter().all(|r| given.contains(r))
                            && {
                                let other = topic(&tool.name);
                                let (fewer, more) = if other.len() <= expected.len() {
                                    (&other, &expected)
                                } else {
                                    (&expected, &other)
                                };
                                !fewer.is_empty() && fewer.is_subset(more)
                            }
                    })
                    .map(|(tool, _)| tool.name.clone())
                    .collect();
            }
            case
        })
        .collect();
    Ok(EvalSet {
        name: format!("{}, equivalents accepted", set.name),
        tools: set.tools.clone(),
        cases,
    })
}

/// BFCL `multiple` pooled into one catalog: every function of every entry, once per
/// name (the first description wins when two entries describe a name differently),
/// and each entry's question labelled with its ground-truth function. Split by id.
pub fn bfcl_pooled(questions: &str, answers: &str) -> Result<EvalSet> {
    bfcl_pool("bfcl-multiple", &[(questions, answers)])
}

/// Several BFCL files (each `(questions, possible answers)`) pooled into one catalog
/// named `name`, as [`bfcl_pooled`] pools one: every function of every entry of every
/// file, once per name (the first description seen wins), each question labelled with
/// its ground-truth function, split by entry id. The `simple_*` files pool this way
/// into `bfcl-simple`, `parallel` and `parallel_multiple` into `bfcl-parallel`. A
/// question whose ground truth calls several functions (`parallel_multiple`: "find the
/// hotel, then book it") is labelled with the first and accepts the others: a tool it
/// needs is a right answer.
pub fn bfcl_pool(name: &str, files: &[(&str, &str)]) -> Result<EvalSet> {
    let mut tools: Vec<ToolDefinition> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut cases = Vec::new();
    for (questions, answers) in files {
        let entries = bfcl_entries(questions)?;
        let answers = bfcl_answer_lists(answers)?;
        for entry in &entries {
            for f in &entry.function {
                if seen.insert(bfcl_tool_name(&f.name)) {
                    tools.push(bfcl_definition(f)?);
                }
            }
            if let Some([expected, others @ ..]) = answers.get(&entry.id).map(Vec::as_slice) {
                let query = bfcl_query(entry);
                cases.push(Case {
                    kind: QueryKind::of(&query, expected),
                    half: half_of(&entry.id),
                    query,
                    expected: expected.clone(),
                    accepted: others.to_vec(),
                });
            }
        }
    }
    Ok(EvalSet {
        name: name.to_owned(),
        tools,
        cases,
    })
}

/// The words of a tool name, case-folded and sorted: the name split on `_`, `.`, `-`
/// (anything but a letter or a digit) and on camelCase humps (`getHTTPStatus` is
/// `get`, `http`, `status`). Two names with the same words name one tool twice
/// (`calculate_BMI` / `calculate_bmi`, `hotel.book` / `book_hotel`).
pub fn name_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    for run in name.split(|c: char| !c.is_alphanumeric()) {
        let chars: Vec<char> = run.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (prev, c) = (chars[i - 1], chars[i]);
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let hump = c.is_uppercase()
                && (prev.is_lowercase()
                    || prev.is_ascii_digit()
                    || (prev.is_uppercase() && next_lower));
            if hump {
                words.push(chars[start..i].iter().collect::<String>().to_lowercase());
                start = i;
            }
        }
        if start < chars.len() {
            words.push(chars[start..].iter().collect::<String>().to_lowercase());
        }
    }
    words.sort();
    words
}

/// A pooled catalog with its twins merged: of the tools whose [`name_words`] are equal,
/// the first in catalog order stays and the others leave the catalog; a question
/// labelled with a tool that left is labelled with the one that stayed (its kind
/// recomputed). One tool offered twice under two spellings, which no BFCL entry ever
/// shows a model at once; the rule is mechanical and the same for every ranking.
/// Returns the merged set (named `<name>, twins merged`) and the merged pairs
/// `(left, stayed)`.
pub fn merge_twins(set: &EvalSet) -> (EvalSet, Vec<(String, String)>) {
    let mut first: HashMap<Vec<String>, String> = HashMap::new();
    let mut merged = Vec::new();
    let mut tools = Vec::with_capacity(set.tools.len());
    for tool in &set.tools {
        match first.entry(name_words(&tool.name)) {
            std::collections::hash_map::Entry::Occupied(kept) => {
                merged.push((tool.name.clone(), kept.get().clone()));
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(tool.name.clone());
                tools.push(tool.clone());
            }
        }
    }
    let target: HashMap<&str, &str> = merged
        .iter()
        .map(|(left, stayed)| (left.as_str(), stayed.as_str()))
        .collect();
    let cases = set
        .cases
        .iter()
        .map(|c| match target.get(c.expected.as_str()) {
            Some(stayed) => Case {
                kind: QueryKind::of(&c.query, stayed),
                expected: (*stayed).to_owned(),
                ..c.clone()
            },
            None => c.clone(),
        })
        .collect();
    let set = EvalSet {
        name: format!("{}, twins merged", set.name),
        tools,
        cases,
    };
    (set, merged)
}

/// BFCL's own "is there a tool?" questions: every `multiple` entry against its own
/// functions (answer: its ground truth) and every `irrelevance` entry against its
/// own functions (answer: none). Split by id.
pub fn bfcl_none_cases(multiple: &str, answers: &str, irrelevance: &str) -> Result<Vec<NoneCase>> {
    let answers = bfcl_answers(answers)?;
    let mut out = Vec::new();
    for (jsonl, positive) in [(multiple, true), (irrelevance, false)] {
        for entry in bfcl_entries(jsonl)? {
            let expected = if positive {
                match answers.get(&entry.id) {
                    Some(name) => Some(name.clone()),
                    None => continue,
                }
            } else {
                None
            };
            let mut tools = Vec::with_capacity(entry.function.len());
            for f in &entry.function {
                tools.push(bfcl_definition(f)?);
            }
            out.push(NoneCase {
                query: bfcl_query(&entry),
                tools: tools.into(),
                expected,
                half: half_of(&entry.id),
            });
        }
    }
    Ok(out)
}

#[derive(Deserialize)]
struct UnrelatedFile {
    queries: Vec<String>,
}

/// "Is there a tool?" questions over the fixture catalog: every labelled query
/// (answer: its tool) and every request of `mcp_unrelated.json` (answer: none). Split
/// by query text.
pub fn fixture_none_cases(set: &EvalSet, unrelated: &str) -> Result<Vec<NoneCase>> {
    let file: UnrelatedFile = serde_json::from_str(unrelated)?;
    let positives = set
        .cases
        .iter()
        .map(|c| (c.query.clone(), Some(c.expected.clone())));
    let negatives = file.queries.into_iter().map(|q| (q, None));
    let tools: std::sync::Arc<[ToolDefinition]> = set.tools.clone().into();
    Ok(positives
        .chain(negatives)
        .map(|(query, expected)| NoneCase {
            half: half_of(&query),
            query,
            tools: std::sync::Arc::clone(&tools),
            expected,
        })
        .collect())
}

/// The packaged MCP servers' set (`packaged_catalog.json` + `packaged_queries.json`)
/// as an [`EvalSet`] named `packaged`, split by query text.
pub fn packaged_set(catalog: &str, queries: &str) -> Result<EvalSet> {
    let mut set = fixture_set(catalog, queries)?;
    set.name = "packaged".to_owned();
    Ok(set)
}

/// Every development set of the leave-one-set-out protocol, as labelled: `fixture`,
/// `packaged`, `bfcl-multiple`, `bfcl-simple` and `bfcl-parallel` (the last three from
/// [`data_dir`]).
/// BFCL's `live_*` files are never read.
///
/// # Errors
/// A message naming the missing file (run `crates/iris-discovery/data/fetch.sh`) or
/// the set that does not load.
pub fn development_sets() -> std::result::Result<Vec<EvalSet>, String> {
    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/");
    let read = |path: std::path::PathBuf| {
        std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "{}: {e} (run crates/iris-discovery/data/fetch.sh)",
                path.display()
            )
        })
    };
    let fixture = fixture_set(
        &read(format!("{FIXTURES}mcp_catalog.json").into())?,
        &read(format!("{FIXTURES}mcp_queries.json").into())?,
    )
    .map_err(|e| format!("fixture: {e}"))?;
    let packaged = packaged_set(
        &read(format!("{FIXTURES}packaged_catalog.json").into())?,
        &read(format!("{FIXTURES}packaged_queries.json").into())?,
    )
    .map_err(|e| format!("packaged: {e}"))?;
    let bfcl = data_dir().join("bfcl");
    let multiple = bfcl_pooled(
        &read(bfcl.join("BFCL_v4_multiple.json"))?,
        &read(bfcl.join("possible_answer/BFCL_v4_multiple.json"))?,
    )
    .map_err(|e| format!("bfcl-multiple: {e}"))?;
    let mut simple_files = Vec::new();
    for lang in ["python", "java", "javascript"] {
        simple_files.push((
            read(bfcl.join(format!("BFCL_v4_simple_{lang}.json")))?,
            read(bfcl.join(format!("possible_answer/BFCL_v4_simple_{lang}.json")))?,
        ));
    }
    let files: Vec<(&str, &str)> = simple_files
        .iter()
        .map(|(q, a)| (q.as_str(), a.as_str()))
        .collect();
    let simple = bfcl_pool("bfcl-simple", &files).map_err(|e| format!("bfcl-simple: {e}"))?;
    let mut parallel_files = Vec::new();
    for file in ["parallel", "parallel_multiple"] {
        parallel_files.push((
            read(bfcl.join(format!("BFCL_v4_{file}.json")))?,
            read(bfcl.join(format!("possible_answer/BFCL_v4_{file}.json")))?,
        ));
    }
    let files: Vec<(&str, &str)> = parallel_files
        .iter()
        .map(|(q, a)| (q.as_str(), a.as_str()))
        .collect();
    let parallel = bfcl_pool("bfcl-parallel", &files).map_err(|e| format!("bfcl-parallel: {e}"))?;
    Ok(vec![fixture, packaged, multiple, simple, parallel])
}

/// Where `data/fetch.sh` puts the BFCL files and the model: `$IRIS_DISCOVERY_DATA`, else
/// `$CARGO_TARGET_DIR/discovery-data`, else the workspace's `target/discovery-data`.
pub fn data_dir() -> std::path::PathBuf {
    if let Some(dir) = std::env::var_os("IRIS_DISCOVERY_DATA") {
        return dir.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        std::path::PathBuf::from,
    );
    target.join("discovery-data")
}

/// The all-MiniLM-L6-v2 directory inside [`data_dir`].
pub fn model_dir() -> std::path::PathBuf {
    data_dir().join("all-minilm-l6-v2")
}

// ---------------------------------------------------------------------------------
// The large synthetic catalog of the latency benchmarks.

/// A small deterministic generator (xorshift64*), so every run builds the same catalog.
pub struct Rng(
    /// The state; any non-zero seed.
    pub u64,
);

impl Rng {
    /// The next number.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// `base` grown to `size` tools by perturbed copies: copy k of every tool is renamed
/// `mcp__<group>_k<k>__<own name>` (group `<group>_k<k>`) and its description perturbed
/// by a seeded generator (one word dropped, two neighbours swapped, two words of the
/// base's own vocabulary inserted), so the vocabulary and the posting lists look like a
/// large real deployment rather than identical blocks. Deterministic.
pub fn large_catalog(base: &[ToolDefinition], size: usize) -> Vec<ToolDefinition> {
    let vocabulary: Vec<String> = base
        .iter()
        .flat_map(|d| d.description.split_whitespace().map(str::to_owned))
        .collect();
    let mut rng = Rng(0x1D15_C0DE_9E37_79B9);
    let mut out = Vec::with_capacity(size);
    'copies: for copy in 0.. {
        for def in base {
            if out.len() == size {
                break 'copies;
            }
            if copy == 0 {
                out.push(def.clone());
                continue;
            }
            let mut words: Vec<&str> = def.description.split_whitespace().collect();
            if words.len() > 3 {
                words.remove(rng.below(words.len()));
                let at = rng.below(words.len() - 1);
                words.swap(at, at + 1);
            }
            for _ in 0..2 {
                let word = &vocabulary[rng.below(vocabulary.len())];
                words.insert(rng.below(words.len() + 1), word);
            }
            let group = format!("{}_k{copy}", def.group);
            let own = def.name.rsplit("__").next().unwrap_or(&def.name);
            let mut copied = def.clone();
            copied.name = format!("mcp__{group}__{own}");
            copied.description = words.join(" ");
            copied.group = group;
            out.push(copied);
        }
    }
    out
}
