//! Input schemas of MCP tools: JSON Schema 2020-12 with local `$ref`s only.
//!
//! A server's `inputSchema` is kept as written, with two repairs and three refusals:
//! - a missing root `"type"` becomes `"object"` (MCP says the root is an object; some
//!   servers omit the keyword);
//! - a missing `$schema` stays missing: 2020-12 is the dialect Iris assumes;
//! - a root whose type is not `"object"` is refused;
//! - every `$ref` must be local (`#…`) and must resolve inside the schema; a remote
//!   reference (`https://…`, `other.json#…`) is refused, never fetched;
//! - the schema must compile as a 2020-12 validator.

use serde_json::{Map, Value};

/// Checks and normalizes one tool input schema. The error is a one-line reason.
///
/// ```
/// use serde_json::json;
/// use iris_mcp::schema::normalize_input_schema;
/// let ok = normalize_input_schema(&json!({"properties": {"p": {"$ref": "#/$defs/P"}}, "$defs": {"P": {"type": "string"}}})).unwrap();
/// assert_eq!(ok["type"], "object");
/// let remote = normalize_input_schema(&json!({"type": "object", "properties": {"p": {"$ref": "https://example.com/p.json"}}}));
/// assert!(remote.unwrap_err().contains("remote $ref"));
/// ```
pub fn normalize_input_schema(schema: &Value) -> Result<Value, String> {
    let Value::Object(map) = schema else {
        return Err("inputSchema must be a JSON object".into());
    };
    let mut map: Map<String, Value> = map.clone();
    match map.get("type") {
        None => {
            map.insert("type".into(), Value::String("object".into()));
        }
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(format!(
                "inputSchema root must be of type \"object\", found {other}"
            ));
        }
    }
    let root = Value::Object(map);
    check_refs(&root, &root, "#")?;
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&root)
        .map_err(|e| format!("inputSchema is not a valid 2020-12 schema: {e}"))?;
    Ok(root)
}

/// Checks and compiles a tool's `outputSchema` (the same rules as an input schema:
/// an object root, local `$ref`s only, a valid 2020-12 schema). The error is a
/// one-line reason.
///
/// ```
/// use serde_json::json;
/// use iris_mcp::schema::compile_output_schema;
/// let v = compile_output_schema(&json!({"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]})).unwrap();
/// assert!(v.is_valid(&json!({"sum": 3})) && !v.is_valid(&json!({"sum": "3"})));
/// assert!(compile_output_schema(&json!({"type": "string"})).is_err());
/// ```
pub fn compile_output_schema(schema: &Value) -> Result<jsonschema::Validator, String> {
    let Value::Object(map) = schema else {
        return Err("outputSchema must be a JSON object".into());
    };
    match map.get("type") {
        None => {}
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(format!(
                "outputSchema root must be of type \"object\", found {other}"
            ));
        }
    }
    check_refs(schema, schema, "#")?;
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .map_err(|e| format!("outputSchema is not a valid 2020-12 schema: {e}"))
}

fn check_refs(root: &Value, node: &Value, at: &str) -> Result<(), String> {
    match node {
        Value::Object(map) => {
            for (key, value) in map {
                if key == "$ref" || key == "$dynamicRef" {
                    let Value::String(target) = value else {
                        return Err(format!("{at}/{key} must be a string"));
                    };
                    check_ref(root, target, at)?;
                }
                // Values of `properties`, `$defs` etc. are keyed by user names, but
                // walking them as schemas is exactly right: every nested schema is
                // checked, and `const`/`enum`/`default`/`examples` hold plain data
                // whose `$ref` keys are not references.
                if matches!(key.as_str(), "const" | "enum" | "default" | "examples") {
                    continue;
                }
                check_refs(root, value, &format!("{at}/{key}"))?;
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, v)| check_refs(root, v, &format!("{at}/{i}"))),
        _ => Ok(()),
    }
}

fn check_ref(root: &Value, target: &str, at: &str) -> Result<(), String> {
    let Some(fragment) = target.strip_prefix('#') else {
        return Err(format!(
            "remote $ref `{target}` at {at} is not allowed; only local references (`#/…`) are"
        ));
    };
    if fragment.is_empty() {
        return Ok(());
    }
    if !fragment.starts_with('/') {
        // A plain-name fragment (`#foo`) points at an `$anchor` somewhere in the
        // schema.
        return if has_anchor(root, fragment) {
            Ok(())
        } else {
            Err(format!(
                "$ref `{target}` at {at} names no $anchor in the schema"
            ))
        };
    }
    let pointer = percent_decode(fragment);
    if root.pointer(&pointer).is_some() {
        Ok(())
    } else {
        Err(format!(
            "$ref `{target}` at {at} does not resolve inside the schema"
        ))
    }
}

fn has_anchor(node: &Value, name: &str) -> bool {
    match node {
        Value::Object(map) => {
            map.get("$anchor").and_then(Value::as_str) == Some(name)
                || map.get("$dynamicAnchor").and_then(Value::as_str) == Some(name)
                || map.values().any(|v| has_anchor(v, name))
        }
        Value::Array(items) => items.iter().any(|v| has_anchor(v, name)),
        _ => false,
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let hex = |b: u8| char::from(b).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            // Both digits are below 16, so the byte fits.
            out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'%'));
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
