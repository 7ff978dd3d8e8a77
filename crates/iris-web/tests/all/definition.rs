//! The two definitions: snapshots, description rules, permission, strict mode.

use std::sync::Arc;
use std::time::Duration;

use iris_executor::DefaultPermissionPolicy;
use iris_providers::adapters::to_strict_schema;
use iris_providers::lint::{MAX_DESCRIPTION_CHARS, MIN_DESCRIPTION_CHARS, lint_definition};
use iris_tools_core::{ContextRetention, Tool, ToolCapability};
use iris_web::{TavilyClient, WebFetchTool, WebSearchTool};
use serde_json::json;

use crate::support::ctx;

fn tools() -> Vec<Arc<dyn Tool>> {
    iris_web::builtin_tools(Arc::new(TavilyClient::from_env()))
}

#[test]
fn web_search_definition() {
    let tool = WebSearchTool::new(Arc::new(TavilyClient::from_env()));
    insta::assert_json_snapshot!(tool.definition());
}

#[test]
fn web_fetch_definition() {
    let tool = WebFetchTool::new(Arc::new(TavilyClient::from_env()));
    insta::assert_json_snapshot!(tool.definition());
}

#[test]
fn names_and_yaml_keys_match_the_seed_catalog() {
    let client = Arc::new(TavilyClient::from_env());
    let lines: Vec<(&str, &str, String)> = iris_web::CATALOG
        .iter()
        .map(|(key, name, make)| (*key, *name, make(&client).definition().name.clone()))
        .collect();
    assert_eq!(
        lines,
        [
            ("web.search", "web_search", "web_search".to_owned()),
            ("web.fetch", "web_fetch", "web_fetch".to_owned())
        ]
    );
    assert_eq!(
        (WebSearchTool::NAME, WebFetchTool::NAME),
        ("web_search", "web_fetch")
    );
    let names: Vec<String> = tools()
        .iter()
        .map(|t| t.definition().name.clone())
        .collect();
    assert_eq!(names, ["web_search", "web_fetch"]);
}

#[test]
fn descriptions_follow_the_tool_design_rules() {
    for tool in tools() {
        let def = tool.definition();
        assert!(def.validate().is_ok());
        assert_eq!(lint_definition(def), vec![], "{}", def.name);
        let chars = def.description.chars().count();
        assert!(
            (MIN_DESCRIPTION_CHARS..=MAX_DESCRIPTION_CHARS).contains(&chars),
            "{}: {chars} characters",
            def.name
        );
        assert_eq!(
            def.description.lines().count(),
            3,
            "{}: What / When / Precondition",
            def.name
        );
        assert!(def.description.is_ascii(), "{}: English only", def.name);
    }
}

#[test]
fn capabilities_permission_and_scheduling() {
    let policy = DefaultPermissionPolicy::new();
    for tool in tools() {
        let def = tool.definition();
        assert_eq!(
            def.capabilities.iter().copied().collect::<Vec<_>>(),
            [ToolCapability::Network]
        );
        assert!(def.auto_allow && tool.is_auto_allowed(), "{}", def.name);
        // The default policy auto-allows built-in web tools even though network is not
        // read-only.
        let input = match def.name.as_str() {
            "web_search" => json!({"query": "q"}),
            _ => json!({"urls": ["https://a.example/"]}),
        };
        assert!(
            policy.decide(tool.as_ref(), &input, &ctx()).is_allowed(),
            "{}",
            def.name
        );
        // Network makes a tool not read-only under the default rule, so the executor
        // runs these calls as barriers; they are still safe to run concurrently.
        assert!(!tool.is_read_only());
        assert!(!tool.is_destructive());
        assert!(tool.is_concurrency_safe());
        assert_eq!(def.context_retention, ContextRetention::Observation);
        assert!(!def.deferred);
        assert_eq!(def.group, "core");
    }
}

#[test]
fn tool_timeout_leaves_room_for_the_client_deadline() {
    // (client deadline, tool definition timeout)
    let cases = [
        (Duration::from_secs(30), Duration::from_secs(35)),
        (Duration::from_secs(12), Duration::from_secs(17)),
        (Duration::from_millis(1), Duration::from_millis(5_001)),
        (Duration::MAX, Duration::MAX),
    ];
    for (deadline, expected) in cases {
        let client = Arc::new(TavilyClient::from_env().with_timeout(deadline).unwrap());
        for tool in iris_web::builtin_tools(client) {
            assert_eq!(tool.definition().timeout, Some(expected), "{deadline:?}");
        }
    }
}

#[test]
fn schemas_convert_to_openai_strict_mode() {
    for tool in tools() {
        let strict = to_strict_schema(&tool.definition().input_schema);
        assert!(strict.is_ok(), "{}: {strict:?}", tool.definition().name);
    }
}
