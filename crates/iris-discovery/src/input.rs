//! The model's input to `tool_search` and the shape of its output.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use iris_tools_core::{ToolErrorInfo, codes};

/// The longest tool description `tool_search` returns, in characters.
pub const SUMMARY_DESCRIPTION_CHARS: usize = 240;

/// What the model sends to `tool_search` (the Python reference's `ToolSearchInput`).
///
/// `queries` holds at least one intent; each is trimmed and must not be blank.
/// `include_groups`: `None` does not narrow the groups; an empty list allows no
/// group (every selection is then `null`).
///
/// ```
/// use iris_discovery::ToolSearchInput;
/// use serde_json::json;
///
/// let input = ToolSearchInput::parse(json!({"queries": ["  open a ticket "]})).unwrap();
/// assert_eq!(input.queries, ["open a ticket"]);
/// assert_eq!(input.include_groups, None);
///
/// let err = ToolSearchInput::parse(json!({"queries": ["ok", "   "]})).unwrap_err();
/// assert_eq!(err.code, "INVALID_INPUT");
/// assert_eq!(err.details["pointer"], "/queries/1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSearchInput {
    /// Independent intents, one tool each at most. Trimmed, non-empty.
    pub queries: Vec<String>,
    /// Groups to search in; `None` for every group, `[]` for none.
    #[serde(default)]
    pub include_groups: Option<Vec<String>>,
}

impl ToolSearchInput {
    /// A typed input; queries are trimmed by [`ToolSearchInput::parse`], not here.
    pub fn new<S: Into<String>>(queries: impl IntoIterator<Item = S>) -> Self {
        Self {
            queries: queries.into_iter().map(Into::into).collect(),
            include_groups: None,
        }
    }

    /// Limits the search to these groups (`[]` allows none).
    #[must_use]
    pub fn include_groups<S: Into<String>>(mut self, groups: impl IntoIterator<Item = S>) -> Self {
        self.include_groups = Some(groups.into_iter().map(Into::into).collect());
        self
    }

    /// Parses raw model input: the typed shape, then the rules the schema cannot
    /// say (no blank query after trimming). Queries come back trimmed.
    ///
    /// # Errors
    /// `INVALID_INPUT` with `details.pointer` at the offending place.
    pub fn parse(raw: Value) -> Result<Self, ToolErrorInfo> {
        let input: Self = serde_json::from_value(raw).map_err(|e| {
            ToolErrorInfo::new(
                codes::INVALID_INPUT,
                format!("tool_search input does not have the expected shape: {e}"),
            )
            .with_detail("pointer", "")
        })?;
        input.checked()
    }

    /// The same input with every query trimmed, or the first rule it breaks.
    ///
    /// # Errors
    /// `INVALID_INPUT` for no query or a blank one.
    pub fn checked(mut self) -> Result<Self, ToolErrorInfo> {
        if self.queries.is_empty() {
            return Err(ToolErrorInfo::new(
                codes::INVALID_INPUT,
                "`queries` needs at least one query: one intent in words per tool you need",
            )
            .with_detail("pointer", "/queries"));
        }
        for (i, query) in self.queries.iter_mut().enumerate() {
            let trimmed = query.trim();
            if trimmed.is_empty() {
                return Err(ToolErrorInfo::new(
                    codes::INVALID_INPUT,
                    format!("`queries[{i}]` is blank: each query describes one intent in words"),
                )
                .with_detail("pointer", format!("/queries/{i}")));
            }
            if trimmed.len() != query.len() {
                *query = trimmed.to_owned();
            }
        }
        Ok(self)
    }

    /// The group filter: `None` for every group, an empty set for none.
    pub fn group_filter(&self) -> Option<BTreeSet<String>> {
        self.include_groups
            .as_ref()
            .map(|groups| groups.iter().cloned().collect())
    }

    /// The JSON Schema the model sees.
    pub fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "queries": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": "string", "minLength": 1},
                    "description": "Independent intents in plain words, one tool each, \
                                    e.g. [\"open a ticket for the login bug\"]."
                },
                "include_groups": {
                    "type": ["array", "null"],
                    "items": {"type": "string"},
                    "default": null,
                    "description": "Tool groups to search, e.g. [\"github\"]; null searches \
                                    every group, [] allows none."
                }
            },
            "required": ["queries"],
            "additionalProperties": false
        })
    }
}

/// What one query selected: a deferred tool's name, or `None` (`null`) for no match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolSelection {
    /// The query, trimmed.
    pub query: String,
    /// The selected tool, or `None` when no allowed deferred tool fits.
    pub tool: Option<String>,
}

/// A selected tool as `tool_search` describes it: name, short description, group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolSummary {
    /// Canonical name.
    pub name: String,
    /// The description, at most [`SUMMARY_DESCRIPTION_CHARS`] characters.
    pub description: String,
    /// The tool's group.
    pub group: String,
}

/// The `data` of a `tool_search` result.
///
/// `selections` follow the input order; `tools` lists each selected tool once, in the
/// order of its first selection.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ToolSearchOutput {
    /// One selection per query, in input order.
    pub selections: Vec<ToolSelection>,
    /// The selected tools, deduplicated by first hit.
    pub tools: Vec<ToolSummary>,
}

/// A description cut to at most [`SUMMARY_DESCRIPTION_CHARS`] characters, ending in
/// `…` when shortened. Surrounding whitespace is removed first.
///
/// ```
/// use iris_discovery::summary_description;
/// assert_eq!(summary_description(" Read a file. "), "Read a file.");
/// let short = summary_description(&"é".repeat(300));
/// assert_eq!(short.chars().count(), 240);
/// assert!(short.ends_with('…'));
/// ```
pub fn summary_description(description: &str) -> String {
    let description = description.trim();
    if description.chars().count() <= SUMMARY_DESCRIPTION_CHARS {
        return description.to_owned();
    }
    let mut short: String = description
        .chars()
        .take(SUMMARY_DESCRIPTION_CHARS - 1)
        .collect();
    short.push('…');
    short
}
