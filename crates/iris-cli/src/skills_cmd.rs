//! `iris skills`: the discovered skills.

#[allow(clippy::wildcard_imports)] // The shell's shared types and imports.
use crate::*;

pub(crate) fn skills(cli: &Cli, env: &ToolEnvironment) -> Result<u8, Failure> {
    let Some(skills) = &env.skills else {
        if cli.json {
            print_json(&json!({"enabled": false, "skills": [], "diagnostics": []}));
        } else {
            line("skills are disabled (set skills.enabled: true)");
        }
        return Ok(0);
    };
    let diagnostics: Vec<String> = skills
        .diagnostics()
        .iter()
        .map(ToString::to_string)
        .collect();
    if cli.json {
        print_json(&json!({
            "enabled": true,
            "skills": skills.catalog().to_json(),
            "diagnostics": diagnostics,
        }));
        return Ok(0);
    }
    // Names and descriptions come from SKILL.md files in the workspace.
    for skill in skills.iter() {
        line(&format!(
            "{:<24} {}",
            cell(&skill.name),
            cell(&skill.description)
        ));
    }
    for diagnostic in &diagnostics {
        line(&format!("warning: {diagnostic}"));
    }
    Ok(0)
}
