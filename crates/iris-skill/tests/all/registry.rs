//! Tests for the skill registry and the diagnostic codes it carries.

use iris_skill::{SkillDiagnosticCode, SkillRegistry};

use crate::support::{Workspace, discover, fixture, registry};

#[test]
fn registry_lookups_table() {
    let registry = registry(&fixture("rules"));
    // (name, has)
    let table: &[(&str, bool)] = &[
        ("valid-skill", true),
        ("name-mismatch", true),
        ("some-other-name", false),
        ("Uppercase-Skill", false),
        ("uppercase-skill", false),
        ("nested-skill", false),
        ("", false),
    ];
    for (name, has) in table {
        assert_eq!(registry.has(name), *has, "{name}");
        assert_eq!(
            registry.get(name).map(|s| s.name.as_str()),
            has.then_some(*name),
            "{name}"
        );
    }
    assert_eq!(registry.len(), 6);
    assert!(!registry.is_empty());
    assert_eq!(
        registry.names(),
        [
            "bad-field-types",
            "crlf-skill",
            "long-description",
            "name-mismatch",
            "unknown-keys",
            "valid-skill"
        ]
    );
    let iterated: Vec<&str> = registry.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(iterated, registry.names());
    assert_eq!((&registry).into_iter().count(), registry.len());
}

#[test]
fn missing_keeps_order_and_drops_repeats() {
    let registry = registry(&fixture("rules"));
    let table: &[(&[&str], &[&str])] = &[
        (&[], &[]),
        (&["valid-skill"], &[]),
        (
            &["zeta", "valid-skill", "alpha", "zeta"],
            &["zeta", "alpha"],
        ),
        (&["some-other-name"], &["some-other-name"]),
    ];
    for (names, want) in table {
        assert_eq!(registry.missing(names.iter()), *want, "{names:?}");
    }
}

#[test]
fn registry_keeps_the_discovery_diagnostics_and_root() {
    let ws = fixture("rules");
    let result = discover(&ws);
    let diagnostics = result.diagnostics.clone();
    let root = result.workspace_root.clone();
    let registry = SkillRegistry::from(result);
    assert_eq!(registry.diagnostics(), diagnostics.as_slice());
    assert_eq!(registry.workspace_root(), root);
    assert_eq!(root, ws.canonicalize().unwrap());
}

#[test]
fn empty_workspace_gives_an_empty_registry() {
    let ws = Workspace::new();
    let registry = registry(ws.path());
    assert!(registry.is_empty());
    assert_eq!(registry.len(), 0);
    assert!(registry.catalog().is_empty());
    assert_eq!(registry.catalog().to_text(), "");
    let codes: Vec<_> = registry
        .diagnostics()
        .iter()
        .map(|d| d.code.as_str())
        .collect();
    assert_eq!(codes, ["SKILL_ROOT_NOT_FOUND"]);
}

/// A diagnostic "skips" its skill exactly when the skill is absent from the result.
#[test]
fn skips_skill_agrees_with_the_result() {
    let result = discover(&fixture("rules"));
    for d in &result.diagnostics {
        let entry = d
            .path
            .strip_prefix(result.workspace_root.join(".agents/skills"))
            .unwrap()
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .into_owned();
        let listed = result.skills.iter().any(|s| s.name == entry);
        assert_eq!(d.code.skips_skill(), !listed, "{d}");
    }
}

#[test]
fn diagnostic_codes_serialize_as_their_stable_string() {
    let table = [
        (SkillDiagnosticCode::RootNotFound, "SKILL_ROOT_NOT_FOUND"),
        (SkillDiagnosticCode::RootInvalid, "SKILL_ROOT_INVALID"),
        (SkillDiagnosticCode::InvalidName, "SKILL_INVALID_NAME"),
        (SkillDiagnosticCode::FileMissing, "SKILL_FILE_MISSING"),
        (
            SkillDiagnosticCode::OutsideWorkspace,
            "SKILL_OUTSIDE_WORKSPACE",
        ),
        (SkillDiagnosticCode::ReadFailed, "SKILL_READ_FAILED"),
        (
            SkillDiagnosticCode::FrontmatterMissing,
            "SKILL_FRONTMATTER_MISSING",
        ),
        (
            SkillDiagnosticCode::FrontmatterInvalid,
            "SKILL_FRONTMATTER_INVALID",
        ),
        (
            SkillDiagnosticCode::DescriptionMissing,
            "SKILL_DESCRIPTION_MISSING",
        ),
        (
            SkillDiagnosticCode::DescriptionTruncated,
            "SKILL_DESCRIPTION_TRUNCATED",
        ),
        (SkillDiagnosticCode::NameMismatch, "SKILL_NAME_MISMATCH"),
        (SkillDiagnosticCode::FieldInvalid, "SKILL_FIELD_INVALID"),
        (SkillDiagnosticCode::Duplicate, "SKILL_DUPLICATE"),
    ];
    for (code, want) in table {
        assert_eq!(code.as_str(), want);
        assert_eq!(code.to_string(), want);
        assert_eq!(serde_json::to_value(code).unwrap(), want);
    }
}
