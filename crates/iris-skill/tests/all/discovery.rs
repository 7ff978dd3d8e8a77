//! Tests for discovery: every scan rule and diagnostic, on the `rules` fixture tree
//! and on temporary trees for symlinks and roots.

use std::path::Path;

use iris_skill::{
    SkillDiscoveryOptions, SkillDiscoveryResult, SkillScope, discover_skills, resolve_skills_root,
};
use serde_json::json;

use crate::support::{Workspace, discover, fixture, rel, result_view, skill_text};

/// The codes of the diagnostics about `entry` (a direct child of the default root).
fn codes_for(result: &SkillDiscoveryResult, entry: &str) -> Vec<&'static str> {
    let root = result.workspace_root.join(".agents/skills").join(entry);
    result
        .diagnostics
        .iter()
        .filter(|d| d.path.starts_with(&root))
        .map(|d| d.code.as_str())
        .collect()
}

fn check(result: &SkillDiscoveryResult, entry: &str, listed: bool, codes: &[&str]) {
    let names: Vec<&str> = result.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names.contains(&entry),
        listed,
        "{entry}: listed? skills = {names:?}"
    );
    assert_eq!(codes_for(result, entry), codes, "{entry}: diagnostics");
}

/// One row per rule of the scan; together the rows account for every diagnostic.
const RULES: &[(&str, bool, &[&str])] = &[
    ("valid-skill", true, &[]),
    ("crlf-skill", true, &[]),
    ("unknown-keys", true, &[]),
    ("name-mismatch", true, &["SKILL_NAME_MISMATCH"]),
    ("long-description", true, &["SKILL_DESCRIPTION_TRUNCATED"]),
    ("bad-field-types", true, &["SKILL_FIELD_INVALID"; 5]),
    ("Uppercase-Skill", false, &["SKILL_INVALID_NAME"]),
    ("under_score", false, &["SKILL_INVALID_NAME"]),
    ("-leading-hyphen", false, &["SKILL_INVALID_NAME"]),
    ("no-skill-file", false, &["SKILL_FILE_MISSING"]),
    ("group", false, &["SKILL_FILE_MISSING"]),
    ("empty-description", false, &["SKILL_DESCRIPTION_MISSING"]),
    ("missing-description", false, &["SKILL_DESCRIPTION_MISSING"]),
    ("list-description", false, &["SKILL_DESCRIPTION_MISSING"]),
    ("empty-frontmatter", false, &["SKILL_DESCRIPTION_MISSING"]),
    ("no-frontmatter", false, &["SKILL_FRONTMATTER_MISSING"]),
    ("bad-yaml", false, &["SKILL_FRONTMATTER_INVALID"]),
    ("unterminated", false, &["SKILL_FRONTMATTER_INVALID"]),
    ("not-a-mapping", false, &["SKILL_FRONTMATTER_INVALID"]),
    // Ignored silently: hidden entries, plain files, and anything below a direct child.
    (".hidden-skill", false, &[]),
    ("README.md", false, &[]),
    ("nested-skill", false, &[]),
];

#[test]
fn rules_fixture_table() {
    let result = discover(&fixture("rules"));
    for (entry, listed, codes) in RULES {
        check(&result, entry, *listed, codes);
    }
    let accounted: usize = RULES.iter().map(|(_, _, codes)| codes.len()).sum();
    assert_eq!(
        result.diagnostics.len(),
        accounted,
        "a diagnostic no row expects"
    );
    let listed = RULES.iter().filter(|(_, listed, _)| *listed).count();
    assert_eq!(result.skills.len(), listed);
}

#[test]
fn rules_fixture_snapshot() {
    let ws = fixture("rules");
    insta::assert_json_snapshot!(result_view(&discover(&ws), &ws));
}

#[test]
fn skills_are_sorted_by_name_and_keyed_by_directory() {
    let result = discover(&fixture("rules"));
    let names: Vec<&str> = result.skills.iter().map(|s| s.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    // The declared name `some-other-name` loses to the directory.
    assert!(names.contains(&"name-mismatch"));
    assert!(!names.contains(&"some-other-name"));
    let mismatch = result
        .diagnostics
        .iter()
        .find(|d| d.code.as_str() == "SKILL_NAME_MISMATCH")
        .unwrap();
    assert_eq!(mismatch.skill.as_deref(), Some("name-mismatch"));
    assert!(mismatch.message.contains("some-other-name"));
}

#[test]
fn unknown_frontmatter_keys_are_kept_in_metadata() {
    let result = discover(&fixture("rules"));
    let skill = result
        .skills
        .iter()
        .find(|s| s.name == "unknown-keys")
        .unwrap();
    assert_eq!(skill.license.as_deref(), Some("Apache-2.0"));
    assert_eq!(
        skill.compatibility.as_deref(),
        Some("Requires git and network access")
    );
    assert_eq!(
        skill.allowed_tools,
        ["Bash(git add:*)", "Bash(git commit:*)", "Read"]
    );
    assert_eq!(
        serde_json::to_value(&skill.metadata).unwrap(),
        json!({
            "author": "example-org",
            "version": "1.2",
            "x-shared": "from-metadata",
            "user-invocable": true,
            "model": "fast",
            "tags": ["git", "commits"],
        })
    );
}

#[test]
fn fields_of_the_wrong_type_are_ignored_and_the_skill_kept() {
    let result = discover(&fixture("rules"));
    let skill = result
        .skills
        .iter()
        .find(|s| s.name == "bad-field-types")
        .unwrap();
    assert_eq!(skill.license, None);
    assert_eq!(skill.compatibility, None);
    assert!(skill.allowed_tools.is_empty());
    assert!(skill.metadata.is_empty());
}

/// Truncation rule: at most `max` characters; a cut keeps `max - 1` characters minus
/// trailing whitespace, then `…`.
#[test]
fn description_cap_table() {
    let description = "Summarize long documents into short briefs. Keep every number.";
    let table: &[(usize, &str, bool)] = &[
        (1024, description, false),
        (description.len(), description, false),
        (
            description.len() - 1,
            "Summarize long documents into short briefs. Keep every numbe…",
            true,
        ),
        (10, "Summarize…", true),
        // The cut lands right after a space: the space is dropped before `…`.
        (16, "Summarize long…", true),
    ];
    let ws = Workspace::new();
    ws.skill("brief", description, "Body.\n");
    for (max, want, truncated) in table {
        let options = SkillDiscoveryOptions::new(ws.path()).with_max_description_chars(*max);
        let result = discover_skills(&options).unwrap();
        assert_eq!(result.skills[0].description, *want, "cap {max}");
        assert!(result.skills[0].description.chars().count() <= *max);
        let codes: Vec<_> = result.diagnostics.iter().map(|d| d.code.as_str()).collect();
        let expected: &[&str] = if *truncated {
            &["SKILL_DESCRIPTION_TRUNCATED"]
        } else {
            &[]
        };
        assert_eq!(codes, expected, "cap {max}");
    }
}

#[test]
fn long_fixture_description_is_capped_at_1024() {
    let result = discover(&fixture("rules"));
    let skill = result
        .skills
        .iter()
        .find(|s| s.name == "long-description")
        .unwrap();
    let text = std::fs::read_to_string(skill.skill_file()).unwrap();
    let yaml = text.split("---\n").nth(1).unwrap();
    let frontmatter: serde_yaml::Value = serde_yaml::from_str(yaml).unwrap();
    let original = frontmatter["description"].as_str().unwrap();
    assert!(original.chars().count() > 1024);
    // The rule, computed independently: 1023 characters, trailing space dropped, `…`.
    let head: String = original.chars().take(1023).collect();
    assert_eq!(skill.description, format!("{}…", head.trim_end()));
    assert!(skill.description.chars().count() <= 1024);
}

#[test]
fn zero_description_cap_is_a_config_error() {
    let ws = Workspace::new();
    let options = SkillDiscoveryOptions::new(ws.path()).with_max_description_chars(0);
    let err = discover_skills(&options).unwrap_err();
    assert_eq!(err.code(), "SKILL_CONFIG_INVALID");
    assert!(err.to_string().contains("max_description_chars"));
}

#[test]
fn missing_workspace_is_an_error() {
    let ws = Workspace::new();
    let options = SkillDiscoveryOptions::new(ws.path().join("nope"));
    assert_eq!(
        discover_skills(&options).unwrap_err().code(),
        "INVALID_PATH"
    );
}

#[test]
fn resolve_skills_root_table() {
    let ws = Workspace::new();
    ws.file("skills/a/SKILL.md", &skill_text("A.", ""));
    ws.file("plain.txt", "x");
    let outside = Workspace::new();
    let table: &[(&str, Result<&str, &str>)] = &[
        ("skills", Ok("skills")),
        ("./skills/../skills", Ok("skills")),
        (".", Ok("")),
        ("missing", Err("SKILL_ROOT_NOT_FOUND")),
        ("plain.txt", Err("SKILL_ROOT_INVALID")),
        ("..", Err("PATH_OUTSIDE_WORKSPACE")),
    ];
    for (root, want) in table {
        let got = resolve_skills_root(ws.path(), Path::new(root));
        match (got, want) {
            (Ok(path), Ok(want)) => assert_eq!(rel(&path, ws.path()), *want, "{root}"),
            (Err(e), Err(code)) => assert_eq!(e.code(), *code, "{root}: {e}"),
            (got, want) => panic!("{root}: got {got:?}, want {want:?}"),
        }
    }
    // An absolute root is accepted inside the workspace and refused outside it.
    let inside = resolve_skills_root(ws.path(), &ws.path().join("skills")).unwrap();
    assert_eq!(rel(&inside, ws.path()), "skills");
    let err = resolve_skills_root(ws.path(), outside.path()).unwrap_err();
    assert_eq!(err.code(), "PATH_OUTSIDE_WORKSPACE");
}

#[test]
fn root_problems_are_diagnostics_table() {
    let ws = Workspace::new();
    ws.file("file-root", "not a directory");
    let table: &[(&str, &str)] = &[
        ("missing", "SKILL_ROOT_NOT_FOUND"),
        ("file-root", "SKILL_ROOT_INVALID"),
        ("../..", "SKILL_ROOT_INVALID"),
    ];
    for (root, code) in table {
        let options =
            SkillDiscoveryOptions::new(ws.path()).with_roots([(SkillScope::Project, *root)]);
        let result = discover_skills(&options).unwrap();
        assert!(result.skills.is_empty(), "{root}");
        let codes: Vec<_> = result.diagnostics.iter().map(|d| d.code.as_str()).collect();
        assert_eq!(codes, [*code], "{root}");
        assert_eq!(result.diagnostics[0].skill, None);
    }
}

#[test]
fn first_root_wins_on_duplicate_names() {
    let ws = Workspace::new();
    ws.file(
        "first/shared/SKILL.md",
        &skill_text("From the first root.", ""),
    );
    ws.file(
        "second/shared/SKILL.md",
        &skill_text("From the second root.", ""),
    );
    ws.file("second/only-second/SKILL.md", &skill_text("Only here.", ""));
    let options = SkillDiscoveryOptions::new(ws.path()).with_roots([
        (SkillScope::Project, "first"),
        (SkillScope::Project, "second"),
    ]);
    let result = discover_skills(&options).unwrap();
    insta::assert_json_snapshot!(result_view(&result, ws.path()));
}

#[test]
fn nested_skills_are_not_scanned() {
    let ws = Workspace::new();
    ws.file(".agents/skills/outer/SKILL.md", &skill_text("Outer.", ""));
    ws.file(
        ".agents/skills/outer/inner/SKILL.md",
        &skill_text("Inner.", ""),
    );
    ws.file(
        ".agents/skills/folder/deeper/SKILL.md",
        &skill_text("Deeper.", ""),
    );
    let result = discover(ws.path());
    let names: Vec<_> = result.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["outer"]);
    let codes: Vec<_> = result.diagnostics.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(codes, ["SKILL_FILE_MISSING"]);
}

#[test]
fn unreadable_skill_file_is_a_diagnostic() {
    let ws = Workspace::new();
    let path = ws.path().join(".agents/skills/binary/SKILL.md");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, [0x2d, 0x2d, 0x2d, 0x0a, 0xff, 0xfe, 0x0a]).unwrap();
    ws.file(".agents/skills/dir-as-file/SKILL.md/keep", "");
    let result = discover(ws.path());
    assert!(result.skills.is_empty());
    let codes: Vec<_> = result.diagnostics.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(codes, ["SKILL_READ_FAILED", "SKILL_FILE_MISSING"]);
}

#[cfg(unix)]
mod symlinks {
    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn symlinked_folders_table() {
        let ws = Workspace::new();
        let outside = Workspace::new();
        ws.file(
            "shared/inside/SKILL.md",
            &skill_text("Lives elsewhere in the workspace.", "Inside body.\n"),
        );
        outside.file(
            "escaped/SKILL.md",
            &skill_text("Lives outside the workspace.", ""),
        );
        outside.file("secret.md", &skill_text("Outside file.", ""));
        ws.file(".agents/skills/file-link/keep", "");
        let root = ws.path().join(".agents/skills");
        symlink(ws.path().join("shared/inside"), root.join("inside")).unwrap();
        symlink(outside.path().join("escaped"), root.join("escaped")).unwrap();
        symlink(root.join("nothing-here"), root.join("dangling")).unwrap();
        symlink(ws.path().join("shared/inside"), root.join("Upper-Link")).unwrap();
        symlink(
            outside.path().join("secret.md"),
            root.join("file-link/SKILL.md"),
        )
        .unwrap();

        let result = discover(ws.path());
        let table: &[(&str, bool, &[&str])] = &[
            ("inside", true, &[]),
            ("escaped", false, &["SKILL_OUTSIDE_WORKSPACE"]),
            ("dangling", false, &["SKILL_FILE_MISSING"]),
            ("Upper-Link", false, &["SKILL_INVALID_NAME"]),
            ("file-link", false, &["SKILL_OUTSIDE_WORKSPACE"]),
        ];
        for (entry, listed, codes) in table {
            check(&result, entry, *listed, codes);
        }
        assert_eq!(result.diagnostics.len(), 4);
        // A symlinked skill resolves to its real, canonical folder.
        let inside = &result.skills[0];
        assert_eq!(rel(&inside.path, ws.path()), "shared/inside");
    }

    #[test]
    fn symlinked_root_outside_the_workspace_is_refused() {
        let ws = Workspace::new();
        let outside = Workspace::new();
        outside.file("skills/x/SKILL.md", &skill_text("X.", ""));
        std::fs::create_dir_all(ws.path().join(".agents")).unwrap();
        symlink(
            outside.path().join("skills"),
            ws.path().join(".agents/skills"),
        )
        .unwrap();
        let result = discover(ws.path());
        assert!(result.skills.is_empty());
        let codes: Vec<_> = result.diagnostics.iter().map(|d| d.code.as_str()).collect();
        assert_eq!(codes, ["SKILL_ROOT_INVALID"]);
        assert!(
            result.diagnostics[0]
                .message
                .contains("outside the workspace")
        );
    }
}
