//! The hybrid backend's tool vectors on disk (`vectors::VectorCache`): a second start
//! over the same catalog embeds nothing, a changed description is embedded again, and a
//! broken file is ignored and rewritten. Each "start" is a new backend (nothing in
//! memory) over the same folder, as a new process would be.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use iris_discovery::HybridDiscoveryBackend;
use iris_discovery::vectors::VectorCache;
use iris_tools_core::{Tool, ToolDefinition};

use crate::hybrid::{candidates, catalog, model};

/// A fresh backend over `dir`, prepared for `defs`: how many tools it embedded, and the
/// top hit of a query that needs the dense ranking.
fn start(dir: &Path, defs: &[ToolDefinition]) -> (usize, String) {
    let backend = HybridDiscoveryBackend::new(model()).with_vector_cache(dir);
    let tools: Vec<Arc<dyn Tool>> = candidates(defs);
    backend.prepare(&tools).unwrap();
    let (hit, _) = backend
        .best("will it rain in Paris tomorrow", &tools)
        .unwrap()
        .unwrap();
    (
        backend.embedded_tools(),
        tools[hit.index].definition().name.clone(),
    )
}

#[test]
fn a_second_start_embeds_nothing_and_a_changed_tool_is_embedded_again() {
    let dir = tempfile::tempdir().unwrap();
    let defs = catalog();
    let (embedded, first) = start(dir.path(), &defs);
    assert_eq!(embedded, defs.len());
    assert_eq!(first, "mcp__weather__get_forecast");
    let file = VectorCache::new(dir.path(), &model()).path().to_owned();
    assert_eq!(
        file.file_name().unwrap().to_str().unwrap(),
        format!("{}.vectors", model().identity())
    );
    assert!(file.is_file());

    // The next process: every vector comes from disk, the ranking is the same.
    assert_eq!(start(dir.path(), &defs), (0, first.clone()));

    // One description changed: that tool alone is embedded.
    let mut changed = defs.clone();
    changed[1].description = "Find memos in the notebook by words they contain.".into();
    assert_eq!(start(dir.path(), &changed).0, 1);
    // Both versions are kept: the original catalog still embeds nothing.
    assert_eq!(start(dir.path(), &defs).0, 0);
    assert_eq!(start(dir.path(), &changed).0, 0);
}

#[test]
fn a_broken_cache_file_is_ignored_and_rewritten() {
    let defs = catalog();
    let dir = tempfile::tempdir().unwrap();
    start(dir.path(), &defs);
    let file = VectorCache::new(dir.path(), &model()).path().to_owned();
    let whole = std::fs::read(&file).unwrap();
    let mut flipped = whole.clone();
    flipped[40] ^= 1;
    for broken in [
        whole[..whole.len() / 2].to_vec(), // cut off mid-write
        flipped,                           // one bit changed
        b"not a vector file".to_vec(),
        Vec::new(),
    ] {
        std::fs::write(&file, &broken).unwrap();
        assert_eq!(
            start(dir.path(), &defs).0,
            defs.len(),
            "{} bytes",
            broken.len()
        );
        assert_eq!(std::fs::read(&file).unwrap().len(), whole.len());
        assert_eq!(start(dir.path(), &defs).0, 0);
    }
    // No temporary file is left beside it.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn vectors_of_another_model_or_dimension_are_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let defs = catalog();
    start(dir.path(), &defs);
    let ours = VectorCache::new(dir.path(), &model());
    let stored = ours.load();
    assert_eq!(stored.len(), defs.len());
    // The same file read as a cache of another dimension is refused whole.
    let other_dim = VectorCache::for_identity(dir.path(), model().identity(), 128);
    assert!(other_dim.load().is_empty());
    // Another model's identity names another file and other keys.
    let other = VectorCache::for_identity(dir.path(), &"0".repeat(64), model().dim());
    assert_ne!(other.path(), ours.path());
    assert!(other.load().is_empty());
    assert_ne!(other.key("same text"), ours.key("same text"));
    // Vectors come back bit for bit.
    let text = iris_discovery::hybrid::tool_text(&defs[0]);
    let embedded = model().embed(&[&text]).unwrap().pop().unwrap();
    assert_eq!(stored[&ours.key(&text)], embedded);
}
