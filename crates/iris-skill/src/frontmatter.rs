//! Splitting `SKILL.md` into its YAML frontmatter and its Markdown body, and turning
//! YAML values into JSON values.

use serde_json::{Map, Number, Value as Json};
use serde_yaml::Value as Yaml;

/// Why a file has no usable frontmatter block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SplitError {
    /// The first line is not `---`.
    Missing,
    /// The opening `---` has no closing `---` (or `...`) line.
    Unterminated,
}

impl SplitError {
    pub(crate) fn message(self) -> &'static str {
        match self {
            SplitError::Missing => {
                "SKILL.md must start with a `---` line opening a YAML frontmatter block"
            }
            SplitError::Unterminated => "the frontmatter block opened by `---` is never closed",
        }
    }
}

/// Splits a `SKILL.md` text into `(frontmatter, body)`.
///
/// The file must start with a `---` line (a UTF-8 byte-order mark and trailing
/// whitespace are tolerated, so are CRLF line ends); the block ends at the next line
/// that is `---` or `...`. The body is what follows, without leading blank lines and
/// trailing whitespace.
pub(crate) fn split(text: &str) -> Result<(&str, &str), SplitError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().ok_or(SplitError::Missing)?;
    if first.trim_end() != "---" {
        return Err(SplitError::Missing);
    }
    let start = first.len();
    let mut offset = start;
    for line in lines {
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            let yaml = &text[start..offset];
            let body = &text[offset + line.len()..];
            let body = body.trim_start_matches(['\r', '\n']).trim_end();
            return Ok((yaml, body));
        }
        offset += line.len();
    }
    Err(SplitError::Unterminated)
}

/// Converts a YAML value to JSON without failing.
///
/// YAML allows what JSON does not, so three rules apply: a non-string mapping key
/// becomes its YAML text (`1` → `"1"`); a non-finite float becomes its YAML text
/// (`.inf` → `".inf"`); a tag is dropped and its value kept.
pub(crate) fn yaml_to_json(value: &Yaml) -> Json {
    match value {
        Yaml::Null => Json::Null,
        Yaml::Bool(b) => Json::Bool(*b),
        Yaml::Number(n) => {
            if let Some(i) = n.as_i64() {
                Json::from(i)
            } else if let Some(u) = n.as_u64() {
                Json::from(u)
            } else {
                n.as_f64()
                    .and_then(Number::from_f64)
                    .map_or_else(|| Json::String(n.to_string()), Json::Number)
            }
        }
        Yaml::String(s) => Json::String(s.clone()),
        Yaml::Sequence(items) => Json::Array(items.iter().map(yaml_to_json).collect()),
        Yaml::Mapping(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                out.insert(key_text(k), yaml_to_json(v));
            }
            Json::Object(out)
        }
        Yaml::Tagged(tagged) => yaml_to_json(&tagged.value),
    }
}

/// The text of a mapping key: strings as they are, other scalars as YAML writes them.
pub(crate) fn key_text(key: &Yaml) -> String {
    match key {
        Yaml::String(s) => s.clone(),
        Yaml::Null => "null".to_owned(),
        Yaml::Bool(b) => b.to_string(),
        Yaml::Number(n) => n.to_string(),
        Yaml::Tagged(tagged) => key_text(&tagged.value),
        Yaml::Sequence(_) | Yaml::Mapping(_) => serde_yaml::to_string(key)
            .map(|s| s.trim_end().to_owned())
            .unwrap_or_default(),
    }
}

/// A short name of a YAML value's type, for diagnostics.
pub(crate) fn type_name(value: &Yaml) -> &'static str {
    match value {
        Yaml::Null => "null",
        Yaml::Bool(_) => "a boolean",
        Yaml::Number(_) => "a number",
        Yaml::String(_) => "a string",
        Yaml::Sequence(_) => "a list",
        Yaml::Mapping(_) => "a mapping",
        Yaml::Tagged(_) => "a tagged value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_table() {
        type Expect = Result<(&'static str, &'static str), SplitError>;
        let table: [(&str, Expect); 9] = [
            ("---\na: 1\n---\nbody\n", Ok(("a: 1\n", "body"))),
            (
                "---\r\na: 1\r\n---\r\n\r\nbody\r\n",
                Ok(("a: 1\r\n", "body")),
            ),
            ("\u{feff}---\na: 1\n---\nbody", Ok(("a: 1\n", "body"))),
            ("---   \na: 1\n...\nbody", Ok(("a: 1\n", "body"))),
            ("---\n---\n", Ok(("", ""))),
            ("---\na: 1\n---", Ok(("a: 1\n", ""))),
            ("# Title\n---\na: 1\n---\n", Err(SplitError::Missing)),
            ("", Err(SplitError::Missing)),
            ("---\na: 1\nbody\n", Err(SplitError::Unterminated)),
        ];
        for (text, want) in table {
            assert_eq!(split(text), want, "{text:?}");
        }
    }

    #[test]
    fn yaml_to_json_table() {
        let table = [
            ("a: 1", serde_json::json!({"a": 1})),
            (
                "1: x\ntrue: y\nnull: z",
                serde_json::json!({"1": "x", "true": "y", "null": "z"}),
            ),
            ("a: .inf", serde_json::json!({"a": ".inf"})),
            ("a: 1.5", serde_json::json!({"a": 1.5})),
            (
                "a: 18446744073709551615",
                serde_json::json!({"a": 18_446_744_073_709_551_615_u64}),
            ),
            ("a: !custom [1, 2]", serde_json::json!({"a": [1, 2]})),
            ("a: ~", serde_json::json!({"a": null})),
        ];
        for (yaml, want) in table {
            let value: Yaml = serde_yaml::from_str(yaml).unwrap_or(Yaml::Null);
            assert_eq!(yaml_to_json(&value), want, "{yaml}");
        }
    }
}
