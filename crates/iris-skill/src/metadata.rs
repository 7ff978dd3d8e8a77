//! [`SkillMetadata`]: what discovery learns from one skill folder's `SKILL.md`
//! frontmatter, and the rules that turn the frontmatter into it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use iris_fs::yaml::{MAX_YAML_FLOW_DEPTH, check_yaml_nesting, yaml_error_summary};
use serde::Serialize;
use serde_json::Value as Json;
use serde_yaml::Value as Yaml;

use crate::diagnostic::SkillDiagnosticCode;
use crate::discovery::SkillScope;
use crate::frontmatter::{self, key_text, type_name, yaml_to_json};

/// The file every skill folder holds.
pub const SKILL_FILE: &str = "SKILL.md";

/// The size limit of a `SKILL.md` (1 MiB): discovery leaves a larger one out with a
/// `SKILL_TOO_LARGE` diagnostic, and `load_skill` refuses one that grew past it.
pub const MAX_SKILL_FILE_BYTES: u64 = iris_fs::bounded_read::MAX_CONFIG_BYTES;

/// One discovered skill: its identity, its catalog description and the rest of its
/// frontmatter. The body is not kept: `load_skill` reads it fresh on every call.
///
/// Frontmatter follows the Agent Skills format, so skills written for other agents
/// load unchanged:
///
/// ```yaml
/// ---
/// name: pdf                      # optional; the directory name is the identity
/// description: Extract text …    # required, non-empty
/// license: Apache-2.0            # optional
/// compatibility: Needs Python 3  # optional
/// allowed-tools: Read Bash(python:*)  # optional, space-separated or a list
/// metadata: {author: acme}       # optional mapping
/// ---
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillMetadata {
    /// The skill's identity: its directory name (lower kebab-case).
    pub name: String,
    /// The catalog description, trimmed and capped (see
    /// [`crate::SkillDiscoveryOptions::max_description_chars`]).
    pub description: String,
    /// The skill directory, canonical (symlinks resolved) and inside the workspace.
    pub path: PathBuf,
    /// Where the skill was found.
    pub scope: SkillScope,
    /// The `license` field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    /// The `compatibility` field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<String>,
    /// The `allowed-tools` field, one entry per tool pattern (e.g. `Bash(git:*)`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    /// The `metadata` mapping, plus every unknown top-level frontmatter key. An entry
    /// of `metadata` wins over an unknown top-level key of the same name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, Json>,
}

impl SkillMetadata {
    /// The skill's `SKILL.md`.
    pub fn skill_file(&self) -> PathBuf {
        self.path.join(SKILL_FILE)
    }
}

/// The frontmatter fields of a skill, before discovery adds identity and location.
#[derive(Debug, Default)]
pub(crate) struct Frontmatter {
    pub(crate) description: String,
    pub(crate) license: Option<String>,
    pub(crate) compatibility: Option<String>,
    pub(crate) allowed_tools: Vec<String>,
    pub(crate) metadata: BTreeMap<String, Json>,
}

/// A problem found while reading one skill's frontmatter.
pub(crate) type Finding = (SkillDiagnosticCode, String);

/// Parses a `SKILL.md` text for the skill in directory `dir_name`.
///
/// Returns the frontmatter when the skill is usable, and every finding either way.
/// Never panics: bad YAML, wrong types and missing fields all become findings.
pub(crate) fn parse_skill_file(
    dir_name: &str,
    text: &str,
    max_description_chars: usize,
) -> (Option<Frontmatter>, Vec<Finding>) {
    let mut findings = Vec::new();
    let yaml = match frontmatter::split(text) {
        Ok((yaml, _body)) => yaml,
        Err(e) => {
            let code = match e {
                frontmatter::SplitError::Missing => SkillDiagnosticCode::FrontmatterMissing,
                frontmatter::SplitError::Unterminated => SkillDiagnosticCode::FrontmatterInvalid,
            };
            return (None, vec![(code, e.message().to_owned())]);
        }
    };
    let parsed = check_yaml_nesting(yaml, MAX_YAML_FLOW_DEPTH)
        .map_err(|e| e.to_string())
        .and_then(|()| {
            serde_yaml::from_str::<Yaml>(yaml).map_err(|e| {
                let location = e.location().map(|l| (l.line(), l.column()));
                yaml_error_summary(&e.to_string(), location)
            })
        });
    let doc = match parsed {
        Ok(doc) => doc,
        Err(e) => {
            let reason = format!("the frontmatter is not valid YAML: {e}");
            return (
                None,
                vec![(SkillDiagnosticCode::FrontmatterInvalid, reason)],
            );
        }
    };
    let map = match doc {
        Yaml::Mapping(map) => map,
        // An empty block (`---` directly followed by `---`) parses as null: treat it as
        // an empty mapping so the missing description is what gets reported.
        Yaml::Null => serde_yaml::Mapping::new(),
        other => {
            let reason = format!(
                "the frontmatter must be a YAML mapping, found {}",
                type_name(&other)
            );
            return (
                None,
                vec![(SkillDiagnosticCode::FrontmatterInvalid, reason)],
            );
        }
    };

    let mut out = Frontmatter::default();
    let mut unknown = BTreeMap::new();
    let mut description = None;
    for (key, value) in &map {
        let key = key_text(key);
        match key.as_str() {
            "name" => match value.as_str() {
                Some(declared) if declared == dir_name => {}
                Some(declared) => findings.push((
                    SkillDiagnosticCode::NameMismatch,
                    format!(
                        "frontmatter name `{declared}` differs from the directory name; \
                         the skill is listed as `{dir_name}`"
                    ),
                )),
                None => findings.push(invalid_field("name", "a string", value)),
            },
            "description" => description = Some(value),
            "license" => out.license = optional_string("license", value, &mut findings),
            "compatibility" => {
                out.compatibility = optional_string("compatibility", value, &mut findings);
            }
            "allowed-tools" => out.allowed_tools = allowed_tools(value, &mut findings),
            "metadata" => match value {
                Yaml::Mapping(m) => {
                    for (k, v) in m {
                        out.metadata.insert(key_text(k), yaml_to_json(v));
                    }
                }
                Yaml::Null => {}
                other => findings.push(invalid_field("metadata", "a mapping", other)),
            },
            _ => {
                unknown.insert(key, yaml_to_json(value));
            }
        }
    }
    for (key, value) in unknown {
        out.metadata.entry(key).or_insert(value);
    }

    let description = match description {
        Some(Yaml::String(s)) if !s.trim().is_empty() => s.trim(),
        Some(Yaml::String(_)) => {
            findings.push((
                SkillDiagnosticCode::DescriptionMissing,
                "`description` is blank; a skill needs a description to be listed".to_owned(),
            ));
            return (None, findings);
        }
        Some(other) => {
            findings.push((
                SkillDiagnosticCode::DescriptionMissing,
                format!(
                    "`description` must be a non-empty string, found {}",
                    type_name(other)
                ),
            ));
            return (None, findings);
        }
        None => {
            findings.push((
                SkillDiagnosticCode::DescriptionMissing,
                "the frontmatter has no `description`; a skill needs one to be listed".to_owned(),
            ));
            return (None, findings);
        }
    };
    let (description, truncated_from) = cap_description(description, max_description_chars);
    if let Some(len) = truncated_from {
        findings.push((
            SkillDiagnosticCode::DescriptionTruncated,
            format!(
                "`description` is {len} characters long; the catalog keeps the first \
                 {max_description_chars}"
            ),
        ));
    }
    out.description = description;
    (Some(out), findings)
}

/// Caps a description at `max` characters.
///
/// The truncation rule: a description of at most `max` characters is kept whole. A
/// longer one keeps its first `max - 1` characters, loses trailing whitespace, and
/// gets `…` appended, so the result never exceeds `max` characters and visibly ends
/// early. Characters are Unicode scalar values, so a cut never splits one.
/// Returns the capped text and, when it was cut, the original length.
pub(crate) fn cap_description(description: &str, max: usize) -> (String, Option<usize>) {
    let len = description.chars().count();
    if len <= max {
        return (description.to_owned(), None);
    }
    let mut kept: String = description.chars().take(max.saturating_sub(1)).collect();
    kept.truncate(kept.trim_end().len());
    kept.push('…');
    (kept, Some(len))
}

fn invalid_field(field: &str, expected: &str, value: &Yaml) -> Finding {
    (
        SkillDiagnosticCode::FieldInvalid,
        format!(
            "`{field}` must be {expected}, found {}; the field is ignored",
            type_name(value)
        ),
    )
}

fn optional_string(field: &str, value: &Yaml, findings: &mut Vec<Finding>) -> Option<String> {
    match value {
        Yaml::String(s) if s.trim().is_empty() => None,
        Yaml::String(s) => Some(s.trim().to_owned()),
        Yaml::Null => None,
        other => {
            findings.push(invalid_field(field, "a string", other));
            None
        }
    }
}

/// Reads `allowed-tools`: the Agent Skills format writes a space-separated string
/// (`Bash(git:*) Read`); other agents write commas (`Read, Grep`) or a YAML list. All
/// three are accepted. Whitespace inside parentheses stays part of the pattern, so
/// `Bash(git add:*)` is one entry.
fn allowed_tools(value: &Yaml, findings: &mut Vec<Finding>) -> Vec<String> {
    match value {
        Yaml::String(s) => split_tool_patterns(s),
        Yaml::Sequence(items) => {
            let mut out = Vec::new();
            for item in items {
                match item.as_str() {
                    Some(s) => out.extend(split_tool_patterns(s)),
                    None => findings.push(invalid_field("allowed-tools[]", "a string", item)),
                }
            }
            out
        }
        Yaml::Null => Vec::new(),
        other => {
            findings.push(invalid_field("allowed-tools", "a string or a list", other));
            Vec::new()
        }
    }
}

fn split_tool_patterns(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0_usize;
    for c in s.chars() {
        match c {
            '(' => {
                depth += 1;
                current.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            c if depth == 0 && (c.is_whitespace() || c == ',') => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_description_table() {
        let table: [(&str, usize, &str, Option<usize>); 6] = [
            ("short", 10, "short", None),
            ("exactly10!", 10, "exactly10!", None),
            ("eleven char", 10, "eleven ch…", Some(11)),
            ("word     gap here", 10, "word…", Some(17)),
            ("ééééé", 3, "éé…", Some(5)),
            ("ab", 1, "…", Some(2)),
        ];
        for (input, max, want, from) in table {
            let (got, len) = cap_description(input, max);
            assert_eq!((got.as_str(), len), (want, from), "{input:?} cap {max}");
            assert!(got.chars().count() <= max);
        }
    }

    #[test]
    fn split_tool_patterns_table() {
        let table: [(&str, &[&str]); 5] = [
            ("Read Grep", &["Read", "Grep"]),
            ("Read, Grep,Glob", &["Read", "Grep", "Glob"]),
            ("Bash(git add:*) Read", &["Bash(git add:*)", "Read"]),
            ("  ", &[]),
            ("Bash(jq:*)  Bash(git:*)", &["Bash(jq:*)", "Bash(git:*)"]),
        ];
        for (input, want) in table {
            assert_eq!(split_tool_patterns(input), want, "{input:?}");
        }
    }
}
