//! [`SkillCatalog`]: the list of skill names and descriptions a model sees up front.

use serde::Serialize;
use serde_json::{Value, json};

use crate::registry::SkillRegistry;

/// One catalog line: a skill's name and description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillCatalogEntry {
    /// The skill name, as `load_skill` accepts it.
    pub name: String,
    /// The capped description.
    pub description: String,
}

/// The skill catalog: what the model sees before it loads any skill.
///
/// Entries are sorted by name, so the text and JSON projections are byte-for-byte
/// stable for the same skills, whatever order the file system lists them in. Only
/// names and descriptions appear; bodies stay on disk until `load_skill` reads them.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use iris_skill::{discover_skills, SkillDiscoveryOptions, SkillRegistry};
/// let ws = tempfile::tempdir()?;
/// let dir = ws.path().join(".agents/skills/pdf");
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("SKILL.md"), "---\ndescription: |\n  Work with PDF files.\n  Use for forms.\n---\n")?;
/// let registry = SkillRegistry::new(discover_skills(&SkillDiscoveryOptions::new(ws.path()))?);
///
/// let catalog = registry.catalog();
/// assert_eq!(catalog.to_text(),
///     "Available skills (call load_skill with a name to read its instructions):\n\
///      - pdf: Work with PDF files. Use for forms.");
/// assert_eq!(catalog.to_json()["skills"][0]["name"], "pdf");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillCatalog {
    /// The entries, sorted by name.
    pub skills: Vec<SkillCatalogEntry>,
}

impl SkillCatalog {
    /// The catalog of a registry.
    pub fn new(registry: &SkillRegistry) -> Self {
        Self {
            skills: registry
                .iter()
                .map(|s| SkillCatalogEntry {
                    name: s.name.clone(),
                    description: s.description.clone(),
                })
                .collect(),
        }
    }

    /// Whether the catalog lists no skill.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.skills.len()
    }

    /// The text projection for a system prompt: a heading line, then one
    /// `- name: description` line per skill, with each description's line breaks and
    /// runs of whitespace folded into single spaces. Empty when there are no skills,
    /// so a host can leave the section out.
    pub fn to_text(&self) -> String {
        if self.skills.is_empty() {
            return String::new();
        }
        let mut text = String::from(
            "Available skills (call load_skill with a name to read its instructions):",
        );
        for entry in &self.skills {
            text.push_str("\n- ");
            text.push_str(&entry.name);
            text.push_str(": ");
            text.push_str(&fold_whitespace(&entry.description));
        }
        text
    }

    /// The JSON projection: `{"skills": [{"name", "description"}, …]}` with
    /// descriptions as discovered.
    pub fn to_json(&self) -> Value {
        let skills: Vec<Value> = self
            .skills
            .iter()
            .map(|e| json!({"name": e.name, "description": e.description}))
            .collect();
        json!({ "skills": skills })
    }
}

fn fold_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
