//! [`ToolSpec`]: the provider-neutral tool description a model request carries.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Name, description and input schema of one tool, before any provider wrapping.
///
/// The provider adapters of `iris-providers` (`iris_providers::adapters`) turn a list of
/// specs into the shape each API expects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Canonical tool name.
    pub name: String,
    /// Description for the model.
    pub description: String,
    /// JSON Schema of the input (root `"type": "object"`).
    pub input_schema: Value,
}
