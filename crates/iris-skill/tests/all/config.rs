//! Tests for the `skills` configuration section and required skills.

use iris_skill::SkillsConfig;

use crate::support::{Workspace, fixture, registry, skill_text};

/// `Ok(())` or `Err((code, text the message contains))`.
type Expect = Result<(), (&'static str, &'static str)>;

fn check(yaml: &str, expect: Expect) {
    let got = serde_yaml::from_str::<SkillsConfig>(yaml)
        .map_err(|e| ("PARSE", e.to_string()))
        .and_then(|c| c.validate().map_err(|e| (e.code(), e.to_string())));
    match (got, expect) {
        (Ok(()), Ok(())) => {}
        (Err((code, message)), Err((want_code, want_text))) => {
            assert_eq!(code, want_code, "{yaml}: {message}");
            assert!(message.contains(want_text), "{yaml}: {message}");
        }
        (got, expect) => panic!("{yaml}: got {got:?}, want {expect:?}"),
    }
}

#[test]
fn config_table() {
    let table: &[(&str, Expect)] = &[
        ("{}", Ok(())),
        ("enabled: true", Ok(())),
        (
            "enabled: true\nroot: skills\nrequire: [pdf, changelog]",
            Ok(()),
        ),
        (
            "enabled: true\nrequire: [PDF]",
            Err((
                "SKILL_CONFIG_INVALID",
                "`require[0]` `PDF` must be lower kebab-case",
            )),
        ),
        (
            "enabled: true\nrequire: [pdf, my_skill]",
            Err(("SKILL_CONFIG_INVALID", "`require[1]`")),
        ),
        (
            "require: [pdf]",
            Err(("SKILL_CONFIG_INVALID", "`enabled` is false")),
        ),
        (
            "enabled: true\nroot: ''",
            Err(("SKILL_CONFIG_INVALID", "`root` must not be empty")),
        ),
        (
            "enabled: true\nroots: [a]",
            Err(("PARSE", "unknown field `roots`")),
        ),
        ("enabled: yes-please", Err(("PARSE", "enabled"))),
    ];
    for (yaml, expect) in table {
        check(yaml, *expect);
    }
}

#[test]
fn defaults_match_the_seed() {
    let config = SkillsConfig::default();
    assert!(!config.enabled);
    assert_eq!(config.root, std::path::Path::new(".agents/skills"));
    assert!(config.require.is_empty());
    assert_eq!(serde_yaml::from_str::<SkillsConfig>("{}").unwrap(), config);
}

#[test]
fn missing_required_skills_fail_with_what_was_found() {
    let config = SkillsConfig {
        enabled: true,
        require: vec![
            "valid-skill".into(),
            "pdf".into(),
            "some-other-name".into(),
            "pdf".into(),
        ],
        ..SkillsConfig::default()
    };
    let err = config
        .check_required(&registry(&fixture("rules")))
        .unwrap_err();
    assert_eq!(err.code(), "SKILL_REQUIRED_MISSING");
    insta::assert_snapshot!(err.to_string());
    let info = err.to_info();
    assert_eq!(
        info.details["missing"],
        serde_json::json!(["pdf", "some-other-name"])
    );
}

#[test]
fn assemble_table() {
    let ws = Workspace::new();
    ws.file("skills/pdf/SKILL.md", &skill_text("PDF.", ""));
    // (config, Ok(number of skills) | Err(code)); None = skills disabled.
    let table: Vec<(SkillsConfig, Result<Option<usize>, &str>)> = vec![
        (SkillsConfig::default(), Ok(None)),
        (
            SkillsConfig {
                enabled: true,
                root: "skills".into(),
                require: vec!["pdf".into()],
            },
            Ok(Some(1)),
        ),
        (
            SkillsConfig {
                enabled: true,
                root: "skills".into(),
                require: vec!["docx".into()],
            },
            Err("SKILL_REQUIRED_MISSING"),
        ),
        // A missing root is a diagnostic, not an error, until a name is required.
        (
            SkillsConfig {
                enabled: true,
                ..SkillsConfig::default()
            },
            Ok(Some(0)),
        ),
        (
            SkillsConfig {
                enabled: true,
                require: vec!["pdf".into()],
                ..SkillsConfig::default()
            },
            Err("SKILL_REQUIRED_MISSING"),
        ),
        (
            SkillsConfig {
                enabled: false,
                root: "skills".into(),
                require: vec!["pdf".into()],
            },
            Err("SKILL_CONFIG_INVALID"),
        ),
    ];
    for (config, want) in table {
        let got = config.assemble(ws.path());
        match (got, want) {
            (Ok(registry), Ok(want)) => assert_eq!(registry.map(|r| r.len()), want, "{config:?}"),
            (Err(e), Err(code)) => assert_eq!(e.code(), code, "{config:?}: {e}"),
            (got, want) => panic!("{config:?}: got {got:?}, want {want:?}"),
        }
    }
}
