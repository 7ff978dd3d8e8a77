//! Evaluation scaffolding shared by the search tests and benchmarks: fixture
//! loading, a plain Okapi BM25 baseline and recall@k.
#![allow(dead_code, unreachable_pub)] // Each user takes a different subset.
use std::collections::HashMap;
use std::fmt;

use serde::Deserialize;
use serde_json::Value;

use iris_discovery::search::{SearchHit, SearchIndex};
use iris_tools_core::{ToolCapability, ToolDefinition};

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

/// Plain Okapi BM25 (k1 = 1.2, b = 0.75) over `name + " " + description` with a
/// lower-casing tokenizer that splits on anything but letters and digits: the
/// baseline the ranking must beat.
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

impl Bm25 {
    const K1: f64 = 1.2;
    const B: f64 = 0.75;

    /// Indexes name and description of each definition.
    pub fn new(defs: &[ToolDefinition]) -> Self {
        let mut docs = Vec::with_capacity(defs.len());
        let mut lengths = Vec::with_capacity(defs.len());
        let mut df: HashMap<String, f64> = HashMap::new();
        for def in defs {
            let tokens = simple_tokens(&format!("{} {}", def.name, def.description));
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
