//! Iris definitions and results in MCP's shapes: a registry tool as an MCP `Tool`
//! (schema, annotations from capabilities), a `ToolResult` as a `CallToolResult`.

use std::sync::Arc;

use iris_tools_core::{ContentBlock, Tool, ToolCapability, ToolResult};
use rmcp::model::{self, CallToolResult, MetaObject, ToolAnnotations};
use serde_json::{Map, Value, json};

/// The `_meta` key of a listed tool: its Iris group, capabilities and whether it is
/// deferred.
pub(crate) const TOOL_META: &str = "iris/tool";
/// The `_meta` key of a call result: the error's code and details, the artifact,
/// whether a human approved it.
pub(crate) const RESULT_META: &str = "iris/result";

/// A registry tool as MCP lists it: name, description, input schema, and the hints
/// its declared capabilities justify.
///
/// - `readOnlyHint`: [`Tool::is_read_only`] (no write, execute, network, MCP or agent
///   capability; a proxied MCP tool only when trusted read-only).
/// - `destructiveHint`: [`Tool::is_destructive`] (write or execute), when not read-only.
/// - `idempotentHint`: the definition's `idempotent`, or read-only.
/// - `openWorldHint`: declares `network` or `mcp`.
pub(crate) fn mcp_tool(tool: &dyn Tool) -> model::Tool {
    let def = tool.definition();
    let read_only = tool.is_read_only();
    let mut annotations = ToolAnnotations::new()
        .read_only(read_only)
        .idempotent(read_only || def.idempotent)
        .open_world(def.has(ToolCapability::Network) || def.has(ToolCapability::Mcp));
    if !read_only {
        annotations = annotations.destructive(tool.is_destructive());
    }
    // Definitions are validated when registered: the root of the schema is an object.
    let schema = match &def.input_schema {
        Value::Object(map) => map.clone(),
        _ => Map::from_iter([("type".to_owned(), json!("object"))]),
    };
    let capabilities: Vec<&str> = def.capabilities.iter().map(|c| c.as_str()).collect();
    let meta = Map::from_iter([(
        TOOL_META.to_owned(),
        json!({"group": def.group, "capabilities": capabilities, "deferred": def.deferred}),
    )]);
    model::Tool::new_with_raw(
        def.name.clone(),
        Some(def.description.clone().into()),
        Arc::new(schema),
    )
    .with_annotations(annotations)
    .with_meta(MetaObject(meta))
}

/// A finished call as an MCP result: the content is exactly what Iris shows the
/// model ([`ToolResult::model_blocks`]: an error as `Error[CODE]: message`, a long
/// body as its preview plus the artifact reference), `isError` when the call failed
/// or was not approved, and `_meta["iris/result"]` with the typed facts: `code`,
/// `message`, `retryable` and `details` of an error, the `artifact` (path, MIME type,
/// size, the saved text's path), `approved`.
pub(crate) fn call_result(result: &ToolResult) -> CallToolResult {
    let content = result
        .model_blocks()
        .into_iter()
        .map(|block| match block {
            ContentBlock::Text { text } => model::ContentBlock::text(text),
            ContentBlock::Image { mime_type, data } => model::ContentBlock::image(data, mime_type),
            // A block kind newer than this code: its JSON, rather than nothing.
            other => model::ContentBlock::text(serde_json::to_string(&other).unwrap_or_default()),
        })
        .collect();
    let mut call = if result.is_error() {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    let mut facts = Map::new();
    facts.insert("tool_name".into(), json!(result.tool_name));
    if let Some(code) = result.error_code() {
        facts.insert("code".into(), json!(code));
    }
    if let Some(info) = result.output.error_info() {
        facts.insert("message".into(), json!(info.message));
        facts.insert("retryable".into(), json!(info.retryable));
        if !info.details.is_empty() {
            facts.insert("details".into(), Value::Object(info.details.clone()));
        }
    }
    if let Some(artifact) = &result.output.artifact {
        facts.insert(
            "artifact".into(),
            json!({
                "path": artifact.path,
                "mime_type": artifact.mime_type,
                "size_bytes": artifact.size_bytes,
                "text_path": artifact.text_path,
            }),
        );
    }
    if result.approved {
        facts.insert("approved".into(), json!(true));
    }
    call.meta = Some(MetaObject(Map::from_iter([(
        RESULT_META.to_owned(),
        Value::Object(facts),
    )])));
    call
}

#[cfg(test)]
mod tests {
    use iris_tools_core::{FnTool, ToolDefinition, ToolErrorInfo, ToolOutput};

    use super::*;

    fn tool(caps: &[ToolCapability]) -> impl Tool {
        FnTool::new(
            ToolDefinition::new("t", "A test tool.", json!({"type": "object"}))
                .with_capabilities(caps.iter().copied()),
            |_, _| async { ToolOutput::text("") },
        )
    }

    fn hints(caps: &[ToolCapability]) -> Value {
        let listed = serde_json::to_value(mcp_tool(&tool(caps))).unwrap_or_default();
        listed["annotations"].clone()
    }

    #[test]
    fn annotations_follow_capabilities() {
        use ToolCapability as C;
        let check = |caps: &[C], expect: Value| assert_eq!(hints(caps), expect, "{caps:?}");
        check(
            &[C::Read],
            json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}),
        );
        check(
            &[C::Read, C::Write],
            json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false}),
        );
        check(
            &[C::Network],
            json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": true}),
        );
        check(
            &[C::Execute],
            json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false}),
        );
    }

    #[test]
    fn an_error_keeps_its_code_in_text_and_meta() {
        let output = ToolOutput::error(
            ToolErrorInfo::new("SOME_CODE", "it broke").with_detail("path", "a.txt"),
        );
        let result = call_result(&output.into_result("c1", "t"));
        let value = serde_json::to_value(&result).unwrap_or_default();
        assert_eq!(value["isError"], true);
        assert_eq!(value["content"][0]["text"], "Error[SOME_CODE]: it broke");
        assert_eq!(value["_meta"][RESULT_META]["code"], "SOME_CODE");
        assert_eq!(value["_meta"][RESULT_META]["details"]["path"], "a.txt");
    }
}
