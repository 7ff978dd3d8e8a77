//! [`SkillDiagnostic`]: what discovery reports about a root or a skill folder it
//! skipped or kept with a warning.

use std::path::PathBuf;

use serde::Serialize;

use crate::error::codes;

/// The stable code of a [`SkillDiagnostic`]. Serialized as its `SCREAMING_SNAKE`
/// string (see [`SkillDiagnosticCode::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[non_exhaustive]
pub enum SkillDiagnosticCode {
    /// `SKILL_ROOT_NOT_FOUND`: a skills root does not exist.
    #[serde(rename = "SKILL_ROOT_NOT_FOUND")]
    RootNotFound,
    /// `SKILL_ROOT_INVALID`: a root is outside the workspace, not a directory or
    /// unreadable.
    #[serde(rename = "SKILL_ROOT_INVALID")]
    RootInvalid,
    /// `SKILL_INVALID_NAME`: the directory name is not lower kebab-case.
    #[serde(rename = "SKILL_INVALID_NAME")]
    InvalidName,
    /// `SKILL_FILE_MISSING`: no `SKILL.md` in the directory, or a broken link.
    #[serde(rename = "SKILL_FILE_MISSING")]
    FileMissing,
    /// `SKILL_OUTSIDE_WORKSPACE`: a symlinked folder or file escapes the workspace.
    #[serde(rename = "SKILL_OUTSIDE_WORKSPACE")]
    OutsideWorkspace,
    /// `SKILL_READ_FAILED`: `SKILL.md` could not be read as UTF-8 text.
    #[serde(rename = "SKILL_READ_FAILED")]
    ReadFailed,
    /// `SKILL_TOO_LARGE`: `SKILL.md` is larger than the 1 MiB limit; it is not read.
    #[serde(rename = "SKILL_TOO_LARGE")]
    TooLarge,
    /// `SKILL_FRONTMATTER_MISSING`: no `---` frontmatter block at the top.
    #[serde(rename = "SKILL_FRONTMATTER_MISSING")]
    FrontmatterMissing,
    /// `SKILL_FRONTMATTER_INVALID`: unclosed block, bad YAML, or not a mapping.
    #[serde(rename = "SKILL_FRONTMATTER_INVALID")]
    FrontmatterInvalid,
    /// `SKILL_DESCRIPTION_MISSING`: `description` missing, blank or not a string.
    #[serde(rename = "SKILL_DESCRIPTION_MISSING")]
    DescriptionMissing,
    /// `SKILL_DESCRIPTION_TRUNCATED`: the description was cut to the cap.
    #[serde(rename = "SKILL_DESCRIPTION_TRUNCATED")]
    DescriptionTruncated,
    /// `SKILL_NAME_MISMATCH`: the declared `name` differs from the directory.
    #[serde(rename = "SKILL_NAME_MISMATCH")]
    NameMismatch,
    /// `SKILL_FIELD_INVALID`: an optional field had the wrong type and was ignored.
    #[serde(rename = "SKILL_FIELD_INVALID")]
    FieldInvalid,
    /// `SKILL_DUPLICATE`: an earlier root already provided this name.
    #[serde(rename = "SKILL_DUPLICATE")]
    Duplicate,
}

impl SkillDiagnosticCode {
    /// The stable `SCREAMING_SNAKE` code (one of [`crate::codes`]).
    ///
    /// ```
    /// use iris_skill::SkillDiagnosticCode;
    /// assert_eq!(SkillDiagnosticCode::NameMismatch.as_str(), "SKILL_NAME_MISMATCH");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RootNotFound => codes::SKILL_ROOT_NOT_FOUND,
            Self::RootInvalid => codes::SKILL_ROOT_INVALID,
            Self::InvalidName => codes::SKILL_INVALID_NAME,
            Self::FileMissing => codes::SKILL_FILE_MISSING,
            Self::OutsideWorkspace => codes::SKILL_OUTSIDE_WORKSPACE,
            Self::ReadFailed => codes::SKILL_READ_FAILED,
            Self::TooLarge => codes::SKILL_TOO_LARGE,
            Self::FrontmatterMissing => codes::SKILL_FRONTMATTER_MISSING,
            Self::FrontmatterInvalid => codes::SKILL_FRONTMATTER_INVALID,
            Self::DescriptionMissing => codes::SKILL_DESCRIPTION_MISSING,
            Self::DescriptionTruncated => codes::SKILL_DESCRIPTION_TRUNCATED,
            Self::NameMismatch => codes::SKILL_NAME_MISMATCH,
            Self::FieldInvalid => codes::SKILL_FIELD_INVALID,
            Self::Duplicate => codes::SKILL_DUPLICATE,
        }
    }

    /// Whether a diagnostic with this code means the skill (or the whole root) was
    /// left out of the result. Truncation, a name mismatch and an ignored optional
    /// field keep the skill.
    pub fn skips_skill(self) -> bool {
        !matches!(
            self,
            Self::DescriptionTruncated | Self::NameMismatch | Self::FieldInvalid
        )
    }
}

impl std::fmt::Display for SkillDiagnosticCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem discovery found with a skills root or a skill folder.
///
/// ```
/// use iris_skill::{SkillDiagnostic, SkillDiagnosticCode};
/// let d = SkillDiagnostic {
///     path: ".agents/skills/PDF".into(),
///     skill: None,
///     code: SkillDiagnosticCode::InvalidName,
///     message: "directory name `PDF` must be lower kebab-case".into(),
/// };
/// assert_eq!(d.to_string(), "SKILL_INVALID_NAME .agents/skills/PDF: directory name `PDF` must be lower kebab-case");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillDiagnostic {
    /// The root, skill directory or `SKILL.md` concerned.
    pub path: PathBuf,
    /// The skill name (the directory name) when it is a valid name.
    pub skill: Option<String>,
    /// The stable code.
    pub code: SkillDiagnosticCode,
    /// A one-line explanation.
    pub message: String,
}

impl std::fmt::Display for SkillDiagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.path.display(), self.message)
    }
}
