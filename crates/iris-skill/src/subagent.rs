//! [`SubagentCatalog`]: the YAML file `tools.subagent` points to, listing the child
//! agents a parent may delegate to.
//!
//! ```yaml
//! default: researcher
//! agents:
//!   researcher:
//!     path: agents/researcher.yaml      # relative to this catalog file
//!     description: Finds and summarizes sources for a question.
//!   reviewer:
//!     path: agents/reviewer.yaml
//!     description: Reviews a patch for bugs and style.
//! ```
//!
//! This module only validates the file and resolves paths; the runner loads the one
//! child that is selected, and only then.

use std::path::{Path, PathBuf};

use iris_fs::bounded_read::{MAX_CONFIG_BYTES, ReadError, read_regular_text};
use iris_fs::yaml::{MAX_YAML_FLOW_DEPTH, check_yaml_nesting, yaml_error_summary};
use serde::Serialize;
use serde_yaml::{Mapping, Value as Yaml};

use crate::error::{Error, Result};
use crate::frontmatter::{key_text, type_name};
use crate::name::check_kebab_name;

/// One child agent of a catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubagentEntry {
    /// The selector the model passes as `agent` (lower kebab-case).
    pub selector: String,
    /// The child's agent YAML, resolved against the catalog file's directory. It is not
    /// opened here.
    pub path: PathBuf,
    /// What the child is for, as written (trimmed, non-empty).
    pub description: String,
}

/// A parsed and validated subagent catalog.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use iris_skill::SubagentCatalog;
/// let yaml = "default: researcher\nagents:\n  researcher:\n    path: agents/researcher.yaml\n    description: Finds sources.\n";
/// let catalog = SubagentCatalog::parse(yaml, "/srv/app/subagents.yaml")?;
/// assert_eq!(catalog.select(None)?.path, std::path::Path::new("/srv/app/agents/researcher.yaml"));
/// assert_eq!(catalog.select(Some("coder")).unwrap_err().code(), "SUBAGENT_NOT_FOUND");
///
/// let err = SubagentCatalog::parse("default: x\nagents: {}\n", "/srv/app/subagents.yaml").unwrap_err();
/// assert_eq!(err.code(), "SUBAGENT_CATALOG_INVALID");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubagentCatalog {
    path: PathBuf,
    default: String,
    agents: Vec<SubagentEntry>,
}

impl SubagentCatalog {
    /// Reads and validates a catalog file (at most 1 MiB, a regular file).
    ///
    /// # Errors
    /// [`Error::SubagentCatalogIo`] when the file cannot be read,
    /// [`Error::SubagentCatalogRefused`] when it is larger than 1 MiB or is not a
    /// regular file (a FIFO, a device), [`Error::SubagentCatalog`] (naming the file and
    /// the field) when it breaks a rule.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = read_regular_text(path, MAX_CONFIG_BYTES).map_err(|e| match e {
            ReadError::TooLarge { .. } | ReadError::NotRegular { .. } => {
                Error::SubagentCatalogRefused {
                    path: path.to_path_buf(),
                    reason: e,
                }
            }
            e => Error::SubagentCatalogIo {
                path: path.to_path_buf(),
                source: e.into(),
            },
        })?;
        Self::parse(&text, path)
    }

    /// The catalog file named by `tools.subagent` in an agent YAML: a relative value
    /// is relative to that YAML file's directory.
    ///
    /// ```
    /// use iris_skill::SubagentCatalog;
    /// use std::path::Path;
    /// assert_eq!(
    ///     SubagentCatalog::resolve_path(Path::new("/srv/app/agent.yaml"), Path::new("subagents.yaml")),
    ///     Path::new("/srv/app/subagents.yaml"),
    /// );
    /// ```
    pub fn resolve_path(agent_config_path: &Path, value: &Path) -> PathBuf {
        agent_config_path
            .parent()
            .unwrap_or_else(|| Path::new(""))
            .join(value)
    }

    /// Validates catalog text; `path` is the file it came from (child paths resolve
    /// against its directory, errors name it).
    ///
    /// The rules: the document is a mapping with exactly the keys `default` and
    /// `agents`; `agents` is a non-empty mapping from lower kebab-case selectors to
    /// mappings with exactly `path` (a non-empty string) and `description` (a
    /// non-empty string); `default` is a string equal to one selector.
    ///
    /// # Errors
    /// [`Error::SubagentCatalog`] naming the file and the first field that breaks a
    /// rule (`<file>` when the text is not a YAML mapping).
    pub fn parse(text: &str, path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let fail = |field: &str, reason: String| Error::SubagentCatalog {
            path: path.to_path_buf(),
            field: field.to_owned(),
            reason,
        };
        // Deep flow nesting costs libyaml quadratic time: refuse it before parsing. Parse
        // errors keep their position and kind but never quote the file.
        check_yaml_nesting(text, MAX_YAML_FLOW_DEPTH).map_err(|e| fail("<file>", e.to_string()))?;
        let doc: Yaml = serde_yaml::from_str(text).map_err(|e| {
            let location = e.location().map(|l| (l.line(), l.column()));
            let summary = yaml_error_summary(&e.to_string(), location);
            fail("<file>", format!("is not valid YAML: {summary}"))
        })?;
        let Yaml::Mapping(doc) = doc else {
            return Err(fail(
                "<file>",
                format!(
                    "must be a mapping with `default` and `agents`, found {}",
                    type_name(&doc)
                ),
            ));
        };
        reject_unknown(&doc, "", &["default", "agents"], &fail)?;

        let agents = match doc.get("agents") {
            None => return Err(fail("agents", "is required".into())),
            Some(Yaml::Mapping(m)) if m.is_empty() => {
                return Err(fail("agents", "must list at least one agent".into()));
            }
            Some(Yaml::Mapping(m)) => m,
            Some(other) => {
                return Err(fail(
                    "agents",
                    format!("must be a mapping, found {}", type_name(other)),
                ));
            }
        };
        let base = path.parent().unwrap_or_else(|| Path::new(""));
        let mut entries = Vec::with_capacity(agents.len());
        for (key, value) in agents {
            let selector = match key {
                Yaml::String(s) => s.clone(),
                other => {
                    let shown = key_text(other);
                    return Err(fail(
                        &format!("agents.{shown}"),
                        format!("selector must be a string, found {}", type_name(other)),
                    ));
                }
            };
            let field = format!("agents.{selector}");
            check_kebab_name(&selector)
                .map_err(|reason| fail(&field, format!("selector `{selector}` {reason}")))?;
            let Yaml::Mapping(entry) = value else {
                return Err(fail(
                    &field,
                    format!(
                        "must be a mapping with `path` and `description`, found {}",
                        type_name(value)
                    ),
                ));
            };
            reject_unknown(entry, &format!("{field}."), &["path", "description"], &fail)?;
            let child = required_string(entry, "path", &field, &fail)?;
            let description = required_string(entry, "description", &field, &fail)?;
            entries.push(SubagentEntry {
                path: base.join(child),
                selector,
                description: description.to_owned(),
            });
        }

        let default = match doc.get("default") {
            None => return Err(fail("default", "is required".into())),
            Some(Yaml::String(s)) => s.clone(),
            Some(other) => {
                return Err(fail(
                    "default",
                    format!("must be a string, found {}", type_name(other)),
                ));
            }
        };
        if !entries.iter().any(|e| e.selector == default) {
            let selectors: Vec<String> = entries
                .iter()
                .map(|e| format!("`{}`", e.selector))
                .collect();
            // The value itself is not quoted: the file may hold anything there.
            return Err(fail(
                "default",
                format!("matches no agent; selectors are {}", selectors.join(", ")),
            ));
        }
        Ok(Self {
            path: path.to_path_buf(),
            default,
            agents: entries,
        })
    }

    /// The entry for a selector, or the default entry for `None`.
    ///
    /// # Errors
    /// [`Error::UnknownSubagent`] (`SUBAGENT_NOT_FOUND`) listing the selectors.
    pub fn select(&self, selector: Option<&str>) -> Result<&SubagentEntry> {
        let wanted = selector.unwrap_or(&self.default);
        self.get(wanted).ok_or_else(|| Error::UnknownSubagent {
            selector: wanted.to_owned(),
            catalog: self.path.clone(),
            available: self.selectors().map(str::to_owned).collect(),
        })
    }

    /// The entry for a selector.
    pub fn get(&self, selector: &str) -> Option<&SubagentEntry> {
        self.agents.iter().find(|e| e.selector == selector)
    }

    /// The default selector.
    pub fn default_selector(&self) -> &str {
        &self.default
    }

    /// Every entry, in file order.
    pub fn entries(&self) -> &[SubagentEntry] {
        &self.agents
    }

    /// Every selector, in file order.
    pub fn selectors(&self) -> impl Iterator<Item = &str> {
        self.agents.iter().map(|e| e.selector.as_str())
    }

    /// The catalog file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn reject_unknown(
    map: &Mapping,
    prefix: &str,
    allowed: &[&str],
    fail: &impl Fn(&str, String) -> Error,
) -> Result<()> {
    for key in map.keys() {
        let key = key_text(key);
        if !allowed.contains(&key.as_str()) {
            let expected: Vec<String> = allowed.iter().map(|k| format!("`{k}`")).collect();
            return Err(fail(
                &format!("{prefix}{key}"),
                format!("is not a known field; expected {}", expected.join(" and ")),
            ));
        }
    }
    Ok(())
}

fn required_string<'m>(
    map: &'m Mapping,
    key: &str,
    parent: &str,
    fail: &impl Fn(&str, String) -> Error,
) -> Result<&'m str> {
    let field = format!("{parent}.{key}");
    match map.get(key) {
        None => Err(fail(&field, "is required".into())),
        Some(Yaml::String(s)) if s.trim().is_empty() => {
            Err(fail(&field, "must not be empty".into()))
        }
        Some(Yaml::String(s)) => Ok(s.trim()),
        Some(other) => Err(fail(
            &field,
            format!("must be a string, found {}", type_name(other)),
        )),
    }
}
