//! Every gallery tool runs with valid input and rejects invalid input, through the
//! `Tool` trait exactly as the executor drives it (`validate_input`, then `run`).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use iris_macro_tests::gallery::inventory::Inventory;
use iris_macro_tests::gallery::{config, data, files, legacy, text, web};
use iris_tools_core::{
    CancellationSignal, ContentBlock, Tool, ToolExecutionContext, ToolRegistry, codes,
};
use serde_json::{Value, json};

use crate::support::{Expect, call, check};

const CONFIG: &str = "[server]\nport = 8080\n\n[log]\nlevel = \"debug\"\n";

/// A workspace with a config file, a text file and a sub-directory.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.toml"), CONFIG).unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    dir
}

/// Every gallery tool, presets bound, by canonical name.
fn tools(workspace: &std::path::Path) -> Vec<Arc<dyn Tool>> {
    let inventory = Arc::new(Inventory::with_items([("widget-7", 5), ("bolt", 100)]));
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(
            config::read_config::tool()
                .preset("config_path", workspace.join("app.toml"))
                .unwrap(),
        ),
        Arc::new(config::merge_env::tool()),
        Arc::new(text::word_count::tool()),
        Arc::new(text::slugify::tool()),
        Arc::new(text::tokenize::tool()),
        Arc::new(text::hash_text::tool()),
        Arc::new(text::format_table::tool()),
        Arc::new(text::validate_email::tool()),
        Arc::new(data::search_issues::tool()),
        Arc::new(data::paginate::tool()),
        Arc::new(data::sort_numbers::tool()),
        Arc::new(data::calculate::tool()),
        Arc::new(data::convert_units::tool()),
        Arc::new(data::run_sql_query::tool()),
        Arc::new(data::classify_ticket::tool()),
        Arc::new(data::geocode::tool()),
        Arc::new(files::list_directory::tool()),
        Arc::new(files::write_note::tool()),
        Arc::new(files::session_info::tool()),
        Arc::new(files::clear_cache::tool()),
        Arc::new(web::fetch_forecast::tool()),
        Arc::new(
            web::github_api_url::tool()
                .preset("api_base", "https://api.github.com/")
                .and_then(|t| t.preset("api_token", "ghp_secret"))
                .unwrap(),
        ),
        Arc::new(web::schedule_meeting::tool()),
        Arc::new(web::http_status_text::tool()),
        Arc::new(web::delegate_task::tool()),
        Arc::new(legacy::legacy_lookup::tool()),
        Arc::new(legacy::old_ping::tool()),
        Arc::new(legacy::countdown::tool()),
        Arc::new(legacy::render_badge::tool()),
        Arc::new(inventory.stock_level_tool()),
        Arc::new(inventory.reserve_item_tool()),
        Arc::new(inventory.count_items_tool()),
        Arc::new(
            inventory
                .warehouse_report_tool()
                .preset("warehouse", "north")
                .unwrap(),
        ),
    ];
    tools
}

fn context(workspace: &std::path::Path) -> ToolExecutionContext {
    ToolExecutionContext::new(workspace)
        .session_id("s-1")
        .agent_id("main")
        .run_id("r-1")
}

/// `(tool, input, expected outcome)` for every gallery tool: at least one valid and
/// one invalid input each.
fn cases() -> Vec<(&'static str, Value, Expect<'static>)> {
    use Expect::{Contains, Failed, Invalid, Text};
    const BAD: &str = codes::INVALID_INPUT;
    vec![
        ("read_config", json!({"key": "server.port"}), Text("8080")),
        ("read_config", json!({"key": "log.level"}), Text("debug")),
        (
            "read_config",
            json!({"key": "x.y", "default": "fallback"}),
            Text("fallback"),
        ),
        (
            "read_config",
            json!({"key": "x.y"}),
            Failed(codes::TOOL_FAILED),
        ),
        ("read_config", json!({"keyy": "server.port"}), Invalid(BAD)),
        (
            "read_config",
            json!({"key": "a", "config_path": "/etc/passwd"}),
            Invalid(BAD),
        ),
        ("read_config", json!({}), Invalid(BAD)),
        (
            "merge_env",
            json!({"base": {"A": "1", "B": "2"}, "overrides": {"B": "3", "C": "4"}, "remove": ["A"]}),
            Text(r#"{"B":"3","C":"4"}"#),
        ),
        (
            "merge_env",
            json!({"base": ["A=1"], "overrides": {}}),
            Invalid(BAD),
        ),
        (
            "word_count",
            json!({"text": "one two\nthree"}),
            Text(r#"{"words":3,"lines":2,"chars":13}"#),
        ),
        (
            "word_count",
            json!({"text": "x", "lang": "en"}),
            Invalid(BAD),
        ),
        (
            "slugify",
            json!({"text": "Hello, World!"}),
            Text("hello-world"),
        ),
        (
            "slugify",
            json!({"text": "A B C", "separator": "_", "max_len": 3}),
            Text("a_b"),
        ),
        ("slugify", json!({"text": 5}), Invalid(BAD)),
        (
            "tokenize",
            json!({"text": "Hi. Bye!", "type": "sentences"}),
            Text(r#"["Hi.","Bye!"]"#),
        ),
        (
            "tokenize",
            json!({"text": "ab", "type": "characters"}),
            Text(r#"["a","b"]"#),
        ),
        (
            "tokenize",
            json!({"text": "x", "type": "lines"}),
            Invalid(BAD),
        ),
        (
            "hash_text",
            json!({"text": "abc"}),
            Text("e71fa2190541574b"),
        ),
        (
            "hash_text",
            json!({"text": "abc", "algorithm": "djb2"}),
            Text("000000000b885c8b"),
        ),
        (
            "hash_text",
            json!({"text": "abc", "algorithm": "md5"}),
            Invalid(BAD),
        ),
        (
            "format_table",
            json!({"rows": [{"name": "ada", "role": "admin"}], "columns": ["role", "name"]}),
            Text("| role | name |\n|---|---|\n| admin | ada |"),
        ),
        (
            "format_table",
            json!({"rows": []}),
            Failed(codes::TOOL_FAILED),
        ),
        ("format_table", json!({"rows": [{"n": 1}]}), Invalid(BAD)),
        (
            "validate_email",
            json!({"address": "ada@example.com"}),
            Text("true"),
        ),
        ("validate_email", json!({"address": "ada"}), Text("false")),
        ("validate_email", json!({"address": null}), Invalid(BAD)),
        (
            "search_issues",
            json!({"query": "config", "limit": 1}),
            Contains("\"number\":1,"),
        ),
        (
            "search_issues",
            json!({"query": "config", "filter": {"state": "open", "assignee": "ada", "labels": ["docs"]}}),
            Text(
                r#"[{"number":4,"title":"Document config keys","state":"open","labels":["docs","config"],"assignee":"ada"}]"#,
            ),
        ),
        (
            "search_issues",
            json!({"query": "x", "filter": {"state": "pending"}}),
            Invalid(BAD),
        ),
        (
            "search_issues",
            json!({"query": "x", "filter": {"assigned_to": "ada"}}),
            Invalid(BAD),
        ),
        (
            "paginate",
            json!({"items": ["a", "b", "c"], "limit": 2}),
            Text(r#"{"items":["a","b"],"next_offset":2}"#),
        ),
        (
            "paginate",
            json!({"items": ["a"], "offset": 5}),
            Text(r#"{"items":[],"next_offset":null}"#),
        ),
        ("paginate", json!({"items": "a"}), Invalid(BAD)),
        (
            "sort_numbers",
            json!({"numbers": [3, 1, 2]}),
            Text("[1,2,3]"),
        ),
        (
            "sort_numbers",
            json!({"numbers": [3, 1, 2], "order": "desc"}),
            Text("[3,2,1]"),
        ),
        ("sort_numbers", json!({"numbers": [1.5]}), Invalid(BAD)),
        (
            "calculate",
            json!({"op": "divide", "a": 1, "b": 4}),
            Text("0.25"),
        ),
        (
            "calculate",
            json!({"op": "divide", "a": 1, "b": 0}),
            Failed(codes::TOOL_FAILED),
        ),
        (
            "calculate",
            json!({"op": "pow", "a": 1, "b": 2}),
            Invalid(BAD),
        ),
        (
            "convert_temperature",
            json!({"value": 100, "from": "C", "to": "F"}),
            Text("212.0"),
        ),
        (
            "convert_temperature",
            json!({"value": 0, "from": "K", "to": "C"}),
            Text("-273.15"),
        ),
        (
            "convert_temperature",
            json!({"value": 1, "from": "celsius", "to": "F"}),
            Invalid(BAD),
        ),
        (
            "run_sql_query",
            json!({"query": "SELECT region, total FROM sales"}),
            Text("2 rows (0 parameters bound)"),
        ),
        (
            "run_sql_query",
            json!({"query": "DROP TABLE sales"}),
            Failed(codes::PERMISSION_DENIED),
        ),
        (
            "run_sql_query",
            json!({"query": ["SELECT 1"]}),
            Invalid(BAD),
        ),
        (
            "classify_ticket",
            json!({"ticket": {"kind": "bug", "severity": 4}}),
            Text("urgent"),
        ),
        (
            "classify_ticket",
            json!({"ticket": {"kind": "feature", "votes": 3}}),
            Text("backlog"),
        ),
        (
            "classify_ticket",
            json!({"ticket": {"kind": "question"}}),
            Invalid(BAD),
        ),
        (
            "geocode",
            json!({"city": "Paris"}),
            Text(r#"{"lat":48.8566,"lon":2.3522}"#),
        ),
        ("geocode", json!({"city": "Atlantis"}), Text("")),
        ("geocode", json!({}), Invalid(BAD)),
        (
            "list_directory",
            json!({}),
            Text(r#"["a.txt","app.toml","sub/"]"#),
        ),
        ("list_directory", json!({"path": "sub"}), Text("[]")),
        (
            "list_directory",
            json!({"path": "missing"}),
            Failed(codes::TOOL_FAILED),
        ),
        ("list_directory", json!({"path": 1}), Invalid(BAD)),
        (
            "write_note",
            json!({"title": "Daily Log", "body": "all green"}),
            Text("saved notes/daily-log.md"),
        ),
        ("write_note", json!({"title": "x"}), Invalid(BAD)),
        (
            "session_info",
            json!({}),
            Text("session=s-1 agent=main run=r-1"),
        ),
        (
            "session_info",
            Value::Null,
            Text("session=s-1 agent=main run=r-1"),
        ),
        ("session_info", json!("now"), Invalid(BAD)),
        ("clear_cache", json!({}), Text("")),
        ("clear_cache", json!({"force": true}), Invalid(BAD)),
        (
            "get_weather",
            json!({"city": "Lisbon"}),
            Text(r#"{"city":"Lisbon","high":21.5,"units":"metric"}"#),
        ),
        (
            "get_weather",
            json!({"city": "Lisbon", "units": "kelvin"}),
            Invalid(BAD),
        ),
        (
            "github_api_url",
            json!({"repo": "rust-lang/rust", "endpoint": "/issues"}),
            Text("https://api.github.com/repos/rust-lang/rust/issues"),
        ),
        (
            "github_api_url",
            json!({"repo": "rust", "endpoint": "issues"}),
            Failed(codes::TOOL_FAILED),
        ),
        (
            "github_api_url",
            json!({"repo": "a/b", "endpoint": "x", "api_token": "stolen"}),
            Invalid(BAD),
        ),
        (
            "schedule_meeting",
            json!({"title": "Planning", "slot": {"start": "2025-03-01T10:00:00Z", "durationMinutes": 30},
                   "attendees": [{"email": "ada@example.com"}, {"email": "lin@example.com", "optional": true}]}),
            Text(
                "Scheduled \"Planning\" at 2025-03-01T10:00:00Z for 30 min with 2 attendee(s), 1 required",
            ),
        ),
        (
            "schedule_meeting",
            json!({"title": "Solo", "slot": {"start": "2025-03-01T10:00:00Z", "durationMinutes": 5}, "attendees": []}),
            Failed(codes::INVALID_INPUT),
        ),
        (
            "schedule_meeting",
            json!({"title": "T", "slot": {"start": "2025-03-01T10:00:00Z", "duration_minutes": 30}, "attendees": []}),
            Invalid(BAD),
        ),
        ("http_status_text", json!({"code": 404}), Text("Not Found")),
        (
            "http_status_text",
            json!({"code": 299}),
            Failed(codes::TOOL_FAILED),
        ),
        ("http_status_text", json!({"code": 70000}), Invalid(BAD)),
        (
            "delegate_task",
            json!({"task": "find the bug"}),
            Text("[default] accepted: find the bug"),
        ),
        (
            "delegate_task",
            json!({"task": "x", "agent": 3}),
            Invalid(BAD),
        ),
        (
            "legacy_lookup",
            json!({"customer_id": 7}),
            Text("Ada Lovelace <ada@example.com>"),
        ),
        (
            "legacy_lookup",
            json!({"customer_id": 8}),
            Failed(codes::TOOL_FAILED),
        ),
        ("legacy_lookup", json!({"customer_id": -1}), Invalid(BAD)),
        ("old_ping", json!({}), Text("pong")),
        ("old_ping", json!({"x": 1}), Invalid(BAD)),
        ("countdown", json!({"from": 3}), Text("3\n2\n1\n0")),
        (
            "countdown",
            json!({"from": 11}),
            Failed(codes::INVALID_INPUT),
        ),
        ("countdown", json!({"from": 300}), Invalid(BAD)),
        ("render_badge", json!({"label": "ok"}), Text("badge: ok")),
        ("render_badge", json!({"label": ["ok"]}), Invalid(BAD)),
        ("stock_level", json!({"sku": "widget-7"}), Text("5")),
        ("stock_level", json!({"sku": ["widget-7"]}), Invalid(BAD)),
        (
            "reserve_item",
            json!({"sku": "bolt", "count": 3}),
            Text("reserved 3 x bolt for s-1"),
        ),
        (
            "reserve_item",
            json!({"sku": "bolt", "count": -3}),
            Invalid(BAD),
        ),
        ("count_items", json!({}), Text("2")),
        ("count_items", json!({"all": true}), Invalid(BAD)),
        ("warehouse_report", json!({}), Text("north: 102 units")),
        (
            "warehouse_report",
            json!({"warehouse": "south"}),
            Invalid(BAD),
        ),
    ]
}

#[tokio::test]
async fn every_gallery_tool_runs_and_rejects_bad_input() {
    let dir = workspace();
    let registry = ToolRegistry::new();
    registry.register_many(tools(dir.path())).unwrap();
    let ctx = context(dir.path());
    for (name, input, expect) in cases() {
        let tool = registry.get(name).unwrap();
        check(tool.as_ref(), input, &ctx, expect).await;
    }
}

#[test]
fn every_gallery_tool_has_a_valid_and_an_invalid_case() {
    let names: BTreeSet<String> = iris_macro_tests::gallery::definitions()
        .into_iter()
        .map(|d| d.name)
        .collect();
    let with = |valid: bool| -> BTreeSet<String> {
        cases()
            .into_iter()
            .filter(|(_, _, e)| valid != matches!(e, Expect::Invalid(_)))
            .map(|(n, _, _)| n.to_owned())
            .collect()
    };
    assert_eq!(with(true), names, "tools without a valid case");
    assert_eq!(with(false), names, "tools without an invalid case");
}

#[tokio::test]
async fn metadata_examples_are_valid_inputs() {
    let dir = workspace();
    let mut checked = 0;
    for tool in tools(dir.path()) {
        let definition = tool.definition();
        let examples = definition
            .metadata
            .get("examples")
            .and_then(Value::as_array);
        for example in examples.into_iter().flatten() {
            assert!(
                tool.validate_input(example.clone()).is_ok(),
                "{}: example {example} is invalid",
                definition.name
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 4);
}

#[tokio::test]
async fn preset_rules() {
    let dir = workspace();
    let ctx = context(dir.path());

    // A preset never bound fails the call with a clear host-side error.
    let unbound = config::read_config::tool();
    assert_eq!(unbound.unbound_presets(), ["config_path"]);
    let error = unbound
        .validate_input(json!({"key": "server.port"}))
        .unwrap_err();
    assert_eq!(error.code, codes::INVALID_DEFINITION);
    assert!(
        error.message.contains("`.preset(\"config_path\", value)`"),
        "{error}"
    );

    // Binding checks the name and the value's type.
    let unknown = config::read_config::tool().preset("path", "x").unwrap_err();
    assert_eq!(unknown.code(), codes::INVALID_DEFINITION);
    assert!(
        unknown.to_string().contains("unknown preset `path`"),
        "{unknown}"
    );
    let wrong_type = config::read_config::tool()
        .preset("config_path", 42)
        .unwrap_err();
    assert!(
        wrong_type
            .to_string()
            .contains("preset `config_path` does not fit"),
        "{wrong_type}"
    );
    let no_presets = text::slugify::tool().preset("x", 1).unwrap_err();
    assert!(
        no_presets.to_string().contains("declares no presets"),
        "{no_presets}"
    );

    // The model may not set a preset, and the host value never leaks into the input
    // that hooks and permission checks see.
    let bound = config::read_config::tool()
        .preset("config_path", dir.path().join("app.toml"))
        .unwrap();
    let error = bound
        .validate_input(json!({"key": "k", "config_path": "/etc/shadow"}))
        .unwrap_err();
    assert_eq!(
        error.message,
        "`config_path` is set by the host for `read_config`; the model may not set it"
    );
    assert_eq!(error.details["field"], "config_path");
    let validated = bound.validate_input(json!({"key": "server.port"})).unwrap();
    assert_eq!(validated.value(), &json!({"key": "server.port"}));
    assert_eq!(bound.run(validated, &ctx).await.model_content(), "8080");

    // Debug output names presets but never shows their values.
    let debug = format!(
        "{:?}",
        web::github_api_url::tool()
            .preset("api_token", "ghp_secret")
            .unwrap()
    );
    assert!(
        debug.contains("api_token") && !debug.contains("ghp_secret"),
        "{debug}"
    );
}

#[tokio::test]
async fn context_and_side_effects() {
    let dir = workspace();
    let ctx = context(dir.path());

    let before = files::CACHE_CLEARS.load(Ordering::SeqCst);
    let result = call(&files::clear_cache::tool(), json!({}), &ctx)
        .await
        .unwrap();
    assert!(result.content.is_empty() && !result.is_error());
    assert_eq!(files::CACHE_CLEARS.load(Ordering::SeqCst), before + 1);

    call(
        &files::write_note::tool(),
        json!({"title": "To Do", "body": "- ship"}),
        &ctx,
    )
    .await
    .unwrap();
    let note = std::fs::read_to_string(dir.path().join("notes/to-do.md")).unwrap();
    assert_eq!(note, "# To Do\n\n- ship\n");

    // A cancelled context is visible to the body, which reports CANCELLED itself.
    let signal = CancellationSignal::new();
    signal.cancel();
    let cancelled = context(dir.path()).cancellation(signal);
    let result = call(&legacy::countdown::tool(), json!({"from": 2}), &cancelled)
        .await
        .unwrap();
    assert_eq!(result.error_code(), Some(codes::CANCELLED));
}

#[tokio::test]
async fn results_carry_structure_for_the_host() {
    let dir = workspace();
    let ctx = context(dir.path());

    // `Serialize` returns put the value under `data.output` as well as in the text.
    let result = call(&web::fetch_forecast::tool(), json!({"city": "Oslo"}), &ctx)
        .await
        .unwrap();
    assert_eq!(
        result.data["output"],
        json!({"city": "Oslo", "high": 21.5, "units": "metric"})
    );

    // `ToolOutput` returns are kept as they are, data included.
    let result = call(
        &data::run_sql_query::tool(),
        json!({"query": "select 1"}),
        &ctx,
    )
    .await
    .unwrap();
    assert_eq!(result.data["rows"][1]["region"], "us");

    // A `ToolErrorInfo` error keeps its code and details.
    let result = call(&legacy::countdown::tool(), json!({"from": 12}), &ctx)
        .await
        .unwrap();
    let error = result.error_info().cloned().unwrap();
    assert_eq!(
        (error.code.as_str(), error.details["field"].as_str()),
        (codes::INVALID_INPUT, Some("from"))
    );

    // Image blocks survive into the model projection.
    let result = call(&legacy::render_badge::tool(), json!({"label": "ok"}), &ctx)
        .await
        .unwrap();
    assert!(
        matches!(&result.content[1], ContentBlock::Image { mime_type, .. } if mime_type == "image/png")
    );

    // A tool's output has no identity; only binding it (the executor's last stage)
    // gives it one.
    let bound = result.into_result("call_7", "render_badge");
    assert_eq!(
        (bound.tool_use_id.as_str(), bound.tool_name.as_str()),
        ("call_7", "render_badge")
    );
}

#[test]
fn tool_flags_follow_the_attributes() {
    let dir = workspace();
    let by_name = |name: &str| {
        tools(dir.path())
            .into_iter()
            .find(|t| t.definition().name == name)
            .unwrap()
    };
    // (tool, read-only, destructive, concurrency-safe)
    let cases = [
        ("read_config", true, false, true),
        ("write_note", false, true, false),
        ("clear_cache", false, true, false),
        ("get_weather", false, false, true),
        ("delegate_task", false, false, false),
        ("calculate", true, false, true),
    ];
    for (name, read_only, destructive, concurrency_safe) in cases {
        let tool = by_name(name);
        assert_eq!(
            (
                tool.is_read_only(),
                tool.is_destructive(),
                tool.is_concurrency_safe()
            ),
            (read_only, destructive, concurrency_safe),
            "{name}"
        );
    }
}

#[test]
fn the_original_functions_stay_callable() {
    assert_eq!(
        text::slugify("Hello World".into(), "-".into(), 80),
        "hello-world"
    );
    assert_eq!(
        data::calculate(data::Operation::Add, 2.0, 3.0).unwrap(),
        5.0
    );
    assert_eq!(legacy::old_ping(), "pong");
    let ctx = ToolExecutionContext::new("/w").session_id("s");
    assert_eq!(files::session_info(&ctx), "session=s agent= run=");
}

#[test]
fn schemas_are_available_without_running_anything() {
    let schema = config::read_config::input_schema();
    assert_eq!(schema, config::read_config::definition().input_schema);
    assert!(schema["properties"].get("config_path").is_none());
    assert_eq!(
        config::read_config::tool().definition().input_schema,
        schema,
        "the tool value and the static accessors agree"
    );
}

#[test]
fn invalid_input_messages_name_the_tool_and_the_problem() {
    let dir = workspace();
    let tools = tools(dir.path());
    let inputs = [
        ("read_config", json!({"keyy": "server.port"})),
        ("read_config", json!({})),
        (
            "read_config",
            json!({"key": "a", "config_path": "/etc/passwd"}),
        ),
        ("slugify", json!({"text": 5})),
        ("tokenize", json!({"text": "x", "type": "lines"})),
        ("http_status_text", json!({"code": 70000})),
        ("session_info", json!("now")),
        (
            "schedule_meeting",
            json!({"title": "T", "slot": {"start": "s", "duration_minutes": 30}, "attendees": []}),
        ),
    ];
    let mut lines = Vec::new();
    for (name, input) in inputs {
        let tool = tools.iter().find(|t| t.definition().name == name).unwrap();
        let error = tool.validate_input(input.clone()).unwrap_err();
        lines.push(format!("{name}({input})\n  -> {error}"));
    }
    insta::assert_snapshot!(lines.join("\n"));
}

/// `#[tools]` methods: every tool shares the one state behind its `Arc`, takes the
/// context and presets like a free `#[tool]` fn, and the methods stay callable.
#[tokio::test]
async fn tool_methods_share_their_state() {
    use Expect::{Failed, Invalid, Text};
    const BAD: &str = codes::INVALID_INPUT;

    let inventory = Arc::new(Inventory::with_items([("widget-7", 5), ("bolt", 100)]));
    let tools = inventory.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.definition().name.as_str()).collect();
    assert_eq!(
        names,
        [
            "stock_level",
            "reserve_item",
            "count_items",
            "warehouse_report"
        ]
    );
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let by_name = |name: &str| {
        tools
            .iter()
            .find(|t| t.definition().name == name)
            .unwrap()
            .clone()
    };
    let stock = by_name("stock_level");
    let reserve = by_name("reserve_item");
    let cases = [
        (&stock, json!({"sku": "widget-7"}), Text("5")),
        (
            &reserve,
            json!({"sku": "widget-7", "count": 2}),
            Text("reserved 2 x widget-7 for s-1"),
        ),
        // The reservation changed the state the other tool reads.
        (&stock, json!({"sku": "widget-7"}), Text("3")),
        (
            &reserve,
            json!({"sku": "widget-7", "count": 9}),
            Failed(codes::TOOL_FAILED),
        ),
        (
            &reserve,
            json!({"sku": "bolt"}),
            Text("reserved 1 x bolt for s-1"),
        ),
        (&stock, json!({"sku": "nut"}), Failed(codes::TOOL_FAILED)),
        (&stock, json!({"sku": 7}), Invalid(BAD)),
        (&by_name("count_items"), json!({}), Text("2")),
        // An unbound preset is the host's mistake, reported before the body runs.
        (
            &by_name("warehouse_report"),
            json!({}),
            Invalid(codes::INVALID_DEFINITION),
        ),
    ];
    for (tool, input, expect) in cases {
        check(tool.as_ref(), input, &ctx, expect).await;
    }

    let report = inventory
        .warehouse_report_tool()
        .preset("warehouse", "north")
        .unwrap();
    assert!(report.unbound_presets().is_empty());
    check(&report, json!({}), &ctx, Text("north: 102 units")).await;
    check(
        &report,
        json!({"verbose": true}),
        &ctx,
        Text("north: 102 units (bolt=99, widget-7=3)"),
    )
    .await;
    // The model may not set the host's preset.
    check(&report, json!({"warehouse": "south"}), &ctx, Invalid(BAD)).await;

    // `run` without `validate_input` parses by itself.
    let direct = stock
        .run(
            iris_tools_core::ToolInput::new(json!({"sku": "bolt"})),
            &ctx,
        )
        .await;
    assert_eq!(direct.model_content(), "99");

    // The methods stay callable, and plain methods are untouched.
    inventory.restock("nut", 4);
    assert_eq!(inventory.count_items(), 3);
    assert_eq!(inventory.stock_level("nut".into()).await.unwrap(), 4);
    assert_eq!(
        Inventory::stock_level_definition().group,
        "inventory",
        "the definition is available without any state"
    );
}
