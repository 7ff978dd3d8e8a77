//! Helpers shared by the test modules.
#![allow(dead_code)] // Each module uses a different subset of the helpers.

use std::path::{Path, PathBuf};

use iris_skill::{
    LoadSkillTool, SkillDiscoveryOptions, SkillDiscoveryResult, SkillRegistry, discover_skills,
};
use iris_tools_core::{Tool, ToolExecutionContext, ToolInput, ToolOutput};
use serde_json::{Value, json};

/// A fixture workspace under `tests/fixtures/skills/`.
pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/skills")
        .join(name)
}

/// A fixture file under `tests/fixtures/`.
pub(crate) fn fixture_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// Discovery of a workspace with the default options.
pub(crate) fn discover(workspace: &Path) -> SkillDiscoveryResult {
    discover_skills(&SkillDiscoveryOptions::new(workspace)).unwrap()
}

/// A registry over a workspace's default root.
pub(crate) fn registry(workspace: &Path) -> SkillRegistry {
    SkillRegistry::new(discover(workspace))
}

/// `path` relative to `root`, `/`-separated, for snapshots that must not depend on
/// where the repository is checked out.
pub(crate) fn rel(path: &Path, root: &Path) -> String {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    match path.strip_prefix(&root) {
        Ok(rel) => rel.to_string_lossy().replace('\\', "/"),
        Err(_) => format!("<outside>/{}", path.file_name().unwrap().to_string_lossy()),
    }
}

/// A discovery result as JSON with workspace-relative paths.
pub(crate) fn result_view(result: &SkillDiscoveryResult, workspace: &Path) -> Value {
    let skills: Vec<Value> = result
        .skills
        .iter()
        .map(|s| {
            let mut v = serde_json::to_value(s).unwrap();
            v["path"] = json!(rel(&s.path, workspace));
            v
        })
        .collect();
    let diagnostics: Vec<Value> = result
        .diagnostics
        .iter()
        .map(|d| {
            json!({
                "path": rel(&d.path, workspace),
                "skill": d.skill,
                "code": d.code,
                "message": d.message,
            })
        })
        .collect();
    json!({"skills": skills, "diagnostics": diagnostics})
}

/// A temporary workspace to build skill trees in.
pub(crate) struct Workspace {
    pub(crate) dir: tempfile::TempDir,
}

impl Workspace {
    pub(crate) fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file (creating parents) relative to the workspace.
    pub(crate) fn file(&self, rel: &str, content: &str) -> PathBuf {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    /// Writes `.agents/skills/<name>/SKILL.md` with a description and a body.
    pub(crate) fn skill(&self, name: &str, description: &str, body: &str) -> PathBuf {
        self.file(
            &format!(".agents/skills/{name}/SKILL.md"),
            &format!("---\ndescription: {description}\n---\n{body}"),
        )
    }
}

/// A SKILL.md text with a description and a body.
pub(crate) fn skill_text(description: &str, body: &str) -> String {
    format!("---\ndescription: {description}\n---\n{body}")
}

/// Runs `load_skill` through the `Tool` trait, as the executor would.
pub(crate) async fn load(tool: &LoadSkillTool, workspace: &Path, input: Value) -> ToolOutput {
    let ctx = ToolExecutionContext::new(workspace);
    tool.run(ToolInput::new(input), &ctx).await
}
