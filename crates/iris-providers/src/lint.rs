//! Tool-design lint: the rules every tool the model sees must follow.
//!
//! | rule | what it checks |
//! |---|---|
//! | [`LintRule::NameMeaning`] | the name carries the meaning: at least two words (`verb_object`) and not a generic word |
//! | [`LintRule::DescriptionShape`] | description is 2–3 lines (What / When / optional Precondition), 60–200 characters |
//! | [`LintRule::DescriptionWhen`] | the second line says when to use it (and the alternative), e.g. `Use for X; use y for Z.` |
//! | [`LintRule::DescriptionNoise`] | no bold, no filler words, no output schema dump |
//! | [`LintRule::EnglishOnly`] | descriptions contain no non-Latin letters |
//! | [`LintRule::OptionalDefault`] | every optional property declares a `default` |
//! | [`LintRule::ParamDescription`] | every property has a description; object/array/enum ones at least 20 characters |
//!
//! The checks are heuristics for the rules' wording: they never reject a tool at
//! registration; `iris lint` and tests report them.
//!
//! ```
//! use iris_providers::lint::{lint_definition, LintRule};
//! use iris_tools_core::ToolDefinition;
//! use serde_json::json;
//!
//! let def = ToolDefinition::new(
//!     "read_config_key",
//!     "Read one key from the application config file.\n\
//!      Use for a single setting; use read_file for whole files.",
//!     json!({"type": "object",
//!            "properties": {"key": {"type": "string", "description": "Dotted key path, e.g. server.port"}},
//!            "required": ["key"]}),
//! );
//! assert!(lint_definition(&def).is_empty());
//!
//! let vague = ToolDefinition::new("run", "Runs.", json!({"type": "object"}));
//! let rules: Vec<LintRule> = lint_definition(&vague).iter().map(|f| f.rule).collect();
//! assert!(rules.contains(&LintRule::NameMeaning));
//! assert!(rules.contains(&LintRule::DescriptionShape));
//! ```

use serde::Serialize;
use serde_json::Value;

use iris_tools_core::ToolDefinition;

/// Minimum description length in characters.
pub const MIN_DESCRIPTION_CHARS: usize = 60;
/// Maximum description length in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 200;
/// Minimum description length of an object/array/enum parameter.
pub const MIN_COMPLEX_PARAM_DESCRIPTION_CHARS: usize = 20;

const GENERIC_NAMES: &[&str] = &[
    "tool", "run", "do", "execute", "exec", "handle", "process", "action", "helper", "util",
    "utils", "func", "function", "call", "main", "misc", "data", "get", "set", "go",
];
const FILLER: &[&str] = &[
    "this tool",
    "simply",
    "just ",
    "very ",
    "powerful",
    "easily",
    "basically",
    "please note",
];

/// Which tool-design rule a finding breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LintRule {
    /// The name must carry the meaning on its own.
    NameMeaning,
    /// Description: 2–3 lines, 60–200 characters.
    DescriptionShape,
    /// Description: the second line says when to use it.
    DescriptionWhen,
    /// Description: no bold, filler or schema dumps.
    DescriptionNoise,
    /// Descriptions in English only.
    EnglishOnly,
    /// Optional fields declare a default.
    OptionalDefault,
    /// Parameter descriptions present and long enough for complex types.
    ParamDescription,
}

impl LintRule {
    /// Stable kebab-case identifier, used by `iris lint --json`.
    pub fn as_str(self) -> &'static str {
        match self {
            LintRule::NameMeaning => "name-meaning",
            LintRule::DescriptionShape => "description-shape",
            LintRule::DescriptionWhen => "description-when",
            LintRule::DescriptionNoise => "description-noise",
            LintRule::EnglishOnly => "english-only",
            LintRule::OptionalDefault => "optional-default",
            LintRule::ParamDescription => "param-description",
        }
    }
}

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LintFinding {
    /// The tool.
    pub tool: String,
    /// The rule.
    pub rule: LintRule,
    /// The parameter path (`/properties/x`), when the finding is about a parameter.
    pub pointer: Option<String>,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl std::fmt::Display for LintFinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} [{}]", self.tool, self.rule.as_str())?;
        if let Some(p) = &self.pointer {
            write!(f, " at {p}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Checks one definition against every rule; an empty list means it passes.
pub fn lint_definition(def: &ToolDefinition) -> Vec<LintFinding> {
    let mut out = Vec::new();
    let mut push = |rule, pointer: Option<String>, message: String| {
        out.push(LintFinding {
            tool: def.name.clone(),
            rule,
            pointer,
            message,
        });
    };

    let words: Vec<&str> = def.name.split('_').filter(|w| !w.is_empty()).collect();
    let lower = def.name.to_ascii_lowercase();
    if GENERIC_NAMES.contains(&lower.as_str()) || words.len() < 2 {
        push(
            LintRule::NameMeaning,
            None,
            format!(
                "`{}` does not say what it does; use a verb_object name such as `read_config`",
                def.name
            ),
        );
    }

    let desc = def.description.trim();
    let lines: Vec<&str> = desc
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let chars = desc.chars().count();
    if !(2..=3).contains(&lines.len()) {
        push(
            LintRule::DescriptionShape,
            None,
            format!(
                "description has {} line(s); write 2-3: What / When (vs alternatives) / Precondition",
                lines.len()
            ),
        );
    }
    if !(MIN_DESCRIPTION_CHARS..=MAX_DESCRIPTION_CHARS).contains(&chars) {
        push(
            LintRule::DescriptionShape,
            None,
            format!(
                "description is {chars} characters; keep it within {MIN_DESCRIPTION_CHARS}-{MAX_DESCRIPTION_CHARS}"
            ),
        );
    }
    if let Some(when) = lines.get(1)
        && !when.to_ascii_lowercase().contains("use")
    {
        push(
            LintRule::DescriptionWhen,
            None,
            "the second line should say when to use the tool and what to use instead \
             (e.g. `Use for X; use y for Z.`)"
                .into(),
        );
    }
    let ldesc = desc.to_ascii_lowercase();
    if desc.contains("**") {
        push(
            LintRule::DescriptionNoise,
            None,
            "remove bold markup".into(),
        );
    }
    if let Some(f) = FILLER.iter().find(|f| ldesc.contains(*f)) {
        push(
            LintRule::DescriptionNoise,
            None,
            format!("remove filler `{}`", f.trim()),
        );
    }
    if desc.contains("\"type\"") || desc.contains("\"properties\"") {
        push(
            LintRule::DescriptionNoise,
            None,
            "do not dump the output schema in the description".into(),
        );
    }
    if non_english(desc) {
        push(
            LintRule::EnglishOnly,
            None,
            "write the description in English".into(),
        );
    }

    lint_params(&def.input_schema, "", &mut |rule, pointer, message| {
        out.push(LintFinding {
            tool: def.name.clone(),
            rule,
            pointer: Some(pointer),
            message,
        });
    });
    out
}

fn non_english(text: &str) -> bool {
    // Letters outside Latin scripts (CJK, Cyrillic, …) mean a non-English description;
    // typographic punctuation and symbols are fine.
    text.chars()
        .any(|c| c.is_alphabetic() && !c.is_ascii() && !is_latin_extended(c))
}

fn is_latin_extended(c: char) -> bool {
    matches!(c as u32, 0x00C0..=0x024F | 0x1E00..=0x1EFF)
}

fn lint_params(schema: &Value, base: &str, push: &mut dyn FnMut(LintRule, String, String)) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, prop) in props {
        let pointer = format!("{base}/properties/{name}");
        let description = prop
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim();
        if description.is_empty() {
            push(
                LintRule::ParamDescription,
                pointer.clone(),
                format!("`{name}` has no description; say how and when to set it, with an example"),
            );
        } else {
            if is_complex(prop) && description.chars().count() < MIN_COMPLEX_PARAM_DESCRIPTION_CHARS
            {
                push(
                    LintRule::ParamDescription,
                    pointer.clone(),
                    format!(
                        "`{name}` is an object/array/enum; describe it in at least \
                         {MIN_COMPLEX_PARAM_DESCRIPTION_CHARS} characters"
                    ),
                );
            }
            if non_english(description) {
                push(
                    LintRule::EnglishOnly,
                    pointer.clone(),
                    format!("describe `{name}` in English"),
                );
            }
        }
        if !required.contains(&name.as_str()) && prop.get("default").is_none() {
            push(
                LintRule::OptionalDefault,
                pointer.clone(),
                format!("optional `{name}` declares no default"),
            );
        }
        if prop.get("type").and_then(Value::as_str) == Some("object") {
            lint_params(prop, &pointer, push);
        }
    }
}

fn is_complex(prop: &Value) -> bool {
    let ty = prop.get("type");
    let has = |t: &str| match ty {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(a)) => a.iter().any(|v| v.as_str() == Some(t)),
        _ => false,
    };
    has("object") || has("array") || prop.get("enum").is_some() || prop.get("$ref").is_some()
}
