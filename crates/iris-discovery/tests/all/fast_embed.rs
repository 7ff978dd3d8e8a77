//! The fast embedding path (`EmbeddingModel`: its own BERT forward pass over 8-bit or
//! f32 weights, no attention mask for a batch of one) against the f32 reference
//! (candle's `BertModel`, `tests/reference`): in both weight formats, every fixture tool
//! text and query must embed to nearly the same direction, and the rankings they give
//! must agree.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use iris_discovery::embed::{EmbeddingModel, WeightFormat};
use iris_discovery::hybrid::tool_text;

use crate::eval;

#[path = "../reference/mod.rs"]
mod reference;

use reference::{ReferenceModel, dot};

const CATALOG: &str = include_str!("../fixtures/mcp_catalog.json");
const QUERIES: &str = include_str!("../fixtures/mcp_queries.json");
const UNRELATED: &str = include_str!("../fixtures/mcp_unrelated.json");

/// The lowest cosine allowed between the fast and the reference vector of one text.
const MIN_COSINE: f32 = 0.99;

/// Every text of the fixture: the tools' indexed texts, the queries, the unrelated
/// queries.
fn fixture_texts() -> (Vec<String>, Vec<String>) {
    let tools = eval::load_catalog(CATALOG)
        .unwrap()
        .iter()
        .map(tool_text)
        .collect();
    let mut queries: Vec<String> = eval::load_queries(QUERIES)
        .unwrap()
        .into_iter()
        .map(|q| q.query)
        .collect();
    let unrelated: serde_json::Value = serde_json::from_str(UNRELATED).unwrap();
    let unrelated = unrelated["queries"].as_array().expect("a query list");
    assert!(!unrelated.is_empty());
    queries.extend(
        unrelated
            .iter()
            .map(|q| q.as_str().expect("a query string").to_owned()),
    );
    (tools, queries)
}

/// The fraction of `queries` whose best tool (by cosine) is the same for both models.
fn same_top1(fast: (&[Vec<f32>], &[Vec<f32>]), slow: (&[Vec<f32>], &[Vec<f32>])) -> f64 {
    let best = |tools: &[Vec<f32>], query: &[f32]| {
        (0..tools.len())
            .max_by(|&a, &b| dot(&tools[a], query).total_cmp(&dot(&tools[b], query)))
            .unwrap()
    };
    let agree = fast
        .1
        .iter()
        .zip(slow.1)
        .filter(|(f, s)| best(fast.0, f) == best(slow.0, s))
        .count();
    agree as f64 / fast.1.len() as f64
}

/// Both weight formats are checked on every CPU; [`EmbeddingModel::load`] picks one.
const FORMATS: [WeightFormat; 2] = [WeightFormat::Q8_0, WeightFormat::F32];

#[test]
fn fast_path_matches_the_f32_reference_on_every_fixture_text() {
    let dir = eval::model_dir();
    let slow = ReferenceModel::load(&dir).expect("run .ci/setup: the model loads");
    let (tools, queries) = fixture_texts();
    assert!(tools.len() > 300 && queries.len() > 250);

    // Tool texts the way the hybrid index embeds them: all at once (padded batches,
    // with an attention mask); queries one at a time (no padding, no mask).
    let tool_refs: Vec<&str> = tools.iter().map(String::as_str).collect();
    let slow_tools = slow.embed(&tool_refs).unwrap();
    let slow_queries: Vec<Vec<f32>> = queries
        .iter()
        .map(|q| slow.embed(&[q]).unwrap().pop().unwrap())
        .collect();
    for format in FORMATS {
        let fast = EmbeddingModel::load_with(&dir, format).expect("the model loads");
        assert_eq!(fast.format(), format);
        let fast_tools = fast.embed(&tool_refs).unwrap();
        let fast_queries: Vec<Vec<f32>> = queries
            .iter()
            .map(|q| fast.embed(&[q]).unwrap().pop().unwrap())
            .collect();

        let mut lowest = (f32::MAX, String::new());
        let texts = tools.iter().chain(&queries);
        let fast_all = fast_tools.iter().chain(&fast_queries);
        let slow_all = slow_tools.iter().chain(&slow_queries);
        for ((text, f), s) in texts.zip(fast_all).zip(slow_all) {
            assert_eq!(f.len(), fast.dim());
            assert!((dot(f, f) - 1.0).abs() < 1e-4, "not unit length: {text:?}");
            let cosine = dot(f, s);
            assert!(
                cosine >= MIN_COSINE,
                "{format:?}: cosine {cosine} < {MIN_COSINE} for {text:?}"
            );
            if cosine < lowest.0 {
                lowest = (cosine, text.clone());
            }
        }
        eprintln!(
            "{format:?}: lowest fast/reference cosine: {:.5} ({:?})",
            lowest.0, lowest.1
        );

        // The dense top-1 tool agrees for nearly every query.
        let agree = same_top1((&fast_tools, &fast_queries), (&slow_tools, &slow_queries));
        assert!(
            agree >= 0.95,
            "{format:?}: dense top-1 agrees on only {agree:.3}"
        );
    }
}

/// `load` takes the format this CPU runs faster, and the variant names the format (a
/// vector cache keys by it).
#[test]
fn load_picks_the_format_for_this_cpu_and_names_it() {
    let dir = eval::model_dir();
    let auto = EmbeddingModel::load(&dir).expect("run .ci/setup: the model loads");
    assert_eq!(auto.format(), WeightFormat::for_this_cpu());
    assert_eq!(auto.variant(), auto.format().name());
    let names: Vec<&str> = FORMATS.iter().map(|f| f.name()).collect();
    assert_eq!(names, ["q8_0", "f32"]);
    let f32 = EmbeddingModel::load_with(&dir, WeightFormat::F32).unwrap();
    assert_eq!(f32.variant(), "f32");
    assert!(format!("{f32:?}").contains("F32"));
}

#[test]
fn a_text_embeds_alike_alone_and_padded_in_a_batch() {
    for format in FORMATS {
        embeds_alike_alone_and_batched(format);
    }
}

fn embeds_alike_alone_and_batched(format: WeightFormat) {
    let fast = EmbeddingModel::load_with(eval::model_dir(), format)
        .expect("run .ci/setup: the model loads");
    let texts = [
        "list open pull requests",
        "create a calendar event for tomorrow at noon with the whole team",
        "a",
        "",
    ];
    let batched = fast.embed(&texts).unwrap();
    for (text, batched) in texts.iter().zip(&batched) {
        let alone = fast.embed(&[text]).unwrap().pop().unwrap();
        let cosine = dot(&alone, batched);
        assert!(cosine > 0.9999, "{text:?}: {cosine}");
    }
    // Two different texts of the same length share a batch without padding (no mask
    // at all): each embeds as it does alone.
    let reference = ReferenceModel::load(&eval::model_dir()).expect("the reference loads");
    let even = ["open the door", "close the window"];
    assert_eq!(
        reference.tokenize(even[0]).unwrap().len(),
        reference.tokenize(even[1]).unwrap().len(),
        "the two texts must have as many word pieces"
    );
    let together = fast.embed(&even).unwrap();
    for (text, batched) in even.iter().zip(&together) {
        let alone = fast.embed(&[text]).unwrap().pop().unwrap();
        assert!(dot(&alone, batched) > 0.9999, "{text:?}");
    }
    assert!(
        dot(&together[0], &together[1]) < 0.99,
        "two texts, two directions"
    );
}
