//! Tests for the `registry` area: registration conflicts and all-or-nothing batches,
//! lookups by alias, and view semantics (deny, groups, allow, deferred, system tools,
//! `specs_for` order).
// Tests report failures by panicking, so unwrap/expect are the clearest assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::Arc;

use iris_tools_core::{
    Error, FnTool, Tool, ToolDefinition, ToolOutput, ToolRegistry, ViewFilter, codes,
};
use serde_json::json;

/// What a test tool looks like: name, group, aliases and flags.
#[derive(Clone, Copy)]
struct Spec {
    name: &'static str,
    group: &'static str,
    aliases: &'static [&'static str],
    deferred: bool,
    system_use: bool,
}

const fn eager(name: &'static str, group: &'static str) -> Spec {
    Spec {
        name,
        group,
        aliases: &[],
        deferred: false,
        system_use: false,
    }
}

const fn aliased(name: &'static str, aliases: &'static [&'static str]) -> Spec {
    Spec {
        aliases,
        ..eager(name, "core")
    }
}

fn tool(spec: Spec) -> Arc<dyn Tool> {
    let def = ToolDefinition::new(
        spec.name,
        format!("The {} tool.", spec.name),
        json!({"type": "object"}),
    )
    .with_group(spec.group)
    .with_aliases(spec.aliases.iter().copied())
    .with_deferred(spec.deferred)
    .with_system_use(spec.system_use);
    Arc::new(FnTool::new(def, |_input, _ctx| async {
        ToolOutput::text("ok")
    }))
}

fn registry(specs: &[Spec]) -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry
        .register_many(specs.iter().map(|s| tool(*s)))
        .unwrap();
    registry
}

/// Every name and alias the registry answers to, with the canonical name it maps to.
fn lookups(registry: &ToolRegistry, names: &[&str]) -> Vec<(String, Option<String>)> {
    names
        .iter()
        .map(|n| {
            let found = registry.get(n).ok().map(|t| t.definition().name.clone());
            ((*n).to_owned(), found)
        })
        .collect()
}

/// `Ok`, or the conflicting name and what already holds it.
type Outcome = Result<(), (&'static str, &'static str)>;

/// Registers `batch` on a registry holding `existing`. `expect` is `Ok` or the
/// conflicting name and what already holds it; on failure the registry must be
/// exactly as before (names, length, every lookup).
fn check_register(label: &str, existing: &[Spec], batch: &[Spec], expect: Outcome) {
    let registry = registry(existing);
    let probe: Vec<&str> = existing
        .iter()
        .chain(batch)
        .flat_map(|s| std::iter::once(s.name).chain(s.aliases.iter().copied()))
        .collect();
    let names_before = registry.names();
    let lookups_before = lookups(&registry, &probe);

    let outcome = registry.register_many(batch.iter().map(|s| tool(*s)));
    match (outcome, expect) {
        (Ok(()), Ok(())) => {
            let expected: Vec<&str> = existing.iter().chain(batch).map(|s| s.name).collect();
            assert_eq!(registry.names(), expected, "{label}: registration order");
            for spec in batch {
                for alias in spec.aliases {
                    assert_eq!(registry.get(alias).unwrap().definition().name, spec.name);
                }
            }
        }
        (Err(Error::Conflict { name, existing }), Err((want_name, want_existing))) => {
            assert_eq!(
                (name.as_str(), existing.as_str()),
                (want_name, want_existing),
                "{label}"
            );
            assert_eq!(registry.names(), names_before, "{label}: names unchanged");
            assert_eq!(registry.len(), names_before.len(), "{label}: len unchanged");
            assert_eq!(
                lookups(&registry, &probe),
                lookups_before,
                "{label}: lookups unchanged"
            );
        }
        (outcome, expect) => panic!("{label}: got {outcome:?}, expected {expect:?}"),
    }
}

#[test]
fn conflicts_are_detected_before_anything_is_published() {
    let a = eager("alpha", "core");
    let b = eager("beta", "core");
    let c = eager("gamma", "core");
    let cases: Vec<(&str, Vec<Spec>, Vec<Spec>, Outcome)> = vec![
        (
            "no conflict",
            vec![a],
            vec![b, aliased("delta", &["d"])],
            Ok(()),
        ),
        ("empty batch", vec![a], vec![], Ok(())),
        (
            "name vs name",
            vec![a],
            vec![b, a],
            Err(("alpha", "tool `alpha`")),
        ),
        (
            "alias vs existing name",
            vec![a],
            vec![aliased("beta", &["alpha"])],
            Err(("alpha", "tool `alpha`")),
        ),
        (
            "name vs existing alias",
            vec![aliased("alpha", &["al"])],
            vec![b, eager("al", "core")],
            Err(("al", "alias of `alpha`")),
        ),
        (
            "alias vs existing alias",
            vec![aliased("alpha", &["al"])],
            vec![aliased("beta", &["al"])],
            Err(("al", "alias of `alpha`")),
        ),
        (
            "name vs name in one batch",
            vec![],
            vec![b, c, b],
            Err(("beta", "tool `beta`")),
        ),
        (
            "alias vs name in one batch",
            vec![a],
            vec![b, aliased("gamma", &["beta"])],
            Err(("beta", "tool `beta`")),
        ),
        (
            "name vs alias in one batch",
            vec![a],
            vec![aliased("beta", &["g"]), eager("g", "core")],
            Err(("g", "alias of `beta`")),
        ),
        (
            "alias vs alias in one batch",
            vec![a],
            vec![aliased("beta", &["x"]), aliased("gamma", &["x"])],
            Err(("x", "alias of `beta`")),
        ),
        (
            "alias repeated in one definition",
            vec![],
            vec![aliased("beta", &["x", "x"])],
            Err(("x", "alias of `beta`")),
        ),
    ];
    for (label, existing, batch, expect) in cases {
        check_register(label, &existing, &batch, expect);
    }
}

#[test]
fn an_invalid_definition_fails_the_whole_batch() {
    let registry = registry(&[eager("alpha", "core")]);
    let bad = Arc::new(FnTool::new(
        ToolDefinition::new("bad-name", "x", json!({"type": "object"})),
        |_i, _c| async { ToolOutput::text("") },
    )) as Arc<dyn Tool>;
    let err = registry
        .register_many([tool(eager("beta", "core")), bad])
        .unwrap_err();
    assert_eq!(err.code(), codes::INVALID_DEFINITION);
    assert_eq!(registry.names(), ["alpha"]);
    assert_eq!(
        registry.get("beta").unwrap_err().code(),
        codes::TOOL_NOT_FOUND
    );
}

#[test]
fn register_one_and_conflict_codes() {
    let registry = ToolRegistry::new();
    registry
        .register_arc(tool(aliased("alpha", &["a"])))
        .unwrap();
    let err = registry.register_arc(tool(eager("a", "core"))).unwrap_err();
    assert_eq!(err.code(), codes::TOOL_CONFLICT);
    assert_eq!(
        err.to_string(),
        "tool name `a` conflicts with an existing alias of `alpha`"
    );
    assert_eq!(registry.len(), 1);
    assert!(!registry.is_empty());
    assert!(ToolRegistry::new().is_empty());
}

#[test]
fn get_by_name_or_alias() {
    let registry = registry(&[
        aliased("read_file", &["read", "cat"]),
        eager("write_file", "core"),
    ]);
    let cases: &[(&str, Option<&str>)] = &[
        ("read_file", Some("read_file")),
        ("read", Some("read_file")),
        ("cat", Some("read_file")),
        ("write_file", Some("write_file")),
        ("READ_FILE", None),
        ("read_file ", None),
        ("", None),
        ("missing", None),
    ];
    for (query, expect) in cases {
        match (registry.get(query), expect) {
            (Ok(t), Some(name)) => assert_eq!(t.definition().name, *name, "{query:?}"),
            (Err(e), None) => {
                assert_eq!(e.code(), codes::TOOL_NOT_FOUND, "{query:?}");
                assert_eq!(e.to_string(), format!("tool `{query}` not found"));
            }
            (got, _) => panic!("{query:?}: got {got:?}, expected {expect:?}"),
        }
        assert_eq!(
            registry.contains(query),
            expect.is_some(),
            "contains {query:?}"
        );
    }
}

/// The catalog the view tests run against, in registration order.
const CATALOG: &[Spec] = &[
    eager("read", "core"),
    eager("write", "core"),
    Spec {
        deferred: true,
        ..eager("lookup", "core")
    },
    eager("deploy", "ops"),
    Spec {
        deferred: true,
        ..eager("search_logs", "ops")
    },
    Spec {
        system_use: true,
        ..eager("store_secret", "core")
    },
    Spec {
        system_use: true,
        deferred: true,
        ..eager("sys_audit", "ops")
    },
];

fn names(tools: &[Arc<dyn Tool>]) -> Vec<String> {
    tools.iter().map(|t| t.definition().name.clone()).collect()
}

/// Checks a view's available and active tools (both in registration order).
fn check_view(label: &str, filter: ViewFilter, available: &[&str], active: &[&str]) {
    let view = registry(CATALOG).view(filter);
    assert_eq!(
        names(&view.available_tools()),
        available,
        "{label}: available"
    );
    assert_eq!(names(&view.active_tools()), active, "{label}: active");
    let specs: Vec<String> = view.active_specs().into_iter().map(|s| s.name).collect();
    assert_eq!(specs, active, "{label}: active_specs");
    for spec in CATALOG {
        assert_eq!(
            view.is_available(spec.name),
            available.contains(&spec.name),
            "{label}: is_available({})",
            spec.name
        );
    }
}

#[test]
fn view_filter_order() {
    let f = ViewFilter::default;
    let cases: Vec<(&str, ViewFilter, Vec<&str>, Vec<&str>)> = vec![
        (
            "no filter: every group, deferred available but inactive, system hidden",
            f(),
            vec!["read", "write", "lookup", "deploy", "search_logs"],
            vec!["read", "write", "deploy"],
        ),
        (
            "deny removes",
            f().deny(["read", "search_logs"]),
            vec!["write", "lookup", "deploy"],
            vec!["write", "deploy"],
        ),
        (
            "deny beats allow",
            f().allow(["read", "lookup"]).deny(["read", "lookup"]),
            vec!["write", "deploy", "search_logs"],
            vec!["write", "deploy"],
        ),
        (
            "group limit",
            f().groups(["core"]),
            vec!["read", "write", "lookup"],
            vec!["read", "write"],
        ),
        (
            "empty group list admits no group",
            f().groups(Vec::<String>::new()),
            vec![],
            vec![],
        ),
        (
            "allow admits an out-of-group tool",
            f().groups(["core"]).allow(["deploy"]),
            vec!["read", "write", "lookup", "deploy"],
            vec!["read", "write", "deploy"],
        ),
        (
            "allow activates a deferred tool",
            f().allow(["lookup"]),
            vec!["read", "write", "lookup", "deploy", "search_logs"],
            vec!["read", "write", "lookup", "deploy"],
        ),
        (
            "allow admits and activates an out-of-group deferred tool",
            f().groups(["core"]).allow(["search_logs"]),
            vec!["read", "write", "lookup", "search_logs"],
            vec!["read", "write", "search_logs"],
        ),
        (
            "allow alone with no group",
            f().groups(Vec::<String>::new()).allow(["write"]),
            vec!["write"],
            vec!["write"],
        ),
        (
            "allow of an unknown name changes nothing",
            f().allow(["nope"]),
            vec!["read", "write", "lookup", "deploy", "search_logs"],
            vec!["read", "write", "deploy"],
        ),
        (
            "system tools when asked",
            f().include_system(true),
            vec![
                "read",
                "write",
                "lookup",
                "deploy",
                "search_logs",
                "store_secret",
                "sys_audit",
            ],
            vec!["read", "write", "deploy", "store_secret"],
        ),
        (
            "system tool allowed by name",
            f().allow(["store_secret"]),
            vec![
                "read",
                "write",
                "lookup",
                "deploy",
                "search_logs",
                "store_secret",
            ],
            vec!["read", "write", "deploy", "store_secret"],
        ),
        (
            "system tools still obey the group limit",
            f().groups(["core"]).include_system(true),
            vec!["read", "write", "lookup", "store_secret"],
            vec!["read", "write", "store_secret"],
        ),
        (
            "deny beats include_system",
            f().include_system(true).deny(["store_secret"]),
            vec![
                "read",
                "write",
                "lookup",
                "deploy",
                "search_logs",
                "sys_audit",
            ],
            vec!["read", "write", "deploy"],
        ),
        (
            "filters use canonical names only",
            non_canonical_filter(),
            vec!["read", "write", "lookup", "deploy", "search_logs"],
            vec!["read", "write", "deploy"],
        ),
    ];
    for (label, filter, available, active) in cases {
        check_view(label, filter, &available, &active);
    }
}

/// Allowing or denying a name that is not canonical has no effect: the catalog has no
/// aliases, so `rd` and `lk` match nothing.
fn non_canonical_filter() -> ViewFilter {
    ViewFilter::default().allow(["lk"]).deny(["rd"])
}

#[test]
fn specs_for_returns_registration_order() {
    let view = registry(CATALOG).view(ViewFilter::default().groups(["core", "ops"]));
    let cases: &[(&[&str], &[&str])] = &[
        (&["deploy", "read"], &["read", "deploy"]),
        (&["read", "deploy"], &["read", "deploy"]),
        (
            &["search_logs", "lookup", "write"],
            &["write", "lookup", "search_logs"],
        ),
        (&["read", "read"], &["read"]),
        (&["missing", "write"], &["write"]),
        // Out of the view (system tool not asked for) is skipped too.
        (&["store_secret", "read"], &["read"]),
        (&[], &[]),
    ];
    for (query, expect) in cases {
        let got: Vec<String> = view.specs_for(query).into_iter().map(|s| s.name).collect();
        assert_eq!(got, *expect, "specs_for({query:?})");
    }
    let spec = &view.specs_for(&["deploy"])[0];
    assert_eq!(
        spec,
        &registry(CATALOG)
            .get("deploy")
            .unwrap()
            .definition()
            .to_spec()
    );
}

#[test]
fn view_get_delegates_to_the_registry() {
    // The rule: view.get is a lookup, not an authorization check.
    let view = registry(CATALOG).view(ViewFilter::default().deny(["read"]));
    assert_eq!(view.get("read").unwrap().definition().name, "read");
    assert!(!view.is_available("read"));
    assert_eq!(view.get("nope").unwrap_err().code(), codes::TOOL_NOT_FOUND);
}

#[test]
fn views_are_read_only_and_live() {
    let registry = registry(&[eager("read", "core")]);
    let filter = ViewFilter::default().groups(["core"]);
    let view = registry.view(filter.clone());
    assert_eq!(view.filter(), &filter);
    registry
        .register_arc(tool(aliased("late", &["lt"])))
        .unwrap();
    registry.register_arc(tool(eager("other", "ops"))).unwrap();
    assert_eq!(names(&view.active_tools()), ["read", "late"]);
    // An alias is not a canonical name, so it is not "available" as such.
    assert!(view.is_available("late"));
    assert!(!view.is_available("lt"));
}

#[test]
fn view_filter_builders_accumulate() {
    let filter = ViewFilter::default()
        .allow(["a"])
        .allow(["b"])
        .deny(["c"])
        .deny(["d"])
        .groups(["x"])
        .include_system(true);
    let set = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>();
    assert_eq!(filter.allow, set(&["a", "b"]));
    assert_eq!(filter.deny, set(&["c", "d"]));
    assert_eq!(filter.include_groups, Some(set(&["x"])));
    assert!(filter.include_system);
}
