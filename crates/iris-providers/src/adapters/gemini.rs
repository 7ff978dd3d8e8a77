//! Gemini: rewriting a JSON Schema into the OpenAPI-3.0 subset of Gemini's `Schema`
//! object, the type of `FunctionDeclaration.parameters`.

use serde_json::{Map, Value, json};

use super::schema::{
    SchemaIssue, child, fold_single_all_of, properties, required_names, resolve_ref, type_names,
};

/// A schema that Gemini's `parameters` field cannot express, with the place that breaks it.
///
/// `pointer` is a JSON Pointer (RFC 6901) into the schema given to [`to_gemini_schema`];
/// the root is `""`.
/// Below an inlined `$ref` the pointer continues under the referring node, where the
/// definition is used, rather than inside `$defs`.
///
/// ```
/// use iris_providers::adapters::{SchemaIssue, to_gemini_schema};
/// use serde_json::json;
///
/// let tree = json!({"type": "object", "properties": {
///     "label": {"type": "string"},
///     "children": {"type": "array", "items": {"$ref": "#"}}
/// }});
/// let err = to_gemini_schema(&tree).unwrap_err();
/// assert_eq!(err.pointer, "/properties/children/items/$ref");
/// assert_eq!(err.issue, SchemaIssue::RecursiveRef("#".into()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at `#{pointer}`: {issue}")]
pub struct GeminiSchemaError {
    /// JSON Pointer of the offending place (`""` for the root).
    pub pointer: String,
    /// What is wrong there.
    pub issue: SchemaIssue,
}

/// Keywords the `Schema` object has under the same name and meaning.
const KEPT: [&str; 13] = [
    "description",
    "title",
    "default",
    "example",
    "pattern",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
];

/// Keywords with no `Schema` field. They are annotations, bookkeeping that inlining
/// makes useless (`$defs`), or narrowing constraints; dropping them only widens what
/// the model may send, and the executor still validates arguments against the tool's
/// full schema.
const DROPPED: [&str; 15] = [
    "$schema",
    "$id",
    "$comment",
    "$defs",
    "definitions",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentEncoding",
    "contentMediaType",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "uniqueItems",
];

/// Rewrites a JSON Schema into Gemini's `Schema` (a select subset of the OpenAPI 3.0
/// schema object), ready for `FunctionDeclaration.parameters`.
///
/// Why `parameters` and not `parametersJsonSchema`: the Gemini API reference documents
/// both as mutually exclusive fields of `FunctionDeclaration`; `parameters` is the one
/// every Gemini model and both the Gemini Developer API and Vertex AI accept, and the
/// one the function-calling guide builds on. The price is this conversion and no
/// recursive types.
///
/// What it does:
///
/// - `type` names become Gemini's `Type` enum (`"string"` → `"STRING"`); `null` in a
///   type list, a `{"type": "null"}` branch of `anyOf`, or `null` in `enum` becomes
///   `nullable: true`, and an `anyOf` left with one branch is merged into its node;
/// - local `$ref`s are inlined (the `Schema` object has no references; a field's own
///   keywords override the definition's) and `$defs`/`definitions` removed;
/// - a one-element `allOf` is folded in, `oneOf` becomes `anyOf`, `const` becomes a
///   one-value `enum`;
/// - keywords without a `Schema` field are dropped: `$schema`, `additionalProperties`
///   (`true`/`false`, or a schema next to declared properties), `exclusiveMinimum`,
///   `exclusiveMaximum`, `multipleOf`, `uniqueItems`, `examples` and other annotations;
///   `format` is kept only where documented (`date-time`/`enum` on strings,
///   `int32`/`int64` on integers, `float`/`double` on numbers);
/// - `title`, `description`, `default`, `example`, `pattern`, `minimum`/`maximum`,
///   `minItems`/`maxItems`, `minLength`/`maxLength`, `minProperties`/`maxProperties`,
///   `required` and `properties` are kept.
///
/// Errors, with the place: a root that is not an object; recursive, non-local or
/// dangling `$ref`s; maps (`additionalProperties` as a schema with no declared
/// properties); nested objects with no properties (the API answers
/// `properties: should be non-empty for OBJECT type`); non-string `enum`/`const`
/// values; several non-null types; free-form values; arrays without `items`; tuples;
/// `not`, `if`/`then`/`else`, `patternProperties`, `allOf` with several entries and
/// every other keyword not listed above.
///
/// An object root with no properties converts to `{"type": "OBJECT"}`;
/// [`super::gemini_function_declarations`] then omits `parameters`, as the API asks for
/// functions without arguments.
///
/// Sources: Gemini API reference, `FunctionDeclaration` (`parameters`,
/// `parametersJsonSchema`) and `Schema` (its fields and the `Type` enum).
///
/// ```
/// use iris_providers::adapters::to_gemini_schema;
/// use serde_json::json;
///
/// let schema = json!({
///     "$schema": "https://json-schema.org/draft/2020-12/schema",
///     "type": "object",
///     "properties": {
///         "unit": {"type": ["string", "null"], "enum": ["C", "F", null]}
///     },
///     "additionalProperties": false
/// });
/// assert_eq!(
///     to_gemini_schema(&schema).unwrap(),
///     json!({
///         "type": "OBJECT",
///         "properties": {"unit": {"type": "STRING", "enum": ["C", "F"], "nullable": true}}
///     })
/// );
/// ```
pub fn to_gemini_schema(schema: &Value) -> Result<Value, GeminiSchemaError> {
    let root_is_object = schema
        .as_object()
        .is_some_and(|m| m.get("type").and_then(Value::as_str) == Some("object"));
    if !root_is_object {
        return Err(GeminiSchemaError {
            pointer: String::new(),
            issue: SchemaIssue::RootNotObject,
        });
    }
    let mut converter = Converter {
        root: schema,
        inlining: Vec::new(),
    };
    converter.convert(schema, "")
}

/// Walks one schema at a time; `inlining` holds the `$ref`s being inlined right now.
struct Converter<'a> {
    root: &'a Value,
    inlining: Vec<String>,
}

impl Converter<'_> {
    fn convert(&mut self, node: &Value, pointer: &str) -> Result<Value, GeminiSchemaError> {
        let fail = |issue| GeminiSchemaError {
            pointer: pointer.to_owned(),
            issue,
        };
        let mut map = match node {
            Value::Object(map) => map.clone(),
            Value::Bool(b) => return Err(fail(SchemaIssue::BooleanSchema(*b))),
            _ => return Err(fail(SchemaIssue::NotASchema)),
        };
        fold_single_all_of(&mut map).map_err(|issue| GeminiSchemaError {
            pointer: child(pointer, "allOf"),
            issue,
        })?;
        if map.contains_key("$ref") {
            return self.inline_ref(map, pointer);
        }
        let types = type_names(&map).map_err(fail)?;
        let mut nullable = types.iter().any(|t| t == "null");
        let non_null: Vec<&String> = types.iter().filter(|t| *t != "null").collect();

        let mut out = Map::new();
        let mut branches: Option<Vec<Value>> = None;
        for (key, value) in &map {
            let at = child(pointer, key);
            let fail_at = |issue| GeminiSchemaError {
                pointer: at.clone(),
                issue,
            };
            match key.as_str() {
                "type" | "format" => {}
                "nullable" => nullable |= value.as_bool() == Some(true),
                "enum" => {
                    let Value::Array(values) = value else {
                        return Err(fail_at(SchemaIssue::InvalidKeyword("enum".into())));
                    };
                    let mut strings = Vec::new();
                    for v in values {
                        match v {
                            Value::Null => nullable = true,
                            Value::String(_) => strings.push(v.clone()),
                            _ => return Err(fail_at(SchemaIssue::NonStringEnum)),
                        }
                    }
                    out.insert("enum".into(), Value::Array(strings));
                }
                "const" => match value {
                    Value::String(_) => {
                        out.insert("enum".into(), json!([value]));
                    }
                    _ => return Err(fail_at(SchemaIssue::NonStringEnum)),
                },
                "anyOf" | "oneOf" => {
                    if key == "oneOf" && map.contains_key("anyOf") {
                        return Err(fail_at(SchemaIssue::UnsupportedKeyword("oneOf".into())));
                    }
                    let Value::Array(list) = value else {
                        return Err(fail_at(SchemaIssue::InvalidKeyword(key.clone())));
                    };
                    let mut kept = Vec::new();
                    for (i, branch) in list.iter().enumerate() {
                        if is_null_branch(branch) {
                            nullable = true;
                        } else {
                            kept.push(self.convert(branch, &child(&at, &i.to_string()))?);
                        }
                    }
                    branches = Some(kept);
                }
                "items" => {
                    if value.is_array() {
                        return Err(fail_at(SchemaIssue::TupleItems));
                    }
                    out.insert("items".into(), self.convert(value, &at)?);
                }
                // Handled below, together, because they only make sense as a set.
                "properties" | "required" | "additionalProperties" => {}
                k if KEPT.contains(&k) => {
                    out.insert(key.clone(), value.clone());
                }
                k if DROPPED.contains(&k) => {}
                other => {
                    return Err(fail_at(SchemaIssue::UnsupportedKeyword(other.to_owned())));
                }
            }
        }

        let gemini_type = match non_null.as_slice() {
            [] if types.is_empty() => infer_type(&map, &out),
            [] => {
                return Err(fail(SchemaIssue::UnsupportedType(
                    "`null` on its own".into(),
                )));
            }
            [one] => Some(one.to_uppercase()),
            several => {
                let names: Vec<String> = several.iter().map(|t| format!("`{t}`")).collect();
                return Err(fail(SchemaIssue::UnsupportedType(names.join(" + "))));
            }
        };
        if let Some(t) = &gemini_type {
            if let Some(format) = map.get("format").and_then(Value::as_str)
                && format_allowed(t, format)
            {
                out.insert("format".into(), json!(format));
            }
            out.insert("type".into(), json!(t));
        }
        match gemini_type.as_deref() {
            Some("OBJECT") => self.convert_object(&map, pointer, &mut out)?,
            Some("ARRAY") if !out.contains_key("items") => {
                return Err(fail(SchemaIssue::ArrayWithoutItems));
            }
            _ => {}
        }

        if let Some(mut kept) = branches {
            match kept.len() {
                0 => {
                    return Err(fail(SchemaIssue::UnsupportedType(
                        "`null` on its own".into(),
                    )));
                }
                1 => {
                    // `anyOf: [X, null]` is how generators spell `Option<X>`; Gemini spells
                    // it `X` plus `nullable`. The node's own keywords (its description)
                    // win over the branch's.
                    if let Some(Value::Object(only)) = kept.pop() {
                        for (key, value) in only {
                            out.entry(key).or_insert(value);
                        }
                    }
                }
                _ => {
                    out.insert("anyOf".into(), Value::Array(kept));
                }
            }
        }
        if !["type", "anyOf", "enum"]
            .iter()
            .any(|k| out.contains_key(*k))
        {
            return Err(fail(SchemaIssue::Untyped));
        }
        if nullable {
            out.insert("nullable".into(), Value::Bool(true));
        }
        Ok(Value::Object(out))
    }

    fn convert_object(
        &mut self,
        map: &Map<String, Value>,
        pointer: &str,
        out: &mut Map<String, Value>,
    ) -> Result<(), GeminiSchemaError> {
        let fail = |at: String, issue| GeminiSchemaError { pointer: at, issue };
        let props = properties(map).map_err(|i| fail(child(pointer, "properties"), i))?;
        let required = required_names(map).map_err(|i| fail(child(pointer, "required"), i))?;
        let open = matches!(
            map.get("additionalProperties"),
            Some(Value::Object(_) | Value::Bool(true))
        );
        if props.is_empty() && open {
            return Err(fail(
                child(pointer, "additionalProperties"),
                SchemaIssue::OpenAdditionalProperties,
            ));
        }
        if props.is_empty() {
            if pointer.is_empty() {
                return Ok(());
            }
            return Err(fail(pointer.to_owned(), SchemaIssue::EmptyObject));
        }
        let props_at = child(pointer, "properties");
        let mut converted = Map::new();
        for (name, schema) in &props {
            converted.insert(name.clone(), self.convert(schema, &child(&props_at, name))?);
        }
        out.insert("properties".into(), Value::Object(converted));
        if !required.is_empty() {
            out.insert("required".into(), json!(required));
        }
        Ok(())
    }

    /// Replaces a `$ref` by its target; the referring node's keywords win.
    fn inline_ref(
        &mut self,
        map: Map<String, Value>,
        pointer: &str,
    ) -> Result<Value, GeminiSchemaError> {
        let ref_at = child(pointer, "$ref");
        let fail = |issue| GeminiSchemaError {
            pointer: ref_at.clone(),
            issue,
        };
        let reference = map
            .get("$ref")
            .and_then(Value::as_str)
            .ok_or_else(|| fail(SchemaIssue::InvalidKeyword("$ref".into())))?
            .to_owned();
        let target = resolve_ref(self.root, &reference).map_err(fail)?;
        if self.inlining.contains(&reference) || reference == "#" {
            return Err(fail(SchemaIssue::RecursiveRef(reference)));
        }
        let Value::Object(target) = target else {
            return Err(fail(match target {
                Value::Bool(b) => SchemaIssue::BooleanSchema(*b),
                _ => SchemaIssue::NotASchema,
            }));
        };
        let mut merged = target.clone();
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

/// A branch that only says "`null`" (`{"type": "null"}`, possibly with annotations).
fn is_null_branch(branch: &Value) -> bool {
    branch.get("type").and_then(Value::as_str) == Some("null")
}

/// The type a typeless schema implies by its other keywords, if any.
fn infer_type(map: &Map<String, Value>, out: &Map<String, Value>) -> Option<String> {
    if map.contains_key("properties") {
        Some("OBJECT".into())
    } else if map.contains_key("items") {
        Some("ARRAY".into())
    } else if out.contains_key("enum") {
        Some("STRING".into())
    } else {
        None
    }
}

/// Formats the `Schema` reference documents for each type; others are annotations.
fn format_allowed(gemini_type: &str, format: &str) -> bool {
    matches!(
        (gemini_type, format),
        ("STRING", "date-time" | "enum")
            | ("INTEGER", "int32" | "int64")
            | ("NUMBER", "float" | "double")
    )
}
