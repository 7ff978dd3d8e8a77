//! Typed tools: the seed's `input_model` (a builder) and `schema_for_input`.
//!
//! A typed tool parses the model's JSON into a Rust type before its body runs, so the
//! body never re-checks its arguments. Two front ends share one code path here:
//!
//! - [`TypedTool::builder`] makes a dynamic tool from a closure and an explicit input
//!   type (the seed's `CallableTool(func, input_model=…)`);
//! - the `#[tool]` attribute (feature `macros`) generates an input type from a
//!   function's parameters and uses the same machinery underneath.
//!
//! Both produce schemas with [`schema_for_input`] (JSON Schema 2020-12, root
//! `"type": "object"`, nested types as local `$defs`, no `$schema`/`title` noise), turn
//! parse failures into `INVALID_INPUT`, and turn the body's return value into a
//! [`ToolResult`] through [`IntoToolResult`].
//!
//! ```
//! use iris_tools_core::typed::{Json, TypedTool};
//! use iris_tools_core::{Tool, ToolCapability, ToolExecutionContext};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use serde_json::json;
//!
//! /// Input of `lookup_user`.
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct LookupInput {
//!     /// The numeric user id.
//!     id: u64,
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let tool = TypedTool::builder("lookup_user")
//!     .description("Look up one user by id.")
//!     .capabilities([ToolCapability::Read])
//!     .build(|input: LookupInput, _ctx: ToolExecutionContext| async move {
//!         Json(json!({"id": input.id, "name": "Ada"}))
//!     })
//!     .unwrap();
//! assert_eq!(tool.definition().input_schema["required"], json!(["id"]));
//!
//! let ctx = ToolExecutionContext::new("/tmp");
//! let input = tool.validate_input(json!({"id": 7})).unwrap();
//! let result = tool.run(input, &ctx).await;
//! assert_eq!(result.model_content(), r#"{"id":7,"name":"Ada"}"#);
//!
//! let bad = tool.validate_input(json!({"id": "seven"})).unwrap_err();
//! assert_eq!(bad.code, "INVALID_INPUT");
//! # });
//! ```

use std::any::Any;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashSet};
use std::fmt::{self, Display};
use std::future::Future;
use std::marker::PhantomData;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::context::ToolExecutionContext;
use crate::definition::{ToolCapability, ToolDefinition};
use crate::error::{Error, Result, ToolErrorInfo, codes};
use crate::result::{ContentBlock, ToolResult};
use crate::tool::{BoxFuture, Tool};

/// The JSON Schema of `T` as a tool input: what the seed calls
/// `schema_from_pydantic_model`.
///
/// JSON Schema 2020-12 as schemars 1 generates it, with nested types as local `$defs`
/// (`"$ref": "#/$defs/Name"`), and without the root `$schema` and `title` keywords,
/// which only add noise to what a model sees. A struct input yields
/// `"type": "object"`; `#[serde(deny_unknown_fields)]` yields
/// `"additionalProperties": false`, and an object always lists its `properties`, even
/// when there are none. `#[tool]` produces its schemas with this function.
///
/// ```
/// use iris_tools_core::typed::schema_for_input;
/// use serde_json::json;
///
/// /// Ignored: the tool description lives in the definition.
/// #[derive(schemars::JsonSchema)]
/// struct Input {
///     /// Dotted key path.
///     key: String,
///     limit: Option<u32>,
/// }
///
/// let schema = schema_for_input::<Input>();
/// assert_eq!(schema["type"], "object");
/// assert_eq!(schema["required"], json!(["key"]));
/// assert_eq!(schema["properties"]["key"]["description"], "Dotted key path.");
/// assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
/// ```
pub fn schema_for_input<T: JsonSchema + ?Sized>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|settings| settings.meta_schema = None)
        .into_generator();
    let mut schema = Value::from(generator.into_root_schema_for::<T>());
    if let Some(root) = schema.as_object_mut() {
        root.remove("$schema");
        root.remove("title");
        // The root description of an input type repeats the tool description that
        // the definition already carries, so models would read it twice.
        root.remove("description");
        // A tool without parameters still lists (no) properties: several providers
        // reject an object schema without them.
        if root.get("type").and_then(Value::as_str) == Some("object") {
            root.entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
        }
    }
    schema
}

/// Turns what a tool body returns into a [`ToolResult`].
///
/// | returned value | result |
/// |---|---|
/// | `String`, `&str`, `Cow<str>` | the text as the body (no block when empty) |
/// | `()` | an empty body |
/// | [`ToolResult`] | as is |
/// | `serde_json::Value`, [`Json<T>`] | compact JSON text as the body, and the value under `data.output` |
/// | [`ContentBlock`], `Vec<ContentBlock>` | those blocks (images included) |
/// | `Option<T>` | `None` → empty body, `Some(t)` → `t` |
/// | `Result<T, E: Display>` | `Ok(t)` → `t`; `Err(e)` → an error result (see below) |
///
/// An `Err` becomes an error result with code `TOOL_FAILED` and the error's `Display`
/// text as its message; a [`ToolErrorInfo`] error keeps its own code, and a crate
/// [`Error`] keeps its [`Error::code`]. The result's identity (`tool_use_id`,
/// `tool_name`) stays empty: the executor binds the real call identity afterwards.
///
/// `#[tool]` functions may also return any other `Serialize` type: the macro wraps it
/// in [`Json`] for you.
///
/// ```
/// use iris_tools_core::typed::{IntoToolResult, Json};
///
/// assert_eq!("done".into_tool_result().model_content(), "done");
/// assert_eq!(Json(vec![1, 2]).into_tool_result().model_content(), "[1,2]");
/// let failed: Result<String, std::io::Error> = Err(std::io::Error::other("disk full"));
/// assert_eq!(failed.into_tool_result().model_content(), "Error[TOOL_FAILED]: disk full");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be turned into a tool result",
    label = "not a tool result",
    note = "return String, &str, (), ToolResult, serde_json::Value, ContentBlock(s), \
            Json<T> for any `T: Serialize`, Option<_> or Result<_, E: Display>"
)]
pub trait IntoToolResult {
    /// Converts the value. Never panics.
    fn into_tool_result(self) -> ToolResult;
}

impl IntoToolResult for ToolResult {
    fn into_tool_result(self) -> ToolResult {
        self
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::ok_text(self)
    }
}

impl IntoToolResult for &str {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::ok_text(self)
    }
}

impl IntoToolResult for Cow<'_, str> {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::ok_text(self.into_owned())
    }
}

impl IntoToolResult for () {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::default()
    }
}

impl IntoToolResult for Value {
    fn into_tool_result(self) -> ToolResult {
        let text = self.to_string();
        ToolResult::ok_text(text).with_data("output", self)
    }
}

impl IntoToolResult for ContentBlock {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::new("", "", vec![self])
    }
}

impl IntoToolResult for Vec<ContentBlock> {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::new("", "", self)
    }
}

impl<T: IntoToolResult> IntoToolResult for Option<T> {
    fn into_tool_result(self) -> ToolResult {
        self.map_or_else(ToolResult::default, IntoToolResult::into_tool_result)
    }
}

impl<T: IntoToolResult, E: Display + 'static> IntoToolResult for Result<T, E> {
    fn into_tool_result(self) -> ToolResult {
        match self {
            Ok(value) => value.into_tool_result(),
            Err(error) => error_into_result(error),
        }
    }
}

/// Marks a `Serialize` value as a JSON tool result: compact JSON text as the body and
/// the value itself under `data.output` for the host.
///
/// ```
/// use iris_tools_core::typed::{IntoToolResult, Json};
/// use std::collections::BTreeMap;
///
/// let result = Json(BTreeMap::from([("port", 8080)])).into_tool_result();
/// assert_eq!(result.model_content(), r#"{"port":8080}"#);
/// assert_eq!(result.data["output"]["port"], 8080);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> ToolResult {
        // The text is serialized from `T` itself so struct fields keep their declared
        // order (a `Value` would sort them); the value for the host is built as well.
        match (
            serde_json::to_string(&self.0),
            serde_json::to_value(&self.0),
        ) {
            (Ok(text), Ok(value)) => ToolResult::ok_text(text).with_data("output", value),
            (Err(e), _) | (_, Err(e)) => ToolResult::err(
                codes::TOOL_FAILED,
                format!("the tool's result could not be serialized as JSON: {e}"),
            ),
        }
    }
}

/// The error result for a failed body: see [`IntoToolResult`] for the rules.
pub(crate) fn error_into_result<E: Display + 'static>(error: E) -> ToolResult {
    let any: &dyn Any = &error;
    if let Some(info) = any.downcast_ref::<ToolErrorInfo>() {
        return ToolResult::error("", "", info.clone());
    }
    if let Some(err) = any.downcast_ref::<Error>() {
        return ToolResult::error("", "", err.to_info());
    }
    let message = error.to_string();
    let message = if message.trim().is_empty() {
        "the tool failed without a message".to_owned()
    } else {
        message
    };
    ToolResult::err(codes::TOOL_FAILED, message)
}

/// Checks a preset value against a concrete parameter type (the macro records one
/// per `#[preset]` parameter).
type PresetCheck = fn(&Value) -> std::result::Result<(), String>;

fn check_as<T: DeserializeOwned>(value: &Value) -> std::result::Result<(), String> {
    T::deserialize(value).map(drop).map_err(|e| e.to_string())
}

/// One host-bound parameter: its name, how to check a value, and the bound value.
#[derive(Clone)]
struct PresetSlot {
    name: String,
    /// The parameter's schema (with the root `$defs`), checked on binding.
    schema: Value,
    check: Option<PresetCheck>,
    value: Option<Value>,
}

/// The non-generic half of every typed tool: the visible definition, the declared
/// presets and their bound values, and the parse rules. [`TypedTool`] and the tools
/// `#[tool]` generates both delegate to it, so they behave the same.
///
/// Not constructed directly: use [`TypedTool::builder`] or `#[tool]`.
#[doc(hidden)]
#[derive(Clone)]
pub struct TypedCore {
    definition: ToolDefinition,
    presets: Vec<PresetSlot>,
    concurrency_safe: bool,
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
            return Err(invalid(format!(
                "preset `{name}` does not fit its schema: {e}"
            )));
        }
        slot.value = Some(value);
        Ok(())
    }

    /// Checks raw model input without keeping the parsed value: the object shape, no
    /// preset keys, every preset bound, and a typed parse into `I`, which holds the
    /// model's fields and the presets (the builder's input type). Returns the raw
    /// input unchanged, so preset values never reach hooks, logs or permission checks.
    pub fn validate<I: DeserializeOwned>(
        &self,
        raw: Value,
    ) -> std::result::Result<Value, ToolErrorInfo> {
        self.parse::<I>(raw.clone())?;
        Ok(raw)
    }

    /// Parses input into `I` (the model's fields and the presets in one type).
    pub fn parse<I: DeserializeOwned>(&self, raw: Value) -> std::result::Result<I, ToolErrorInfo> {
        let mut object = self.model_object(raw)?;
        object.extend(self.preset_object()?);
        self.parse_model(object)
    }

    /// Like [`TypedCore::validate`] for a tool whose presets live in a separate type
    /// (what `#[tool]` generates): `I` holds only the model's fields, so a typo is
    /// never answered with a list of fields that includes the host's presets.
    pub fn validate_apart<I: DeserializeOwned>(
        &self,
        raw: Value,
    ) -> std::result::Result<Value, ToolErrorInfo> {
        let object = self.model_object(raw.clone())?;
        self.preset_object()?;
        self.parse_model::<I>(object)?;
        Ok(raw)
    }

    /// Parses the model's fields into `I` and the bound presets into `P`.
    pub fn parse_apart<I: DeserializeOwned, P: DeserializeOwned>(
        &self,
        raw: Value,
    ) -> std::result::Result<(I, P), ToolErrorInfo> {
        let object = self.model_object(raw)?;
        let presets = self.preset_object()?;
        let input = self.parse_model(object)?;
        // Every value was checked against its type when bound, so this only fails if
        // the tool was assembled by hand with mismatched types.
        let presets = serde_json::from_value(Value::Object(presets)).map_err(|e| {
            ToolErrorInfo::new(
                codes::INVALID_DEFINITION,
                format!("presets of `{}` do not fit: {e}", self.definition.name),
            )
        })?;
        Ok((input, presets))
    }

    fn parse_model<I: DeserializeOwned>(
        &self,
        object: Map<String, Value>,
    ) -> std::result::Result<I, ToolErrorInfo> {
        serde_json::from_value::<I>(Value::Object(object)).map_err(|e| {
            ToolErrorInfo::new(
                codes::INVALID_INPUT,
                format!("invalid input for `{}`: {e}", self.definition.name),
            )
        })
    }

    /// The model's input as an object, after the checks every call shares: it is an
    /// object (or `null`, which some providers send for a call without arguments)
    /// and it sets no preset.
    fn model_object(&self, raw: Value) -> std::result::Result<Map<String, Value>, ToolErrorInfo> {
        let tool = &self.definition.name;
        let object = match raw {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(ToolErrorInfo::new(
                    codes::INVALID_INPUT,
                    format!(
                        "input for `{tool}` must be a JSON object, not {}",
                        json_kind(&other)
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
        Ok(object)
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
fn split_presets(schema: &mut Value, names: &[String]) -> Vec<Value> {
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

/// Collects a typed tool's settings: the seed's parameter table for
/// `CallableTool`/`register_function`, in builder form. Finish with
/// [`TypedToolBuilder::build`].
#[derive(Debug, Clone)]
pub struct TypedToolBuilder {
    name: String,
    description: Option<String>,
    capabilities: BTreeSet<ToolCapability>,
    group: Option<String>,
    aliases: Vec<String>,
    deferred: bool,
    tags: Vec<String>,
    examples: Vec<Value>,
    version: Option<String>,
    deprecated: bool,
    deprecation_message: Option<String>,
    timeout: Option<Duration>,
    concurrency_safe: bool,
    metadata: Map<String, Value>,
    presets: Vec<PresetDecl>,
}

/// A preset as the builder records it: declared (by `#[tool]`) or bound (by the
/// builder's `.preset`).
#[derive(Clone)]
struct PresetDecl {
    name: String,
    check: Option<PresetCheck>,
    value: Option<std::result::Result<Value, String>>,
}

/// A preset value from the builder, or why it could not be serialized.
type PresetBinding = (String, std::result::Result<Value, String>);

impl fmt::Debug for PresetDecl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PresetDecl")
            .field("name", &self.name)
            .field("bound", &self.value.is_some())
            .finish_non_exhaustive()
    }
}

impl TypedToolBuilder {
    fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: None,
            capabilities: BTreeSet::new(),
            group: None,
            aliases: Vec::new(),
            deferred: false,
            tags: Vec::new(),
            examples: Vec::new(),
            version: None,
            deprecated: false,
            deprecation_message: None,
            timeout: None,
            concurrency_safe: true,
            metadata: Map::new(),
            presets: Vec::new(),
        }
    }

    /// What the tool does, for the model. Defaults to the tool name.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Declared side effects (default: none).
    #[must_use]
    pub fn capabilities(mut self, capabilities: impl IntoIterator<Item = ToolCapability>) -> Self {
        self.capabilities = capabilities.into_iter().collect();
        self
    }

    /// Catalog group (default `"core"`).
    #[must_use]
    pub fn group(mut self, group: impl Into<String>) -> Self {
        self.group = Some(group.into());
        self
    }

    /// Other names the executor accepts.
    #[must_use]
    pub fn aliases<S: Into<String>>(mut self, aliases: impl IntoIterator<Item = S>) -> Self {
        self.aliases = aliases.into_iter().map(Into::into).collect();
        self
    }

    /// Deferred disclosure: the schema is only sent after discovery (default false).
    #[must_use]
    pub fn deferred(mut self, deferred: bool) -> Self {
        self.deferred = deferred;
        self
    }

    /// Search tags, stored as `metadata.tags`.
    #[must_use]
    pub fn tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> Self {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// Example inputs, stored as `metadata.examples`.
    #[must_use]
    pub fn examples(mut self, examples: impl IntoIterator<Item = Value>) -> Self {
        self.examples = examples.into_iter().collect();
        self
    }

    /// Version, stored as `metadata.version`.
    #[must_use]
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// Marks the tool deprecated: the notice is appended to the description and
    /// `metadata.deprecated` is set. There is no compatibility shim.
    #[must_use]
    pub fn deprecated(mut self, deprecated: bool) -> Self {
        self.deprecated = deprecated;
        self
    }

    /// The text of the deprecation notice (used only when deprecated).
    #[must_use]
    pub fn deprecation_message(mut self, message: impl Into<String>) -> Self {
        self.deprecation_message = Some(message.into());
        self
    }

    /// Per-tool deadline cap.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Whether calls may overlap (default true; actual parallelism also needs a
    /// read-only tool).
    #[must_use]
    pub fn concurrency_safe(mut self, concurrency_safe: bool) -> Self {
        self.concurrency_safe = concurrency_safe;
        self
    }

    /// One extra metadata entry.
    #[must_use]
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Binds a host value to the input field `name` (the seed's `preset_kwargs`): the
    /// field disappears from the visible schema, the model may not set it, and every
    /// call receives this value. Checked against the field's schema in
    /// [`TypedToolBuilder::build`].
    #[must_use]
    pub fn preset(mut self, name: impl Into<String>, value: impl Serialize) -> Self {
        let name = name.into();
        let value = serde_json::to_value(value).map_err(|e| e.to_string());
        match self.presets.iter_mut().find(|p| p.name == name) {
            Some(slot) => slot.value = Some(value),
            None => self.presets.push(PresetDecl {
                name,
                check: None,
                value: Some(value),
            }),
        }
        self
    }

    /// Declares a preset of type `T` without a value (what `#[preset]` does).
    #[doc(hidden)]
    #[must_use]
    pub fn declare_preset<T: DeserializeOwned>(mut self, name: &str) -> Self {
        self.presets.push(PresetDecl {
            name: name.to_owned(),
            check: Some(check_as::<T>),
            value: None,
        });
        self
    }

    fn assemble<I: JsonSchema>(self) -> (TypedCore, Vec<PresetBinding>) {
        let mut description = self
            .description
            .filter(|d| !d.trim().is_empty())
            .unwrap_or_else(|| self.name.clone());
        let mut metadata = Map::new();
        if !self.tags.is_empty() {
            metadata.insert("tags".into(), self.tags.into());
        }
        if !self.examples.is_empty() {
            metadata.insert("examples".into(), self.examples.into());
        }
        if let Some(version) = self.version {
            metadata.insert("version".into(), version.into());
        }
        if self.deprecated {
            match &self.deprecation_message {
                Some(message) => description.push_str(&format!("\n\nDeprecated: {message}")),
                None => description.push_str("\n\nDeprecated."),
            }
            metadata.insert("deprecated".into(), true.into());
            if let Some(message) = self.deprecation_message {
                metadata.insert("deprecation_message".into(), message.into());
            }
        }
        metadata.extend(self.metadata);

        let mut schema = schema_for_input::<I>();
        let names: Vec<String> = self.presets.iter().map(|p| p.name.clone()).collect();
        let sub_schemas = split_presets(&mut schema, &names);

        let mut definition = ToolDefinition::new(self.name, description, schema)
            .with_capabilities(self.capabilities)
            .with_aliases(self.aliases)
            .with_deferred(self.deferred);
        if let Some(group) = self.group {
            definition = definition.with_group(group);
        }
        definition.timeout = self.timeout;
        definition.metadata = metadata;

        let mut bindings = Vec::new();
        let presets = self
            .presets
            .into_iter()
            .zip(sub_schemas)
            .map(|(decl, schema)| {
                if let Some(value) = decl.value {
                    bindings.push((decl.name.clone(), value));
                }
                PresetSlot {
                    name: decl.name,
                    schema,
                    check: decl.check,
                    value: None,
                }
            })
            .collect();
        let core = TypedCore {
            definition,
            presets,
            concurrency_safe: self.concurrency_safe,
        };
        (core, bindings)
    }

    /// The shared core without validation; `#[tool]` checked everything at compile
    /// time, and the registry validates the definition again on registration.
    #[doc(hidden)]
    pub fn into_core<I: JsonSchema>(self) -> TypedCore {
        self.assemble::<I>().0
    }

    /// Finishes the tool with its body: an async closure taking the parsed input and
    /// an owned clone of the call context.
    ///
    /// Fails with [`Error::InvalidDefinition`] when the definition breaks a rule
    /// (name, aliases, a schema whose root is not an object), when a preset names no
    /// input field, or when a preset value does not fit its field.
    pub fn build<I, F, Fut, R>(self, body: F) -> Result<TypedTool<I, F>>
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(I, ToolExecutionContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoToolResult,
    {
        let (mut core, bindings) = self.assemble::<I>();
        core.definition.validate()?;
        let properties: HashSet<String> = schema_for_input::<I>()
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        for (name, value) in bindings {
            let invalid = |reason: String| Error::InvalidDefinition {
                name: core.definition.name.clone(),
                reason,
            };
            if !properties.contains(&name) {
                return Err(invalid(format!(
                    "preset `{name}` is not a field of the input type"
                )));
            }
            let value = value
                .map_err(|e| invalid(format!("preset `{name}` could not be serialized: {e}")))?;
            core.bind_preset(&name, value)?;
        }
        Ok(TypedTool {
            core,
            body,
            input: PhantomData,
        })
    }
}

/// A tool with an explicit input type and a closure body: the seed's
/// `CallableTool(func, input_model=…)`. Build one with [`TypedTool::builder`].
///
/// The executor calls [`Tool::validate_input`] (a typed parse: bad input is
/// `INVALID_INPUT` before anything runs), then [`Tool::run`], which parses again into
/// `I` with the presets merged in and converts the closure's output with
/// [`IntoToolResult`].
pub struct TypedTool<I, F> {
    core: TypedCore,
    body: F,
    input: PhantomData<fn() -> I>,
}

impl<I, F> fmt::Debug for TypedTool<I, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedTool")
            .field("core", &self.core)
            .finish_non_exhaustive()
    }
}

impl<I, F: Clone> Clone for TypedTool<I, F> {
    fn clone(&self) -> Self {
        Self {
            core: self.core.clone(),
            body: self.body.clone(),
            input: PhantomData,
        }
    }
}

impl TypedTool<(), ()> {
    /// Starts a builder for a tool called `name` (checked by
    /// [`TypedToolBuilder::build`]).
    pub fn builder(name: impl Into<String>) -> TypedToolBuilder {
        TypedToolBuilder::new(name)
    }
}

impl<I, F> TypedTool<I, F> {
    /// Binds (or re-binds) a preset after building; see [`TypedToolBuilder::preset`].
    ///
    /// Fails with [`Error::InvalidDefinition`] for an unknown preset name or a value
    /// that does not fit the field's schema.
    pub fn preset(mut self, name: &str, value: impl Serialize) -> Result<Self> {
        self.core.bind_preset(name, value)?;
        Ok(self)
    }

    /// Names of presets that still have no value.
    pub fn unbound_presets(&self) -> Vec<&str> {
        self.core.unbound_presets()
    }
}

impl<I, F, Fut, R> Tool for TypedTool<I, F>
where
    I: DeserializeOwned + Send + 'static,
    F: Fn(I, ToolExecutionContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoToolResult,
{
    fn definition(&self) -> &ToolDefinition {
        self.core.definition()
    }

    fn validate_input(&self, raw: Value) -> std::result::Result<Value, ToolErrorInfo> {
        self.core.validate::<I>(raw)
    }

    fn run<'a>(&'a self, input: Value, ctx: &'a ToolExecutionContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match self.core.parse::<I>(input) {
                Ok(input) => (self.body)(input, ctx.clone()).await.into_tool_result(),
                Err(error) => ToolResult::error("", "", error),
            }
        })
    }

    fn is_concurrency_safe(&self) -> bool {
        self.core.concurrency_safe()
    }
}

/// Support for code that `#[tool]` generates. Not public API: no stability promise.
#[doc(hidden)]
pub mod support {
    use std::fmt::Display;
    use std::marker::PhantomData;

    use serde::Serialize;

    use super::{IntoToolResult, Json};
    use crate::error::codes;
    use crate::result::ToolResult;

    /// The error result for a body's `Err` (see [`IntoToolResult`] for the rules).
    pub fn error_result<E: Display + 'static>(error: E) -> ToolResult {
        super::error_into_result(error)
    }

    /// Chooses how a body's return value becomes a result, by autoref
    /// specialization: `(&&Kind::of(&v)).iris_result_kind().convert(v)` prefers
    /// [`IntoToolResult`] and falls back to `Serialize` (as [`Json`]).
    #[derive(Debug)]
    pub struct Kind<T>(PhantomData<T>);

    impl<T> Kind<T> {
        /// The kind of `value`'s type.
        pub fn of(_value: &T) -> Self {
            Kind(PhantomData)
        }
    }

    /// The value converts itself.
    #[derive(Debug)]
    pub struct IntoResultTag;

    /// The value is serialized as JSON.
    #[derive(Debug)]
    pub struct SerializeTag;

    /// First choice: the type implements [`IntoToolResult`].
    pub trait ViaIntoToolResult {
        /// The tag for this kind.
        fn iris_result_kind(&self) -> IntoResultTag {
            IntoResultTag
        }
    }
    impl<T: IntoToolResult> ViaIntoToolResult for &Kind<T> {}

    /// Second choice: the type implements `Serialize`.
    pub trait ViaSerialize {
        /// The tag for this kind.
        fn iris_result_kind(&self) -> SerializeTag {
            SerializeTag
        }
    }
    impl<T: Serialize> ViaSerialize for Kind<T> {}

    impl IntoResultTag {
        /// Converts with [`IntoToolResult`].
        pub fn convert<T: IntoToolResult>(self, value: T) -> ToolResult {
            value.into_tool_result()
        }
    }

    impl SerializeTag {
        /// Converts as [`Json`].
        pub fn convert<T: Serialize>(self, value: T) -> ToolResult {
            Json(value).into_tool_result()
        }
    }

    /// Runs a sync body on tokio's blocking pool (`execution_mode = "thread"`).
    ///
    /// A panic in the body is resumed on the caller, exactly as if the body had run
    /// inline, so the executor isolates it the same way.
    pub async fn run_blocking<R, F>(body: F) -> Result<R, ToolResult>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        match tokio::task::spawn_blocking(body).await {
            Ok(value) => Ok(value),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Err(ToolResult::err(
                codes::CANCELLED,
                "the blocking task was cancelled before it finished",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly on purpose.

    use super::*;
    use serde_json::json;

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

    #[test]
    fn error_results_keep_structured_codes() {
        let cases: Vec<(ToolResult, &str)> = vec![
            (
                error_into_result(ToolErrorInfo::new("MY_CODE", "mine")),
                "Error[MY_CODE]: mine",
            ),
            (
                error_into_result(Error::NotFound("x".into())),
                "Error[TOOL_NOT_FOUND]: tool `x` not found",
            ),
            (error_into_result("plain"), "Error[TOOL_FAILED]: plain"),
            (
                error_into_result(""),
                "Error[TOOL_FAILED]: the tool failed without a message",
            ),
        ];
        for (result, expect) in cases {
            assert!(result.is_error);
            assert_eq!(result.model_content(), expect);
        }
    }
}
