#![doc = include_str!("../README.md")]

mod catalog;
mod config;
mod diagnostic;
mod discovery;
mod error;
mod frontmatter;
mod load;
mod metadata;
mod name;
mod registry;
mod subagent;

pub use catalog::{SkillCatalog, SkillCatalogEntry};
pub use config::SkillsConfig;
pub use diagnostic::{SkillDiagnostic, SkillDiagnosticCode};
pub use discovery::{
    DEFAULT_MAX_DESCRIPTION_CHARS, DEFAULT_SKILLS_ROOT, SkillDiscoveryOptions,
    SkillDiscoveryResult, SkillScope, discover_skills, resolve_skills_root,
};
pub use error::{Error, Result, codes};
pub use load::{
    DEFAULT_MAX_LISTED_FILES, LoadSkillTool, LoadedSkill, SkillTools, SkillToolsLoadSkillTool,
};
pub use metadata::{MAX_SKILL_FILE_BYTES, SKILL_FILE, SkillMetadata};
pub use name::{MAX_NAME_LEN, NAME_PATTERN, check_kebab_name};
pub use registry::SkillRegistry;
pub use subagent::{SubagentCatalog, SubagentEntry};
