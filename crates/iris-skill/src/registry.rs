//! [`SkillRegistry`]: the discovered skills, looked up by name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::catalog::SkillCatalog;
use crate::diagnostic::SkillDiagnostic;
use crate::discovery::SkillDiscoveryResult;
use crate::metadata::SkillMetadata;

/// The skills of one discovery, by name, with the diagnostics that came with them.
///
/// Build it from a [`SkillDiscoveryResult`].
/// Iteration and [`SkillRegistry::names`] are sorted by name, so everything built
/// from a registry is stable.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use iris_skill::{discover_skills, SkillDiscoveryOptions, SkillRegistry};
/// let ws = tempfile::tempdir()?;
/// for name in ["pdf", "changelog"] {
///     let dir = ws.path().join(".agents/skills").join(name);
///     std::fs::create_dir_all(&dir)?;
///     std::fs::write(dir.join("SKILL.md"), format!("---\ndescription: The {name} skill.\n---\n"))?;
/// }
/// let registry = SkillRegistry::new(discover_skills(&SkillDiscoveryOptions::new(ws.path()))?);
/// assert_eq!(registry.names(), ["changelog", "pdf"]);
/// assert!(registry.has("pdf"));
/// assert_eq!(registry.get("pdf").map(|s| s.description.as_str()), Some("The pdf skill."));
/// assert_eq!(registry.missing(["pdf", "docx"]), ["docx"]);
/// assert_eq!(registry.len(), 2);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SkillRegistry {
    workspace_root: PathBuf,
    skills: BTreeMap<String, SkillMetadata>,
    diagnostics: Vec<SkillDiagnostic>,
}

impl SkillRegistry {
    /// A registry holding a discovery's skills and diagnostics.
    pub fn new(result: SkillDiscoveryResult) -> Self {
        Self {
            workspace_root: result.workspace_root,
            skills: result
                .skills
                .into_iter()
                .map(|s| (s.name.clone(), s))
                .collect(),
            diagnostics: result.diagnostics,
        }
    }

    /// The skill with this name.
    pub fn get(&self, name: &str) -> Option<&SkillMetadata> {
        self.skills.get(name)
    }

    /// Whether a skill with this name was discovered.
    pub fn has(&self, name: &str) -> bool {
        self.skills.contains_key(name)
    }

    /// Every skill name, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.skills.keys().map(String::as_str).collect()
    }

    /// The names among `names` that were not discovered, in the given order and
    /// without repeats.
    pub fn missing<S: AsRef<str>>(&self, names: impl IntoIterator<Item = S>) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for name in names {
            let name = name.as_ref();
            if !self.has(name) && !out.iter().any(|n| n == name) {
                out.push(name.to_owned());
            }
        }
        out
    }

    /// The diagnostics of the discovery.
    pub fn diagnostics(&self) -> &[SkillDiagnostic] {
        &self.diagnostics
    }

    /// Number of skills.
    pub fn len(&self) -> usize {
        self.skills.len()
    }

    /// Whether no skill was discovered.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The skills, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &SkillMetadata> {
        self.skills.values()
    }

    /// The canonical workspace root the skills were confined to. `load_skill`
    /// re-checks every read against it.
    pub fn workspace_root(&self) -> &Path {
        &self.workspace_root
    }

    /// The catalog a model sees: names and descriptions, sorted by name.
    pub fn catalog(&self) -> SkillCatalog {
        SkillCatalog::new(self)
    }
}

impl From<SkillDiscoveryResult> for SkillRegistry {
    fn from(result: SkillDiscoveryResult) -> Self {
        Self::new(result)
    }
}

impl<'a> IntoIterator for &'a SkillRegistry {
    type Item = &'a SkillMetadata;
    type IntoIter = std::collections::btree_map::Values<'a, String, SkillMetadata>;

    fn into_iter(self) -> Self::IntoIter {
        self.skills.values()
    }
}
