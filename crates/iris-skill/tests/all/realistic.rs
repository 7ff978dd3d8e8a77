//! Real-world skills (a PDF skill; a changelog skill with scripts/, references/ and
//! assets/) round-trip unchanged: metadata as written, body byte-for-byte.

use iris_skill::LoadSkillTool;
use serde_json::json;

use crate::support::{Workspace, discover, fixture, load, registry, result_view};

/// The body of a SKILL.md as an independent reader sees it: everything after the
/// closing `---` line, without leading blank lines and trailing whitespace.
fn body_of(text: &str) -> &str {
    let after_open = text.strip_prefix("---\n").unwrap();
    let close = after_open.find("\n---\n").unwrap();
    after_open[close + "\n---\n".len()..]
        .trim_start_matches('\n')
        .trim_end()
}

#[test]
fn realistic_metadata_snapshot() {
    let ws = fixture("realistic");
    let result = discover(&ws);
    assert!(result.diagnostics.is_empty(), "{:?}", result.diagnostics);
    insta::assert_json_snapshot!(result_view(&result, &ws));
}

#[test]
fn realistic_catalog_snapshot() {
    insta::assert_snapshot!(registry(&fixture("realistic")).catalog().to_text());
}

#[tokio::test]
async fn realistic_bodies_round_trip() {
    let ws = fixture("realistic");
    let tool = LoadSkillTool::new(registry(&ws));
    for name in ["pdf", "changelog"] {
        let text =
            std::fs::read_to_string(ws.join(format!(".agents/skills/{name}/SKILL.md"))).unwrap();
        let loaded = tool.load(name).unwrap();
        assert_eq!(loaded.body, body_of(&text), "{name}");
        let result = load(&tool, &ws, json!({"name": name})).await;
        assert!(result.model_content().contains(body_of(&text)), "{name}");
    }
}

#[tokio::test]
async fn realistic_load_snapshots() {
    let ws = fixture("realistic");
    let tool = LoadSkillTool::new(registry(&ws));
    for name in ["pdf", "changelog"] {
        let result = load(&tool, &ws, json!({"name": name})).await;
        insta::assert_snapshot!(format!("load_{name}"), result.model_content());
        insta::assert_json_snapshot!(format!("load_{name}_data"), result.data);
    }
}

/// Copying the files byte-for-byte into another workspace discovers the same skills:
/// nothing depends on where the folder lives.
#[test]
fn realistic_skills_survive_a_copy() {
    let src = fixture("realistic");
    let ws = Workspace::new();
    for entry in walk(&src.join(".agents")) {
        let rel = entry.strip_prefix(&src).unwrap();
        let dest = ws.path().join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &dest).unwrap();
    }
    assert_eq!(
        result_view(&discover(ws.path()), ws.path()),
        result_view(&discover(&src), &src)
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
