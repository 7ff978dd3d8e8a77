//! OpenAI strict mode: rewriting a JSON Schema into the Structured Outputs subset, and
//! undoing the one change the model then sees (`null` for omitted optional arguments).

use serde_json::{Map, Value, json};

use super::schema::{
    SchemaIssue, admits_null_shallow, child, fold_single_all_of, properties, required_names,
    resolve_ref, type_names,
};

/// A schema that OpenAI strict mode cannot express, with the place that breaks it.
///
/// `pointer` is a JSON Pointer (RFC 6901) into the schema given to
/// [`to_strict_schema`]; the root is `""`. The message shows it as a URI fragment.
/// Below an inlined `$ref` the pointer continues under the referring node, where the
/// definition is used, rather than inside `$defs`.
///
/// ```
/// use iris_providers::adapters::{SchemaIssue, to_strict_schema};
/// use serde_json::json;
///
/// let schema = json!({"type": "object", "properties": {
///     "tags": {"type": "object", "additionalProperties": {"type": "string"}}
/// }});
/// let err = to_strict_schema(&schema).unwrap_err();
/// assert_eq!(err.pointer, "/properties/tags/additionalProperties");
/// assert_eq!(err.issue, SchemaIssue::OpenAdditionalProperties);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("strict mode: at `#{pointer}`: {issue}")]
pub struct StrictSchemaError {
    /// JSON Pointer of the offending place (`""` for the root).
    pub pointer: String,
    /// What is wrong there.
    pub issue: SchemaIssue,
}

/// OpenAI's documented limits for one strict schema (Structured Outputs, "Supported
/// schemas": 5,000 object properties, 10 levels of nesting, 1,000 enum values, 120,000
/// characters of names and enum/const strings, 15,000 characters for one enum of more
/// than 250 values).
const MAX_PROPERTIES: usize = 5_000;
const MAX_DEPTH: usize = 10;
const MAX_ENUM_VALUES: usize = 1_000;
const MAX_TEXT: usize = 120_000;
const LARGE_ENUM: usize = 250;
const MAX_LARGE_ENUM_TEXT: usize = 15_000;

/// String formats the Structured Outputs docs list as supported; other `format` values
/// (schemars writes `uint32`, `double`...) are annotations and are dropped.
const STRING_FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords kept unchanged: the documented constraints plus the annotations the API
/// accepts.
const KEPT: [&str; 12] = [
    "description",
    "title",
    "enum",
    "const",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];

/// Annotations with no effect on which values are valid; dropping them is lossless for
/// validation, and strict mode does not list them.
const DROPPED: [&str; 9] = [
    "$schema",
    "$id",
    "$comment",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentEncoding",
    "contentMediaType",
];

/// Validation-only constraints strict mode does not list. They are removed from the
/// strict schema and stated in the description instead (`Constraints: minLength 1.`):
/// the executor validates every call against the tool's *original* schema, so the
/// constraint is still enforced, and the model still reads it.
const MOVED_TO_DESCRIPTION: [&str; 5] = [
    "minLength",
    "maxLength",
    "uniqueItems",
    "minProperties",
    "maxProperties",
];

/// Rewrites a JSON Schema into the subset OpenAI accepts with `strict: true`.
///
/// The result describes the same arguments, reshaped the way strict mode demands:
///
/// - every object gets `additionalProperties: false` and lists **all** its properties in
///   `required`, in property order;
/// - a property that was optional becomes nullable: `"type": ["integer", "null"]` when it
///   has a plain `type`, otherwise (`enum`, `const`, `$ref`) it is wrapped as
///   `{"anyOf": [<schema>, {"type": "null"}]}` with its description on the wrapper, and an
///   existing `anyOf` gains a `{"type": "null"}` branch. The model then sends `null` for
///   "not given"; [`strip_strict_nulls`] turns that back into an absent key;
/// - `default` is removed (strict mode rejects it) and kept for the model as a
///   `Default: <value>.` sentence at the end of the description;
/// - local `$ref`s into `$defs`/`definitions` stay references, so recursive types keep
///   working; a `$ref` with sibling keywords (a field description, say) is inlined, as
///   the API does not accept siblings next to `$ref`, except for a recursive one, which
///   stays a bare reference and loses its annotations;
/// - a one-element `allOf` is folded into its node and `oneOf` becomes `anyOf` (strict
///   mode lists only `anyOf`; generators emit `oneOf` for tagged enums whose variants are
///   disjoint anyway);
/// - `format`s outside the documented list and pure annotations (`$schema`, `examples`,
///   `readOnly`...) are dropped;
/// - validation-only constraints strict mode does not list (`minLength`, `maxLength`,
///   `uniqueItems`, `minProperties`, `maxProperties`) move into the description as a
///   `Constraints: …` sentence; the executor still enforces them against the original
///   schema.
///
/// Anything else strict mode cannot express is an error naming the place: a root that is
/// not an object, `additionalProperties` other than `false` (maps, open objects),
/// `patternProperties`, `not`, `if`/`then`/`else`, `allOf` with several entries, tuples,
/// other keywords outside the documented list, free-form
/// values (`true` or untyped schemas), arrays without `items`, non-local or dangling
/// `$ref`s, and schemas over the documented size limits (10 levels of nested objects as
/// written, 5,000 properties, 1,000 enum values, 120,000 characters of names and
/// enum/const strings).
///
/// Sources: OpenAI's Structured Outputs guide, "Supported schemas" (supported types and
/// keywords, `additionalProperties: false`, all fields required, optional as a union
/// with `null`, root not `anyOf`, `$defs` and recursion through `$ref`, limits) and the
/// `to_strict_json_schema` helper of the official Python SDK (`$ref` inlining when
/// siblings are present).
///
/// ```
/// use iris_providers::adapters::to_strict_schema;
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {
///         "path": {"type": "string"},
///         "limit": {"type": "integer", "default": 100}
///     },
///     "required": ["path"]
/// });
/// assert_eq!(
///     to_strict_schema(&schema).unwrap(),
///     json!({
///         "type": "object",
///         "properties": {
///             "path": {"type": "string"},
///             "limit": {"type": ["integer", "null"], "description": "Default: 100."}
///         },
///         "required": ["limit", "path"],
///         "additionalProperties": false
///     })
/// );
/// ```
pub fn to_strict_schema(schema: &Value) -> Result<Value, StrictSchemaError> {
    let root_is_object = schema
        .as_object()
        .is_some_and(|m| m.get("type").and_then(Value::as_str) == Some("object"));
    if !root_is_object {
        return Err(StrictSchemaError {
            pointer: String::new(),
            issue: SchemaIssue::RootNotObject,
        });
    }
    let mut converter = Converter {
        root: schema,
        inlining: Vec::new(),
    };
    let converted = converter.convert(schema, "")?;
    check_limits(schema)?;
    Ok(converted)
}

/// Walks one schema at a time; `inlining` holds the `$ref`s being inlined right now so
/// that a recursive one is recognised instead of expanded forever.
struct Converter<'a> {
    root: &'a Value,
    inlining: Vec<String>,
}

impl Converter<'_> {
    fn convert(&mut self, node: &Value, pointer: &str) -> Result<Value, StrictSchemaError> {
        let fail = |issue| StrictSchemaError {
            pointer: pointer.to_owned(),
            issue,
        };
        let mut map = match node {
            Value::Object(map) => map.clone(),
            Value::Bool(b) => return Err(fail(SchemaIssue::BooleanSchema(*b))),
            _ => return Err(fail(SchemaIssue::NotASchema)),
        };
        fold_single_all_of(&mut map).map_err(|issue| StrictSchemaError {
            pointer: child(pointer, "allOf"),
            issue,
        })?;
        if map.contains_key("$ref") {
            return self.convert_ref(map, pointer);
        }
        let types = type_names(&map).map_err(fail)?;

        let mut out = Map::new();
        let mut default = None;
        let mut constraints = Vec::new();
        for (key, value) in &map {
            let at = child(pointer, key);
            match key.as_str() {
                "type" => {
                    out.insert(key.clone(), value.clone());
                }
                "format" => {
                    let supported = value.as_str().is_some_and(|f| STRING_FORMATS.contains(&f));
                    if supported && types.iter().any(|t| t == "string") {
                        out.insert(key.clone(), value.clone());
                    }
                }
                "default" => default = Some(value.clone()),
                "items" => {
                    if value.is_array() {
                        return Err(StrictSchemaError {
                            pointer: at,
                            issue: SchemaIssue::TupleItems,
                        });
                    }
                    out.insert(key.clone(), self.convert(value, &at)?);
                }
                "anyOf" | "oneOf" => {
                    if key == "oneOf" && map.contains_key("anyOf") {
                        return Err(StrictSchemaError {
                            pointer: at,
                            issue: SchemaIssue::UnsupportedKeyword("oneOf".into()),
                        });
                    }
                    let Value::Array(branches) = value else {
                        return Err(fail(SchemaIssue::InvalidKeyword(key.clone())));
                    };
                    if pointer.is_empty() {
                        return Err(fail(SchemaIssue::RootNotObject));
                    }
                    let converted = branches
                        .iter()
                        .enumerate()
                        .map(|(i, b)| self.convert(b, &child(&at, &i.to_string())))
                        .collect::<Result<Vec<_>, _>>()?;
                    out.insert("anyOf".into(), Value::Array(converted));
                }
                "$defs" | "definitions" => {
                    let Value::Object(defs) = value else {
                        return Err(fail(SchemaIssue::InvalidKeyword(key.clone())));
                    };
                    let mut converted = Map::new();
                    for (name, def) in defs {
                        converted.insert(name.clone(), self.convert(def, &child(&at, name))?);
                    }
                    out.insert(key.clone(), Value::Object(converted));
                }
                // Handled below, together, because they only make sense as a set.
                "properties" | "required" | "additionalProperties" => {}
                k if KEPT.contains(&k) => {
                    out.insert(key.clone(), value.clone());
                }
                k if DROPPED.contains(&k) => {}
                k if MOVED_TO_DESCRIPTION.contains(&k) => constraints.push(format!("{k} {value}")),
                other => {
                    return Err(StrictSchemaError {
                        pointer: at,
                        issue: SchemaIssue::UnsupportedKeyword(other.to_owned()),
                    });
                }
            }
        }

        if types.iter().any(|t| t == "object") || map.contains_key("properties") {
            self.convert_object(&map, pointer, &mut out)?;
        }
        if types.iter().any(|t| t == "array") && !map.contains_key("items") {
            return Err(fail(SchemaIssue::ArrayWithoutItems));
        }
        let constrains_type = ["type", "anyOf", "enum", "const"]
            .iter()
            .any(|k| out.contains_key(*k));
        if !constrains_type {
            return Err(fail(SchemaIssue::Untyped));
        }
        if !constraints.is_empty() {
            append_sentence(
                &mut out,
                &format!("Constraints: {}.", constraints.join(", ")),
            );
        }
        if let Some(default) = default {
            append_sentence(&mut out, &format!("Default: {default}."));
        }
        Ok(Value::Object(out))
    }

    /// Objects: close them, require every property, make the optional ones nullable.
    fn convert_object(
        &mut self,
        map: &Map<String, Value>,
        pointer: &str,
        out: &mut Map<String, Value>,
    ) -> Result<(), StrictSchemaError> {
        let fail = |at: String, issue| StrictSchemaError { pointer: at, issue };
        match map.get("additionalProperties") {
            None | Some(Value::Bool(false)) => {}
            Some(_) => {
                return Err(fail(
                    child(pointer, "additionalProperties"),
                    SchemaIssue::OpenAdditionalProperties,
                ));
            }
        }
        let props = properties(map).map_err(|i| fail(child(pointer, "properties"), i))?;
        let required = required_names(map).map_err(|i| fail(child(pointer, "required"), i))?;
        if let Some(missing) = required.iter().find(|r| !props.contains_key(*r)) {
            return Err(fail(
                child(pointer, "required"),
                SchemaIssue::RequiredWithoutProperty(missing.clone()),
            ));
        }
        let props_at = child(pointer, "properties");
        let mut converted = Map::new();
        for (name, schema) in &props {
            let strict = self.convert(schema, &child(&props_at, name))?;
            let strict = if required.contains(name) {
                strict
            } else {
                make_nullable(strict)
            };
            converted.insert(name.clone(), strict);
        }
        let all_names: Vec<Value> = converted.keys().cloned().map(Value::String).collect();
        out.entry("type").or_insert_with(|| json!("object"));
        out.insert("properties".into(), Value::Object(converted));
        out.insert("required".into(), Value::Array(all_names));
        out.insert("additionalProperties".into(), Value::Bool(false));
        Ok(())
    }

    /// A `$ref` alone stays a reference; with siblings it is inlined (siblings win).
    fn convert_ref(
        &mut self,
        map: Map<String, Value>,
        pointer: &str,
    ) -> Result<Value, StrictSchemaError> {
        let ref_at = child(pointer, "$ref");
        let fail = |issue| StrictSchemaError {
            pointer: ref_at.clone(),
            issue,
        };
        let reference = map
            .get("$ref")
            .and_then(Value::as_str)
            .ok_or_else(|| fail(SchemaIssue::InvalidKeyword("$ref".into())))?
            .to_owned();
        let target = resolve_ref(self.root, &reference).map_err(fail)?;
        let siblings: Vec<&String> = map
            .keys()
            .filter(|k| *k != "$ref" && !DROPPED.contains(&k.as_str()))
            .collect();
        if siblings.is_empty() {
            return Ok(json!({ "$ref": reference }));
        }
        if self.inlining.contains(&reference) {
            // Inlining a recursive reference never ends. Annotations can be given up;
            // anything that constrains the value cannot.
            let only_annotations = siblings
                .iter()
                .all(|k| matches!(k.as_str(), "description" | "title" | "default"));
            return if only_annotations {
                Ok(json!({ "$ref": reference }))
            } else {
                Err(fail(SchemaIssue::RecursiveRef(reference)))
            };
        }
        let Value::Object(target) = target else {
            return Err(fail(match target {
                Value::Bool(b) => SchemaIssue::BooleanSchema(*b),
                _ => SchemaIssue::NotASchema,
            }));
        };
        let mut merged = target.clone();
        // Definitions stay where they are; an inlined copy must not carry them along.
        merged.remove("$defs");
        merged.remove("definitions");
        for (key, value) in map {
            if key != "$ref" {
                merged.insert(key, value);
            }
        }
        self.inlining.push(reference);
        let result = self.convert(&Value::Object(merged), pointer);
        self.inlining.pop();
        result
    }
}

/// Lets `null` through a converted schema, the way strict mode spells "optional".
fn make_nullable(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    if admits_null_shallow(&map) {
        return Value::Object(map);
    }
    let plain_type = !["enum", "const", "$ref", "anyOf"]
        .iter()
        .any(|k| map.contains_key(*k));
    match map.get_mut("type") {
        Some(Value::String(t)) if plain_type => {
            let t = std::mem::take(t);
            map.insert("type".into(), json!([t, "null"]));
            return Value::Object(map);
        }
        Some(Value::Array(ts)) if plain_type => {
            ts.push(json!("null"));
            return Value::Object(map);
        }
        _ => {}
    }
    if !map.contains_key("type")
        && let Some(Value::Array(branches)) = map.get_mut("anyOf")
    {
        branches.push(json!({"type": "null"}));
        return Value::Object(map);
    }
    // `enum`, `const` and `$ref` cannot take a `null` type next to them; wrap instead and
    // keep the annotations on the wrapper, where the model reads them.
    let mut wrapper = Map::new();
    for key in ["description", "title"] {
        if let Some(v) = map.remove(key) {
            wrapper.insert(key.into(), v);
        }
    }
    wrapper.insert(
        "anyOf".into(),
        json!([Value::Object(map), {"type": "null"}]),
    );
    Value::Object(wrapper)
}

/// Appends a sentence (a removed `default` or constraint) to the description so the
/// model still learns it.
fn append_sentence(out: &mut Map<String, Value>, sentence: &str) {
    let sentence = sentence.to_owned();
    let description = match out.get("description").and_then(Value::as_str) {
        Some(text) if !text.trim().is_empty() => format!("{} {sentence}", text.trim_end()),
        _ => sentence,
    };
    out.insert("description".into(), Value::String(description));
}

/// Running totals for [`check_limits`].
#[derive(Default)]
struct Totals {
    properties: usize,
    enum_values: usize,
    text: usize,
}

/// Checks OpenAI's size limits on the schema as written (before any inlining).
///
/// Depth counts object schemas along the document path, root included; a `$ref` is not
/// followed, since recursion through `$ref` is allowed and has no finite depth.
fn check_limits(schema: &Value) -> Result<(), StrictSchemaError> {
    let mut totals = Totals::default();
    walk_limits(schema, "", 0, &mut totals)
}

fn walk_limits(
    node: &Value,
    pointer: &str,
    depth: usize,
    totals: &mut Totals,
) -> Result<(), StrictSchemaError> {
    let fail = |issue| StrictSchemaError {
        pointer: pointer.to_owned(),
        issue,
    };
    let Value::Object(map) = node else {
        return Ok(());
    };
    let is_object =
        map.get("type").and_then(Value::as_str) == Some("object") || map.contains_key("properties");
    let depth = if is_object { depth + 1 } else { depth };
    if depth > MAX_DEPTH {
        return Err(fail(SchemaIssue::TooDeep { limit: MAX_DEPTH }));
    }
    if let Some(values) = map.get("enum").and_then(Value::as_array) {
        totals.enum_values += values.len();
        if totals.enum_values > MAX_ENUM_VALUES {
            return Err(fail(SchemaIssue::TooManyEnumValues {
                limit: MAX_ENUM_VALUES,
            }));
        }
        let enum_text: usize = values.iter().filter_map(Value::as_str).map(str::len).sum();
        if values.len() > LARGE_ENUM && enum_text > MAX_LARGE_ENUM_TEXT {
            return Err(fail(SchemaIssue::LargeEnumTooLong {
                limit: MAX_LARGE_ENUM_TEXT,
            }));
        }
        totals.text += enum_text;
    }
    if let Some(text) = map.get("const").and_then(Value::as_str) {
        totals.text += text.len();
    }
    if let Some(Value::Object(props)) = map.get("properties") {
        totals.properties += props.len();
        if totals.properties > MAX_PROPERTIES {
            return Err(fail(SchemaIssue::TooManyProperties {
                limit: MAX_PROPERTIES,
            }));
        }
        totals.text += props.keys().map(String::len).sum::<usize>();
    }
    for defs in ["$defs", "definitions"] {
        if let Some(Value::Object(d)) = map.get(defs) {
            totals.text += d.keys().map(String::len).sum::<usize>();
        }
    }
    if totals.text > MAX_TEXT {
        return Err(fail(SchemaIssue::TooMuchText { limit: MAX_TEXT }));
    }
    for key in ["properties", "$defs", "definitions"] {
        if let Some(Value::Object(children)) = map.get(key) {
            let at = child(pointer, key);
            for (name, sub) in children {
                walk_limits(sub, &child(&at, name), depth, totals)?;
            }
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(children)) = map.get(key) {
            let at = child(pointer, key);
            for (i, sub) in children.iter().enumerate() {
                walk_limits(sub, &child(&at, &i.to_string()), depth, totals)?;
            }
        }
    }
    if let Some(items) = map.get("items") {
        walk_limits(items, &child(pointer, "items"), depth, totals)?;
    }
    Ok(())
}

/// Removes the `null`s strict mode makes the model send for optional arguments it did
/// not mean to give, so the arguments validate against the tool's original schema.
///
/// `schema` is the tool's **original** input schema (before [`to_strict_schema`]). A
/// `null` is removed only where the property is optional in that schema and the
/// property's own schema does not accept `null`; an explicit `null` the tool allows is
/// kept. Nested objects are followed through `properties`, `items`, local `$ref`s and an
/// `anyOf`/`oneOf` with a single non-null branch. Everything else is returned unchanged.
///
/// ```
/// use iris_providers::adapters::strip_strict_nulls;
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {
///         "path": {"type": "string"},
///         "limit": {"type": "integer"},
///         "note": {"type": ["string", "null"]}
///     },
///     "required": ["path"]
/// });
/// let from_model = json!({"path": "a.txt", "limit": null, "note": null});
/// assert_eq!(
///     strip_strict_nulls(&schema, from_model),
///     json!({"path": "a.txt", "note": null})
/// );
/// ```
pub fn strip_strict_nulls(schema: &Value, arguments: Value) -> Value {
    let mut arguments = arguments;
    strip_in(schema, schema, &mut arguments, 0);
    arguments
}

/// How many `$ref` hops to follow before giving up; guards against `$ref` cycles that
/// consume no input (`{"$ref": "#"}` at the root).
const MAX_REF_HOPS: usize = 32;

/// Follows `$ref` and one-element `allOf` wrappers to the schema that shapes a value.
fn shape_of<'a>(root: &'a Value, mut node: &'a Value) -> Option<&'a Map<String, Value>> {
    for _ in 0..MAX_REF_HOPS {
        let map = node.as_object()?;
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            node = resolve_ref(root, reference).ok()?;
            continue;
        }
        match map.get("allOf").and_then(Value::as_array) {
            Some(all) if all.len() == 1 => node = &all[0],
            _ => return Some(map),
        }
    }
    None
}

fn strip_in(root: &Value, schema: &Value, value: &mut Value, depth: usize) {
    if depth > MAX_REF_HOPS * 8 {
        return;
    }
    let Some(shape) = shape_of(root, schema) else {
        return;
    };
    match value {
        Value::Object(fields) => {
            let Some(Value::Object(props)) = shape.get("properties") else {
                return strip_branch(root, shape, value, depth);
            };
            let required = required_names(shape).unwrap_or_default();
            fields.retain(|name, v| {
                let optional = !required.contains(name);
                let dropped = v.is_null()
                    && optional
                    && props.get(name).is_some_and(|p| !admits_null(root, p, 0));
                !dropped
            });
            for (name, v) in fields.iter_mut() {
                if let Some(prop) = props.get(name) {
                    strip_in(root, prop, v, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = shape.get("items").filter(|s| s.is_object()) {
                for item in items {
                    strip_in(root, item_schema, item, depth + 1);
                }
            } else {
                strip_branch(root, shape, value, depth);
            }
        }
        _ => {}
    }
}

/// Descends into an `anyOf`/`oneOf` when exactly one branch is not the `null` type.
fn strip_branch(root: &Value, shape: &Map<String, Value>, value: &mut Value, depth: usize) {
    let branches = shape
        .get("anyOf")
        .or_else(|| shape.get("oneOf"))
        .and_then(Value::as_array);
    let Some(branches) = branches else {
        return;
    };
    let mut non_null = branches
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"));
    if let (Some(only), None) = (non_null.next(), non_null.next()) {
        strip_in(root, only, value, depth + 1);
    }
}

/// Whether a schema of the original document accepts `null`.
fn admits_null(root: &Value, schema: &Value, hops: usize) -> bool {
    if hops > MAX_REF_HOPS {
        return true;
    }
    let map = match schema {
        Value::Bool(b) => return *b,
        Value::Object(map) => map,
        _ => return true,
    };
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        return resolve_ref(root, reference).map_or(true, |t| admits_null(root, t, hops + 1));
    }
    if let Some(all) = map.get("allOf").and_then(Value::as_array)
        && !all.iter().all(|s| admits_null(root, s, hops + 1))
    {
        return false;
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = map.get(key).and_then(Value::as_array) {
            return branches.iter().any(|s| admits_null(root, s, hops + 1));
        }
    }
    if let Some(values) = map.get("enum").and_then(Value::as_array) {
        return values.iter().any(Value::is_null);
    }
    if let Some(value) = map.get("const") {
        return value.is_null();
    }
    match map.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => true,
    }
}
