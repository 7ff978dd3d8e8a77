//! [`SkillsConfig`]: the agent YAML's `skills` section.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::discovery::{DEFAULT_SKILLS_ROOT, SkillDiscoveryOptions, SkillScope, discover_skills};
use crate::error::{Error, Result};
use crate::name::check_kebab_name;
use crate::registry::SkillRegistry;

/// The `skills` section of an agent configuration.
///
/// Skills are off by default. `root` is relative to the workspace; `require` names
/// skills that must be discovered, or assembly fails.
///
/// ```
/// use iris_skill::SkillsConfig;
/// let config: SkillsConfig = serde_json::from_str(r#"{"enabled": true, "require": ["pdf"]}"#).unwrap();
/// assert!(config.enabled);
/// assert_eq!(config.root, std::path::Path::new(".agents/skills"));
/// assert!(config.validate().is_ok());
///
/// assert_eq!(SkillsConfig::default(), SkillsConfig {
///     enabled: false,
///     root: ".agents/skills".into(),
///     require: vec![],
/// });
/// assert!(serde_json::from_str::<SkillsConfig>(r#"{"enable": true}"#).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SkillsConfig {
    /// Whether skills are discovered and `load_skill` is installed. Default `false`.
    pub enabled: bool,
    /// The skills root, relative to the workspace. Default `.agents/skills`.
    pub root: PathBuf,
    /// Names that must be discovered. Default empty.
    pub require: Vec<String>,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            root: PathBuf::from(DEFAULT_SKILLS_ROOT),
            require: Vec::new(),
        }
    }
}

impl SkillsConfig {
    /// Checks the section on its own: `root` is not empty, every `require` entry is a
    /// lower kebab-case name, and `require` is empty unless skills are enabled (a
    /// requirement that could never be checked is a mistake, not a no-op).
    ///
    /// # Errors
    /// [`Error::Config`] naming the field (`root`, `require[2]`, `require`).
    pub fn validate(&self) -> Result<()> {
        if self.root.as_os_str().is_empty() {
            return Err(Error::Config {
                field: "root".into(),
                reason: "must not be empty".into(),
            });
        }
        for (i, name) in self.require.iter().enumerate() {
            check_kebab_name(name).map_err(|reason| Error::Config {
                field: format!("require[{i}]"),
                reason: format!("`{name}` {reason}"),
            })?;
        }
        if !self.enabled && !self.require.is_empty() {
            return Err(Error::Config {
                field: "require".into(),
                reason: "lists skills but `enabled` is false; enable skills or remove the list"
                    .into(),
            });
        }
        Ok(())
    }

    /// The discovery options for this section: its root in project scope, the default
    /// description cap.
    pub fn discovery_options(&self, workspace_root: impl Into<PathBuf>) -> SkillDiscoveryOptions {
        SkillDiscoveryOptions::new(workspace_root).with_roots([(SkillScope::Project, &self.root)])
    }

    /// Fails when a required name was not discovered, listing what is missing and
    /// everything that was found.
    ///
    /// # Errors
    /// [`Error::RequiredSkillsMissing`] (`SKILL_REQUIRED_MISSING`).
    pub fn check_required(&self, registry: &SkillRegistry) -> Result<()> {
        let missing = registry.missing(&self.require);
        if missing.is_empty() {
            Ok(())
        } else {
            Err(Error::RequiredSkillsMissing {
                missing,
                found: registry.names().into_iter().map(str::to_owned).collect(),
            })
        }
    }

    /// Validates, discovers and checks the required names: what assembly does.
    /// Returns `None` when skills are disabled.
    ///
    /// # Errors
    /// Anything [`SkillsConfig::validate`], [`discover_skills`] or
    /// [`SkillsConfig::check_required`] reports.
    pub fn assemble(&self, workspace_root: &Path) -> Result<Option<SkillRegistry>> {
        self.validate()?;
        if !self.enabled {
            return Ok(None);
        }
        let registry =
            SkillRegistry::new(discover_skills(&self.discovery_options(workspace_root))?);
        self.check_required(&registry)?;
        Ok(Some(registry))
    }
}
