//! `iris lint`: the tool-design lint over the agent's tools.

#[allow(clippy::wildcard_imports)] // The shell's shared types and imports.
use crate::*;

pub(crate) fn lint(cli: &Cli, env: &ToolEnvironment) -> Result<u8, Failure> {
    let findings: Vec<_> = env
        .registry
        .tools()
        .iter()
        .flat_map(|tool| lint_definition(tool.definition()))
        .collect();
    if cli.json {
        print_json(&json!({"findings": findings}));
    } else if findings.is_empty() {
        line(&format!(
            "ok: {} tools follow the tool-design rules",
            env.registry.len()
        ));
    } else {
        for finding in &findings {
            line(&finding.to_string());
        }
    }
    Ok(if findings.is_empty() { 0 } else { 1 })
}
