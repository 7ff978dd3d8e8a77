//! `iris schema`: one tool's schema in a provider's request shape.

#[allow(clippy::wildcard_imports)] // The shell's shared types and imports.
use crate::*;

pub(crate) fn schema(env: &ToolEnvironment, name: &str, format: Format) -> Result<u8, Failure> {
    let tool = env.registry.get(name).map_err(|_| not_found(env, name))?;
    let spec = tool.definition().to_spec();
    let specs = [spec];
    let converted = |provider, strict| {
        to_provider(&specs, provider, strict).map_err(|e| Failure::new(1, e.code(), e.to_string()))
    };
    let value = match format {
        Format::Neutral => serde_json::to_value(&specs[0]).unwrap_or_default(),
        Format::Openai => first(converted(Provider::OpenAiChat, Strict::No)?),
        Format::OpenaiStrict => first(converted(Provider::OpenAiChat, Strict::Yes)?),
        Format::Responses => first(converted(Provider::OpenAiResponses, Strict::No)?),
        Format::Anthropic => first(converted(Provider::AnthropicMessages, Strict::No)?),
        Format::Gemini => first(converted(Provider::Gemini, Strict::No)?),
    };
    // The schema is JSON with or without --json.
    print_json(&value);
    Ok(0)
}

pub(crate) fn first(values: Vec<Value>) -> Value {
    values.into_iter().next().unwrap_or(Value::Null)
}
