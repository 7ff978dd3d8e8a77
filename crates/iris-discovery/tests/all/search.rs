//! Tests for the `search` area: text normalisation, ranking behaviour on a small
//! catalog, recall on the realistic MCP fixture against plain BM25, and
//! `ToolRegistryView::search_deferred` through a real registry.
// Fixture loading and registration fail loudly: a broken fixture is a test bug.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use iris_discovery::SearchDeferred;
use iris_discovery::search::{SearchIndex, analyze};
use iris_tools_core::{FnTool, ToolDefinition, ToolOutput, ToolRegistry, ViewFilter};

use crate::eval;
use serde_json::{Value, json};

const CATALOG: &str = include_str!("../fixtures/mcp_catalog.json");
const QUERIES: &str = include_str!("../fixtures/mcp_queries.json");

/// Every optional rule of the ranking switched on, at the values the protocol tries
/// (`tests/eval/protocol.rs`): the default leaves most of them off, and these tests check
/// that each still does what it says when a caller turns it on.
fn every_rule() -> iris_discovery::search::Tuning {
    iris_discovery::search::Tuning {
        field_weights: [5.0, 3.0, 1.5, 2.0, 1.0, 0.5],
        field_b: [0.3, 0.0, 0.3, 0.3, 0.75, 0.75],
        synonym_weight: 0.7,
        prefix_weight: 0.5,
        surface_weight: 0.4,
        verb_object_bonus: 1.15,
        full_name_bonus: 1.15,
        stemming: true,
        stop_words: true,
        named_tier: true,
        // Every thesaurus group, those the default leaves out too.
        thesaurus_groups: u64::MAX,
        ..iris_discovery::search::Tuning::DEFAULT
    }
}

/// An index over `defs` with [`every_rule`].
fn ruled(defs: &[ToolDefinition]) -> SearchIndex {
    SearchIndex::with_tuning(defs, every_rule())
}

fn catalog() -> Vec<ToolDefinition> {
    eval::load_catalog(CATALOG).unwrap()
}

fn queries() -> Vec<eval::LabeledQuery> {
    eval::load_queries(QUERIES).unwrap()
}

// ---------------------------------------------------------------------------------
// Normalisation.

#[test]
fn analyze_normalises_words() {
    fn check(input: &str, expect: &[&str]) {
        assert_eq!(analyze(input), expect, "analyze({input:?})");
    }
    // Separators, camelCase humps and acronyms.
    check("list_directory_with_sizes", &["list", "directory", "siz"]);
    check("pullRequestNumber", &["pull", "request", "number"]);
    check("HTTPServer v2", &["http", "server", "v2"]);
    check("URLs getURLs", &["url", "get", "url"]);
    check("mcp__github__get_me", &["mcp", "github", "get"]);
    // Inflections meet at one stem.
    check("create created creating creation", &["creat"; 4]);
    check("delete deleted deletion", &["delet"; 3]);
    check("queries query", &["query", "query"]);
    check(
        "repositories branches statuses",
        &["repository", "branch", "status"],
    );
    check(
        "running stopped installed added",
        &["run", "stop", "install", "add"],
    );
    check("reply replied replies", &["reply"; 3]);
    check("recently apply", &["recent", "apply"]);
    check("filter filters filtered filtering", &["filter"; 4]);
    check("reviewer reviewers reviewing", &["review"; 3]);
    check("shopper shopping", &["shop"; 2]);
    check("customers custom", &["customer", "custom"]);
    check("PRs ids", &["pr", "id"]);
    // Stop words, single letters and numbers carry no intent.
    check("what is the time in it", &["tim"]);
    check("customer's 42 x", &["customer"]);
    check("", &[]);
    check("--- !!", &[]);
    // Non-ASCII words are lower-cased but not stemmed.
    check("Café NAÏVE", &["café", "naïve"]);
}

// ---------------------------------------------------------------------------------
// Ranking behaviour on a small catalog.

fn def(name: &str, description: &str, schema: Value) -> ToolDefinition {
    ToolDefinition::new(name, description, schema)
}

fn small_catalog() -> Vec<ToolDefinition> {
    let object = || json!({"type": "object"});
    vec![
        def(
            "mcp__jira__add_comment",
            "Add a comment to a Jira issue",
            json!({"type": "object", "properties": {"issue_key": {"type": "string"}, "comment": {"type": "string"}}}),
        )
        .with_group("jira"),
        def(
            "mcp__jira__create_issue",
            "Create a new Jira issue",
            json!({"type": "object", "properties": {
                "summary": {"type": "string"},
                "issue_type": {"type": "string", "description": "Issue type, e.g. Task, Bug or Story"}
            }}),
        )
        .with_group("jira"),
        def(
            "mcp__github__create_pull_request",
            "Create a new pull request in a GitHub repository.",
            object(),
        )
        .with_group("github"),
        def(
            "mcp__github__list_pull_requests",
            "List pull requests in a GitHub repository.",
            object(),
        )
        .with_group("github"),
        def(
            "mcp__github__get_network_stats",
            "Show request statistics of the repository network.",
            object(),
        )
        .with_group("github"),
        def("mcp__kubernetes__list_pods", "List pods in a namespace", object())
            .with_group("kubernetes"),
        def(
            "mcp__filesystem__create_directory",
            "Create a new directory or ensure a directory exists.",
            object(),
        )
        .with_group("filesystem"),
        def(
            "mcp__filesystem__list_directory",
            "Get a listing of all files and directories in a path.",
            object(),
        )
        .with_group("filesystem"),
        def(
            "mcp__weather__forecast",
            "Outlook for the coming days.",
            json!({"type": "object", "properties": {"place": {"type": "object", "properties": {
                "postalCode": {"type": "string", "description": "ZIP of the place"}
            }}}}),
        )
        .with_group("weather"),
        def(
            "mcp__ledger__record",
            "Record an entry.",
            json!({"type": "object", "properties": {"items": {"type": "array", "items": {"anyOf": [
                {"type": "object", "properties": {"vatRate": {"type": "number"}}}
            ]}}}}),
        )
        .with_group("ledger")
        .with_metadata("tags", json!(["billing"])),
    ]
}

#[test]
fn ranking_matches_intents_to_tools() {
    let defs = small_catalog();
    let index = ruled(&defs);
    let check = |query: &str, expect: Option<&str>| {
        let hits = index.search(query, 10);
        let first = hits.first().map(|h| defs[h.index].name.as_str());
        assert_eq!(first, expect, "top hit for {query:?}");
    };
    // Synonyms: a ticket is an issue.
    check(
        "a ticket for the login bug",
        Some("mcp__jira__create_issue"),
    );
    // A phrase synonym: "PR" is "pull request", and needs both words, so the
    // network tool that only mentions "request" does not compete.
    check("show all PRs", Some("mcp__github__list_pull_requests"));
    // A partial word is completed from the index.
    check("kube pods", Some("mcp__kubernetes__list_pods"));
    check("namesp", Some("mcp__kubernetes__list_pods"));
    // Folder is a directory.
    check("create a folder", Some("mcp__filesystem__create_directory"));
    check(
        "show folder contents",
        Some("mcp__filesystem__list_directory"),
    );
    // Nested argument names (camelCase split) and descriptions are indexed, through
    // objects, array items and combinators.
    check("postal code", Some("mcp__weather__forecast"));
    check("zip", Some("mcp__weather__forecast"));
    check("vat rate", Some("mcp__ledger__record"));
    // Tags and groups are indexed.
    check("billing", Some("mcp__ledger__record"));
    check("kubernetes", Some("mcp__kubernetes__list_pods"));
    // Nothing to match.
    check("", None);
    check("the of and to", None);
    check("xylophone", None);
}

#[test]
fn tuning_defaults_and_other_weights() {
    use iris_discovery::search::Tuning;
    let defs = small_catalog();
    let shipped = SearchIndex::new(&defs);
    let same = SearchIndex::with_tuning(&defs, Tuning::default());
    let names_only = SearchIndex::with_tuning(
        &defs,
        Tuning {
            field_weights: [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            // Below 1 counts as 1: a bonus never lowers a score.
            verb_object_bonus: 0.5,
            full_name_bonus: 0.0,
            ..Tuning::DEFAULT
        },
    );
    for query in ["open a ticket for the login bug", "postal code", "billing"] {
        assert_eq!(shipped.search(query, 10), same.search(query, 10), "{query}");
    }
    // Other weights rank otherwise: with only the name field weighted, a word that
    // occurs only in argument names finds nothing.
    assert_eq!(
        defs[shipped.search("postal code", 1)[0].index].name,
        "mcp__weather__forecast"
    );
    assert!(names_only.search("postal code", 10).is_empty());
    let hits = names_only.search("create issue", 10);
    assert_eq!(defs[hits[0].index].name, "mcp__jira__create_issue");
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
}

#[test]
fn verb_object_bonus_needs_two_query_words() {
    let defs = small_catalog();
    let index = ruled(&defs);
    let score = |query: &str, name: &str| {
        index
            .search(query, defs.len())
            .iter()
            .find(|h| defs[h.index].name == name)
            .map(|h| h.score)
            .unwrap()
    };
    // "list pods" pairs the name's verb and head noun: bonus (and the full-name one).
    let paired = score("list pods", "mcp__kubernetes__list_pods");
    // "list" alone matches the verb only, "pods" the noun only: no bonus, so the
    // pair scores more than the sum of its halves.
    let verb = score("list", "mcp__kubernetes__list_pods");
    let noun = score("pods", "mcp__kubernetes__list_pods");
    assert!(
        paired > (verb + noun) * 1.2,
        "paired {paired} vs {verb} + {noun}"
    );
    // "show" is in the list group: paired with "pull requests" it favours the tool
    // that lists them over the one that creates one.
    let hits = index.search("show the pull requests", 2);
    assert_eq!(defs[hits[0].index].name, "mcp__github__list_pull_requests");
}

/// A word typed in the very form a tool uses counts on top of the shared stem: the
/// plural "buckets" favours the tool that lists buckets, whichever comes first in the
/// catalog. The singular is the stem itself, so both tools score alike for it.
#[test]
fn surface_forms_count_on_top_of_stems() {
    for flip in [false, true] {
        let mut defs = vec![
            def(
                "mcp__s3__create_bucket",
                "Create a new S3 bucket",
                json!({"type": "object"}),
            ),
            def(
                "mcp__s3__list_buckets",
                "List all S3 buckets",
                json!({"type": "object"}),
            ),
        ];
        if flip {
            defs.reverse();
        }
        let index = ruled(&defs);
        let top = |query: &str| defs[index.search(query, 2)[0].index].name.clone();
        assert_eq!(top("which buckets do we have"), "mcp__s3__list_buckets");
        let hits = index.search("buckets", 5);
        assert_eq!(hits.len(), 2, "both share the stem");
        assert!(hits[0].score > hits[1].score);
        let hits = index.search("a bucket for the logs", 5);
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].score, hits[1].score);
    }
}

#[test]
fn named_tools_never_rank_below_expansions() {
    let object = || json!({"type": "object"});
    let defs = vec![
        def(
            "mcp__tracker__create_issue",
            "Create a new issue, ticket or bug report in the tracker; open it for the team.",
            json!({"type": "object", "properties": {"title": {"type": "string", "description": "The issue title"}}}),
        )
        .with_group("tracker"),
        def("mcp__todo__add_task", "Add an entry.", object()).with_group("todo"),
        def("mcp__todo__add_note", "Add a note.", object()).with_group("todo"),
    ];
    let index = ruled(&defs);
    let top = |query: &str| defs[index.search(query, 3)[0].index].name.as_str();
    // Without the name, the tracker tool matches more words (synonyms included).
    assert_eq!(
        top("open a new ticket for the bug"),
        "mcp__tracker__create_issue"
    );
    // A query that spells out a tool's name, own or full, ranks that tool first, above
    // a tool matching more of its words through the thesaurus or directly.
    assert_eq!(
        top("add_task: open a new ticket for the bug"),
        "mcp__todo__add_task"
    );
    assert_eq!(
        top("open a new ticket for the bug with mcp__todo__add_task"),
        "mcp__todo__add_task"
    );
    // The tier holds at every limit: the bounded selection keeps named tools.
    for limit in 1..=3 {
        let hits = index.search("add_task: open a new ticket for the bug", limit);
        assert_eq!(hits[0].index, 1, "limit {limit}");
    }
    // Every word of a tool's own name, as typed, earns the full-name bonus: "add task"
    // (both words of `add_task`) beats `add_note`, which shares only "add".
    let score = |query: &str, name: &str| {
        index
            .search(query, defs.len())
            .iter()
            .find(|h| defs[h.index].name == name)
            .map(|h| h.score)
            .unwrap()
    };
    // "add" is in no thesaurus group, so only the full-name bonus (1.15) applies.
    let parts = score("add", "mcp__todo__add_task") + score("task", "mcp__todo__add_task");
    assert!(score("add task", "mcp__todo__add_task") > 1.1 * parts);
    assert_eq!(top("add task"), "mcp__todo__add_task");
}

#[test]
fn limit_order_and_empty_inputs() {
    let defs = small_catalog();
    let index = SearchIndex::new(&defs);
    assert_eq!(index.len(), defs.len());
    assert!(!index.is_empty());

    let all = index.search("create list directory pull request", 100);
    assert!(all.len() >= 4, "{all:?}");
    assert!(all.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(all.iter().all(|h| h.score > 0.0 && h.index < defs.len()));
    let two = index.search("create list directory pull request", 2);
    assert_eq!(two, all[..2]);
    assert!(index.search("create", 0).is_empty());

    let empty = SearchIndex::new(&[]);
    assert!(empty.is_empty());
    assert!(empty.search("create", 10).is_empty());
}

#[test]
fn ties_keep_candidate_order() {
    let make = |names: &[&str]| -> Vec<ToolDefinition> {
        names
            .iter()
            .map(|n| def(n, "Send the weekly digest.", json!({"type": "object"})))
            .collect()
    };
    for names in [
        ["alpha_one", "beta_two", "gamma_six"],
        ["gamma_six", "alpha_one", "beta_two"],
    ] {
        let defs = make(&names);
        let hits = SearchIndex::new(&defs).search("weekly digest", 10);
        let order: Vec<usize> = hits.iter().map(|h| h.index).collect();
        assert_eq!(order, [0, 1, 2]);
        assert!(hits.iter().all(|h| h.score == hits[0].score));
    }
}

#[test]
fn pathological_schemas_do_not_panic() {
    // Deep nesting is cut off rather than recursed without bound, and odd shapes
    // (non-object properties, string items) are skipped.
    let mut schema = json!({"type": "object", "properties": {"leaf": {"type": "string"}}});
    for _ in 0..200 {
        schema = json!({"type": "object", "properties": {"inner": schema}});
    }
    let defs = [
        def("deep", "Deeply nested input.", schema),
        def(
            "odd",
            "Odd schema.",
            json!({"type": "object", "properties": {"a": 1, "b": {"items": "x"}}, "anyOf": 3}),
        ),
    ];
    let index = SearchIndex::new(&defs);
    assert_eq!(index.search("inner", 5).len(), 1);
    assert_eq!(index.search("odd", 5).len(), 1);
}

// ---------------------------------------------------------------------------------
// The realistic MCP fixture.

#[test]
fn fixture_is_a_realistic_catalog() {
    let defs = catalog();
    let queries = queries();
    assert!(defs.len() >= 250, "{} tools", defs.len());
    assert!(queries.len() >= 150, "{} queries", queries.len());

    let names: BTreeSet<&str> = defs.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names.len(), defs.len(), "tool names are unique");
    let groups: BTreeSet<&str> = defs.iter().map(|d| d.group.as_str()).collect();
    assert!(groups.len() >= 25, "{} servers", groups.len());
    for d in &defs {
        assert!(
            d.name.starts_with(&format!("mcp__{}__", d.group)),
            "{} is namespaced by its server",
            d.name
        );
        assert!(!d.tags().is_empty(), "{} has tags", d.name);
        assert!(d.deferred);
    }
    for q in &queries {
        assert!(names.contains(q.expected.as_str()), "{} exists", q.expected);
        // Paraphrases, not copies: a query never spells out its tool's own name.
        let own = q.expected.rsplit("__").next().unwrap();
        assert!(
            !q.query.to_lowercase().contains(own),
            "{:?} copies {own}",
            q.query
        );
    }
}

#[test]
fn fixture_top_hits() {
    // One line per query: the rank of the expected tool ("-" beyond five) and the top
    // hit. The snapshot makes every ranking change reviewable query by query.
    let defs = catalog();
    let index = SearchIndex::new(&defs);
    let mut report = String::new();
    for q in queries() {
        let hits = index.search(&q.query, 5);
        let rank = hits
            .iter()
            .position(|h| defs[h.index].name == q.expected)
            .map_or("-".to_owned(), |p| (p + 1).to_string());
        let top = hits
            .first()
            .map_or("(none)", |h| defs[h.index].name.as_str());
        writeln!(report, "{rank} | {} | {top}", q.query).unwrap();
    }
    insta::assert_snapshot!(report);
}

#[test]
fn fixture_ranking_is_deterministic() {
    // Two indexes hash with different random seeds; no ranking may depend on that.
    let defs = catalog();
    let (a, b) = (SearchIndex::new(&defs), SearchIndex::new(&defs));
    for q in queries() {
        assert_eq!(
            a.search(&q.query, 10),
            b.search(&q.query, 10),
            "{}",
            q.query
        );
    }
}

#[test]
fn eval_loaders_reject_bad_fixtures() {
    fn check(json: &str) {
        let err = eval::load_catalog(json).unwrap_err();
        assert!(
            ["INVALID_INPUT", "INVALID_DEFINITION"].contains(&err.code()),
            "{err}"
        );
    }
    check("not json");
    check(r#"{"tools": [{"name": "x"}]}"#);
    check(
        r#"{"tools": [{"name": "bad-name", "description": "d", "group": "g", "input_schema": {"type": "object"}}]}"#,
    );
    assert!(eval::load_queries(r#"{"queries": [{"query": "q"}]}"#).is_err());
}

// ---------------------------------------------------------------------------------
// `search_deferred` through a real registry.

/// Every fixture tool registered as a deferred `FnTool`, plus an eager tool and a
/// deferred system tool that both match "slack message" well.
fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    let body = |_input, _ctx| async { ToolOutput::text("ok") };
    for d in catalog() {
        registry.register(FnTool::new(d, body)).unwrap();
    }
    let eager = def(
        "mcp__slack__slack_send_message_now",
        "Send a Slack message to a channel right away.",
        json!({"type": "object"}),
    )
    .with_group("slack");
    registry.register(FnTool::new(eager, body)).unwrap();
    let system = def(
        "mcp__slack__slack_audit_message",
        "Audit a Slack message (internal).",
        json!({"type": "object"}),
    )
    .with_group("slack")
    .with_deferred(true)
    .with_system_use(true);
    registry.register(FnTool::new(system, body)).unwrap();
    registry
}

fn names(defs: &[ToolDefinition]) -> Vec<&str> {
    defs.iter().map(|d| d.name.as_str()).collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn search_deferred_filters_and_ranks() {
    let registry = registry();
    let view = registry.view(ViewFilter::default());
    let check = |query: &str,
                 groups: Option<&[&str]>,
                 limit: usize,
                 allowed: Option<&[&str]>,
                 expect: &[&str]| {
        let groups = groups.map(set);
        let allowed = allowed.map(set);
        let found = view.search_deferred(query, groups.as_ref(), limit, allowed.as_ref());
        assert_eq!(
            names(&found),
            expect,
            "query {query:?} groups {groups:?} limit {limit} allowed {allowed:?}"
        );
    };
    let post = "mcp__slack__slack_post_message";
    let reply = "mcp__slack__slack_reply_to_thread";

    // No narrowing: the best deferred tool across every server comes first.
    check("post a message in a slack channel", None, 1, None, &[post]);
    // An empty group set admits no group.
    check(
        "post a message in a slack channel",
        Some(&[]),
        10,
        None,
        &[],
    );
    // Some groups: only those groups' tools, best first, limit respected.
    check(
        "post a message in a slack channel",
        Some(&["slack", "gmail"]),
        2,
        None,
        &[post, "mcp__slack__slack_get_thread_replies"],
    );
    check("send an email", Some(&["slack"]), 1, None, &[post]);
    // Slack's emoji reactions have no counterpart among GitHub's tools.
    check("emoji reaction", Some(&["github"]), 10, None, &[]);
    check(
        "emoji reaction",
        Some(&["github", "slack"]),
        10,
        None,
        &["mcp__slack__slack_add_reaction"],
    );
    // Allowed names narrow further, ranked among themselves.
    check(
        "post a message in a slack channel",
        None,
        10,
        Some(&[reply, "mcp__github__create_issue"]),
        &[reply, "mcp__github__create_issue"],
    );
    check("post a message", None, 10, Some(&[]), &[]);
    // Limit zero and a query that matches nothing.
    check("post a message", None, 0, None, &[]);
    check("xylophone", None, 10, None, &[]);
}

#[test]
fn search_deferred_skips_eager_active_and_system_tools() {
    let registry = registry();
    let query = "send a slack message";
    let slack = set(&["slack"]);
    let everything = |view: &iris_tools_core::ToolRegistryView| {
        view.search_deferred(query, Some(&slack), 100, None)
            .into_iter()
            .map(|d| d.name)
            .collect::<Vec<_>>()
    };

    let plain = everything(&registry.view(ViewFilter::default()));
    // The eager tool matches best but is already active: never a candidate.
    assert!(!plain.contains(&"mcp__slack__slack_send_message_now".to_owned()));
    // System tools stay hidden unless the view asks for them.
    assert!(!plain.contains(&"mcp__slack__slack_audit_message".to_owned()));
    assert_eq!(plain.len(), 8, "{plain:?}");

    let with_system = everything(&registry.view(ViewFilter::default().include_system(true)));
    assert!(with_system.contains(&"mcp__slack__slack_audit_message".to_owned()));

    // A deferred tool the view allows is active, so it is no longer searched for.
    let allowed = registry.view(ViewFilter::default().allow(["mcp__slack__slack_post_message"]));
    let found = everything(&allowed);
    assert!(!found.contains(&"mcp__slack__slack_post_message".to_owned()));
    assert_eq!(found.len(), 7);

    // Denied tools and tools outside the view's groups are out of scope.
    let denied = registry.view(ViewFilter::default().deny(["mcp__slack__slack_post_message"]));
    assert!(!everything(&denied).contains(&"mcp__slack__slack_post_message".to_owned()));
    let other_groups = registry.view(ViewFilter::default().groups(["github"]));
    assert!(everything(&other_groups).is_empty());
}

// ---------------------------------------------------------------------------------
// The evaluation scaffolding the bench reports with.

#[test]
fn halves_are_deterministic_and_balanced() {
    // FNV-1a's published test vectors: the split is the same on every machine.
    assert_eq!(eval::fnv1a(""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(eval::fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(eval::half_of("a"), eval::Half::Tune);
    let set = eval::fixture_set(CATALOG, QUERIES).unwrap();
    let test = set.half(eval::Half::Test).len();
    let tune = set.half(eval::Half::Tune).len();
    assert_eq!((test, tune), (136, 124));
    // Order does not matter: a reversed file splits the same way.
    for case in &set.cases {
        assert_eq!(case.half, eval::half_of(&case.query));
    }
}

#[test]
fn query_kinds_follow_the_tool_name() {
    use eval::QueryKind::{Direct, Paraphrase, Partial};
    let kind = eval::QueryKind::of;
    assert_eq!(
        kind(
            "create an issue about the login",
            "mcp__github__create_issue"
        ),
        Direct
    );
    assert_eq!(
        kind("Issues created yesterday", "mcp__github__create_issue"),
        Direct
    );
    assert_eq!(kind("open an issue", "mcp__github__create_issue"), Partial);
    assert_eq!(kind("file a bug", "mcp__github__create_issue"), Paraphrase);
    assert_eq!(kind("factorial of 5", "math_factorial"), Partial);
}

/// Two `multiple` entries sharing a function, one `irrelevance` entry, in BFCL's
/// JSON-lines format (Python type names, dotted function names).
const BFCL_MULTIPLE: &str = r#"{"id": "multiple_0", "question": [[{"role": "user", "content": "What is the factorial of 5?"}]], "function": [{"name": "math.factorial", "description": "Compute the factorial of a number.", "parameters": {"type": "dict", "properties": {"n": {"type": "integer", "description": "The number."}}, "required": ["n"]}}, {"name": "math.gcd", "description": "Greatest common divisor of two numbers.", "parameters": {"type": "dict", "properties": {"pair": {"type": "tuple", "items": {"type": "float"}}}}}]}
{"id": "multiple_1", "question": [[{"role": "user", "content": "Find the gcd of 12 and 18"}]], "function": [{"name": "math.gcd", "description": "A different description.", "parameters": {"type": "dict", "properties": {}}}]}
"#;
const BFCL_ANSWERS: &str = r#"{"id": "multiple_0", "ground_truth": [{"math.factorial": {"n": [5]}}]}
{"id": "multiple_1", "ground_truth": [{"math.gcd": {"pair": [[12, 18]]}}]}
"#;
const BFCL_IRRELEVANCE: &str = r#"{"id": "irrelevance_0", "question": [[{"role": "user", "content": "Bake bread."}]], "function": [{"name": "math.sum", "description": "Sum numbers.", "parameters": {"type": "dict", "properties": {}}}]}
"#;

#[test]
fn bfcl_files_load_as_pooled_catalog_and_none_questions() {
    let pooled = eval::bfcl_pooled(BFCL_MULTIPLE, BFCL_ANSWERS).unwrap();
    // One tool per name, the first description kept, Python types made JSON Schema.
    assert_eq!(names(&pooled.tools), ["math_factorial", "math_gcd"]);
    assert_eq!(
        pooled.tools[1].description,
        "Greatest common divisor of two numbers."
    );
    assert_eq!(
        pooled.tools[1].input_schema["properties"]["pair"]["type"],
        "array"
    );
    assert_eq!(
        pooled.tools[1].input_schema["properties"]["pair"]["items"]["type"],
        "number"
    );
    let cases: Vec<(&str, &str)> = pooled
        .cases
        .iter()
        .map(|c| (c.query.as_str(), c.expected.as_str()))
        .collect();
    assert_eq!(
        cases,
        [
            ("What is the factorial of 5?", "math_factorial"),
            ("Find the gcd of 12 and 18", "math_gcd")
        ]
    );
    assert_eq!(pooled.cases[0].half, eval::half_of("multiple_0"));

    let none = eval::bfcl_none_cases(BFCL_MULTIPLE, BFCL_ANSWERS, BFCL_IRRELEVANCE).unwrap();
    let shape: Vec<(usize, Option<&str>)> = none
        .iter()
        .map(|c| (c.tools.len(), c.expected.as_deref()))
        .collect();
    assert_eq!(
        shape,
        [
            (2, Some("math_factorial")),
            (1, Some("math_gcd")),
            (1, None)
        ]
    );
    assert_eq!(eval::bfcl_tool_name("3d.plot-x"), "_3d_plot_x");
    assert!(eval::bfcl_pooled("{not json", BFCL_ANSWERS).is_err());
}

/// Two `simple_*`-style files (one function per entry) whose functions are twins of
/// each other and of nothing else.
const BFCL_SIMPLE_A: &str = r#"{"id": "simple_python_0", "question": [[{"role": "user", "content": "What is my BMI at 70 kg and 1.75 m?"}]], "function": [{"name": "calculate_BMI", "description": "Body mass index.", "parameters": {"type": "dict", "properties": {"weight": {"type": "float"}}}}]}
{"id": "simple_python_1", "question": [[{"role": "user", "content": "Book a hotel in Rome"}]], "function": [{"name": "hotel.book", "description": "Book a room.", "parameters": {"type": "dict", "properties": {}}}]}
"#;
const BFCL_SIMPLE_A_ANSWERS: &str = r#"{"id": "simple_python_0", "ground_truth": [{"calculate_BMI": {"weight": [70]}}]}
{"id": "simple_python_1", "ground_truth": [{"hotel.book": {}}]}
"#;
const BFCL_SIMPLE_B: &str = r#"{"id": "simple_java_0", "question": [[{"role": "user", "content": "Compute the bmi for 80 kg"}]], "function": [{"name": "calculate_bmi", "description": "Another description.", "parameters": {"type": "dict", "properties": {"w": {"type": "HashMap", "description": "x"}, "s": {"type": "String"}}}}]}
{"id": "simple_java_1", "question": [[{"role": "user", "content": "Reserve a hotel room"}]], "function": [{"name": "book_hotel", "description": "Reserve.", "parameters": {"type": "dict", "properties": {}}}]}
{"id": "simple_java_2", "question": [[{"role": "user", "content": "Fetch the HTTP status"}]], "function": [{"name": "getHTTPStatus", "description": "Status of a URL.", "parameters": {"type": "dict", "properties": {}}}]}
"#;
const BFCL_SIMPLE_B_ANSWERS: &str = r#"{"id": "simple_java_0", "ground_truth": [{"calculate_bmi": {"w": [80]}}]}
{"id": "simple_java_1", "ground_truth": [{"book_hotel": {}}]}
{"id": "simple_java_2", "ground_truth": [{"getHTTPStatus": {}}]}
"#;

#[test]
fn bfcl_files_pool_and_twins_merge() {
    let pooled = eval::bfcl_pool(
        "bfcl-simple",
        &[
            (BFCL_SIMPLE_A, BFCL_SIMPLE_A_ANSWERS),
            (BFCL_SIMPLE_B, BFCL_SIMPLE_B_ANSWERS),
        ],
    )
    .unwrap();
    assert_eq!(pooled.name, "bfcl-simple");
    assert_eq!(
        names(&pooled.tools),
        [
            "calculate_BMI",
            "hotel_book",
            "calculate_bmi",
            "book_hotel",
            "getHTTPStatus"
        ]
    );
    // Java type names become JSON Schema ones.
    assert_eq!(
        pooled.tools[2].input_schema["properties"]["w"]["type"],
        "object"
    );
    assert_eq!(
        pooled.tools[2].input_schema["properties"]["s"]["type"],
        "string"
    );
    assert_eq!(pooled.cases.len(), 5);
    assert_eq!(pooled.cases[2].half, eval::half_of("simple_java_0"));

    assert_eq!(eval::name_words("calculate_BMI"), ["bmi", "calculate"]);
    assert_eq!(
        eval::name_words("hotel_book"),
        eval::name_words("book_hotel")
    );
    assert_eq!(eval::name_words("getHTTPStatus"), ["get", "http", "status"]);
    assert_eq!(eval::name_words("hotel.book-now"), ["book", "hotel", "now"]);
    assert_ne!(
        eval::name_words("calculate_bmi"),
        eval::name_words("calc_bmi")
    );

    let (merged, pairs) = eval::merge_twins(&pooled);
    assert_eq!(merged.name, "bfcl-simple, twins merged");
    // The first seen stays; the other's questions go to it.
    assert_eq!(
        names(&merged.tools),
        ["calculate_BMI", "hotel_book", "getHTTPStatus"]
    );
    assert_eq!(
        pairs,
        [
            ("calculate_bmi".to_owned(), "calculate_BMI".to_owned()),
            ("book_hotel".to_owned(), "hotel_book".to_owned())
        ]
    );
    let expected: Vec<&str> = merged.cases.iter().map(|c| c.expected.as_str()).collect();
    assert_eq!(
        expected,
        [
            "calculate_BMI",
            "hotel_book",
            "calculate_BMI",
            "hotel_book",
            "getHTTPStatus"
        ]
    );
    // Kinds follow the new label; halves stay.
    assert_eq!(
        merged.cases[3].kind,
        eval::QueryKind::of("Reserve a hotel room", "hotel_book")
    );
    assert_eq!(merged.cases[3].half, pooled.cases[3].half);
    assert!(eval::bfcl_pool("x", &[(BFCL_SIMPLE_A, "{bad")]).is_err());
}

#[test]
fn metrics_and_none_metrics_count_right() {
    let defs = small_catalog();
    let case = |query: &str, expected: &str| eval::Case {
        query: query.to_owned(),
        expected: expected.to_owned(),
        kind: eval::QueryKind::of(query, expected),
        half: eval::Half::Test,
        accepted: Vec::new(),
    };
    let cases = [
        case("first", "mcp__jira__add_comment"),
        case("second", "mcp__jira__create_issue"),
        case("third", "mcp__kubernetes__list_pods"),
    ];
    let refs: Vec<&eval::Case> = cases.iter().collect();
    // A fixed ranking: [0, 1, 2, …] for every query, so the ranks are 1, 2 and 6.
    let m = eval::metrics(&defs, &refs, |_, k| (0..defs.len()).take(k).collect());
    assert_eq!(m.n, 3);
    assert!((m.at1 - 1.0 / 3.0).abs() < 1e-12);
    assert!((m.at5 - 2.0 / 3.0).abs() < 1e-12);
    assert!((m.mrr - (1.0 + 0.5 + 1.0 / 6.0) / 3.0).abs() < 1e-12);

    let tools: std::sync::Arc<[ToolDefinition]> = defs.clone().into();
    let q = |query: &str, expected: Option<&str>| eval::NoneCase {
        query: query.to_owned(),
        tools: tools.clone(),
        expected: expected.map(str::to_owned),
        half: eval::Half::Test,
    };
    let questions = [
        q("a", None),
        q("b", None),
        q("c", Some("x")),
        q("d", Some("y")),
    ];
    let refs: Vec<&eval::NoneCase> = questions.iter().collect();
    // Says none to a, c; "x" to b; "y" to d.
    let answers: HashMap<&str, Option<&str>> =
        [("a", None), ("b", Some("x")), ("c", None), ("d", Some("y"))].into();
    let m = eval::none_metrics(&refs, |c| answers[c.query.as_str()].map(str::to_owned));
    assert_eq!((m.n, m.negatives), (4, 2));
    assert_eq!(
        (m.precision, m.recall, m.positive_accuracy),
        (0.5, 0.5, 0.5)
    );
}

/// One BFCL entry per line: a question about a circle of radius 4 in inches, labelled
/// `calculate_circumference`, pooled with tools of other entries.
const BFCL_EQUIVALENTS: &str = r#"{"id": "simple_python_10", "question": [[{"role": "user", "content": "Circumference of a circle of radius 4 inches?"}]], "function": [{"name": "calculate_circumference", "description": "Circumference of a circle.", "parameters": {"type": "dict", "properties": {"radius": {"type": "integer"}, "unit": {"type": "string"}}, "required": ["radius"]}}]}
{"id": "simple_python_11", "question": [[{"role": "user", "content": "Circle of radius 2?"}]], "function": [{"name": "geometry.circumference", "description": "Circumference from a radius.", "parameters": {"type": "dict", "properties": {"radius": {"type": "integer"}, "units": {"type": "string"}}, "required": ["Radius"]}}]}
{"id": "simple_python_12", "question": [[{"role": "user", "content": "A circle's area, radius 3?"}]], "function": [{"name": "geometry.area_circle", "description": "Area of a circle.", "parameters": {"type": "dict", "properties": {"radius": {"type": "integer"}}, "required": ["radius"]}}]}
{"id": "simple_python_13", "question": [[{"role": "user", "content": "Circumference with a diameter of 8?"}]], "function": [{"name": "circumference_from_diameter", "description": "Circumference from a diameter.", "parameters": {"type": "dict", "properties": {"diameter": {"type": "integer"}}, "required": ["diameter"]}}]}
{"id": "simple_python_14", "question": [[{"role": "user", "content": "Get a circumference."}]], "function": [{"name": "get_circumference", "description": "Anything.", "parameters": {"type": "dict", "properties": {"radius": {"type": "integer"}}}}]}
{"id": "simple_python_15", "question": [[{"role": "user", "content": "Circumference in some unit."}]], "function": [{"name": "circumference.calculate", "description": "Circumference with a unit.", "parameters": {"type": "dict", "properties": {"radius": {"type": "integer"}, "unit": {"type": "string"}}, "required": ["radius", "unit"]}}]}
"#;

const BFCL_EQUIVALENTS_ANSWERS: &str = r#"{"id": "simple_python_10", "ground_truth": [{"calculate_circumference": {"radius": [4], "unit": ["", "inches"]}}]}
{"id": "simple_python_11", "ground_truth": [{"geometry.circumference": {"radius": [2], "units": [""]}}]}
{"id": "simple_python_12", "ground_truth": [{"geometry.area_circle": {"radius": [3]}}]}
{"id": "simple_python_13", "ground_truth": [{"circumference_from_diameter": {"diameter": [8]}}]}
{"id": "simple_python_14", "ground_truth": [{"get_circumference": {}}]}
{"id": "simple_python_15", "ground_truth": [{"circumference.calculate": {"radius": [1], "unit": ["cm"]}}]}
"#;

#[test]
fn equivalents_are_accepted_by_one_strict_rule() {
    let files = [(BFCL_EQUIVALENTS, BFCL_EQUIVALENTS_ANSWERS)];
    let pooled = eval::bfcl_pool("bfcl-simple", &files).unwrap();
    let accepting = eval::accept_equivalents(&pooled, &files).unwrap();
    assert_eq!(accepting.name, "bfcl-simple, equivalents accepted");
    assert_eq!(names(&accepting.tools), names(&pooled.tools));
    let accepted: Vec<(&str, Vec<&str>)> = accepting
        .cases
        .iter()
        .map(|c| {
            (
                c.expected.as_str(),
                c.accepted.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        accepted,
        [
            // Radius given (the unit too): the other circumference tools that need only
            // what was given, and whose name words beyond the operation are all in it
            // (`Radius` matches `radius`). Not the area (other words), not the diameter
            // one (a parameter not given), not one requiring nothing.
            (
                "calculate_circumference",
                vec!["geometry_circumference", "circumference_calculate"]
            ),
            // `units` was left out (its only value is ""), so the tools requiring a unit
            // are not accepted; the labelled tool never lists itself.
            ("geometry_circumference", vec!["calculate_circumference"]),
            ("geometry_area_circle", vec![]),
            ("circumference_from_diameter", vec![]),
            // A call with no arguments accepts nothing.
            ("get_circumference", vec![]),
            (
                "circumference_calculate",
                vec!["calculate_circumference", "geometry_circumference"]
            ),
        ]
    );
    // A ranking that puts an accepted tool first is right at R@1; as labelled it is not.
    let first_is = |name: &'static str| {
        let at = accepting.tools.iter().position(|t| t.name == name).unwrap();
        move |_: &str, _: usize| vec![at]
    };
    let case = [&accepting.cases[0]];
    let plain = [&pooled.cases[0]];
    let hit = eval::metrics(&accepting.tools, &case, first_is("geometry_circumference"));
    let miss = eval::metrics(&pooled.tools, &plain, first_is("geometry_circumference"));
    assert_eq!((hit.at1, miss.at1), (1.0, 0.0));
    let neighbour = eval::metrics(&accepting.tools, &case, first_is("geometry_area_circle"));
    assert_eq!(neighbour.at1, 0.0);
}
