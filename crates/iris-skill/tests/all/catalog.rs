//! Tests for the skill catalog: stable order and both projections.

use iris_skill::{SkillDiscoveryOptions, SkillRegistry, SkillScope, discover_skills};

use crate::support::{Workspace, fixture, registry};

/// Writes the same skills in a given creation order and returns the catalog text and
/// JSON; the order must not show.
fn catalog_for(order: &[&str]) -> (String, serde_json::Value) {
    let ws = Workspace::new();
    for name in order {
        ws.skill(
            name,
            &format!("|\n  The {name} skill.\n  Second line."),
            "Body.\n",
        );
    }
    let catalog = registry(ws.path()).catalog();
    (catalog.to_text(), catalog.to_json())
}

#[test]
fn catalog_is_stable_whatever_the_creation_order() {
    let orders: &[&[&str]] = &[
        &["pdf", "changelog", "a11y-audit", "docx"],
        &["docx", "a11y-audit", "changelog", "pdf"],
        &["changelog", "pdf", "docx", "a11y-audit"],
    ];
    let first = catalog_for(orders[0]);
    for order in &orders[1..] {
        assert_eq!(catalog_for(order), first, "{order:?}");
    }
    insta::assert_snapshot!("catalog_text", first.0);
    insta::assert_json_snapshot!("catalog_json", first.1);
}

#[test]
fn catalog_is_stable_across_root_order() {
    let ws = Workspace::new();
    ws.file("one/zeta/SKILL.md", "---\ndescription: Zeta.\n---\n");
    ws.file("two/alpha/SKILL.md", "---\ndescription: Alpha.\n---\n");
    let text = |roots: [&str; 2]| {
        let options = SkillDiscoveryOptions::new(ws.path())
            .with_roots(roots.map(|r| (SkillScope::Project, r)));
        SkillRegistry::new(discover_skills(&options).unwrap())
            .catalog()
            .to_text()
    };
    assert_eq!(text(["one", "two"]), text(["two", "one"]));
}

#[test]
fn catalog_table() {
    // (skills as (name, description), expected text)
    let table: &[(&[(&str, &str)], &str)] = &[
        (&[], ""),
        (
            &[("pdf", "Work with PDFs.")],
            "Available skills (call load_skill with a name to read its instructions):\n- pdf: Work with PDFs.",
        ),
        (
            &[
                ("b", "'Tabs\tand   spaces   fold.'"),
                ("a", "\"Line one.\\nLine two.\""),
            ],
            "Available skills (call load_skill with a name to read its instructions):\n- a: Line one. Line two.\n- b: Tabs and spaces fold.",
        ),
    ];
    for (skills, want) in table {
        let ws = Workspace::new();
        for (name, description) in *skills {
            ws.skill(name, description, "");
        }
        let catalog = registry(ws.path()).catalog();
        assert_eq!(catalog.to_text(), *want);
        assert_eq!(catalog.len(), skills.len());
        assert_eq!(catalog.is_empty(), skills.is_empty());
    }
}

#[test]
fn catalog_of_the_rules_fixture_lists_only_valid_skills() {
    let catalog = registry(&fixture("rules")).catalog();
    let names: Vec<&str> = catalog.skills.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "bad-field-types",
            "crlf-skill",
            "long-description",
            "name-mismatch",
            "unknown-keys",
            "valid-skill"
        ]
    );
}
