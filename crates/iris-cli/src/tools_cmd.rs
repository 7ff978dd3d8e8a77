//! `iris tools`: the agent's tools as a table or JSON.

#[allow(clippy::wildcard_imports)] // The shell's shared types and imports.
use crate::*;

/// `value` escaped for one table cell or message, owned.
pub(crate) fn cell(value: &str) -> String {
    escape(value, Mode::Line).into_owned()
}

pub(crate) fn tools(cli: &Cli, env: &ToolEnvironment, all: bool) -> Result<u8, Failure> {
    let view = env.registry.view(ViewFilter::default().include_system(all));
    let rows: Vec<Value> = view
        .available_tools()
        .iter()
        .map(|tool| {
            let def = tool.definition();
            json!({
                "name": def.name,
                "group": def.group,
                "capabilities": def.capabilities,
                "deferred": def.deferred,
                "system": def.system_use,
            })
        })
        .collect();
    if cli.json {
        print_json(&json!({"tools": rows}));
        return Ok(0);
    }
    let rows: Vec<[String; 4]> = rows
        .iter()
        .map(|row| {
            let caps: Vec<&str> = row["capabilities"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let caps = if caps.is_empty() {
                "-".to_owned()
            } else {
                caps.join(",")
            };
            [
                cell(row["name"].as_str().unwrap_or_default()),
                cell(row["group"].as_str().unwrap_or_default()),
                cell(&caps),
                (if row["deferred"] == true { "yes" } else { "no" }).to_owned(),
            ]
        })
        .collect();
    // The name column fits the longest name (MCP names are long), at least 20 wide.
    let width = rows
        .iter()
        .map(|r| r[0].chars().count())
        .max()
        .unwrap_or(0)
        .max(20);
    line(&format!(
        "{:<width$} {:<10} {:<24} DEFERRED",
        "NAME", "GROUP", "CAPABILITIES"
    ));
    for [name, group, caps, deferred] in &rows {
        line(&format!("{name:<width$} {group:<10} {caps:<24} {deferred}"));
    }
    Ok(0)
}
