//! Hybrid ranking: the lexical [`SearchIndex`] fused with dense retrieval over
//! sentence embeddings ([`HybridIndex`]), and the backend that answers `tool_search`
//! with it ([`HybridDiscoveryBackend`]).
//!
//! # Ranking
//!
//! A query is ranked twice: densely (the cosine similarity of the query's embedding
//! with every tool's, its top [`FUSION_DEPTH`]) and lexically (the top
//! [`FUSION_DEPTH`] hits of [`SearchIndex::search`]). The two rankings are fused by
//! reciprocal rank: a tool at rank `r` (from 1) of a list earns `1 / (RRF_K + r)`
//! from it, and the tools are ordered by the sum; two tools the lists rank in swapped
//! places tie exactly, and the higher similarity wins, then the higher mixed score
//! (below), then candidate order. Ranks need no common scale, and a tool both lists
//! agree on beats one only either list likes. The fusion was chosen by the
//! leave-one-set-out protocol (issue 29, `benches/eval.rs`): of `k` ∈ {10, 30, 60} and a
//! lexical weight ∈ {0, 0.5, 1, 2}, the pair with the best mean R@1 on the other
//! development sets, the lexical list being [`lexical_tuning`] (stop words dropped).
//! Every fold chose `k` = 10, two of four equal weights (the BFCL folds 0.5 for the
//! lexical list); `k` = 10 with equal weights ships (`docs/benchmarks.md` has the
//! left-out table). The embedded text is the tool's name words, description and argument
//! names ([`tool_text`]).
//!
//! # "No tool"
//!
//! Rank fusion says which tool is best, not whether it fits. The evidence that it fits
//! is its *mixed score*: `similarity + LEXICAL_WEIGHT · min(relevance, RELEVANCE_CAP)`
//! with the tool's catalog-independent lexical [`relevance`] (0 when outside the
//! lexical top [`FUSION_DEPTH`]); both scales mean the same in every catalog. The top
//! hit is selected only when its mixed score reaches [`DEFAULT_MIN_SCORE`]. The weight
//! and the cap were calibrated on the tune halves of the fixture and BFCL (a weight of
//! 0.1 let a strong lexical match with a low similarity fall under any useful threshold;
//! from 0.3 on, 0.1–0.4 swept with caps 1–5, that no longer happens). The threshold is
//! chosen like the local one, by the leave-one-set-out protocol's nested rule: at most
//! 1 % of the answerable intents of every development set refused (0.27; chosen on the
//! other sets, every left-out set stays within 1 %). It was 0.49, calibrated for "no
//! tool" precision on the tune halves, which refused up to 5 % of answerable intents.
//!
//! # Cost
//!
//! Tool embeddings are computed once per catalog and kept: the backend caches the
//! index of each candidate set it saw (by the identity of the candidates, up to four
//! sets) and every tool vector by its text, so a catalog that only grows embeds only
//! its new tools (the runner prepares the backend at assembly, so even the first search
//! embeds only its query). With a [`VectorCache`] on disk
//! ([`HybridDiscoveryBackend::with_vector_cache`], which `DiscoveryConfig::build` sets to
//! the user's cache) the vectors outlive the process: the next start over the same
//! catalog embeds nothing, and one whose tool changed its description embeds that tool. A query costs one embedding (about 2 ms for a short query
//! on a 2-core AVX-VNNI CPU with the quantised forward pass of [`crate::embed`], a few
//! ms on an AVX2-only one with f32 weights), one product of the query vector with the
//! tool vectors (packed like a linear layer's weights), the lexical ranking and the
//! fusion (`docs/benchmarks.md` has the figures at 10,000 tools).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value, json};

use iris_tools_core::{BoxFuture, Tool, ToolDefinition, ToolErrorInfo};

use crate::backend::{DiscoveryAnswer, DiscoveryBackend, DiscoveryRequest, relevance};
use crate::embed::EmbeddingModel;
use crate::error::{Error, Result};
use crate::product::Packed;
use crate::search::{SearchIndex, Tuning};
use crate::vectors::{MAX_RECORDS, VectorCache, VectorKey};

/// How many hits of each ranking take part in the fusion (the others add nothing).
pub const FUSION_DEPTH: usize = 50;
/// The reciprocal-rank constant: rank `r` (from 1) earns `1 / (RRF_K + r)`.
pub const RRF_K: f64 = 10.0;
/// The weight of the lexical relevance in the mixed score (the similarity's is 1).
pub const LEXICAL_WEIGHT: f64 = 0.35;
/// Lexical relevance above this counts as this much: one strong word match must not
/// outweigh what the embedding says.
pub const RELEVANCE_CAP: f64 = 1.0;
/// The default minimum mixed score of the selected tool.
pub const DEFAULT_MIN_SCORE: f64 = 0.27;

/// Most candidate sets whose index the backend keeps.
const INDEX_CACHE_SLOTS: usize = 4;
/// Most tool vectors the backend remembers by text (about 1.5 KB each for MiniLM).
const VECTOR_MEMO_LIMIT: usize = 100_000;

/// Appends `name`'s words, lower-cased: split at `_`, `-`, `.` and camelCase humps.
fn push_words(out: &mut String, name: &str) {
    for word in name.split(['_', '-', '.']) {
        if word.is_empty() {
            continue;
        }
        if !out.is_empty() && !out.ends_with(' ') {
            out.push(' ');
        }
        let mut prev_lower = false;
        for c in word.chars() {
            if c.is_uppercase() && prev_lower {
                out.push(' ');
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            out.extend(c.to_lowercase());
        }
    }
}

/// The text of a tool that is embedded: its own name's words, its description, and
/// the words of its top-level argument names.
///
/// ```
/// use iris_discovery::hybrid::tool_text;
/// use iris_tools_core::ToolDefinition;
/// use serde_json::json;
/// let def = ToolDefinition::new(
///     "mcp__github__create_issue",
///     "Open an issue.",
///     json!({"type": "object", "properties": {"repo": {}, "issueTitle": {}}}),
/// );
/// assert_eq!(tool_text(&def), "create issue: Open an issue. Arguments: issue title, repo.");
/// ```
pub fn tool_text(def: &ToolDefinition) -> String {
    let own = def.name.rsplit("__").next().unwrap_or(&def.name);
    let mut text = String::new();
    push_words(&mut text, own);
    text.push_str(": ");
    text.push_str(def.description.trim());
    if let Some(Value::Object(props)) = def.input_schema.get("properties") {
        let mut args = Vec::with_capacity(props.len());
        for key in props.keys() {
            let mut words = String::new();
            push_words(&mut words, key);
            if !words.is_empty() {
                args.push(words);
            }
        }
        if !args.is_empty() {
            text.push_str(" Arguments: ");
            text.push_str(&args.join(", "));
            text.push('.');
        }
    }
    text
}

/// The lexical ranking a hybrid fuses: `base` (the local default, or a protocol fold's
/// choice) with stop words dropped. In a fusion the lexical list only has to bring real
/// word matches; without the stop list, function words ("it", "in") put unrelated tools
/// on it, which the dense list cannot outvote in a small catalog. The bench measures
/// the hybrid with exactly this list.
pub fn lexical_tuning(base: Tuning) -> Tuning {
    Tuning {
        stop_words: true,
        ..base
    }
}

/// One hit of [`HybridIndex::search`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HybridHit {
    /// Index into the candidates the index was built over.
    pub index: usize,
    /// The reciprocal-rank fusion score the hits are ordered by; higher is better.
    pub fused: f64,
    /// The mixed score, the evidence that the tool fits (see the [module
    /// documentation](self)); the backend's threshold applies to it.
    pub score: f64,
    /// Cosine similarity of the query and the tool.
    pub similarity: f32,
    /// The lexical [`relevance`] of the tool (0 when it is not among the top
    /// [`FUSION_DEPTH`] lexical hits).
    pub relevance: f64,
}

/// A lexical index and one unit vector per tool, over a fixed candidate list.
#[derive(Debug)]
pub struct HybridIndex {
    lexical: SearchIndex,
    /// The tool vectors as the weights of a `dim → len` linear layer: one product gives
    /// every similarity.
    vectors: Packed,
    /// Zeros, the layer's bias (one per tool).
    zeros: Vec<f32>,
    dim: usize,
}

impl HybridIndex {
    /// Builds the lexical index and embeds every definition's [`tool_text`].
    ///
    /// # Errors
    /// [`Error::Embedding`] if the model fails.
    pub fn new(defs: &[ToolDefinition], model: &EmbeddingModel) -> Result<Self> {
        let texts: Vec<String> = defs.iter().map(tool_text).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = model.embed(&refs)?;
        Self::from_vectors(defs, &vectors, model.dim())
    }

    /// Builds over precomputed tool vectors (one per definition, each `dim` long, unit
    /// length), for example remembered from an earlier catalog.
    ///
    /// # Errors
    /// [`Error::Embedding`] when the counts or lengths do not match.
    pub fn from_vectors(defs: &[ToolDefinition], vectors: &[Vec<f32>], dim: usize) -> Result<Self> {
        if vectors.len() != defs.len() || vectors.iter().any(|v| v.len() != dim) {
            return Err(Error::Embedding {
                reason: format!(
                    "{} vectors of dimension {dim} expected for {} tools",
                    defs.len(),
                    defs.len()
                ),
            });
        }
        let lexical = SearchIndex::with_tuning(defs, lexical_tuning(Tuning::DEFAULT));
        let Some(packed) = Packed::new(&vectors.concat(), defs.len(), dim.max(1)) else {
            return Err(Error::Embedding {
                reason: format!("vectors of dimension {dim}"),
            });
        };
        Ok(Self {
            lexical,
            vectors: packed,
            zeros: vec![0.0; defs.len()],
            dim,
        })
    }

    /// Number of indexed tools.
    pub fn len(&self) -> usize {
        self.lexical.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.lexical.is_empty()
    }

    /// The lexical index inside.
    pub fn lexical(&self) -> &SearchIndex {
        &self.lexical
    }

    /// Bytes held by the tool vectors (384 f32 per tool for MiniLM, the tool count
    /// padded to a multiple of 16).
    pub fn vector_bytes(&self) -> usize {
        self.vectors.bytes()
    }

    /// Cosine similarity of `query_vector` with every tool, in candidate order.
    pub fn similarities(&self, query_vector: &[f32]) -> Vec<f32> {
        if query_vector.len() != self.dim || self.dim == 0 {
            return vec![0.0; self.len()];
        }
        self.vectors.product(query_vector, &self.zeros)
    }

    /// The best `limit` tools for `query` (whose embedding is `query_vector`), fused
    /// as the [module documentation](self) describes; deterministic. Only
    /// tools in the top [`FUSION_DEPTH`] of either ranking can be hits.
    pub fn search(&self, query: &str, query_vector: &[f32], limit: usize) -> Vec<HybridHit> {
        if limit == 0 || self.is_empty() {
            return Vec::new();
        }
        let n = self.len();
        let similarities = self.similarities(query_vector);
        let by_similarity = |a: &u32, b: &u32| {
            similarities[*b as usize]
                .total_cmp(&similarities[*a as usize])
                .then(a.cmp(b))
        };
        let mut dense: Vec<u32> = (0..u32::try_from(n).unwrap_or(u32::MAX)).collect();
        if dense.len() > FUSION_DEPTH {
            dense.select_nth_unstable_by(FUSION_DEPTH - 1, by_similarity);
            dense.truncate(FUSION_DEPTH);
        }
        dense.sort_unstable_by(by_similarity);
        let lexical = self.lexical.search(query, FUSION_DEPTH);
        // (candidate, fused, relevance) of every tool either list holds.
        let mut fused: Vec<(usize, f64, f64)> = Vec::with_capacity(dense.len() + lexical.len());
        for (rank, &i) in dense.iter().enumerate() {
            fused.push((i as usize, 1.0 / (RRF_K + rank as f64 + 1.0), 0.0));
        }
        for (rank, hit) in lexical.iter().enumerate() {
            let earned = 1.0 / (RRF_K + rank as f64 + 1.0);
            let rel = relevance(hit.score, n);
            match fused.iter_mut().find(|(i, ..)| *i == hit.index) {
                Some(entry) => {
                    entry.1 += earned;
                    entry.2 = rel;
                }
                None => fused.push((hit.index, earned, rel)),
            }
        }
        let mut hits: Vec<HybridHit> = fused
            .into_iter()
            .map(|(index, fused, relevance)| {
                let similarity = similarities[index];
                HybridHit {
                    index,
                    fused,
                    score: f64::from(similarity) + LEXICAL_WEIGHT * relevance.min(RELEVANCE_CAP),
                    similarity,
                    relevance,
                }
            })
            .collect();
        // Two tools the lists rank in swapped places tie exactly; the meaning decides
        // (the similarity), then the mixed score.
        hits.sort_unstable_by(|a, b| {
            b.fused
                .total_cmp(&a.fused)
                .then(b.similarity.total_cmp(&a.similarity))
                .then(b.score.total_cmp(&a.score))
                .then(a.index.cmp(&b.index))
        });
        hits.truncate(limit);
        hits
    }
}

/// One cached candidate set: the candidates (the key, compared by identity; holding
/// them keeps an address from being reused) and their index.
struct CachedIndex {
    tools: Vec<Arc<dyn Tool>>,
    index: HybridIndex,
}

/// The hybrid backend: ranks with [`HybridIndex`] and selects a query's top hit only
/// when its mixed score reaches the threshold (see the [module documentation](self)).
/// Records `metadata.hybrid_search = {min_score, score: [...], similarity: [...],
/// relevance: [...]}` with the top hit's numbers per query.
///
/// Embedding a large catalog the first time takes a while (milliseconds per tool on
/// CPU), and [`discover`](DiscoveryBackend::discover) does it inline: call
/// [`prepare`](Self::prepare) (or `ToolSearchTool::prepare`) from a blocking task at
/// start-up to keep that off the first search.
pub struct HybridDiscoveryBackend {
    model: Arc<EmbeddingModel>,
    min_score: f64,
    cache: Mutex<Vec<Arc<CachedIndex>>>,
    memo: Mutex<HashMap<String, Arc<[f32]>>>,
    disk: Option<VectorCache>,
    embedded: AtomicUsize,
}

impl std::fmt::Debug for HybridDiscoveryBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HybridDiscoveryBackend")
            .field("model", &self.model)
            .field("min_score", &self.min_score)
            .field("disk", &self.disk)
            .finish_non_exhaustive()
    }
}

impl HybridDiscoveryBackend {
    /// A hybrid backend over a loaded model with the default thresholds.
    pub fn new(model: Arc<EmbeddingModel>) -> Self {
        Self {
            model,
            min_score: DEFAULT_MIN_SCORE,
            cache: Mutex::new(Vec::new()),
            memo: Mutex::new(HashMap::new()),
            disk: None,
            embedded: AtomicUsize::new(0),
        }
    }

    /// Keeps tool vectors on disk in `dir` too (a [`VectorCache`] of this model), so the
    /// next process over the same catalog embeds nothing: a tool whose vector is neither
    /// remembered nor on disk is embedded and the file rewritten. A missing, partial or
    /// corrupt file counts as empty; a file that cannot be written only costs the next
    /// start its embeddings (searches never fail for it).
    /// [`DiscoveryConfig::build`](crate::DiscoveryConfig::build) gives the user's cache
    /// (`$XDG_CACHE_HOME/iris/vectors`, else `~/.cache/iris/vectors`).
    #[must_use]
    pub fn with_vector_cache(mut self, dir: impl AsRef<Path>) -> Self {
        self.disk = Some(VectorCache::new(dir, &self.model));
        self
    }

    /// The on-disk vector cache, if any.
    pub fn vector_cache(&self) -> Option<&VectorCache> {
        self.disk.as_ref()
    }

    /// How many tool texts this backend has run through the model (those neither
    /// remembered in memory nor found on disk).
    pub fn embedded_tools(&self) -> usize {
        self.embedded.load(Ordering::Relaxed)
    }

    /// Sets the minimum mixed score a top hit needs to be selected.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a non-finite value.
    pub fn with_min_score(mut self, min_score: f64) -> Result<Self> {
        if !min_score.is_finite() {
            return Err(Error::InvalidConfig {
                field: "min_score".to_owned(),
                reason: format!("must be a finite number, got {min_score}"),
            });
        }
        self.min_score = min_score;
        Ok(self)
    }

    /// The minimum mixed score a top hit needs.
    pub fn min_score(&self) -> f64 {
        self.min_score
    }

    /// How many tool vectors the backend remembers (by text) across catalogs.
    pub fn remembered_vectors(&self) -> usize {
        self.memo
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// The model.
    pub fn model(&self) -> &Arc<EmbeddingModel> {
        &self.model
    }

    /// Builds (or finds) the index over `candidates`, embedding the tools it has not
    /// seen; later searches over the same candidates only embed their query.
    ///
    /// # Errors
    /// [`Error::Embedding`] if the model fails.
    pub fn prepare(&self, candidates: &[Arc<dyn Tool>]) -> Result<()> {
        self.index_for(candidates).map(|_| ())
    }

    /// The top hit for `query` among `candidates` and whether it would be selected.
    ///
    /// # Errors
    /// [`Error::Embedding`] if the model fails.
    pub fn best(
        &self,
        query: &str,
        candidates: &[Arc<dyn Tool>],
    ) -> Result<Option<(HybridHit, bool)>> {
        let index = self.index_for(candidates)?;
        let vector = self.embed_query(query)?;
        Ok(index
            .index
            .search(query, &vector, 1)
            .into_iter()
            .next()
            .map(|hit| (hit, self.selects(&hit))))
    }

    fn selects(&self, hit: &HybridHit) -> bool {
        hit.score >= self.min_score
    }

    fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        Ok(self.model.embed(&[query])?.pop().unwrap_or_default())
    }

    fn index_for(&self, candidates: &[Arc<dyn Tool>]) -> Result<Arc<CachedIndex>> {
        let same = |cached: &CachedIndex| {
            cached.tools.len() == candidates.len()
                && cached
                    .tools
                    .iter()
                    .zip(candidates)
                    .all(|(a, b)| Arc::ptr_eq(a, b))
        };
        {
            let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(at) = cache.iter().position(|c| same(c)) {
                let hit = cache.remove(at);
                cache.insert(0, Arc::clone(&hit));
                return Ok(hit);
            }
        }
        let defs: Vec<ToolDefinition> = candidates.iter().map(|t| t.definition().clone()).collect();
        let vectors = self.vectors_for(&defs)?;
        let built = Arc::new(CachedIndex {
            tools: candidates.to_vec(),
            index: HybridIndex::from_vectors(&defs, &vectors, self.model.dim())?,
        });
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        cache.insert(0, Arc::clone(&built));
        cache.truncate(INDEX_CACHE_SLOTS);
        Ok(built)
    }

    /// Every definition's vector: remembered by text, else read from the disk cache,
    /// else embedded now (outside the lock); what was not remembered is remembered, and
    /// what was embedded is stored on disk.
    fn vectors_for(&self, defs: &[ToolDefinition]) -> Result<Vec<Vec<f32>>> {
        let texts: Vec<String> = defs.iter().map(tool_text).collect();
        let mut out: Vec<Option<Vec<f32>>> = {
            let memo = self.memo.lock().unwrap_or_else(PoisonError::into_inner);
            texts
                .iter()
                .map(|t| memo.get(t).map(|v| v.to_vec()))
                .collect()
        };
        let unremembered: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        if unremembered.is_empty() {
            return Ok(out.into_iter().map(Option::unwrap_or_default).collect());
        }
        let mut stored: HashMap<VectorKey, Vec<f32>> = HashMap::new();
        let mut keys: Vec<VectorKey> = Vec::new();
        let mut missing = unremembered.clone();
        if let Some(disk) = &self.disk {
            stored = disk.load();
            keys = texts.iter().map(|t| disk.key(t)).collect();
            missing.retain(|&i| match stored.get(&keys[i]) {
                Some(v) => {
                    out[i] = Some(v.clone());
                    false
                }
                None => true,
            });
        }
        if !missing.is_empty() {
            let refs: Vec<&str> = missing.iter().map(|&i| texts[i].as_str()).collect();
            let fresh = self.model.embed(&refs)?;
            self.embedded.fetch_add(fresh.len(), Ordering::Relaxed);
            for (&i, vector) in missing.iter().zip(fresh) {
                out[i] = Some(vector);
            }
        }
        {
            let mut memo = self.memo.lock().unwrap_or_else(PoisonError::into_inner);
            if memo.len() + unremembered.len() > VECTOR_MEMO_LIMIT {
                memo.clear();
            }
            for &i in &unremembered {
                if let Some(v) = &out[i] {
                    memo.insert(texts[i].clone(), v.as_slice().into());
                }
            }
        }
        if let Some(disk) = self.disk.as_ref().filter(|_| !missing.is_empty()) {
            // The file keeps earlier catalogs' vectors too, up to a bound.
            if stored.len() + missing.len() > MAX_RECORDS {
                stored.clear();
            }
            for (key, vector) in keys.iter().zip(&out) {
                if let Some(v) = vector {
                    stored.entry(*key).or_insert_with(|| v.clone());
                }
            }
            // A cache that cannot be written costs the next start its embeddings only.
            let _ = disk.store(stored.iter().map(|(k, v)| (k, v.as_slice())));
        }
        Ok(out.into_iter().map(Option::unwrap_or_default).collect())
    }

    fn answer(&self, request: &DiscoveryRequest<'_>) -> Result<DiscoveryAnswer> {
        let count = request.queries.len();
        let mut selections = Vec::with_capacity(count);
        let mut score = Vec::with_capacity(count);
        let mut similarity = Vec::with_capacity(count);
        let mut relevance = Vec::with_capacity(count);
        if request.candidates.is_empty() {
            selections.resize(count, None);
            score.resize(count, Value::Null);
            similarity.resize(count, Value::Null);
            relevance.resize(count, Value::Null);
        } else {
            let index = self.index_for(request.candidates)?;
            let refs: Vec<&str> = request.queries.iter().map(String::as_str).collect();
            let vectors = self.model.embed(&refs)?;
            for (query, vector) in request.queries.iter().zip(&vectors) {
                let top = index.index.search(query, vector, 1).into_iter().next();
                score.push(top.map_or(Value::Null, |h| json!(round3(h.score))));
                similarity
                    .push(top.map_or(Value::Null, |h| json!(round3(f64::from(h.similarity)))));
                relevance.push(top.map_or(Value::Null, |h| json!(round3(h.relevance))));
                selections.push(
                    top.filter(|h| self.selects(h))
                        .and_then(|h| request.candidates.get(h.index))
                        .map(|t| t.definition().name.clone()),
                );
            }
        }
        let mut metadata = Map::new();
        metadata.insert(
            "hybrid_search".to_owned(),
            json!({
                "min_score": self.min_score,
                "score": score,
                "similarity": similarity,
                "relevance": relevance,
            }),
        );
        Ok(DiscoveryAnswer {
            selections,
            metadata,
        })
    }
}

impl DiscoveryBackend for HybridDiscoveryBackend {
    fn name(&self) -> &str {
        "hybrid"
    }

    fn prepare(&self, candidates: &[Arc<dyn Tool>]) -> Result<(), ToolErrorInfo> {
        if candidates.is_empty() {
            return Ok(());
        }
        HybridDiscoveryBackend::prepare(self, candidates).map_err(|e| {
            ToolErrorInfo::new(e.code(), e.to_string()).with_detail("backend", "hybrid")
        })
    }

    fn discover<'a>(
        &'a self,
        request: DiscoveryRequest<'a>,
    ) -> BoxFuture<'a, Result<DiscoveryAnswer, ToolErrorInfo>> {
        let answer = self.answer(&request).map_err(|e| {
            ToolErrorInfo::new(e.code(), e.to_string()).with_detail("backend", "hybrid")
        });
        Box::pin(async move { answer })
    }
}

/// Three decimals are plenty for a host reading why a query matched or not.
fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
