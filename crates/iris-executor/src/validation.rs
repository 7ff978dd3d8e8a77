//! Input validation against a tool's JSON Schema (2020-12), compiled once per tool.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use serde_json::{Value, json};

use iris_tools_core::Tool;
use iris_tools_core::{ToolErrorInfo, codes};

/// Longest violation message kept, in characters. Messages quote the offending value,
/// which may be arbitrarily large model output.
const MAX_VIOLATION_MESSAGE_CHARS: usize = 200;
/// Most violations listed in one error; the count of the rest is reported.
const MAX_VIOLATIONS: usize = 50;

/// A compiled validator, or the reason the schema does not compile.
type Compiled = Result<jsonschema::Validator, ToolErrorInfo>;

struct Entry {
    /// Address of the tool object the entry was compiled for. The registry keeps every
    /// tool alive and never removes one, so the address identifies the tool.
    tool_addr: usize,
    compiled: Compiled,
}

/// Compiled validators keyed by canonical tool name.
#[derive(Default)]
pub(crate) struct SchemaCache {
    entries: RwLock<HashMap<String, Arc<Entry>>>,
}

impl std::fmt::Debug for SchemaCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let len = self
            .entries
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("SchemaCache")
            .field("compiled", &len)
            .finish()
    }
}

fn tool_addr(tool: &Arc<dyn Tool>) -> usize {
    Arc::as_ptr(tool).cast::<()>().addr()
}

impl SchemaCache {
    /// Checks `input` against the tool's schema. Every violation is listed with its
    /// JSON pointer; a schema that does not compile is an `INVALID_DEFINITION` error.
    pub(crate) fn validate(
        &self,
        tool: &Arc<dyn Tool>,
        input: &Value,
    ) -> Result<(), ToolErrorInfo> {
        let entry = self.entry(tool);
        let validator = entry.compiled.as_ref().map_err(Clone::clone)?;
        if validator.is_valid(input) {
            return Ok(());
        }
        let mut violations = Vec::new();
        let mut total = 0usize;
        for error in validator.iter_errors(input) {
            total += 1;
            if violations.len() < MAX_VIOLATIONS {
                violations.push(json!({
                    "pointer": error.instance_path().as_str(),
                    "keyword": error.kind().keyword(),
                    "message": clip(&error.to_string()),
                }));
            }
        }
        let summary = violations
            .iter()
            .take(3)
            .map(|v| {
                let pointer = v["pointer"].as_str().unwrap_or_default();
                let at = if pointer.is_empty() {
                    "(root)"
                } else {
                    pointer
                };
                format!("{at}: {}", v["message"].as_str().unwrap_or_default())
            })
            .collect::<Vec<_>>()
            .join("; ");
        let more = if total > 3 {
            format!("; and {} more", total - 3)
        } else {
            String::new()
        };
        let name = &tool.definition().name;
        let noun = if total == 1 {
            "violation"
        } else {
            "violations"
        };
        Err(ToolErrorInfo::new(
            codes::INVALID_INPUT,
            format!(
                "input for `{name}` does not match its schema ({total} {noun}): {summary}{more}"
            ),
        )
        .with_detail("violations", Value::Array(violations))
        .with_detail("violation_count", total))
    }

    fn entry(&self, tool: &Arc<dyn Tool>) -> Arc<Entry> {
        let name = &tool.definition().name;
        let addr = tool_addr(tool);
        if let Some(entry) = self
            .entries
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .filter(|e| e.tool_addr == addr)
        {
            return Arc::clone(entry);
        }
        // Compile outside the lock: two racing first calls may both compile, which is
        // cheaper than serialising every first call of every tool behind one writer.
        let entry = Arc::new(Entry {
            tool_addr: addr,
            compiled: compile(tool),
        });
        self.entries
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.clone(), Arc::clone(&entry));
        entry
    }
}

fn compile(tool: &Arc<dyn Tool>) -> Compiled {
    let def = tool.definition();
    jsonschema::draft202012::new(&def.input_schema).map_err(|e| {
        ToolErrorInfo::new(
            codes::INVALID_DEFINITION,
            format!(
                "the input schema of `{}` does not compile: {}",
                def.name,
                clip(&e.to_string())
            ),
        )
        .with_detail("schema_pointer", e.schema_path().as_str())
    })
}

fn clip(message: &str) -> String {
    if message.chars().count() <= MAX_VIOLATION_MESSAGE_CHARS {
        return message.to_owned();
    }
    let mut out: String = message.chars().take(MAX_VIOLATION_MESSAGE_CHARS).collect();
    out.push('…');
    out
}
