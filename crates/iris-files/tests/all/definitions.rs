//! Definitions: names and keys, capabilities, description rules and
//! schema snapshots.

use std::sync::Arc;

use iris_files::{CATALOG, FileService, builtin_tool, builtin_tools};
use iris_tools_core::{ContextRetention, ToolCapability, ToolRegistry};
use serde_json::Value;

/// A description is exactly three lines (What / When with alternatives / Precondition),
/// 60–200 characters, English (ASCII) only.
fn check_description(name: &str, description: &str) {
    let lines: Vec<&str> = description.lines().collect();
    assert_eq!(lines.len(), 3, "{name}: {description:?}");
    let chars = description.chars().count();
    assert!((60..=200).contains(&chars), "{name}: {chars} chars");
    assert!(description.is_ascii(), "{name}: English only");
    assert!(
        lines.iter().all(|l| !l.trim().is_empty()),
        "{name}: no empty line"
    );
    // The When line names an alternative tool.
    let others = [
        "read_file",
        "list_files",
        "grep_search",
        "write_file",
        "edit_file",
        "publish_artifact",
    ];
    assert!(
        lines[1].starts_with("Use ")
            && (others.iter().any(|o| *o != name && lines[1].contains(o))
                || name == "publish_artifact"),
        "{name}: When line {:?}",
        lines[1]
    );
}

/// Optional fields declare a default; parameters are described, and
/// object/array/enum descriptions have at least 20 characters.
fn check_schema(name: &str, schema: &Value) {
    assert_eq!(schema["type"], "object", "{name}");
    assert_eq!(schema["additionalProperties"], false, "{name}");
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (field, prop) in schema["properties"].as_object().unwrap() {
        let description = prop["description"].as_str().unwrap_or("");
        assert!(
            description.chars().count() >= 20 && description.is_ascii(),
            "{name}.{field}: {description:?}"
        );
        if !required.contains(&field.as_str()) {
            assert!(
                prop.get("default").is_some(),
                "{name}.{field}: optional without default"
            );
        }
    }
}

#[test]
fn every_tool_follows_the_design_rules() {
    for tool in builtin_tools() {
        let def = tool.definition();
        def.validate().unwrap();
        check_description(&def.name, &def.description);
        check_schema(&def.name, &def.input_schema);
    }
}

#[test]
fn keys_names_and_capabilities() {
    let service = Arc::new(FileService::default());
    // (key, name, capability, read_only, concurrency_safe, destructive, retention)
    for (key, name, cap, read_only, concurrent, destructive, retention) in [
        (
            "file.read",
            "read_file",
            ToolCapability::Read,
            true,
            true,
            false,
            ContextRetention::Observation,
        ),
        (
            "file.list",
            "list_files",
            ToolCapability::Read,
            true,
            true,
            false,
            ContextRetention::Observation,
        ),
        (
            "file.grep",
            "grep_search",
            ToolCapability::Read,
            true,
            true,
            false,
            ContextRetention::Observation,
        ),
        (
            "file.write",
            "write_file",
            ToolCapability::Write,
            false,
            false,
            true,
            ContextRetention::Keep,
        ),
        (
            "file.edit",
            "edit_file",
            ToolCapability::Write,
            false,
            false,
            true,
            ContextRetention::Keep,
        ),
        (
            "file.publish",
            "publish_artifact",
            ToolCapability::Write,
            false,
            true,
            true,
            ContextRetention::Keep,
        ),
    ] {
        let line = CATALOG.iter().find(|(k, _, _)| *k == key).unwrap();
        assert_eq!(line.1, name);
        assert_eq!((line.2)(&service).definition().name, name);
        let tool = builtin_tool(key, &service).unwrap();
        let def = tool.definition();
        assert_eq!(def.name, name);
        assert_eq!(
            def.capabilities.iter().copied().collect::<Vec<_>>(),
            vec![cap],
            "{name}"
        );
        assert_eq!(
            (
                tool.is_read_only(),
                tool.is_concurrency_safe(),
                tool.is_destructive()
            ),
            (read_only, concurrent, destructive),
            "{name}"
        );
        assert_eq!(def.context_retention, retention, "{name}");
    }
    assert!(builtin_tool("file.delete", &service).is_none());
    // The catalog lists every tool the service has, in the service's order.
    let names: Vec<String> = builtin_tools()
        .iter()
        .map(|t| t.definition().name.clone())
        .collect();
    let listed: Vec<&str> = CATALOG.iter().map(|(_, name, _)| *name).collect();
    assert_eq!(names, listed);
}

#[test]
fn all_six_register_together() {
    let registry = ToolRegistry::new();
    registry.register_many(builtin_tools()).unwrap();
    assert_eq!(
        registry.names(),
        [
            "read_file",
            "list_files",
            "grep_search",
            "write_file",
            "edit_file",
            "publish_artifact"
        ]
    );
}

#[test]
fn definitions_snapshot() {
    let defs: Vec<Value> = builtin_tools()
        .iter()
        .map(|t| serde_json::to_value(t.definition()).unwrap())
        .collect();
    insta::assert_json_snapshot!("definitions", defs);
}
