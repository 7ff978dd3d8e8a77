//! Pieces both schema conversions share: the issue vocabulary, JSON Pointer building,
//! local `$ref` resolution and small readers for schema keywords.

use serde_json::{Map, Value};

/// Why a schema cannot be converted for a provider.
///
/// Each issue is reported together with the JSON Pointer of the offending place (see
/// [`super::StrictSchemaError`] and [`super::GeminiSchemaError`]).
///
/// ```
/// use iris_providers::adapters::SchemaIssue;
/// let issue = SchemaIssue::UnsupportedKeyword("not".into());
/// assert_eq!(issue.to_string(), "keyword `not` is not supported");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaIssue {
    /// The root is not a `"type": "object"` schema (providers take named arguments only).
    #[error("the root must be a schema with `\"type\": \"object\"`")]
    RootNotObject,
    /// A place that must hold a schema holds something else (a number, a string...).
    #[error("expected a schema object")]
    NotASchema,
    /// A boolean schema: `true` accepts any value, `false` none; neither can be expressed.
    #[error("boolean schema `{0}` (a free-form or impossible value) cannot be expressed")]
    BooleanSchema(bool),
    /// The schema says nothing about the value's type (no `type`, `anyOf`, `enum`, `const`).
    #[error("schema has no `type` (free-form values cannot be expressed)")]
    Untyped,
    /// A keyword the provider rejects and that cannot be dropped without changing meaning.
    #[error("keyword `{0}` is not supported")]
    UnsupportedKeyword(String),
    /// A keyword whose value has the wrong JSON shape (e.g. `required` not a list of names).
    #[error("keyword `{0}` has an invalid value")]
    InvalidKeyword(String),
    /// A `type` the provider cannot express (an unknown name, a lone `null`, several types).
    #[error("type {0} is not supported")]
    UnsupportedType(String),
    /// `additionalProperties` that is `true` or a schema: maps and open objects.
    #[error("open objects and maps (`additionalProperties` other than `false`) are not supported")]
    OpenAdditionalProperties,
    /// A `$ref` that does not point into this document.
    #[error("non-local `$ref` `{0}` is not supported")]
    NonLocalRef(String),
    /// A local `$ref` whose target does not exist.
    #[error("`$ref` `{0}` does not resolve inside the schema")]
    UnresolvedRef(String),
    /// A recursive `$ref` that would have to be inlined, which never terminates.
    #[error("recursive `$ref` `{0}` cannot be inlined")]
    RecursiveRef(String),
    /// Tuple arrays (`items` as a list, `prefixItems`).
    #[error("tuple arrays are not supported")]
    TupleItems,
    /// An array schema without `items`.
    #[error("array schema has no `items`")]
    ArrayWithoutItems,
    /// A `required` name with no matching entry in `properties`.
    #[error("required property `{0}` is not declared in `properties`")]
    RequiredWithoutProperty(String),
    /// An object schema with no properties where the provider rejects one.
    #[error("object schema has no properties")]
    EmptyObject,
    /// An `enum` or `const` value that is not a string where only strings are accepted.
    #[error("only string `enum`/`const` values are supported")]
    NonStringEnum,
    /// Objects nested deeper than the provider allows.
    #[error("objects are nested more than {limit} levels deep")]
    TooDeep {
        /// The provider's limit.
        limit: usize,
    },
    /// More object properties in total than the provider allows.
    #[error("the schema has more than {limit} object properties in total")]
    TooManyProperties {
        /// The provider's limit.
        limit: usize,
    },
    /// More enum values in total than the provider allows.
    #[error("the schema has more than {limit} enum values in total")]
    TooManyEnumValues {
        /// The provider's limit.
        limit: usize,
    },
    /// Property names, definition names, enum and const strings are too long in total.
    #[error(
        "property names, definition names, enum and const values exceed {limit} characters in total"
    )]
    TooMuchText {
        /// The provider's limit.
        limit: usize,
    },
    /// One enum with more than 250 string values whose strings are too long in total.
    #[error("an enum with more than 250 values exceeds {limit} characters in total")]
    LargeEnumTooLong {
        /// The provider's limit.
        limit: usize,
    },
}

/// Appends one reference token to a JSON Pointer, escaping `~` and `/` (RFC 6901).
pub(crate) fn child(pointer: &str, token: &str) -> String {
    let escaped = token.replace('~', "~0").replace('/', "~1");
    format!("{pointer}/{escaped}")
}

/// Resolves a `$ref` against the document root.
///
/// Only local references are supported: `#` (the root) and `#/json/pointer`. Anything
/// else is either a non-local reference (another document) or an anchor, which no
/// provider resolves for us.
pub(crate) fn resolve_ref<'a>(root: &'a Value, reference: &str) -> Result<&'a Value, SchemaIssue> {
    let Some(fragment) = reference.strip_prefix('#') else {
        return Err(SchemaIssue::NonLocalRef(reference.to_owned()));
    };
    if fragment.is_empty() {
        return Ok(root);
    }
    if !fragment.starts_with('/') {
        // A plain-name fragment targets an `$anchor`, which we do not index.
        return Err(SchemaIssue::UnresolvedRef(reference.to_owned()));
    }
    root.pointer(fragment)
        .ok_or_else(|| SchemaIssue::UnresolvedRef(reference.to_owned()))
}

/// Reads `type` as a list of type names (a single name becomes a one-element list).
pub(crate) fn type_names(map: &Map<String, Value>) -> Result<Vec<String>, SchemaIssue> {
    const KNOWN: [&str; 7] = [
        "string", "number", "integer", "boolean", "object", "array", "null",
    ];
    let names: Vec<String> = match map.get("type") {
        None => Vec::new(),
        Some(Value::String(name)) => vec![name.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or_else(|| SchemaIssue::InvalidKeyword("type".into()))?,
        Some(_) => return Err(SchemaIssue::InvalidKeyword("type".into())),
    };
    if let Some(unknown) = names.iter().find(|n| !KNOWN.contains(&n.as_str())) {
        return Err(SchemaIssue::UnsupportedType(format!("`{unknown}`")));
    }
    Ok(names)
}

/// Reads `required` as a list of names (absent means none).
pub(crate) fn required_names(map: &Map<String, Value>) -> Result<Vec<String>, SchemaIssue> {
    match map.get("required") {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or_else(|| SchemaIssue::InvalidKeyword("required".into())),
        Some(_) => Err(SchemaIssue::InvalidKeyword("required".into())),
    }
}

/// Reads `properties` as a map (absent means none).
pub(crate) fn properties(map: &Map<String, Value>) -> Result<Map<String, Value>, SchemaIssue> {
    match map.get("properties") {
        None => Ok(Map::new()),
        Some(Value::Object(props)) => Ok(props.clone()),
        Some(_) => Err(SchemaIssue::InvalidKeyword("properties".into())),
    }
}

/// Folds a one-element `allOf` into the node; the node's own keywords win.
///
/// Older generators wrap a lone `$ref` in `allOf` so that sibling keywords such as
/// `description` are honoured; that wrapper is the only `allOf` with a faithful
/// single-schema meaning, so a longer list is rejected by the caller.
pub(crate) fn fold_single_all_of(map: &mut Map<String, Value>) -> Result<(), SchemaIssue> {
    let Some(all_of) = map.remove("allOf") else {
        return Ok(());
    };
    match all_of {
        Value::Array(mut items) if items.len() == 1 => match items.pop() {
            Some(Value::Object(inner)) => {
                for (key, value) in inner {
                    map.entry(key).or_insert(value);
                }
                Ok(())
            }
            _ => Err(SchemaIssue::NotASchema),
        },
        Value::Array(_) => Err(SchemaIssue::UnsupportedKeyword("allOf".into())),
        _ => Err(SchemaIssue::InvalidKeyword("allOf".into())),
    }
}

/// Whether a converted schema already admits `null`.
pub(crate) fn admits_null_shallow(map: &Map<String, Value>) -> bool {
    let typed_null = match map.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => false,
    };
    let enum_null = map
        .get("enum")
        .and_then(Value::as_array)
        .is_some_and(|vs| vs.iter().any(Value::is_null));
    let const_null = map.get("const").is_some_and(Value::is_null);
    let branch_null = map
        .get("anyOf")
        .and_then(Value::as_array)
        .is_some_and(|bs| {
            bs.iter()
                .any(|b| b.as_object().is_some_and(admits_null_shallow))
        });
    typed_null || enum_null || const_null || branch_null
}
