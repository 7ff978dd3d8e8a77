//! Tool naming: `mcp__<server>__<tool>`, replacement, truncation with a stable
//! suffix, no collisions.

use iris_mcp::naming::{NameAllocator, identity_suffix, sanitize, tool_name};
use iris_tools_core::definition::check_tool_name;

/// `Exact(name)` or `Suffixed(prefix)`: the name is `prefix` + `_` + 8 hex digits.
enum Want {
    Exact(&'static str),
    Suffixed(&'static str),
}

fn check(server: &str, tool: &str, want: Want) {
    let got = tool_name(server, tool);
    assert!(
        check_tool_name(&got).is_ok(),
        "{got} is not a valid tool name"
    );
    assert!(got.len() <= 64, "{got}");
    match want {
        Want::Exact(name) => assert_eq!(got, name, "{server}/{tool}"),
        Want::Suffixed(prefix) => {
            let suffix = identity_suffix(server, tool, 0);
            assert_eq!(got, format!("{prefix}_{suffix}"), "{server}/{tool}");
        }
    }
    // Stable: the same raw pair always gives the same name.
    assert_eq!(tool_name(server, tool), got);
}

#[test]
fn names_table() {
    use Want::{Exact, Suffixed};
    check(
        "time",
        "get_current_time",
        Exact("mcp__time__get_current_time"),
    );
    check("GitHub", "listIssues2", Exact("mcp__GitHub__listIssues2"));
    check(
        "time",
        "get-current.time",
        Suffixed("mcp__time__get_current_time"),
    );
    check("my server", "x", Suffixed("mcp__my_server__x"));
    check("天气", "查询", Suffixed("mcp________"));
    check("s", "emoji🙂tool", Suffixed("mcp__s__emoji_tool"));
    // 5 + 1 + 2 + 56 = 64 characters: fits exactly, no suffix.
    check(
        "s",
        &"a".repeat(56),
        Exact(Box::leak(
            format!("mcp__s__{}", "a".repeat(56)).into_boxed_str(),
        )),
    );
    // One more and it is truncated to 55 characters + `_` + 8 hex digits.
    check(
        "s",
        &"a".repeat(57),
        Suffixed(Box::leak(
            format!("mcp__s__{}", "a".repeat(47)).into_boxed_str(),
        )),
    );
    check(
        &"long".repeat(20),
        "t",
        Suffixed(Box::leak(
            format!("mcp__{}", &"long".repeat(20)[..50]).into_boxed_str(),
        )),
    );
}

#[test]
fn suffixes_are_stable_and_distinguish_raw_names() {
    // FNV-1a is fixed, so these values never change between builds.
    assert_eq!(
        identity_suffix("time", "get-current.time", 0),
        identity_suffix("time", "get-current.time", 0)
    );
    assert_eq!(iris_mcp::naming::fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(iris_mcp::naming::fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    // Names that sanitize alike keep distinct suffixes.
    assert_eq!(sanitize("get-weather"), sanitize("get.weather"));
    assert_ne!(tool_name("s", "get-weather"), tool_name("s", "get.weather"));
    // The server is part of the identity.
    assert_ne!(identity_suffix("a", "b", 0), identity_suffix("b", "a", 0));
    assert_ne!(identity_suffix("a", "b", 0), identity_suffix("a", "b", 1));
}

#[test]
fn allocator_never_collides() {
    // Taken by a built-in tool; `a__b`/`c` and `a`/`b__c` have the same plain name;
    // two long names share their first 55 characters.
    let long1 = format!("{}1", "x".repeat(70));
    let long2 = format!("{}2", "x".repeat(70));
    let mut names = NameAllocator::new(["mcp__s__taken".to_owned()]);
    let pairs = [
        ("s", "taken"),
        ("a__b", "c"),
        ("a", "b__c"),
        ("s", long1.as_str()),
        ("s", long2.as_str()),
        ("s", "get-weather"),
        ("s", "get.weather"),
        ("s", "get_weather"),
    ];
    let got: Vec<String> = pairs.iter().map(|(s, t)| names.allocate(s, t)).collect();
    let unique: std::collections::BTreeSet<&String> = got.iter().collect();
    assert_eq!(unique.len(), got.len(), "{got:#?}");
    assert!(!got.contains(&"mcp__s__taken".to_owned()));
    assert_eq!(
        got[1], "mcp__a__b__c",
        "the first of two equal plain names keeps it"
    );
    assert_ne!(got[2], "mcp__a__b__c");
    assert_eq!(
        got[7], "mcp__s__get_weather",
        "a clean name needs no suffix"
    );
    for name in &got {
        assert!(check_tool_name(name).is_ok() && name.len() <= 64, "{name}");
    }
}
