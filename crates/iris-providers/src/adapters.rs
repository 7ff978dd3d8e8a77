//! Pure adapters from provider-neutral [`ToolSpec`]s to the `tools` entries of each
//! provider's request.
//!
//! A model request carries provider-neutral [`ToolSpec`]s; wrapping them in a provider's
//! protocol is the provider layer's job, so a tool never knows whether it is sent as Chat
//! Completions or Responses. The functions here do that wrapping and nothing else: no
//! I/O, no state, the same output for the same input.
//!
//! | function | provider shape |
//! |---|---|
//! | [`openai_chat`] | Chat Completions: `{"type": "function", "function": {"name", "description", "parameters", "strict"?}}` |
//! | [`openai_responses`] | Responses: `{"type": "function", "name", "description", "parameters", "strict"}` |
//! | [`anthropic_messages`] | Messages: `{"name", "description", "input_schema"}` |
//! | [`gemini_function_declarations`] | `generateContent`: one `Tool` `{"functionDeclarations": [{"name", "description", "parameters"?}]}` |
//! | [`to_provider`] | any of the above, as the request's `tools` list |
//!
//! Schemas: OpenAI and Anthropic take JSON Schema as is. OpenAI strict mode
//! ([`Strict::Yes`]) takes a subset, produced by [`to_strict_schema`]; pair it with
//! [`strip_strict_nulls`] on the arguments that come back. Gemini's `parameters` takes an
//! OpenAPI-3.0 subset, produced by [`to_gemini_schema`]. A schema a provider cannot
//! express fails with [`Error::UnsupportedSchema`] (code `UNSUPPORTED_SCHEMA`) naming the
//! tool, the provider and the JSON Pointer of the offending place.
//!
//! Sources relied on (checked against the providers' published references): OpenAI
//! function calling and Structured Outputs guides ("Supported schemas") and the API
//! reference for Chat Completions `tools[].function` and Responses `FunctionTool`
//! (whose `strict` defaults to `true`, hence always sent); Anthropic's tool-use guide
//! (`input_schema` is a JSON Schema object); Gemini's API reference for `Tool`,
//! `FunctionDeclaration` and `Schema`.
//!
//! ```
//! use iris_tools_core::ToolSpec;
//! use iris_providers::adapters::{Provider, Strict, to_provider};
//! use serde_json::json;
//!
//! let specs = vec![ToolSpec {
//!     name: "read_file".into(),
//!     description: "Read a text file from the workspace.".into(),
//!     input_schema: json!({
//!         "type": "object",
//!         "properties": {"file_path": {"type": "string"}},
//!         "required": ["file_path"]
//!     }),
//! }];
//! let tools = to_provider(&specs, Provider::OpenAiResponses, Strict::Yes)?;
//! assert_eq!(tools[0]["name"], "read_file");
//! assert_eq!(tools[0]["strict"], true);
//! assert_eq!(tools[0]["parameters"]["additionalProperties"], false);
//! # Ok::<(), iris_providers::Error>(())
//! ```

mod gemini;
mod schema;
mod strict;

use serde_json::{Value, json};

use crate::error::{Error, Result};
use iris_tools_core::ToolSpec;

pub use gemini::{GeminiSchemaError, to_gemini_schema};
pub use schema::SchemaIssue;
pub use strict::{StrictSchemaError, strip_strict_nulls, to_strict_schema};

/// Whether OpenAI strict mode is requested.
///
/// Only the OpenAI adapters read it; Anthropic and Gemini ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strict {
    /// `strict: true`: every property required, optionals nullable, no extra keys
    /// (see [`to_strict_schema`]).
    Yes,
    /// Schemas pass through unchanged.
    #[default]
    No,
}

/// A provider request shape [`to_provider`] can produce.
///
/// ```
/// use iris_providers::adapters::Provider;
/// assert_eq!(Provider::Gemini.to_string(), "gemini");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI Chat Completions (`/v1/chat/completions`), see [`openai_chat`].
    OpenAiChat,
    /// OpenAI Responses (`/v1/responses`), see [`openai_responses`].
    OpenAiResponses,
    /// Anthropic Messages (`/v1/messages`), see [`anthropic_messages`].
    AnthropicMessages,
    /// Google Gemini `generateContent`, see [`gemini_function_declarations`].
    Gemini,
}

impl Provider {
    /// The stable name used in errors and logs, e.g. `"openai-chat"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAiChat => "openai-chat",
            Provider::OpenAiResponses => "openai-responses",
            Provider::AnthropicMessages => "anthropic-messages",
            Provider::Gemini => "gemini",
        }
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The value of a request's `tools` field for `provider`.
///
/// OpenAI and Anthropic get one entry per spec. Gemini gets a single `Tool` object
/// holding every declaration, or an empty list when there are no specs (a `Tool` with no
/// declarations is not a useful request). `strict` only affects the OpenAI providers.
///
/// ```
/// use iris_tools_core::ToolSpec;
/// use iris_providers::adapters::{Provider, Strict, to_provider};
/// use serde_json::json;
///
/// let spec = ToolSpec {
///     name: "now".into(),
///     description: "Current UTC time.".into(),
///     input_schema: json!({"type": "object", "properties": {}}),
/// };
/// let tools = to_provider(&[spec], Provider::Gemini, Strict::No)?;
/// assert_eq!(tools, vec![json!({"functionDeclarations": [
///     {"name": "now", "description": "Current UTC time."}
/// ]})]);
/// # Ok::<(), iris_providers::Error>(())
/// ```
pub fn to_provider(specs: &[ToolSpec], provider: Provider, strict: Strict) -> Result<Vec<Value>> {
    match provider {
        Provider::OpenAiChat => openai_chat(specs, strict),
        Provider::OpenAiResponses => openai_responses(specs, strict),
        Provider::AnthropicMessages => Ok(anthropic_messages(specs)),
        Provider::Gemini if specs.is_empty() => Ok(Vec::new()),
        Provider::Gemini => Ok(vec![gemini_function_declarations(specs)?]),
    }
}

/// OpenAI Chat Completions `tools` entries.
///
/// Each spec becomes `{"type": "function", "function": {"name", "description",
/// "parameters"}}`. With [`Strict::Yes`] the parameters go through [`to_strict_schema`]
/// and `"strict": true` is added; with [`Strict::No`] the schema is sent unchanged and
/// `strict` is left out (the API's default is `false`).
///
/// Errors: [`Error::UnsupportedSchema`] when the root is not an object schema, or (strict)
/// when [`to_strict_schema`] refuses the schema.
///
/// ```
/// use iris_tools_core::ToolSpec;
/// use iris_providers::adapters::{Strict, openai_chat};
/// use serde_json::json;
///
/// let spec = ToolSpec {
///     name: "get_weather".into(),
///     description: "Current weather for a city.".into(),
///     input_schema: json!({
///         "type": "object",
///         "properties": {"city": {"type": "string"}},
///         "required": ["city"]
///     }),
/// };
/// let tools = openai_chat(&[spec], Strict::Yes)?;
/// assert_eq!(tools[0], json!({"type": "function", "function": {
///     "name": "get_weather",
///     "description": "Current weather for a city.",
///     "parameters": {
///         "type": "object",
///         "properties": {"city": {"type": "string"}},
///         "required": ["city"],
///         "additionalProperties": false
///     },
///     "strict": true
/// }}));
/// # Ok::<(), iris_providers::Error>(())
/// ```
pub fn openai_chat(specs: &[ToolSpec], strict: Strict) -> Result<Vec<Value>> {
    specs
        .iter()
        .map(|spec| {
            let parameters = openai_parameters(spec, strict, Provider::OpenAiChat)?;
            let mut function = json!({
                "name": spec.name,
                "description": spec.description,
                "parameters": parameters,
            });
            if strict == Strict::Yes {
                function["strict"] = Value::Bool(true);
            }
            Ok(json!({"type": "function", "function": function}))
        })
        .collect()
}

/// OpenAI Responses API function tools.
///
/// Each spec becomes the flat `{"type": "function", "name", "description", "parameters",
/// "strict"}`. `strict` is always written, because the Responses API treats a missing
/// `strict` as `true`: [`Strict::No`] must say `false` explicitly.
///
/// Errors: as [`openai_chat`].
///
/// ```
/// use iris_tools_core::ToolSpec;
/// use iris_providers::adapters::{Strict, openai_responses};
/// use serde_json::json;
///
/// let spec = ToolSpec {
///     name: "get_weather".into(),
///     description: "Current weather for a city.".into(),
///     input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
/// };
/// let tools = openai_responses(&[spec], Strict::No)?;
/// assert_eq!(tools[0]["type"], "function");
/// assert_eq!(tools[0]["strict"], false);
/// assert_eq!(tools[0]["parameters"]["properties"]["city"]["type"], "string");
/// # Ok::<(), iris_providers::Error>(())
/// ```
pub fn openai_responses(specs: &[ToolSpec], strict: Strict) -> Result<Vec<Value>> {
    specs
        .iter()
        .map(|spec| {
            let parameters = openai_parameters(spec, strict, Provider::OpenAiResponses)?;
            Ok(json!({
                "type": "function",
                "name": spec.name,
                "description": spec.description,
                "parameters": parameters,
                "strict": strict == Strict::Yes,
            }))
        })
        .collect()
}

/// Anthropic Messages `tools` entries: `{"name", "description", "input_schema"}`.
///
/// Anthropic takes JSON Schema as is (including `$defs`, `$ref` and recursion), so the
/// schema is passed through unchanged and nothing can fail here; the root-object rule is
/// already enforced when a [`iris_tools_core::ToolDefinition`] is built.
///
/// ```
/// use iris_tools_core::ToolSpec;
/// use iris_providers::adapters::anthropic_messages;
/// use serde_json::json;
///
/// let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
/// let spec = ToolSpec {
///     name: "get_weather".into(),
///     description: "Current weather for a city.".into(),
///     input_schema: schema.clone(),
/// };
/// assert_eq!(
///     anthropic_messages(&[spec]),
///     vec![json!({
///         "name": "get_weather",
///         "description": "Current weather for a city.",
///         "input_schema": schema
///     })]
/// );
/// ```
pub fn anthropic_messages(specs: &[ToolSpec]) -> Vec<Value> {
    specs
        .iter()
        .map(|spec| {
            json!({
                "name": spec.name,
                "description": spec.description,
                "input_schema": spec.input_schema,
            })
        })
        .collect()
}

/// One Gemini `Tool`: `{"functionDeclarations": [{"name", "description", "parameters"}]}`.
///
/// Parameters use `FunctionDeclaration.parameters` (Gemini's OpenAPI-3.0 `Schema`
/// subset), produced by [`to_gemini_schema`]; see there for why that field rather than
/// `parametersJsonSchema`, and what is inlined, renamed and dropped. A tool without
/// arguments gets no `parameters` at all: Gemini rejects an `OBJECT` with empty
/// `properties`.
///
/// Errors: [`Error::UnsupportedSchema`] when [`to_gemini_schema`] refuses a schema
/// (recursive types, maps, non-string enums...).
///
/// ```
/// use iris_tools_core::ToolSpec;
/// use iris_providers::adapters::gemini_function_declarations;
/// use serde_json::json;
///
/// let spec = ToolSpec {
///     name: "get_weather".into(),
///     description: "Current weather for a city.".into(),
///     input_schema: json!({
///         "type": "object",
///         "properties": {"city": {"type": "string"}},
///         "required": ["city"]
///     }),
/// };
/// assert_eq!(
///     gemini_function_declarations(&[spec])?,
///     json!({"functionDeclarations": [{
///         "name": "get_weather",
///         "description": "Current weather for a city.",
///         "parameters": {
///             "type": "OBJECT",
///             "properties": {"city": {"type": "STRING"}},
///             "required": ["city"]
///         }
///     }]})
/// );
/// # Ok::<(), iris_providers::Error>(())
/// ```
pub fn gemini_function_declarations(specs: &[ToolSpec]) -> Result<Value> {
    let declarations = specs
        .iter()
        .map(|spec| {
            let parameters = to_gemini_schema(&spec.input_schema)
                .map_err(|e| unsupported(spec, Provider::Gemini, &e))?;
            let mut declaration = json!({"name": spec.name, "description": spec.description});
            if parameters.get("properties").is_some() {
                declaration["parameters"] = parameters;
            }
            Ok(declaration)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(json!({ "functionDeclarations": declarations }))
}

/// The `parameters` value of an OpenAI function tool.
fn openai_parameters(spec: &ToolSpec, strict: Strict, provider: Provider) -> Result<Value> {
    match strict {
        Strict::Yes => {
            to_strict_schema(&spec.input_schema).map_err(|e| unsupported(spec, provider, &e))
        }
        Strict::No => {
            // Function parameters are named arguments: OpenAI requires an object schema.
            let is_object = spec.input_schema.get("type").and_then(Value::as_str) == Some("object");
            if !is_object {
                let reason = format!("at `#`: {}", SchemaIssue::RootNotObject);
                return Err(unsupported(spec, provider, &reason));
            }
            Ok(spec.input_schema.clone())
        }
    }
}

/// Wraps a conversion failure in the crate error, naming tool and provider.
fn unsupported(spec: &ToolSpec, provider: Provider, reason: &dyn std::fmt::Display) -> Error {
    Error::UnsupportedSchema {
        tool: spec.name.clone(),
        provider: provider.as_str().to_owned(),
        reason: reason.to_string(),
    }
}
