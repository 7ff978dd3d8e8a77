//! Tests for the crate error: stable codes and one-line messages.

use std::path::PathBuf;

use iris_skill::Error;

#[test]
fn error_codes_and_messages_table() {
    let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
    let table: Vec<(Error, &str, &str)> = vec![
        (
            Error::Config {
                field: "require[0]".into(),
                reason: "must not be empty".into(),
            },
            "SKILL_CONFIG_INVALID",
            "invalid skills configuration: `require[0]` must not be empty",
        ),
        (
            Error::RootNotFound {
                path: PathBuf::from("/ws/.agents/skills"),
            },
            "SKILL_ROOT_NOT_FOUND",
            "skills root `/ws/.agents/skills` does not exist",
        ),
        (
            Error::RootNotDirectory {
                path: PathBuf::from("/ws/skills"),
            },
            "SKILL_ROOT_INVALID",
            "skills root `/ws/skills` is not a directory",
        ),
        (
            Error::SkillNotFound {
                name: "x".into(),
                suggestions: vec![],
            },
            "SKILL_NOT_FOUND",
            "no skill named `x`",
        ),
        (
            Error::SkillNotFound {
                name: "pd".into(),
                suggestions: vec!["pdf".into(), "pdf-forms".into()],
            },
            "SKILL_NOT_FOUND",
            "no skill named `pd`; did you mean `pdf` or `pdf-forms`?",
        ),
        (
            Error::SkillNotFound {
                name: "p".into(),
                suggestions: vec!["a".into(), "b".into(), "c".into()],
            },
            "SKILL_NOT_FOUND",
            "no skill named `p`; did you mean `a`, `b` or `c`?",
        ),
        (
            Error::SkillUnavailable {
                name: "gone".into(),
                path: PathBuf::from("/ws/gone/SKILL.md"),
                source: io(),
            },
            "SKILL_UNAVAILABLE",
            "skill `gone` is no longer available at `/ws/gone/SKILL.md`",
        ),
        (
            Error::SkillInvalid {
                name: "s".into(),
                reason: "no frontmatter".into(),
            },
            "SKILL_INVALID",
            "skill `s` has an invalid SKILL.md: no frontmatter",
        ),
        (
            Error::RequiredSkillsMissing {
                missing: vec!["pdf".into()],
                found: vec![],
            },
            "SKILL_REQUIRED_MISSING",
            "required skills not found: `pdf`; found: (none)",
        ),
        (
            Error::SubagentCatalog {
                path: "/c.yaml".into(),
                field: "default".into(),
                reason: "is required".into(),
            },
            "SUBAGENT_CATALOG_INVALID",
            "subagent catalog `/c.yaml`: `default` is required",
        ),
        (
            Error::SubagentCatalogIo {
                path: "/c.yaml".into(),
                source: io(),
            },
            "SUBAGENT_CATALOG_UNREADABLE",
            "subagent catalog `/c.yaml` cannot be read",
        ),
        (
            Error::UnknownSubagent {
                selector: "x".into(),
                catalog: "/c.yaml".into(),
                available: vec!["a".into()],
            },
            "SUBAGENT_NOT_FOUND",
            "no subagent `x` in `/c.yaml`; available: `a`",
        ),
    ];
    for (error, code, message) in table {
        assert_eq!(error.code(), code, "{error}");
        assert_eq!(error.to_string(), message);
        let info = error.to_info();
        assert_eq!(info.code, code);
        assert!(!info.message.contains('\n'), "{}", info.message);
        // The source is shown once, in the tool-facing message only.
        if std::error::Error::source(&error).is_some() {
            assert_eq!(info.message, format!("{message}: gone"));
        }
    }
}
