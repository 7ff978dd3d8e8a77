//! Pure adapters from [`ToolSpec`] to provider request shapes.

use serde_json::{Value, json};

use crate::error::Result;
use crate::spec::ToolSpec;

/// Whether OpenAI strict mode is requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strict {
    /// `strict: true`: every property required, optionals nullable, no extra keys.
    Yes,
    /// Schemas pass through unchanged.
    #[default]
    No,
}

/// OpenAI Chat Completions `tools` entries.
pub fn openai_chat(specs: &[ToolSpec], strict: Strict) -> Result<Vec<Value>> {
    let _ = strict;
    Ok(specs
        .iter()
        .map(|s| json!({"type": "function", "function": {"name": s.name, "description": s.description, "parameters": s.input_schema}}))
        .collect())
}
