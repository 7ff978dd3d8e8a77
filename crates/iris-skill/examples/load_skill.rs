//! Lists the skills of a workspace and loads one through the executor, the way a model
//! would: `cargo run -p iris-skill --example load_skill [WORKSPACE]`.
//!
//! Without an argument it uses the realistic fixture workspace of this crate (a PDF skill
//! and a changelog skill with scripts/ and references/).

use std::path::PathBuf;
use std::sync::Arc;

use iris_executor::ToolExecutor;
use iris_skill::{LoadSkillTool, SkillDiscoveryOptions, SkillRegistry, discover_skills};
use iris_tools_core::{ToolExecutionContext, ToolRegistry, ToolUse};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workspace = std::env::args().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/skills/realistic"),
        PathBuf::from,
    );
    let discovered = discover_skills(&SkillDiscoveryOptions::new(&workspace))?;
    for diagnostic in &discovered.diagnostics {
        eprintln!("diagnostic: {diagnostic:?}");
    }
    let skills = Arc::new(SkillRegistry::new(discovered));

    println!("The catalog the model sees ({} skills):", skills.len());
    println!("{}", skills.catalog().to_text());

    let registry = ToolRegistry::new();
    registry.register(LoadSkillTool::new(Arc::clone(&skills)))?;
    let executor = ToolExecutor::new(registry);
    let ctx = ToolExecutionContext::new(&workspace).session_id("skills-demo");

    let first = skills.names().first().cloned().unwrap_or_default();
    for (id, name) in [("call_1", first), ("call_2", "changelogs")] {
        println!("\nload_skill {{\"name\": \"{name}\"}}");
        let result = executor
            .execute_one(
                &ToolUse::new(id, "load_skill", json!({"name": name})),
                &ctx,
                None,
            )
            .await;
        let text = result.model_content();
        let shown: String = text.lines().take(12).collect::<Vec<_>>().join("\n");
        println!("{shown}");
        if text.lines().count() > 12 {
            println!("… ({} more lines)", text.lines().count() - 12);
        }
    }
    Ok(())
}
