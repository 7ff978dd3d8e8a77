//! Every input bound of both tools, on both sides, checked twice: by the JSON Schema the
//! executor validates against, and by the typed parse in `validate_input`.

use iris_tools_core::Tool;
use iris_web::{TavilyClient, WebFetchTool, WebSearchTool};
use serde_json::{Value, json};
use std::sync::Arc;

/// What one input should do.
enum Expect {
    /// Schema and typed parse accept it; the typed parse normalizes it to this.
    Valid(Value),
    /// Schema and typed parse refuse it; the typed error names this field
    /// (`""`: no field, the input itself is wrong).
    Invalid(&'static str),
    /// The schema does not say it (JSON Schema counts 10.0 as an integer; repeated
    /// URLs need `uniqueItems`, which OpenAI strict mode refuses), so only the typed
    /// parse refuses it, naming this field.
    TypedOnly(&'static str),
}

fn check(tool: &dyn Tool, input: Value, expect: Expect) {
    let schema = &tool.definition().input_schema;
    let validator = jsonschema::validator_for(schema).unwrap();
    let schema_ok = validator.is_valid(&input);
    let typed = tool.validate_input(input.clone());
    match expect {
        Expect::Valid(normalized) => {
            assert!(schema_ok, "schema refused {input}");
            assert_eq!(typed.unwrap().value(), &normalized, "input {input}");
        }
        Expect::Invalid(field) | Expect::TypedOnly(field) => {
            let schema_expected = matches!(expect, Expect::TypedOnly(_));
            assert_eq!(schema_ok, schema_expected, "schema verdict for {input}");
            let err = typed.expect_err(&format!("typed parse accepted {input}"));
            assert_eq!(err.code, "INVALID_INPUT", "input {input}");
            assert_eq!(
                err.details
                    .get("field")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                field,
                "input {input}: {}",
                err.message
            );
            assert!(
                !err.message.contains('\n'),
                "one-line message: {}",
                err.message
            );
        }
    }
}

fn search() -> WebSearchTool {
    WebSearchTool::new(Arc::new(TavilyClient::from_env()))
}

fn fetch() -> WebFetchTool {
    WebFetchTool::new(Arc::new(TavilyClient::from_env()))
}

fn domains(n: usize) -> Value {
    json!(
        (0..n)
            .map(|i| format!("site{i}.example"))
            .collect::<Vec<_>>()
    )
}

fn urls(n: usize) -> Value {
    json!(
        (0..n)
            .map(|i| format!("https://site{i}.example/page"))
            .collect::<Vec<_>>()
    )
}

/// `web_search` with defaults filled in and these fields replaced.
fn search_normalized(fields: Value) -> Value {
    let mut base = json!({
        "query": "q", "max_results": 10, "time_range": null,
        "include_domains": [], "exclude_domains": [],
    });
    for (k, v) in fields.as_object().unwrap() {
        base[k] = v.clone();
    }
    base
}

#[test]
fn search_query() {
    use Expect::*;
    let cases = [
        (json!({"query": "q"}), Valid(search_normalized(json!({})))),
        (
            json!({"query": "  rust async \n"}),
            Valid(search_normalized(json!({"query": "rust async"}))),
        ),
        (json!({}), Invalid("query")),
        (json!({"query": ""}), Invalid("query")),
        (json!({"query": " \t\n"}), Invalid("query")),
        (json!({"query": null}), Invalid("query")),
        (json!({"query": 5}), Invalid("query")),
        (json!({"query": ["q"]}), Invalid("query")),
    ];
    for (input, expect) in cases {
        check(&search(), input, expect);
    }
}

#[test]
fn search_max_results() {
    use Expect::*;
    let cases = [
        (
            json!({"query": "q", "max_results": 1}),
            Valid(search_normalized(json!({"max_results": 1}))),
        ),
        (
            json!({"query": "q", "max_results": 20}),
            Valid(search_normalized(json!({"max_results": 20}))),
        ),
        (
            json!({"query": "q", "max_results": 7}),
            Valid(search_normalized(json!({"max_results": 7}))),
        ),
        (
            json!({"query": "q", "max_results": 0}),
            Invalid("max_results"),
        ),
        (
            json!({"query": "q", "max_results": 21}),
            Invalid("max_results"),
        ),
        (
            json!({"query": "q", "max_results": -1}),
            Invalid("max_results"),
        ),
        (
            json!({"query": "q", "max_results": u64::MAX}),
            Invalid("max_results"),
        ),
        (
            json!({"query": "q", "max_results": 10.5}),
            Invalid("max_results"),
        ),
        (
            json!({"query": "q", "max_results": "10"}),
            Invalid("max_results"),
        ),
        (
            json!({"query": "q", "max_results": true}),
            Invalid("max_results"),
        ),
        (
            json!({"query": "q", "max_results": null}),
            Invalid("max_results"),
        ),
        // Strict integer: 10.0 is refused even though JSON Schema calls it an integer.
        (
            json!({"query": "q", "max_results": 10.0}),
            TypedOnly("max_results"),
        ),
    ];
    for (input, expect) in cases {
        check(&search(), input, expect);
    }
}

#[test]
fn search_time_range() {
    use Expect::*;
    for name in ["day", "week", "month", "year"] {
        check(
            &search(),
            json!({"query": "q", "time_range": name}),
            Valid(search_normalized(json!({"time_range": name}))),
        );
    }
    let cases = [
        (
            json!({"query": "q", "time_range": null}),
            Valid(search_normalized(json!({}))),
        ),
        (
            json!({"query": "q", "time_range": "hour"}),
            Invalid("time_range"),
        ),
        (
            json!({"query": "q", "time_range": "Day"}),
            Invalid("time_range"),
        ),
        (
            json!({"query": "q", "time_range": "d"}),
            Invalid("time_range"),
        ),
        (
            json!({"query": "q", "time_range": ""}),
            Invalid("time_range"),
        ),
        (
            json!({"query": "q", "time_range": 7}),
            Invalid("time_range"),
        ),
    ];
    for (input, expect) in cases {
        check(&search(), input, expect);
    }
}

#[test]
fn search_domains() {
    use Expect::*;
    let cases = [
        (
            json!({"query": "q", "include_domains": []}),
            Valid(search_normalized(json!({}))),
        ),
        (
            json!({"query": "q", "include_domains": domains(300)}),
            Valid(search_normalized(json!({"include_domains": domains(300)}))),
        ),
        (
            json!({"query": "q", "include_domains": domains(301)}),
            Invalid("include_domains"),
        ),
        (
            json!({"query": "q", "exclude_domains": domains(150)}),
            Valid(search_normalized(json!({"exclude_domains": domains(150)}))),
        ),
        (
            json!({"query": "q", "exclude_domains": domains(151)}),
            Invalid("exclude_domains"),
        ),
        (
            json!({"query": "q", "include_domains": [" docs.rs "]}),
            Valid(search_normalized(json!({"include_domains": ["docs.rs"]}))),
        ),
        (
            json!({"query": "q", "include_domains": "docs.rs"}),
            Invalid("include_domains"),
        ),
        (
            json!({"query": "q", "include_domains": null}),
            Invalid("include_domains"),
        ),
        (
            json!({"query": "q", "include_domains": ["docs.rs", ""]}),
            Invalid("include_domains[1]"),
        ),
        (
            json!({"query": "q", "exclude_domains": ["  "]}),
            Invalid("exclude_domains[0]"),
        ),
        (
            json!({"query": "q", "exclude_domains": [3]}),
            Invalid("exclude_domains[0]"),
        ),
    ];
    for (input, expect) in cases {
        check(&search(), input, expect);
    }
}

#[test]
fn search_refuses_other_fields_and_shapes() {
    use Expect::*;
    let cases = [
        // The model cannot switch on the paid depth or a generated answer.
        (
            json!({"query": "q", "search_depth": "advanced"}),
            Invalid("search_depth"),
        ),
        (
            json!({"query": "q", "include_answer": true}),
            Invalid("include_answer"),
        ),
        (json!({"query": "q", "topic": "news"}), Invalid("topic")),
        (json!("q"), Invalid("")),
        (json!(null), Invalid("")),
        (json!([{"query": "q"}]), Invalid("")),
    ];
    for (input, expect) in cases {
        check(&search(), input, expect);
    }
}

#[test]
fn fetch_urls() {
    use Expect::*;
    let one = json!(["https://a.example/page"]);
    let cases = [
        (
            json!({"urls": one}),
            Valid(json!({"urls": one, "query": null})),
        ),
        (
            json!({"urls": urls(20)}),
            Valid(json!({"urls": urls(20), "query": null})),
        ),
        (
            json!({"urls": ["http://a.example"]}),
            Valid(json!({"urls": ["http://a.example"], "query": null})),
        ),
        (
            json!({"urls": ["HTTPS://A.example/x"]}),
            Valid(json!({"urls": ["HTTPS://A.example/x"], "query": null})),
        ),
        (json!({}), Invalid("urls")),
        (json!({"urls": []}), Invalid("urls")),
        (json!({"urls": urls(21)}), Invalid("urls")),
        (json!({"urls": "https://a.example/"}), Invalid("urls")),
        (json!({"urls": null}), Invalid("urls")),
        (
            json!({"urls": ["ftp://a.example/file"]}),
            Invalid("urls[0]"),
        ),
        (
            json!({"urls": ["https://a.example/", "file:///etc/passwd"]}),
            Invalid("urls[1]"),
        ),
        (json!({"urls": ["a.example/page"]}), Invalid("urls[0]")),
        (json!({"urls": ["https://"]}), Invalid("urls[0]")),
        (json!({"urls": [""]}), Invalid("urls[0]")),
        (json!({"urls": [42]}), Invalid("urls[0]")),
        // Repeated URLs: the schema has no `uniqueItems` (OpenAI strict mode refuses
        // it), and only the typed parse sees through two spellings of one page.
        (
            json!({"urls": ["https://a.example/", "https://a.example/"]}),
            TypedOnly("urls[1]"),
        ),
        (
            json!({"urls": ["https://a.example", "https://a.example/"]}),
            TypedOnly("urls[1]"),
        ),
    ];
    for (input, expect) in cases {
        check(&fetch(), input, expect);
    }
}

#[test]
fn fetch_query() {
    use Expect::*;
    let one = json!(["https://a.example/page"]);
    let cases = [
        (
            json!({"urls": one, "query": null}),
            Valid(json!({"urls": one, "query": null})),
        ),
        (
            json!({"urls": one, "query": "pricing"}),
            Valid(json!({"urls": one, "query": "pricing"})),
        ),
        (
            json!({"urls": one, "query": "  pricing  "}),
            Valid(json!({"urls": one, "query": "pricing"})),
        ),
        (json!({"urls": one, "query": ""}), Invalid("query")),
        (json!({"urls": one, "query": "   "}), Invalid("query")),
        (json!({"urls": one, "query": 1}), Invalid("query")),
        (
            json!({"urls": one, "extract_depth": "advanced"}),
            Invalid("extract_depth"),
        ),
        (json!(["https://a.example/"]), Invalid("")),
    ];
    for (input, expect) in cases {
        check(&fetch(), input, expect);
    }
}
