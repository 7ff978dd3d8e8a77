//! Local relevance ranking for deferred-tool search.

use crate::definition::ToolDefinition;

/// One ranked hit: an index into the candidate slice and its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchHit {
    /// Index into the candidates given to [`SearchIndex::new`].
    pub index: usize,
    /// Relevance score; higher is better, always positive.
    pub score: f64,
}

/// An index over tool definitions, built once per search.
#[derive(Debug)]
pub struct SearchIndex {
    docs: Vec<Vec<String>>,
}

fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect()
}

impl SearchIndex {
    /// Indexes name, tags, group and description of each definition.
    pub fn new(defs: &[ToolDefinition]) -> Self {
        let docs = defs
            .iter()
            .map(|d| {
                let mut t = tokens(&d.name);
                t.extend(d.tags().into_iter().flat_map(tokens));
                t.extend(tokens(&d.group));
                t.extend(tokens(&d.description));
                t
            })
            .collect();
        Self { docs }
    }

    /// The best `limit` hits for a query, best first; ties keep candidate order.
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        let q = tokens(query);
        let mut hits: Vec<SearchHit> = self
            .docs
            .iter()
            .enumerate()
            .filter_map(|(index, doc)| {
                let score = q.iter().filter(|t| doc.contains(t)).count() as f64;
                (score > 0.0).then_some(SearchHit { index, score })
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
        hits.truncate(limit);
        hits
    }
}
