//! The crate's [`Error`] type and its stable error codes.

use std::path::PathBuf;

use iris_fs::bounded_read::ReadError;
use iris_tools_core::{ToolErrorInfo, codes as core_codes};

/// Stable `SCREAMING_SNAKE` codes of this crate's errors and discovery diagnostics.
///
/// Codes are part of the public contract: hosts, models and tests match on them.
/// Never rename one. Codes shared with every layer (`INVALID_INPUT`,
/// `PATH_OUTSIDE_WORKSPACE`, `INVALID_PATH`, `IO_ERROR`) come from
/// [`iris_tools_core::codes`].
pub mod codes {
    /// `load_skill` was asked for a name that discovery did not find.
    pub const SKILL_NOT_FOUND: &str = "SKILL_NOT_FOUND";
    /// A discovered skill's folder or `SKILL.md` is gone or unreadable now.
    pub const SKILL_UNAVAILABLE: &str = "SKILL_UNAVAILABLE";
    /// A discovered skill's `SKILL.md` no longer has a well-formed frontmatter block.
    pub const SKILL_INVALID: &str = "SKILL_INVALID";
    /// A `SKILL.md` is larger than the 1 MiB limit (an error of `load_skill`, and the
    /// diagnostic that leaves the skill out of discovery).
    pub const SKILL_TOO_LARGE: &str = "SKILL_TOO_LARGE";
    /// Names listed in `skills.require` were not discovered.
    pub const SKILL_REQUIRED_MISSING: &str = "SKILL_REQUIRED_MISSING";
    /// The `skills` configuration or the discovery options break a rule.
    pub const SKILL_CONFIG_INVALID: &str = "SKILL_CONFIG_INVALID";

    /// Diagnostic: a skills root does not exist.
    pub const SKILL_ROOT_NOT_FOUND: &str = "SKILL_ROOT_NOT_FOUND";
    /// Diagnostic: a skills root is outside the workspace, not a directory or unreadable.
    pub const SKILL_ROOT_INVALID: &str = "SKILL_ROOT_INVALID";
    /// Diagnostic: a skill directory name is not lower kebab-case.
    pub const SKILL_INVALID_NAME: &str = "SKILL_INVALID_NAME";
    /// Diagnostic: a skill directory has no `SKILL.md` (or is a broken link).
    pub const SKILL_FILE_MISSING: &str = "SKILL_FILE_MISSING";
    /// Diagnostic: a symlinked skill folder or `SKILL.md` resolves outside the workspace.
    pub const SKILL_OUTSIDE_WORKSPACE: &str = "SKILL_OUTSIDE_WORKSPACE";
    /// Diagnostic: `SKILL.md` could not be read as UTF-8 text.
    pub const SKILL_READ_FAILED: &str = "SKILL_READ_FAILED";
    /// Diagnostic: `SKILL.md` does not start with a `---` frontmatter block.
    pub const SKILL_FRONTMATTER_MISSING: &str = "SKILL_FRONTMATTER_MISSING";
    /// Diagnostic: the frontmatter is not closed, not YAML, or not a mapping.
    pub const SKILL_FRONTMATTER_INVALID: &str = "SKILL_FRONTMATTER_INVALID";
    /// Diagnostic: `description` is missing, blank or not a string.
    pub const SKILL_DESCRIPTION_MISSING: &str = "SKILL_DESCRIPTION_MISSING";
    /// Diagnostic: `description` was longer than the cap and was truncated.
    pub const SKILL_DESCRIPTION_TRUNCATED: &str = "SKILL_DESCRIPTION_TRUNCATED";
    /// Diagnostic: the declared `name` differs from the directory name.
    pub const SKILL_NAME_MISMATCH: &str = "SKILL_NAME_MISMATCH";
    /// Diagnostic: an optional frontmatter field has the wrong type and was ignored.
    pub const SKILL_FIELD_INVALID: &str = "SKILL_FIELD_INVALID";
    /// Diagnostic: an earlier root already provided a skill with this name.
    pub const SKILL_DUPLICATE: &str = "SKILL_DUPLICATE";

    /// The subagent catalog file breaks a rule.
    pub const SUBAGENT_CATALOG_INVALID: &str = "SUBAGENT_CATALOG_INVALID";
    /// The subagent catalog file cannot be read, or is not a regular file.
    pub const SUBAGENT_CATALOG_UNREADABLE: &str = "SUBAGENT_CATALOG_UNREADABLE";
    /// The subagent catalog file is larger than the 1 MiB limit.
    pub const SUBAGENT_CATALOG_TOO_LARGE: &str = "SUBAGENT_CATALOG_TOO_LARGE";
    /// No subagent answers to the requested selector.
    pub const SUBAGENT_NOT_FOUND: &str = "SUBAGENT_NOT_FOUND";
}

/// Errors of the skill layer and the subagent catalog.
///
/// Problems with one skill folder during discovery are not errors: they become
/// [`crate::SkillDiagnostic`]s and the folder is skipped or kept. This type covers the
/// failures a caller must act on.
///
/// ```
/// use iris_skill::Error;
/// let err = Error::SkillNotFound { name: "pdff".into(), suggestions: vec!["pdf".into()] };
/// assert_eq!(err.code(), "SKILL_NOT_FOUND");
/// assert_eq!(err.to_string(), "no skill named `pdff`; did you mean `pdf`?");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The discovery options or the `skills` configuration break a rule.
    #[error("invalid skills configuration: `{field}` {reason}")]
    Config {
        /// The offending field, e.g. `require[1]` or `max_description_chars`.
        field: String,
        /// Why it is invalid.
        reason: String,
    },
    /// A path escaped the workspace or could not be resolved.
    #[error(transparent)]
    Path(#[from] iris_fs::workspace::PathError),
    /// The skills root does not exist.
    #[error("skills root `{}` does not exist", path.display())]
    RootNotFound {
        /// The root as resolved against the workspace.
        path: PathBuf,
    },
    /// The skills root exists but is not a directory.
    #[error("skills root `{}` is not a directory", path.display())]
    RootNotDirectory {
        /// The resolved root.
        path: PathBuf,
    },
    /// The model asked for a skill that discovery did not find.
    #[error("no skill named `{name}`{}", did_you_mean(suggestions))]
    SkillNotFound {
        /// The requested name.
        name: String,
        /// Close matches among the discovered names, closest first.
        suggestions: Vec<String>,
    },
    /// A discovered skill's files are gone or unreadable now.
    #[error("skill `{name}` is no longer available at `{}`", path.display())]
    SkillUnavailable {
        /// The skill name.
        name: String,
        /// The `SKILL.md` path that failed.
        path: PathBuf,
        /// The underlying failure.
        #[source]
        source: std::io::Error,
    },
    /// A discovered skill's `SKILL.md` is now larger than the 1 MiB limit, or is no
    /// longer a regular file (a FIFO or device swapped in): refused without reading.
    #[error("skill `{name}`: `SKILL.md` at `{}` {reason}", path.display())]
    SkillFileRefused {
        /// The skill name.
        name: String,
        /// The `SKILL.md` path.
        path: PathBuf,
        /// Why it was refused.
        reason: ReadError,
    },
    /// A discovered skill's `SKILL.md` changed into something that cannot be split.
    #[error("skill `{name}` has an invalid SKILL.md: {reason}")]
    SkillInvalid {
        /// The skill name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// Names required by `skills.require` were not discovered.
    #[error("required skills not found: {}; found: {}", list(missing), list(found))]
    RequiredSkillsMissing {
        /// Required names that are missing, in `require` order.
        missing: Vec<String>,
        /// Every discovered name, sorted.
        found: Vec<String>,
    },
    /// The subagent catalog file breaks a rule.
    #[error("subagent catalog `{}`: `{field}` {reason}", path.display())]
    SubagentCatalog {
        /// The catalog file.
        path: PathBuf,
        /// The offending field, e.g. `agents.researcher.description` (`<file>` for the
        /// document as a whole).
        field: String,
        /// Why it is invalid.
        reason: String,
    },
    /// The subagent catalog file cannot be read.
    #[error("subagent catalog `{}` cannot be read", path.display())]
    SubagentCatalogIo {
        /// The catalog file.
        path: PathBuf,
        /// The underlying failure.
        #[source]
        source: std::io::Error,
    },
    /// The subagent catalog is larger than the 1 MiB limit, or is not a regular file
    /// (a FIFO, a device): refused without reading.
    #[error("subagent catalog `{}` {reason}", path.display())]
    SubagentCatalogRefused {
        /// The catalog file.
        path: PathBuf,
        /// Why it was refused.
        reason: ReadError,
    },
    /// No subagent answers to the selector.
    #[error("no subagent `{selector}` in `{}`; available: {}", catalog.display(), list(available))]
    UnknownSubagent {
        /// The requested selector.
        selector: String,
        /// The catalog file.
        catalog: PathBuf,
        /// Every selector of the catalog, in file order.
        available: Vec<String>,
    },
}

fn did_you_mean(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", list_or(suggestions))
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "(none)".to_owned()
    } else {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn list_or(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.join(""),
    }
}

impl Error {
    /// The stable error code (one of [`codes`] or [`iris_tools_core::codes`]).
    pub fn code(&self) -> &'static str {
        match self {
            Error::Config { .. } => codes::SKILL_CONFIG_INVALID,
            Error::Path(e) => e.code(),
            Error::RootNotFound { .. } => codes::SKILL_ROOT_NOT_FOUND,
            Error::RootNotDirectory { .. } => codes::SKILL_ROOT_INVALID,
            Error::SkillNotFound { .. } => codes::SKILL_NOT_FOUND,
            Error::SkillUnavailable { .. } => codes::SKILL_UNAVAILABLE,
            Error::SkillFileRefused {
                reason: ReadError::TooLarge { .. },
                ..
            } => codes::SKILL_TOO_LARGE,
            Error::SkillFileRefused { .. } => codes::SKILL_UNAVAILABLE,
            Error::SkillInvalid { .. } => codes::SKILL_INVALID,
            Error::RequiredSkillsMissing { .. } => codes::SKILL_REQUIRED_MISSING,
            Error::SubagentCatalog { .. } => codes::SUBAGENT_CATALOG_INVALID,
            Error::SubagentCatalogIo { .. } => codes::SUBAGENT_CATALOG_UNREADABLE,
            Error::SubagentCatalogRefused {
                reason: ReadError::TooLarge { .. },
                ..
            } => codes::SUBAGENT_CATALOG_TOO_LARGE,
            Error::SubagentCatalogRefused { .. } => codes::SUBAGENT_CATALOG_UNREADABLE,
            Error::UnknownSubagent { .. } => codes::SUBAGENT_NOT_FOUND,
        }
    }

    /// The structured form a tool result carries: code, one-line message (with the
    /// source chain) and the structured details a host may use.
    pub fn to_info(&self) -> ToolErrorInfo {
        let info = ToolErrorInfo::from_error(self.code(), self);
        match self {
            Error::SkillNotFound { name, suggestions } => info
                .with_detail("name", name.as_str())
                .with_detail("suggestions", suggestions.clone()),
            Error::SkillUnavailable { name, path, .. } => info
                .with_detail("name", name.as_str())
                .with_detail("path", path.display().to_string()),
            Error::SkillFileRefused { name, path, .. } => info
                .with_detail("name", name.as_str())
                .with_detail("path", path.display().to_string()),
            Error::SkillInvalid { name, .. } => info.with_detail("name", name.as_str()),
            Error::RequiredSkillsMissing { missing, found } => info
                .with_detail("missing", missing.clone())
                .with_detail("found", found.clone()),
            _ => info,
        }
    }
}

/// Shorthand result type for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The core code the `load_skill` tool uses for malformed input.
pub(crate) const INVALID_INPUT: &str = core_codes::INVALID_INPUT;
