//! [`TypedCore`]: the parse rules shared by every typed tool, and the preset slots.

use std::collections::HashSet;
use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::definition::ToolDefinition;
use crate::error::{Error, Result, ToolErrorInfo, codes};
use crate::tool::{ToolInput, ToolTimeoutOwner};

#[cfg(doc)]
use super::TypedTool;

/// Checks a preset value against a concrete parameter type (the macro records one
/// per `#[preset]` parameter).
pub(super) type PresetCheck = fn(&Value) -> std::result::Result<(), String>;

/// The error names the type and the value's JSON kind only: serde's message quotes the
/// value, and a preset is often a host secret.
pub(super) fn check_as<T: DeserializeOwned>(value: &Value) -> std::result::Result<(), String> {
    T::deserialize(value).map(drop).map_err(|_| {
        let kind = json_kind(value);
        format!("{kind} does not parse as `{}`", std::any::type_name::<T>())
    })
}

/// One host-bound parameter: its name, how to check a value, and the bound value.
#[derive(Clone)]
pub(super) struct PresetSlot {
    pub(super) name: String,
    /// The parameter's schema (with the root `$defs`), checked on binding.
    pub(super) schema: Value,
    pub(super) check: Option<PresetCheck>,
    pub(super) value: Option<Value>,
}

/// The non-generic half of every typed tool: the visible definition, the declared
/// presets and their bound values, and the parse rules. [`TypedTool`] and the tools
/// `#[tool]` generates both delegate to it, so they behave the same.
///
/// Not constructed directly: use [`TypedTool::builder`] or `#[tool]`.
#[doc(hidden)]
#[derive(Clone)]
pub struct TypedCore {
    pub(super) definition: ToolDefinition,
    pub(super) presets: Vec<PresetSlot>,
    pub(super) concurrency_safe: bool,
    pub(super) timeout_owner: ToolTimeoutOwner,
}

impl fmt::Debug for TypedCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Preset values are host secrets as often as not (tokens, paths): never print
        // them, only whether each one is bound.
        let presets: Vec<(&str, bool)> = self
            .presets
            .iter()
            .map(|p| (p.name.as_str(), p.value.is_some()))
            .collect();
        f.debug_struct("TypedCore")
            .field("name", &self.definition.name)
            .field("presets_bound", &presets)
            .field("concurrency_safe", &self.concurrency_safe)
            .finish_non_exhaustive()
    }
}

impl TypedCore {
    /// The definition the model sees (preset parameters removed from the schema).
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// Whether calls may overlap (the `concurrency_safe` setting, default true).
    pub fn concurrency_safe(&self) -> bool {
        self.concurrency_safe
    }

    /// Who enforces the deadline (the `timeout_owner` setting, default the runtime).
    pub fn timeout_owner(&self) -> ToolTimeoutOwner {
        self.timeout_owner
    }

    /// Names of declared presets that have no value yet, in declaration order.
    pub fn unbound_presets(&self) -> Vec<&str> {
        self.presets
            .iter()
            .filter(|p| p.value.is_none())
            .map(|p| p.name.as_str())
            .collect()
    }

    /// Binds a value to a declared preset, replacing any earlier value.
    ///
    /// Fails with [`Error::InvalidDefinition`] when no preset has that name, or when
    /// the value does not fit the parameter (its type, else its schema).
    pub fn bind_preset(&mut self, name: &str, value: impl Serialize) -> Result<()> {
        let tool = self.definition.name.clone();
        let invalid = |reason: String| Error::InvalidDefinition {
            name: tool.clone(),
            reason,
        };
        let Some(slot) = self.presets.iter_mut().find(|p| p.name == name) else {
            let known: Vec<String> = self
                .presets
                .iter()
                .map(|p| format!("`{}`", p.name))
                .collect();
            let known = if known.is_empty() {
                "it declares no presets".to_owned()
            } else {
                format!("its presets are {}", known.join(", "))
            };
            return Err(invalid(format!("unknown preset `{name}`: {known}")));
        };
        let value = serde_json::to_value(value)
            .map_err(|e| invalid(format!("preset `{name}` could not be serialized: {e}")))?;
        if let Some(check) = slot.check {
            check(&value).map_err(|e| invalid(format!("preset `{name}` does not fit: {e}")))?;
        }
        if let Err(e) = jsonschema::validate(&slot.schema, &value) {
            // Only the rule and where it sits in the schema: the message quotes the value.
            return Err(invalid(format!(
                "preset `{name}` does not fit its schema: rule `{}` at `{}` failed",
                e.kind().keyword(),
                e.schema_path()
            )));
        }
        slot.value = Some(value);
        Ok(())
    }

    /// Parses raw model input once: the object shape, no preset keys, every preset
    /// bound, and a typed parse into `I`, which holds the model's fields and the
    /// presets (the builder's input type). The [`ToolInput`] keeps the raw JSON for
    /// hooks, logs and permission checks (so preset values never reach them) and the
    /// parsed `I` for the body.
    pub fn validate<I: DeserializeOwned + Send + Sync + 'static>(
        &self,
        raw: Value,
    ) -> std::result::Result<ToolInput, ToolErrorInfo> {
        let parsed = self.parse::<I>(&raw)?;
        Ok(ToolInput::with_parsed(raw, parsed))
    }

    /// Parses input into `I` (the model's fields and the presets in one type).
    pub fn parse<I: DeserializeOwned>(&self, raw: &Value) -> std::result::Result<I, ToolErrorInfo> {
        self.check_model_object(raw)?;
        if self.presets.is_empty() {
            return self.parse_model(raw);
        }
        let mut object = match raw {
            Value::Object(map) => map.clone(),
            _ => Map::new(),
        };
        object.extend(self.preset_object()?);
        self.parse_model(&Value::Object(object))
    }

    /// Parses the model's fields into `I` and the bound presets into `P`, for a tool
    /// whose presets live in a separate type (what `#[tool]` generates): `I` holds only
    /// the model's fields, so a typo is never answered with a list of fields that
    /// includes the host's presets.
    pub fn parse_apart<I: DeserializeOwned, P: DeserializeOwned>(
        &self,
        raw: &Value,
    ) -> std::result::Result<(I, P), ToolErrorInfo> {
        self.check_model_object(raw)?;
        let presets = self.preset_object()?;
        let input = self.parse_model(raw)?;
        // Every value was checked against its type when bound, so this only fails if
        // the tool was assembled by hand with mismatched types.
        let presets = P::deserialize(&Value::Object(presets)).map_err(|_| {
            ToolErrorInfo::new(
                codes::INVALID_DEFINITION,
                format!(
                    "presets of `{}` do not parse as `{}`",
                    self.definition.name,
                    std::any::type_name::<P>()
                ),
            )
        })?;
        Ok((input, presets))
    }

    /// The typed parse, from a borrowed value (no copy of the input). `null` parses as
    /// an empty object: some providers send it for a call without arguments.
    fn parse_model<I: DeserializeOwned>(
        &self,
        raw: &Value,
    ) -> std::result::Result<I, ToolErrorInfo> {
        let parsed = match raw {
            Value::Null => I::deserialize(&Value::Object(Map::new())),
            other => I::deserialize(other),
        };
        parsed.map_err(|e| {
            ToolErrorInfo::new(
                codes::INVALID_INPUT,
                format!("invalid input for `{}`: {e}", self.definition.name),
            )
        })
    }

    /// The checks every call shares: the input is an object (or `null`) and it sets
    /// no preset.
    fn check_model_object(&self, raw: &Value) -> std::result::Result<(), ToolErrorInfo> {
        let tool = &self.definition.name;
        let object = match raw {
            Value::Object(map) => map,
            Value::Null => return Ok(()),
            other => {
                return Err(ToolErrorInfo::new(
                    codes::INVALID_INPUT,
                    format!(
                        "input for `{tool}` must be a JSON object, not {}",
                        json_kind(other)
                    ),
                ));
            }
        };
        if let Some(slot) = self.presets.iter().find(|p| object.contains_key(&p.name)) {
            return Err(ToolErrorInfo::new(
                codes::INVALID_INPUT,
                format!(
                    "`{}` is set by the host for `{tool}`; the model may not set it",
                    slot.name
                ),
            )
            .with_detail("field", slot.name.clone()));
        }
        Ok(())
    }

    /// The bound presets as an object; an error names the first unbound one.
    fn preset_object(&self) -> std::result::Result<Map<String, Value>, ToolErrorInfo> {
        let mut object = Map::new();
        for slot in &self.presets {
            let Some(value) = &slot.value else {
                return Err(ToolErrorInfo::new(
                    codes::INVALID_DEFINITION,
                    format!(
                        "preset `{}` of `{}` was never bound; the host must call \
                         `.preset(\"{}\", value)` before registering the tool",
                        slot.name, self.definition.name, slot.name
                    ),
                ));
            };
            object.insert(slot.name.clone(), value.clone());
        }
        Ok(object)
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Removes `names` from the schema's `properties` and `required`, and drops `$defs`
/// entries nothing references any more. Returns each removed property's schema,
/// carrying the root `$defs` so it can be checked on its own.
pub(super) fn split_presets(schema: &mut Value, names: &[String]) -> Vec<Value> {
    let defs = schema.get("$defs").cloned();
    let mut removed = Vec::with_capacity(names.len());
    let Some(root) = schema.as_object_mut() else {
        return removed;
    };
    for name in names {
        let mut sub = root
            .get_mut("properties")
            .and_then(Value::as_object_mut)
            .and_then(|props| props.remove(name))
            .unwrap_or(Value::Bool(true));
        if let (Some(defs), Some(obj)) = (&defs, sub.as_object_mut()) {
            obj.insert("$defs".to_owned(), defs.clone());
        }
        removed.push(sub);
    }
    if let Some(required) = root.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|r| !r.as_str().is_some_and(|r| names.iter().any(|n| n == r)));
        if required.is_empty() {
            root.remove("required");
        }
    }
    prune_unused_defs(root);
    removed
}

/// Drops `$defs` entries that neither the root nor a reachable definition references.
fn prune_unused_defs(root: &mut Map<String, Value>) {
    let Some(Value::Object(defs)) = root.remove("$defs") else {
        return;
    };
    let mut reachable: HashSet<String> = HashSet::new();
    let mut pending: Vec<String> = Vec::new();
    collect_refs(&Value::Object(root.clone()), &mut pending);
    while let Some(name) = pending.pop() {
        if reachable.insert(name.clone())
            && let Some(def) = defs.get(&name)
        {
            collect_refs(def, &mut pending);
        }
    }
    let kept: Map<String, Value> = defs
        .into_iter()
        .filter(|(name, _)| reachable.contains(name))
        .collect();
    if !kept.is_empty() {
        root.insert("$defs".to_owned(), Value::Object(kept));
    }
}

fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("$ref", Value::String(r)) => {
                        if let Some(name) = r.strip_prefix("#/$defs/") {
                            out.push(name.replace("~1", "/").replace("~0", "~"));
                        }
                    }
                    _ => collect_refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly on purpose.

    use super::*;
    use serde_json::json;

    /// A preset is often a host secret: an error binding it names the parameter and
    /// the rule, never the value.
    #[test]
    fn a_rejected_preset_is_not_quoted_in_the_error() {
        use crate::ToolExecutionContext;
        use crate::typed::TypedTool;

        #[derive(serde::Deserialize, schemars::JsonSchema)]
        #[allow(dead_code)] // Never parsed: binding fails first.
        struct Input {
            #[schemars(regex(pattern = "^tok-"))]
            token: String,
            limit: u32,
        }
        let build = || {
            TypedTool::builder("fetch")
                .description("Fetch.")
                .declare_preset::<u32>("limit")
        };
        let body = |_: Input, _: ToolExecutionContext| async { "ok" };
        let by_schema = build()
            .preset("token", "sk-SECRET")
            .preset("limit", 3)
            .build(body)
            .unwrap_err()
            .to_string();
        assert!(by_schema.contains("preset `token`"), "{by_schema}");
        assert!(by_schema.contains("rule `pattern`"), "{by_schema}");
        assert!(!by_schema.contains("sk-SECRET"), "{by_schema}");
        let by_type = build()
            .preset("token", "tok-1")
            .preset("limit", "sk-SECRET")
            .build(body)
            .unwrap_err()
            .to_string();
        assert!(by_type.contains("preset `limit`"), "{by_type}");
        assert!(
            by_type.contains("a string does not parse as `u32`"),
            "{by_type}"
        );
        assert!(!by_type.contains("sk-SECRET"), "{by_type}");
    }

    fn check_split(mut schema: Value, names: &[&str], expect: Value) {
        let names: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
        split_presets(&mut schema, &names);
        assert_eq!(schema, expect);
    }

    #[test]
    fn split_presets_removes_properties_required_and_unused_defs() {
        let cases = [
            (
                json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"$ref": "#/$defs/B"}},
                       "required": ["a", "b"], "$defs": {"B": {"type": "object"}}}),
                vec!["b"],
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
            ),
            (
                json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"$ref": "#/$defs/B"}},
                       "required": ["b"], "$defs": {"A": {"$ref": "#/$defs/C"}, "B": {}, "C": {}}}),
                vec!["b"],
                json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}},
                       "$defs": {"A": {"$ref": "#/$defs/C"}, "C": {}}}),
            ),
            (
                json!({"type": "object", "properties": {"a": {}}}),
                vec![],
                json!({"type": "object", "properties": {"a": {}}}),
            ),
        ];
        for (schema, names, expect) in cases {
            check_split(schema, &names, expect);
        }
    }
}
