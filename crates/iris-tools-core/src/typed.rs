//! Typed tools: an explicit input type (a builder) and `schema_for_input`.
//!
//! A typed tool parses the model's JSON into a Rust type before its body runs, so the
//! body never re-checks its arguments. Two front ends share one code path here:
//!
//! - [`TypedTool::builder`] makes a dynamic tool from a closure and an explicit input
//!   type;
//! - the `#[tool]` attribute (feature `macros`) generates an input type from a
//!   function's parameters and uses the same machinery underneath.
//!
//! Both produce schemas with [`schema_for_input`] (JSON Schema 2020-12, root
//! `"type": "object"`, nested types as local `$defs`, no `$schema`/`title` noise), turn
//! parse failures into `INVALID_INPUT`, and turn the body's return value into a
//! [`ToolOutput`] through [`IntoToolOutput`].
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
use std::fmt::Display;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{Error, ToolErrorInfo, codes};
use crate::result::{ContentBlock, ToolOutput};

/// The JSON Schema of `T` as a tool input (the Python reference's
/// `schema_from_pydantic_model`).
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

/// Turns what a tool body returns into a [`ToolOutput`].
///
/// | returned value | result |
/// |---|---|
/// | `String`, `&str`, `Cow<str>` | the text as the body (no block when empty) |
/// | `()` | an empty body |
/// | [`ToolOutput`] | as is |
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
/// use iris_tools_core::typed::{IntoToolOutput, Json};
///
/// assert_eq!("done".into_tool_output().model_content(), "done");
/// assert_eq!(Json(vec![1, 2]).into_tool_output().model_content(), "[1,2]");
/// let failed: Result<String, std::io::Error> = Err(std::io::Error::other("disk full"));
/// assert_eq!(failed.into_tool_output().model_content(), "Error[TOOL_FAILED]: disk full");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be turned into a tool result",
    label = "not a tool result",
    note = "return String, &str, (), ToolOutput, serde_json::Value, ContentBlock(s), \
            Json<T> for any `T: Serialize`, Option<_> or Result<_, E: Display>"
)]
pub trait IntoToolOutput {
    /// Converts the value. Never panics.
    fn into_tool_output(self) -> ToolOutput;
}

impl IntoToolOutput for ToolOutput {
    fn into_tool_output(self) -> ToolOutput {
        self
    }
}

impl IntoToolOutput for String {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::text(self)
    }
}

impl IntoToolOutput for &str {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::text(self)
    }
}

impl IntoToolOutput for Cow<'_, str> {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::text(self.into_owned())
    }
}

impl IntoToolOutput for () {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::default()
    }
}

impl IntoToolOutput for Value {
    fn into_tool_output(self) -> ToolOutput {
        let text = self.to_string();
        ToolOutput::text(text).with_data("output", self)
    }
}

impl IntoToolOutput for ContentBlock {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::new(vec![self])
    }
}

impl IntoToolOutput for Vec<ContentBlock> {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::new(self)
    }
}

impl<T: IntoToolOutput> IntoToolOutput for Option<T> {
    fn into_tool_output(self) -> ToolOutput {
        self.map_or_else(ToolOutput::default, IntoToolOutput::into_tool_output)
    }
}

impl<T: IntoToolOutput, E: Display + 'static> IntoToolOutput for Result<T, E> {
    fn into_tool_output(self) -> ToolOutput {
        match self {
            Ok(value) => value.into_tool_output(),
            Err(error) => error_into_result(error),
        }
    }
}

/// Marks a `Serialize` value as a JSON tool result: compact JSON text as the body and
/// the value itself under `data.output` for the host.
///
/// ```
/// use iris_tools_core::typed::{IntoToolOutput, Json};
/// use std::collections::BTreeMap;
///
/// let result = Json(BTreeMap::from([("port", 8080)])).into_tool_output();
/// assert_eq!(result.model_content(), r#"{"port":8080}"#);
/// assert_eq!(result.data["output"]["port"], 8080);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoToolOutput for Json<T> {
    fn into_tool_output(self) -> ToolOutput {
        // The text is serialized from `T` itself so struct fields keep their declared
        // order (a `Value` would sort them); the value for the host is built as well.
        match (
            serde_json::to_string(&self.0),
            serde_json::to_value(&self.0),
        ) {
            (Ok(text), Ok(value)) => ToolOutput::text(text).with_data("output", value),
            (Err(e), _) | (_, Err(e)) => ToolOutput::err(
                codes::TOOL_FAILED,
                format!("the tool's result could not be serialized as JSON: {e}"),
            ),
        }
    }
}

/// The error result for a failed body: see [`IntoToolOutput`] for the rules.
pub(crate) fn error_into_result<E: Display + 'static>(error: E) -> ToolOutput {
    let any: &dyn Any = &error;
    if let Some(info) = any.downcast_ref::<ToolErrorInfo>() {
        return ToolOutput::error(info.clone());
    }
    if let Some(err) = any.downcast_ref::<Error>() {
        return ToolOutput::error(err.to_info());
    }
    let message = error.to_string();
    let message = if message.trim().is_empty() {
        "the tool failed without a message".to_owned()
    } else {
        message
    };
    ToolOutput::err(codes::TOOL_FAILED, message)
}

mod builder;
mod input;
#[doc(hidden)]
pub mod support;

pub use builder::{TypedTool, TypedToolBuilder};
#[doc(hidden)]
pub use input::TypedCore;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly on purpose.

    use super::*;

    #[test]
    fn error_results_keep_structured_codes() {
        let cases: Vec<(ToolOutput, &str)> = vec![
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
            assert!(result.is_error());
            assert_eq!(result.model_content(), expect);
        }
    }
}
