//! Tests for the `embed` feature: the embedding model on CPU, the hybrid index and the
//! hybrid backend, over a small catalog (the heavy evaluation lives in the bench).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, OnceLock};

use iris_discovery::embed::EmbeddingModel;
use iris_discovery::hybrid::{DEFAULT_MIN_SCORE, HybridIndex, tool_text};
use iris_discovery::{
    DiscoveryBackend, DiscoveryRequest, HybridDiscoveryBackend, ToolSearchInput, ToolSearchTool,
};
use iris_tools_core::{FnTool, Tool, ToolDefinition, ToolOutput, ToolRegistry, ViewFilter};
use serde_json::json;

use crate::eval;

/// The model, loaded once for every test of this module.
pub(crate) fn model() -> Arc<EmbeddingModel> {
    static MODEL: OnceLock<Arc<EmbeddingModel>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            Arc::new(
                EmbeddingModel::load(eval::model_dir()).expect("run .ci/setup: the model loads"),
            )
        })
        .clone()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn tool(name: &str, description: &str) -> ToolDefinition {
    ToolDefinition::new(name, description, json!({"type": "object"}))
        .with_group(name.split("__").nth(1).unwrap_or("core"))
        .with_deferred(true)
}

/// Eight tools of four servers; their descriptions share few words with the queries
/// below, so the dense half of the ranking has to carry them.
pub(crate) fn catalog() -> Vec<ToolDefinition> {
    vec![
        tool(
            "mcp__notes__create_note",
            "Store a new memo in the notebook.",
        ),
        tool(
            "mcp__notes__search_notes",
            "Full-text search over notebook memos.",
        ),
        tool(
            "mcp__weather__get_forecast",
            "Meteorological outlook for a place for the coming days.",
        ),
        tool(
            "mcp__weather__get_alerts",
            "Active severe-weather warnings for a region.",
        ),
        tool(
            "mcp__music__play_track",
            "Start playback of a song on the speaker.",
        ),
        tool("mcp__music__pause", "Pause the current playback."),
        tool(
            "mcp__bank__transfer_funds",
            "Move money between two accounts.",
        ),
        tool(
            "mcp__bank__get_balance",
            "Current amount available in an account.",
        ),
    ]
}

#[test]
fn embeddings_are_unit_vectors_that_follow_meaning() {
    let model = model();
    assert_eq!(model.dim(), 384);
    let texts = [
        "Will it rain in Paris tomorrow?",
        "What is the weather forecast for Paris?",
        "Transfer 50 euros to my savings account",
        "",
    ];
    let vectors = model.embed(&texts).unwrap();
    assert_eq!(vectors.len(), texts.len());
    for v in &vectors {
        assert_eq!(v.len(), 384);
        assert!((dot(v, v) - 1.0).abs() < 1e-4);
    }
    let same = dot(&vectors[0], &vectors[1]);
    let other = dot(&vectors[0], &vectors[2]);
    assert!(
        same > 0.5 && same > other + 0.3,
        "rain/forecast {same} vs rain/transfer {other}"
    );
    // Batching (texts of different lengths padded together) changes nothing: each text
    // alone embeds to the same vector.
    for (text, batched) in texts.iter().zip(&vectors) {
        let alone = model.embed(&[text]).unwrap().pop().unwrap();
        assert!(dot(&alone, batched) > 0.9999, "{text:?}");
    }
    assert!(model.embed(&[]).unwrap().is_empty());
}

#[test]
fn long_texts_are_truncated_not_refused() {
    let long = "weather ".repeat(5_000);
    let v = model().embed(&[long.as_str()]).unwrap();
    assert_eq!(v[0].len(), 384);
}

/// The "no tool" evidence of every hit is its similarity plus the weighted, capped
/// lexical relevance, and a strong name match counts even where the similarity is low.
#[test]
fn mixed_score_weighs_capped_relevance_into_the_similarity() {
    use iris_discovery::hybrid::{LEXICAL_WEIGHT, RELEVANCE_CAP};
    let model = model();
    let defs = catalog();
    let index = HybridIndex::new(&defs, &model).unwrap();
    for query in [
        "call get_alerts for Paris",
        "how much money is in my account",
        "knit a wool scarf",
    ] {
        let v = model.embed(&[query]).unwrap().pop().unwrap();
        let hits = index.search(query, &v, defs.len());
        assert!(!hits.is_empty(), "{query:?}");
        for hit in &hits {
            let expect =
                f64::from(hit.similarity) + LEXICAL_WEIGHT * hit.relevance.min(RELEVANCE_CAP);
            assert!((hit.score - expect).abs() < 1e-12, "{query:?} {hit:?}");
        }
    }
    // A tool named outright has a relevance past the cap: the lexical part of its
    // evidence is the whole capped weight, and the tool is selected.
    let v = model.embed(&["get_alerts"]).unwrap().pop().unwrap();
    let top = index.search("get_alerts", &v, 1)[0];
    assert_eq!(defs[top.index].name, "mcp__weather__get_alerts");
    assert!(top.relevance > RELEVANCE_CAP, "{top:?}");
    assert!(top.score >= DEFAULT_MIN_SCORE, "{top:?}");
}

#[test]
fn hybrid_index_finds_paraphrases_the_lexical_ranking_misses() {
    let model = model();
    let defs = catalog();
    let index = HybridIndex::new(&defs, &model).unwrap();
    assert_eq!(index.len(), defs.len());
    // 384 f32 per tool, the tools padded to a whole panel of 16.
    assert_eq!(
        index.vector_bytes(),
        defs.len().next_multiple_of(16) * 384 * 4
    );
    let top = |query: &str| {
        let v = model.embed(&[query]).unwrap().pop().unwrap();
        let hits = index.search(query, &v, 3);
        assert!(hits.windows(2).all(|w| w[0].fused >= w[1].fused));
        defs[hits[0].index].name.clone()
    };
    // Only function words ("it", "in") are shared with the catalog: the lexical
    // ranking alone does not find the forecast.
    let lexical = index.lexical().search("will it rain in Paris tomorrow", 1);
    assert!(
        lexical
            .first()
            .is_none_or(|h| defs[h.index].name != "mcp__weather__get_forecast")
    );
    assert_eq!(
        top("will it rain in Paris tomorrow"),
        "mcp__weather__get_forecast"
    );
    assert_eq!(
        top("how much cash do I have left"),
        "mcp__bank__get_balance"
    );
    assert_eq!(top("put on some jazz"), "mcp__music__play_track");
    assert_eq!(top("send 20 dollars to Alice"), "mcp__bank__transfer_funds");
    // A name spelled out still wins.
    assert_eq!(top("call get_alerts for Paris"), "mcp__weather__get_alerts");
    // Wrong vector sizes are refused, not mis-indexed.
    let err = HybridIndex::from_vectors(&defs, &[vec![0.0; 384]], 384).unwrap_err();
    assert_eq!(err.code(), "EMBEDDING_FAILED");
}

pub(crate) fn candidates(defs: &[ToolDefinition]) -> Vec<Arc<dyn Tool>> {
    defs.iter()
        .map(|d| {
            Arc::new(FnTool::new(d.clone(), |_, _| async {
                ToolOutput::text("ok")
            })) as Arc<dyn Tool>
        })
        .collect()
}

#[tokio::test]
async fn hybrid_backend_selects_on_evidence_and_caches_tool_vectors() {
    let backend = HybridDiscoveryBackend::new(model());
    assert_eq!(backend.min_score(), DEFAULT_MIN_SCORE);
    assert!(
        HybridDiscoveryBackend::new(model())
            .with_min_score(f64::NAN)
            .is_err()
    );
    let defs = catalog();
    let tools = candidates(&defs);
    backend.prepare(&tools).unwrap();
    assert_eq!(backend.remembered_vectors(), defs.len());

    let queries: Vec<String> = [
        "any storm warnings near me",
        "knit a wool scarf",
        "how much money is in my account",
        "will it rain in Paris tomorrow",
    ]
    .map(str::to_owned)
    .to_vec();
    let answer = backend
        .discover(DiscoveryRequest {
            queries: &queries,
            candidates: &tools,
        })
        .await
        .unwrap();
    // The last query is a pure paraphrase (cosine ≈ 0.4, no word in common): ranked
    // right (see above), and above the threshold, which refuses at most 1 % of real
    // intents; the knitting request has nothing near it.
    let some = |name: &str| Some(name.to_owned());
    assert_eq!(
        answer.selections,
        [
            some("mcp__weather__get_alerts"),
            None,
            some("mcp__bank__get_balance"),
            some("mcp__weather__get_forecast"),
        ]
    );
    let meta = &answer.metadata["hybrid_search"];
    assert_eq!(meta["min_score"], DEFAULT_MIN_SCORE);
    let scores: Vec<f64> = meta["score"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_f64().unwrap())
        .collect();
    assert!(
        scores[0] >= DEFAULT_MIN_SCORE
            && scores[1] < DEFAULT_MIN_SCORE
            && scores[3] >= DEFAULT_MIN_SCORE
            && scores[3] < 0.49,
        "{scores:?}"
    );
    assert_eq!(meta["similarity"].as_array().unwrap().len(), 4);
    // A host that prefers "no tool" to a weak hit raises the threshold (0.49 was the
    // earlier default, calibrated for "no tool" precision).
    let strict = HybridDiscoveryBackend::new(model())
        .with_min_score(0.49)
        .unwrap();
    let answer = strict
        .discover(DiscoveryRequest {
            queries: &queries,
            candidates: &tools,
        })
        .await
        .unwrap();
    assert_eq!(answer.selections[3], None);
    assert_eq!(answer.selections[0], some("mcp__weather__get_alerts"));

    // A sub-catalog (another candidate set) reuses the remembered vectors: nothing new
    // is embedded, yet its own ranking is right.
    let sub = candidates(&defs[2..6]);
    let best = backend
        .best("any storm warnings near me", &sub)
        .unwrap()
        .unwrap();
    assert_eq!(
        sub[best.0.index].definition().name,
        "mcp__weather__get_alerts"
    );
    assert!(best.1);
    assert_eq!(backend.remembered_vectors(), defs.len());
    // An edited description is a new text: embedded once more.
    let mut edited = defs.clone();
    edited[0].description = "Write a memo into the notebook.".to_owned();
    backend.prepare(&candidates(&edited)).unwrap();
    assert_eq!(backend.remembered_vectors(), defs.len() + 1);

    // No candidates: every query gets null.
    let empty = backend
        .discover(DiscoveryRequest {
            queries: &queries,
            candidates: &[],
        })
        .await
        .unwrap();
    assert_eq!(empty.selections, [None, None, None, None]);
}

#[tokio::test]
async fn tool_search_runs_on_the_hybrid_backend() {
    let registry = ToolRegistry::new();
    for d in catalog() {
        registry
            .register(FnTool::new(d, |_, _| async { ToolOutput::text("ok") }))
            .unwrap();
    }
    let view = registry.view(ViewFilter::default());
    let backend = Arc::new(HybridDiscoveryBackend::new(model()));
    let search = ToolSearchTool::with_backend(view, backend.clone());
    assert_eq!(search.backend_name(), "hybrid");
    // Warming up embeds the catalog once, before the first search.
    assert_eq!(backend.remembered_vectors(), 0);
    search.prepare().unwrap();
    assert_eq!(backend.remembered_vectors(), catalog().len());
    let found = search
        .search(&ToolSearchInput::new([
            "how much money is in my account",
            "tell me a joke",
        ]))
        .await
        .unwrap();
    let selected: Vec<Option<&str>> = found
        .output
        .selections
        .iter()
        .map(|s| s.tool.as_deref())
        .collect();
    assert_eq!(selected, [Some("mcp__bank__get_balance"), None]);
    assert_eq!(found.metadata["discovery"]["backend"], "hybrid");
    assert!(found.metadata["hybrid_search"]["score"].is_array());
}

#[test]
fn tool_text_reads_names_descriptions_and_arguments() {
    let def = ToolDefinition::new(
        "mcp__github__listPullRequests",
        "  List PRs. ",
        json!({"type": "object", "properties": {"repo_name": {}, "perPage": {}}}),
    );
    assert_eq!(
        tool_text(&def),
        "list pull requests: List PRs. Arguments: per page, repo name."
    );
}
