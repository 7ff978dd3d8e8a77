//! Every parameter bound, both sides, through the schema and `validate_input` alike.

use iris_tools_core::ToolInput;
use iris_tools_core::codes::INVALID_INPUT;
use serde_json::{Value, json};

use crate::support::{Harness, validate};

const OK: &str = "OK";

fn check(h: &Harness, tool: &str, input: Value, expect: &str) {
    let verdict = match validate(h.tool(tool).as_ref(), input.clone()) {
        Ok(_) => OK.to_owned(),
        Err(e) => {
            assert!(!e.message.contains('\n'), "one-line message: {e}");
            e.code
        }
    };
    assert_eq!(verdict, expect, "{tool} {input}");
}

#[test]
fn read_file_bounds() {
    let h = Harness::new();
    let f = |extra: Value| {
        let mut v = json!({"file_path": "a.txt"});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    for (input, expect) in [
        (json!({"file_path": "a.txt"}), OK),
        (json!({}), INVALID_INPUT),
        (json!({"file_path": ""}), INVALID_INPUT),
        (json!({"file_path": 7}), INVALID_INPUT),
        (json!({"file_path": null}), INVALID_INPUT),
        (f(json!({"offset": 0})), OK),
        (f(json!({"offset": -1})), INVALID_INPUT),
        (f(json!({"offset": null})), OK),
        (f(json!({"offset": 1.5})), INVALID_INPUT),
        (f(json!({"offset": 3.0})), OK),
        (f(json!({"offset": "3"})), INVALID_INPUT),
        (f(json!({"offset": 18_446_744_073_709_551_615_u64})), OK),
        (f(json!({"column": 0})), OK),
        (f(json!({"column": -1})), INVALID_INPUT),
        (f(json!({"column": null})), INVALID_INPUT),
        (f(json!({"column": 10_000_000})), OK),
        (f(json!({"limit": 0})), OK),
        (f(json!({"limit": 1000})), OK),
        (f(json!({"limit": 1001})), INVALID_INPUT),
        (f(json!({"limit": -1})), INVALID_INPUT),
        (f(json!({"limit": 1000.0})), OK),
        (f(json!({"limit": 1001.0})), INVALID_INPUT),
        (f(json!({"limit": null})), OK),
        (f(json!({"limit": "10"})), INVALID_INPUT),
        (f(json!({"with_line_numbers": true})), OK),
        (f(json!({"with_line_numbers": false})), OK),
        (f(json!({"with_line_numbers": "yes"})), INVALID_INPUT),
        (f(json!({"with_line_numbers": null})), INVALID_INPUT),
        (f(json!({"encoding": "utf-8"})), INVALID_INPUT),
        (json!(["a.txt"]), INVALID_INPUT),
        (json!("a.txt"), INVALID_INPUT),
        (Value::Null, INVALID_INPUT),
    ] {
        check(&h, "read_file", input, expect);
    }
}

#[test]
fn list_and_grep_bounds() {
    let h = Harness::new();
    for (tool, input, expect) in [
        ("list_files", json!({}), OK),
        ("list_files", json!({"path": "."}), OK),
        ("list_files", json!({"path": ""}), INVALID_INPUT),
        ("list_files", json!({"path": null}), INVALID_INPUT),
        ("list_files", json!({"pattern": "*.rs"}), OK),
        ("list_files", json!({"pattern": null}), OK),
        ("list_files", json!({"pattern": 5}), INVALID_INPUT),
        ("list_files", json!({"max_results": 0}), OK),
        ("list_files", json!({"max_results": 1000}), OK),
        ("list_files", json!({"max_results": 1001}), INVALID_INPUT),
        ("list_files", json!({"max_results": -1}), INVALID_INPUT),
        ("list_files", json!({"max_results": null}), INVALID_INPUT),
        ("list_files", json!({"recursive": false}), INVALID_INPUT),
        ("grep_search", json!({"pattern": "x"}), OK),
        ("grep_search", json!({}), INVALID_INPUT),
        ("grep_search", json!({"pattern": ""}), OK),
        ("grep_search", json!({"pattern": null}), INVALID_INPUT),
        (
            "grep_search",
            json!({"pattern": "x", "path": ""}),
            INVALID_INPUT,
        ),
        ("grep_search", json!({"pattern": "x", "path": "src"}), OK),
        ("grep_search", json!({"pattern": "x", "max_results": 0}), OK),
        (
            "grep_search",
            json!({"pattern": "x", "max_results": 1000}),
            OK,
        ),
        (
            "grep_search",
            json!({"pattern": "x", "max_results": 1001}),
            INVALID_INPUT,
        ),
        (
            "grep_search",
            json!({"pattern": "x", "max_results": -1}),
            INVALID_INPUT,
        ),
        (
            "grep_search",
            json!({"pattern": "x", "ignore_case": true}),
            INVALID_INPUT,
        ),
    ] {
        check(&h, tool, input, expect);
    }
}

/// The bounds added against hostile input: numbers past u64 and over-long globs are
/// refused by the schema and by the typed parse alike, with the real bound named.
#[test]
fn numbers_past_u64_and_long_globs() {
    let h = Harness::new();
    let past_u64: Value = serde_json::from_str("18446744073709551616").unwrap();
    let glob = |n: usize, c: &str| json!({"pattern": c.repeat(n)});
    let max = iris_files::MAX_GLOB_CHARS;
    for (tool, input, expect) in [
        (
            "read_file",
            json!({"file_path": "a", "offset": past_u64.clone()}),
            INVALID_INPUT,
        ),
        (
            "read_file",
            json!({"file_path": "a", "column": past_u64}),
            INVALID_INPUT,
        ),
        (
            "read_file",
            json!({"file_path": "a", "offset": 2e19}),
            INVALID_INPUT,
        ),
        ("list_files", glob(max, "*"), OK),
        ("list_files", glob(max, "é"), OK),
        ("list_files", glob(max + 1, "*"), INVALID_INPUT),
        ("list_files", glob(max + 1, "é"), INVALID_INPUT),
    ] {
        check(&h, tool, input, expect);
    }
    let err = crate::support::validate(
        h.tool("read_file").as_ref(),
        json!({"file_path": "a", "offset": 2e19}),
    )
    .unwrap_err();
    assert!(
        err.message.contains("between 0 and 18446744073709551615"),
        "{}",
        err.message
    );
}

#[test]
fn write_edit_publish_bounds() {
    let h = Harness::new();
    for (tool, input, expect) in [
        ("write_file", json!({"file_path": "a", "content": ""}), OK),
        ("write_file", json!({"file_path": "a", "content": "x"}), OK),
        ("write_file", json!({"file_path": "a"}), INVALID_INPUT),
        ("write_file", json!({"content": "x"}), INVALID_INPUT),
        (
            "write_file",
            json!({"file_path": "", "content": "x"}),
            INVALID_INPUT,
        ),
        (
            "write_file",
            json!({"file_path": "a", "content": null}),
            INVALID_INPUT,
        ),
        (
            "write_file",
            json!({"file_path": "a", "content": ["x"]}),
            INVALID_INPUT,
        ),
        (
            "edit_file",
            json!({"file_path": "a", "old_string": "x", "new_string": ""}),
            OK,
        ),
        (
            "edit_file",
            json!({"file_path": "a", "old_string": "", "new_string": "y"}),
            INVALID_INPUT,
        ),
        (
            "edit_file",
            json!({"file_path": "a", "old_string": "x"}),
            INVALID_INPUT,
        ),
        (
            "edit_file",
            json!({"file_path": "a", "new_string": "y"}),
            INVALID_INPUT,
        ),
        (
            "edit_file",
            json!({"file_path": "a", "old_string": "x", "new_string": "y", "replace_all": true}),
            INVALID_INPUT,
        ),
        ("publish_artifact", json!({"file_path": "a"}), OK),
        ("publish_artifact", json!({}), INVALID_INPUT),
        ("publish_artifact", json!({"file_path": ""}), INVALID_INPUT),
        (
            "publish_artifact",
            json!({"file_path": "a", "name": "b"}),
            INVALID_INPUT,
        ),
    ] {
        check(&h, tool, input, expect);
    }
}

/// `validate_input` fills the defaults, and its output is itself valid input.
#[test]
fn normalized_input_fills_defaults_and_revalidates() {
    let h = Harness::new();
    for (tool, input, normalized) in [
        (
            "read_file",
            json!({"file_path": "a"}),
            json!({"file_path": "a", "offset": null, "column": 0, "limit": null, "with_line_numbers": false}),
        ),
        (
            "list_files",
            json!({}),
            json!({"path": ".", "pattern": null, "max_results": 200}),
        ),
        (
            "grep_search",
            json!({"pattern": "x"}),
            json!({"pattern": "x", "path": ".", "max_results": 200}),
        ),
        (
            "write_file",
            json!({"file_path": "a", "content": ""}),
            json!({"file_path": "a", "content": ""}),
        ),
        (
            "publish_artifact",
            json!({"file_path": "a"}),
            json!({"file_path": "a"}),
        ),
    ] {
        let t = h.tool(tool);
        let out = validate(t.as_ref(), input).unwrap();
        assert_eq!(out.value(), &normalized, "{tool}");
        let again = validate(t.as_ref(), out.value().clone()).unwrap();
        assert_eq!(again.value(), out.value(), "{tool}");
    }
}

/// `run` without prior validation still answers bad input with INVALID_INPUT.
#[tokio::test]
async fn run_rejects_unvalidated_bad_input() {
    let h = Harness::new();
    for (tool, input) in [
        ("read_file", json!({"file_path": "a", "limit": 5000})),
        ("list_files", json!({"max_results": -3})),
        ("grep_search", json!({})),
        ("write_file", json!({"file_path": 1, "content": "x"})),
        (
            "edit_file",
            json!({"file_path": "a", "old_string": "", "new_string": "x"}),
        ),
        ("publish_artifact", json!(null)),
    ] {
        let result = h
            .tool(tool)
            .run(ToolInput::new(input.clone()), &h.ctx)
            .await;
        assert_eq!(result.error_code(), Some(INVALID_INPUT), "{tool} {input}");
    }
}
