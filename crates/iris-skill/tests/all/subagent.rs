//! Tests for subagent catalog parsing: the fixture file, selection, and every rule as
//! a table of broken catalogs.

use std::path::Path;

use iris_skill::SubagentCatalog;

use crate::support::{Workspace, fixture_file};

#[test]
fn fixture_catalog_loads_and_resolves_paths() {
    let path = fixture_file("subagents/catalog.yaml");
    let catalog = SubagentCatalog::load(&path).unwrap();
    let dir = path.parent().unwrap();
    assert_eq!(catalog.default_selector(), "researcher");
    assert_eq!(
        catalog.selectors().collect::<Vec<_>>(),
        ["researcher", "code-reviewer"]
    );
    assert_eq!(catalog.path(), path);

    let default = catalog.select(None).unwrap();
    assert_eq!(default.selector, "researcher");
    assert_eq!(default.path, dir.join("agents/researcher.yaml"));
    let reviewer = catalog.select(Some("code-reviewer")).unwrap();
    assert_eq!(reviewer.path, dir.join("./agents/reviewer.yaml"));
    assert_eq!(
        reviewer.description,
        "Reviews a patch for bugs, missing tests and style problems."
    );

    let err = catalog.select(Some("coder")).unwrap_err();
    assert_eq!(err.code(), "SUBAGENT_NOT_FOUND");
    assert!(
        err.to_string()
            .contains("available: `researcher`, `code-reviewer`"),
        "{err}"
    );
}

#[test]
fn catalog_path_is_relative_to_the_agent_yaml() {
    let table: &[(&str, &str, &str)] = &[
        (
            "/srv/app/agent.yaml",
            "subagents.yaml",
            "/srv/app/subagents.yaml",
        ),
        (
            "/srv/app/agent.yaml",
            "../shared/sub.yaml",
            "/srv/app/../shared/sub.yaml",
        ),
        (
            "/srv/app/agent.yaml",
            "/etc/iris/sub.yaml",
            "/etc/iris/sub.yaml",
        ),
        ("agent.yaml", "sub.yaml", "sub.yaml"),
    ];
    for (config, value, want) in table {
        assert_eq!(
            SubagentCatalog::resolve_path(Path::new(config), Path::new(value)),
            Path::new(want),
            "{config} + {value}"
        );
    }
}

/// `Err((field, text the message contains))`; `Ok(selectors)` in file order.
type Expect = Result<&'static [&'static str], (&'static str, &'static str)>;

fn check(yaml: &str, expect: Expect) {
    let path = Path::new("/cfg/subagents.yaml");
    match (SubagentCatalog::parse(yaml, path), expect) {
        (Ok(catalog), Ok(selectors)) => {
            assert_eq!(catalog.selectors().collect::<Vec<_>>(), selectors, "{yaml}");
        }
        (Err(err), Err((field, text))) => {
            assert_eq!(err.code(), "SUBAGENT_CATALOG_INVALID", "{yaml}");
            let message = err.to_string();
            assert!(
                message.starts_with(&format!(
                    "subagent catalog `/cfg/subagents.yaml`: `{field}` "
                )),
                "{yaml}: {message}"
            );
            assert!(message.contains(text), "{yaml}: {message}");
        }
        (got, want) => panic!("{yaml}: got {got:?}, want {want:?}"),
    }
}

#[test]
fn catalog_rules_table() {
    const A: &str = "  a:\n    path: a.yaml\n    description: Agent A.\n";
    let table: Vec<(String, Expect)> = vec![
        (format!("default: a\nagents:\n{A}"), Ok(&["a"])),
        (
            format!("default: b\nagents:\n{A}  b:\n    path: b.yaml\n    description: Agent B.\n"),
            Ok(&["a", "b"]),
        ),
        (
            "".into(),
            Err((
                "<file>",
                "must be a mapping with `default` and `agents`, found null",
            )),
        ),
        ("- a\n- b\n".into(), Err(("<file>", "found a list"))),
        ("default: [\n".into(), Err(("<file>", "is not valid YAML"))),
        (format!("agents:\n{A}"), Err(("default", "is required"))),
        ("default: a\n".into(), Err(("agents", "is required"))),
        (
            "default: a\nagents: {}\n".into(),
            Err(("agents", "must list at least one agent")),
        ),
        (
            "default: a\nagents: [a]\n".into(),
            Err(("agents", "must be a mapping, found a list")),
        ),
        (
            format!("default: A\nagents:\n{A}"),
            Err(("default", "matches no agent; selectors are `a`")),
        ),
        (
            format!("default: 1\nagents:\n{A}"),
            Err(("default", "must be a string, found a number")),
        ),
        (
            "default: Researcher\nagents:\n  Researcher:\n    path: r.yaml\n    description: R.\n"
                .into(),
            Err((
                "agents.Researcher",
                "selector `Researcher` must be lower kebab-case",
            )),
        ),
        (
            "default: a_b\nagents:\n  a_b:\n    path: r.yaml\n    description: R.\n".into(),
            Err(("agents.a_b", "use `-` instead of `_`")),
        ),
        (
            "default: a\nagents:\n  1:\n    path: r.yaml\n    description: R.\n".into(),
            Err(("agents.1", "selector must be a string")),
        ),
        (
            "default: a\nagents:\n  a: a.yaml\n".into(),
            Err((
                "agents.a",
                "must be a mapping with `path` and `description`",
            )),
        ),
        (
            "default: a\nagents:\n  a:\n    description: A.\n".into(),
            Err(("agents.a.path", "is required")),
        ),
        (
            "default: a\nagents:\n  a:\n    path: ''\n    description: A.\n".into(),
            Err(("agents.a.path", "must not be empty")),
        ),
        (
            "default: a\nagents:\n  a:\n    path: [x]\n    description: A.\n".into(),
            Err(("agents.a.path", "must be a string, found a list")),
        ),
        (
            "default: a\nagents:\n  a:\n    path: a.yaml\n".into(),
            Err(("agents.a.description", "is required")),
        ),
        (
            "default: a\nagents:\n  a:\n    path: a.yaml\n    description: '  '\n".into(),
            Err(("agents.a.description", "must not be empty")),
        ),
        (
            "default: a\nagents:\n  a:\n    path: a.yaml\n    description: 5\n".into(),
            Err(("agents.a.description", "must be a string, found a number")),
        ),
        (
            "default: a\nagents:\n  a:\n    path: a.yaml\n    description: A.\n    model: fast\n"
                .into(),
            Err((
                "agents.a.model",
                "is not a known field; expected `path` and `description`",
            )),
        ),
        (
            format!("default: a\nagents:\n{A}defaults: x\n"),
            Err(("defaults", "is not a known field")),
        ),
        (
            format!("default: a\nagents:\n{A}  a:\n    path: b.yaml\n    description: B.\n"),
            Err(("<file>", "duplicate key")),
        ),
    ];
    for (yaml, expect) in table {
        check(&yaml, expect);
    }
}

#[test]
fn unreadable_catalog_names_the_file() {
    let ws = Workspace::new();
    let path = ws.path().join("missing.yaml");
    let err = SubagentCatalog::load(&path).unwrap_err();
    assert_eq!(err.code(), "SUBAGENT_CATALOG_UNREADABLE");
    assert!(err.to_string().contains("missing.yaml"), "{err}");
}

#[test]
fn only_the_catalog_is_read_not_the_children() {
    // Child files need not exist while the catalog is validated: only the selected
    // child is loaded, later, by the runner.
    let ws = Workspace::new();
    let path = ws.file(
        "team/subagents.yaml",
        "default: solo\nagents:\n  solo:\n    path: nowhere.yaml\n    description: Solo.\n",
    );
    let catalog = SubagentCatalog::load(&path).unwrap();
    assert_eq!(
        catalog.select(None).unwrap().path,
        ws.path().join("team/nowhere.yaml")
    );
}
