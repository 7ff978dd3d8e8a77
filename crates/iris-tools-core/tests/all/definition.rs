//! Tests for the `definition` area: every `ToolDefinition` validation rule on both sides
//! of its bound, the documented defaults, serde round-trips, and the `ToolResult` model
//! projection (`model_blocks`, `model_content`, `to_msg`).
// Tests report failures by panicking, so unwrap/expect are the clearest assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use iris_tools_core::definition::{
    DEFAULT_GROUP, DEFAULT_MAX_RESULT_CHARS, DEFAULT_PREVIEW_CHARS, MAX_TOOL_NAME_LEN,
};
use iris_tools_core::{ContextRetention, PreviewMode, ToolCapability, ToolDefinition, codes};
use serde_json::{Value, json};

/// A valid definition to derive each case from.
fn base() -> ToolDefinition {
    ToolDefinition::new("tool", "Does one thing.", json!({"type": "object"}))
}

fn named(name: &str) -> ToolDefinition {
    let mut def = base();
    name.clone_into(&mut def.name);
    def
}

fn with_schema(schema: Value) -> ToolDefinition {
    let mut def = base();
    def.input_schema = schema;
    def
}

/// Validates `def`; `expect` is `None` for valid, or a fragment of the rule's reason.
fn check(label: &str, def: &ToolDefinition, expect: Option<&str>) {
    match (def.validate(), expect) {
        (Ok(()), None) => {}
        (Ok(()), Some(reason)) => panic!("{label}: accepted, expected an error with `{reason}`"),
        (Err(e), None) => panic!("{label}: rejected: {e}"),
        (Err(e), Some(reason)) => {
            assert_eq!(e.code(), codes::INVALID_DEFINITION, "{label}");
            let message = e.to_string();
            assert!(
                message.contains(reason),
                "{label}: `{message}` lacks `{reason}`"
            );
            assert!(!message.contains('\n'), "{label}: message is one line");
        }
    }
}

#[test]
fn name_rules() {
    let max = "a".repeat(MAX_TOOL_NAME_LEN);
    let over = "a".repeat(MAX_TOOL_NAME_LEN + 1);
    let cases: &[(&str, Option<&str>)] = &[
        // Length: 1..=64.
        ("", Some("must not be empty")),
        ("a", None),
        (&max, None),
        (&over, Some("65 characters; at most 64")),
        // First character: letter or underscore, never a digit.
        ("_", None),
        ("_9", None),
        ("A", None),
        ("z9_", None),
        ("9a", Some("must start with a letter or `_`, not `9`")),
        ("0", Some("not `0`")),
        ("-a", Some("not `-`")),
        // Every other character class is refused after the first.
        ("a-b", Some("found `-`")),
        ("a.b", Some("found `.`")),
        ("a b", Some("found ` `")),
        ("a/b", Some("found `/`")),
        ("a:b", Some("found `:`")),
        ("a$b", Some("found `$`")),
        ("a@b", Some("found `@`")),
        // Control characters are quoted escaped, so the message stays on one line.
        (
            "a\tb",
            Some(
                "invalid tool definition `a\\tb`: name may contain only ASCII letters, digits and `_`; found `\\t`",
            ),
        ),
        (
            "a\nb",
            Some("`a\\nb`: name may contain only ASCII letters, digits and `_`; found `\\n`"),
        ),
        ("a\0b", Some("found `\\u{0}`")),
        ("\u{7f}", Some("not `\\u{7f}`")),
        // Non-ASCII letters and digits are not ASCII alphanumerics.
        ("caf\u{e9}", Some("found `\u{e9}`")),
        ("\u{e9}t\u{e9}", Some("not `\u{e9}`")),
        ("tool_\u{540d}", Some("found `\u{540d}`")),
        ("wide_\u{ff21}", Some("found `\u{ff21}`")),
        ("arabic_\u{0663}", Some("found `\u{0663}`")),
        ("emoji_\u{1f527}", Some("found `\u{1f527}`")),
    ];
    for (name, expect) in cases {
        check(&format!("name {name:?}"), &named(name), *expect);
    }
}

#[test]
fn name_length_counts_characters_not_bytes() {
    // 64 two-byte characters are 128 bytes; the name still fails on its characters,
    // not on a byte count, and the reason names the first bad one.
    let def = named(&"\u{e9}".repeat(MAX_TOOL_NAME_LEN));
    check("64 non-ASCII chars", &def, Some("not `\u{e9}`"));
    let def = named(&format!("a{}", "\u{e9}".repeat(MAX_TOOL_NAME_LEN)));
    check("65 non-ASCII chars", &def, Some("65 characters"));
}

#[test]
fn description_rules() {
    let cases: &[(&str, Option<&str>)] = &[
        ("", Some("description must not be empty")),
        (" ", Some("description must not be empty")),
        ("\n\t \r\n", Some("description must not be empty")),
        ("x", None),
        ("  padded  ", None),
    ];
    for (description, expect) in cases {
        let mut def = base();
        (*description).clone_into(&mut def.description);
        check(&format!("description {description:?}"), &def, *expect);
    }
}

#[test]
fn schema_root_rules() {
    let cases: Vec<(Value, Option<&str>)> = vec![
        (json!({"type": "object"}), None),
        (
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
            None,
        ),
        (json!([]), Some("input_schema must be a JSON object")),
        (json!([{"type": "object"}]), Some("must be a JSON object")),
        (json!("object"), Some("must be a JSON object")),
        (json!(null), Some("must be a JSON object")),
        (json!(true), Some("must be a JSON object")),
        (json!({}), Some("found no type")),
        (json!({"properties": {}}), Some("found no type")),
        (json!({"type": "array"}), Some("found \"array\"")),
        (json!({"type": "string"}), Some("found \"string\"")),
        (json!({"type": "Object"}), Some("found \"Object\"")),
        (json!({"type": ["object"]}), Some("found [\"object\"]")),
        (
            json!({"type": ["object", "null"]}),
            Some("[\"object\",\"null\"]"),
        ),
        (json!({"type": null}), Some("found null")),
    ];
    for (schema, expect) in cases {
        check(
            &format!("schema {schema}"),
            &with_schema(schema.clone()),
            expect,
        );
    }
}

#[test]
fn alias_rules() {
    let over = "b".repeat(MAX_TOOL_NAME_LEN + 1);
    let cases: Vec<(Vec<&str>, Option<&str>)> = vec![
        (vec![], None),
        (vec!["other"], None),
        (vec!["_x", "y2"], None),
        (vec!["tool"], Some("alias `tool` repeats the tool name")),
        (vec!["ok", "tool"], Some("repeats the tool name")),
        (vec![""], Some("alias ``: name must not be empty")),
        (
            vec!["bad-alias"],
            Some("alias `bad-alias`: name may contain only"),
        ),
        (vec!["1x"], Some("alias `1x`: name must start")),
        (vec![over.as_str()], Some("65 characters")),
    ];
    for (aliases, expect) in cases {
        let def = base().with_aliases(aliases.iter().copied());
        check(&format!("aliases {aliases:?}"), &def, expect);
    }
}

#[test]
fn limit_rules() {
    let cases: Vec<(&str, ToolDefinition, Option<&str>)> = vec![
        (
            "preview 0",
            base().with_preview(0, PreviewMode::Head),
            Some("preview_chars must be positive"),
        ),
        (
            "preview 1",
            base().with_preview(1, PreviewMode::HeadTail),
            None,
        ),
        (
            "max 0",
            base().with_max_result_chars(0),
            Some("max_result_chars must be positive"),
        ),
        ("max 1", base().with_max_result_chars(1), None),
        (
            "timeout 0",
            base().with_timeout(Duration::ZERO),
            Some("timeout must be positive"),
        ),
        (
            "timeout 1ns",
            base().with_timeout(Duration::from_nanos(1)),
            None,
        ),
    ];
    for (label, def, expect) in &cases {
        check(label, def, *expect);
    }
}

#[test]
fn try_new_validates() {
    assert!(ToolDefinition::try_new("ok", "Fine.", json!({"type": "object"})).is_ok());
    let err = ToolDefinition::try_new("not ok", "Fine.", json!({"type": "object"})).unwrap_err();
    assert_eq!(err.code(), codes::INVALID_DEFINITION);
    assert_eq!(
        err.to_string(),
        "invalid tool definition `not ok`: name may contain only ASCII letters, digits and `_`; found ` `"
    );
}

#[test]
fn defaults_match_the_seed_table() {
    let def = base();
    // The documented ToolDefinition defaults.
    assert!(def.capabilities.is_empty());
    assert_eq!(def.group, "core");
    assert_eq!(DEFAULT_GROUP, "core");
    assert!(def.aliases.is_empty());
    assert!(!def.deferred);
    assert_eq!(def.max_result_chars, 50_000);
    assert_eq!(DEFAULT_MAX_RESULT_CHARS, 50_000);
    assert_eq!(def.preview_chars, 8_000);
    assert_eq!(DEFAULT_PREVIEW_CHARS, 8_000);
    assert_eq!(def.preview_mode, PreviewMode::Head);
    assert_eq!(def.context_retention, ContextRetention::Keep);
    assert!(def.metadata.is_empty());
    // The background and auto-allow flags: off by default.
    assert_eq!(def.timeout, None);
    assert!(!def.system_use);
    assert!(!def.auto_allow);
    // Deserializing only the required fields yields the same defaults.
    let parsed: ToolDefinition = serde_json::from_value(json!({
        "name": "tool",
        "description": "Does one thing.",
        "input_schema": {"type": "object"},
    }))
    .unwrap();
    assert_eq!(parsed, def);
    insta::assert_json_snapshot!("default_definition", def);
}

#[test]
fn serde_round_trip() {
    let timeouts = [
        None,
        Some(Duration::from_millis(1)),
        Some(Duration::from_millis(100)),
        Some(Duration::from_millis(2_500)),
        Some(Duration::from_secs(3_600)),
    ];
    for timeout in timeouts {
        let mut def = ToolDefinition::new(
            "deploy_service",
            "Deploy one service.",
            json!({"type": "object", "properties": {"service": {"type": "string"}}}),
        )
        .with_capabilities([ToolCapability::Execute, ToolCapability::Network])
        .with_group("ops")
        .with_aliases(["deploy"])
        .with_deferred(true)
        .with_max_result_chars(1_000)
        .with_preview(200, PreviewMode::HeadTail)
        .with_context_retention(ContextRetention::Observation)
        .with_system_use(true)
        .with_metadata("tags", json!(["ops", "release"]));
        def.timeout = timeout;
        def.validate().unwrap();
        let text = serde_json::to_string(&def).unwrap();
        let back: ToolDefinition = serde_json::from_str(&text).unwrap();
        assert_eq!(back, def, "round trip of {text}");
        assert_eq!(back.tags(), ["ops", "release"]);
    }
}

#[test]
fn serde_wire_names() {
    let def = base()
        .with_capabilities(ToolCapability::ALL)
        .with_preview(10, PreviewMode::HeadTail)
        .with_context_retention(ContextRetention::Observation)
        .with_timeout(Duration::from_millis(1_500));
    let value = serde_json::to_value(&def).unwrap();
    assert_eq!(
        value["capabilities"],
        json!(["read", "write", "execute", "network", "mcp", "agent"])
    );
    assert_eq!(value["preview_mode"], "head_tail");
    assert_eq!(value["context_retention"], "observation");
    assert_eq!(value["timeout"], 1.5);
    for cap in ToolCapability::ALL {
        assert_eq!(serde_json::to_value(cap).unwrap(), cap.as_str());
    }
}

#[test]
fn serde_rejects_bad_timeouts() {
    let cases = [
        (
            json!(0),
            "timeout must be a positive finite number of seconds, got 0",
        ),
        (
            json!(-1.5),
            "timeout must be a positive finite number of seconds, got -1.5",
        ),
        (json!("10"), "invalid type: string \"10\", expected f64"),
        // Too large for a `Duration`: an error, never a panic.
        (
            json!(1e20),
            "timeout of 100000000000000000000 seconds is too large",
        ),
    ];
    for (bad, reason) in cases {
        let raw = json!({
            "name": "tool", "description": "x", "input_schema": {"type": "object"}, "timeout": bad,
        });
        let err = serde_json::from_value::<ToolDefinition>(raw).unwrap_err();
        assert!(err.to_string().contains(reason), "{bad}: {err}");
    }
    let raw = json!({
        "name": "tool", "description": "x", "input_schema": {"type": "object"}, "timeout": null,
    });
    assert_eq!(
        serde_json::from_value::<ToolDefinition>(raw)
            .unwrap()
            .timeout,
        None
    );
}

#[test]
fn auto_allow_is_set_only_in_rust() {
    let def = base().with_auto_allow(true);
    assert!(def.auto_allow);
    // Never written out...
    let value = serde_json::to_value(&def).unwrap();
    assert!(value.get("auto_allow").is_none(), "{value}");
    // ...and never read in: a definition arriving as JSON cannot claim it.
    let raw = json!({
        "name": "tool", "description": "x", "input_schema": {"type": "object"}, "auto_allow": true,
    });
    assert!(
        !serde_json::from_value::<ToolDefinition>(raw)
            .unwrap()
            .auto_allow
    );
}

#[test]
fn spec_projection() {
    let def = base()
        .with_group("ops")
        .with_aliases(["t"])
        .with_deferred(true);
    let spec = def.to_spec();
    assert_eq!(spec.name, "tool");
    assert_eq!(spec.description, "Does one thing.");
    assert_eq!(spec.input_schema, json!({"type": "object"}));
}

/// `ToolResult`'s model projection (what the model sees of a call's result).
mod result {
    use iris_tools_core::{Approval, ContentBlock, ToolErrorInfo, ToolOutput, ToolResult, codes};
    use serde_json::json;

    fn text(t: &str) -> ContentBlock {
        ContentBlock::text(t)
    }

    fn image() -> ContentBlock {
        ContentBlock::image("image/png", "iVBORw0KGgo=")
    }

    fn failed(code: &str, message: &str) -> ToolResult {
        ToolOutput::error(ToolErrorInfo::new(code, message)).into_result("call_1", "read_file")
    }

    fn blocks(content: Vec<ContentBlock>) -> ToolResult {
        ToolOutput::new(content).into_result("c", "t")
    }

    fn text_result(t: &str) -> ToolResult {
        ToolOutput::text(t).into_result("c", "t")
    }

    /// Checks the projection of `result`: its blocks, and the joined text.
    fn check(label: &str, result: &ToolResult, blocks: &[ContentBlock], content: &str) {
        assert_eq!(result.model_blocks(), blocks, "{label}: model_blocks");
        assert_eq!(result.model_content(), content, "{label}: model_content");
        assert_eq!(
            result.output.model_chars(),
            content.chars().count(),
            "{label}: model_chars"
        );
    }

    #[test]
    fn model_projection() {
        let mut with_feedback = blocks(vec![text("body"), image()]);
        with_feedback.output.hook_feedback = vec!["first hint".into(), "second hint".into()];
        let mut with_context = blocks(vec![text("body")]);
        with_context.output.hook_context = vec!["repo uses tabs".into()];
        with_context.output.hook_feedback = vec!["hint".into()];
        let mut rewritten = blocks(vec![text("body")]);
        rewritten.output.hook_feedback = vec!["hint".into()];
        rewritten.output.input_rewrite = Some(Box::new(iris_tools_core::InputRewrite::new(
            ["pin", "scope"],
            json!({"path": "a"}),
            json!({"path": "src/a"}),
        )));

        let mut error_with_content = failed(codes::TOOL_FAILED, "exit 2");
        error_with_content.output.content = vec![text("stderr: boom")];
        error_with_content.output.hook_feedback = vec!["try --force".into()];

        // A failure without a structured error can no longer be built in Rust (the
        // outcome carries its error); it still arrives on the wire as a bare
        // `is_error: true`, which reads as a generic TOOL_FAILED.
        let error_without_info: ToolResult = serde_json::from_value(json!({
            "tool_use_id": "c", "tool_name": "t", "is_error": true,
        }))
        .unwrap();

        // The old "error record without `is_error`" case (host data, not a failure) is
        // no longer expressible: `Outcome` makes an error record and a success
        // mutually exclusive.

        let cases: Vec<(&str, ToolResult, Vec<ContentBlock>, &str)> = vec![
            ("empty text", text_result(""), vec![], ""),
            (
                "one text",
                text_result("hello"),
                vec![text("hello")],
                "hello",
            ),
            (
                "texts joined by newline",
                blocks(vec![text("a"), text("b")]),
                vec![text("a"), text("b")],
                "a\nb",
            ),
            (
                "images kept in order, not in the text",
                blocks(vec![text("a"), image(), text("b")]),
                vec![text("a"), image(), text("b")],
                "a\nb",
            ),
            (
                "feedback last, after images",
                with_feedback,
                vec![
                    text("body"),
                    image(),
                    text("first hint"),
                    text("second hint"),
                ],
                "body\nfirst hint\nsecond hint",
            ),
            (
                "hook context after the feedback",
                with_context,
                vec![text("body"), text("hint"), text("repo uses tabs")],
                "body\nhint\nrepo uses tabs",
            ),
            (
                "a hook's input rewrite noted after the body, before the feedback",
                rewritten,
                vec![
                    text("body"),
                    text(r#"[hooks `pin`, `scope` rewrote this call's input to {"path":"src/a"}]"#),
                    text("hint"),
                ],
                "body\n[hooks `pin`, `scope` rewrote this call's input to {\"path\":\"src/a\"}]\nhint",
            ),
            (
                "error text format",
                failed(codes::INVALID_INPUT, "`file_path` is required"),
                vec![text("Error[INVALID_INPUT]: `file_path` is required")],
                "Error[INVALID_INPUT]: `file_path` is required",
            ),
            (
                "error line first, then content, then feedback",
                error_with_content,
                vec![
                    text("Error[TOOL_FAILED]: exit 2"),
                    text("stderr: boom"),
                    text("try --force"),
                ],
                "Error[TOOL_FAILED]: exit 2\nstderr: boom\ntry --force",
            ),
            (
                "error flag without info",
                error_without_info,
                vec![text("Error[TOOL_FAILED]: tool failed")],
                "Error[TOOL_FAILED]: tool failed",
            ),
            (
                "awaiting approval reads as APPROVAL_REQUIRED",
                ToolOutput::awaiting_approval(Approval::new("`rm` needs approval", json!({})))
                    .into_result("c", "t"),
                vec![text("Error[APPROVAL_REQUIRED]: `rm` needs approval")],
                "Error[APPROVAL_REQUIRED]: `rm` needs approval",
            ),
        ];
        for (label, result, blocks, content) in &cases {
            check(label, result, blocks, content);
        }
    }

    #[test]
    fn to_msg_holds_one_tool_result_block() {
        let mut result = failed(codes::PERMISSION_DENIED, "writes need approval");
        result.output.content = vec![image()];
        result.output.hook_feedback = vec!["ask the user".into()];
        result
            .output
            .data
            .insert("not".into(), json!("model content"));
        let msg = result.to_msg();
        assert_eq!(msg.role, "tool");
        assert_eq!(msg.content.len(), 1);
        assert_eq!(msg.content[0].content, result.model_blocks());
        insta::assert_json_snapshot!("to_msg_error_with_image_and_feedback", msg);
    }

    #[test]
    fn into_result_sets_identity_and_error_code() {
        let result =
            ToolOutput::err(codes::TOOL_TIMEOUT, "too slow").into_result("call_9", "exec_command");
        assert_eq!(result.tool_use_id, "call_9");
        assert_eq!(result.tool_name, "exec_command");
        assert_eq!(result.error_code(), Some(codes::TOOL_TIMEOUT));
        assert!(!result.approved);
        assert_eq!(ToolOutput::text("x").error_code(), None);
    }

    #[test]
    fn serde_round_trip() {
        let mut result = failed(codes::TOOL_FAILED, "boom");
        result.output.content = vec![text("a"), image()];
        result.output.hook_feedback = vec!["fb".into()];
        result.output.stats.insert("lines".into(), json!(3));
        let back: ToolResult =
            serde_json::from_str(&serde_json::to_string(&result).unwrap()).unwrap();
        assert_eq!(back, result);

        let waiting =
            ToolOutput::awaiting_approval(Approval::new("needs a human", json!({"path": "a"})))
                .into_result("call_2", "write_file");
        let wire = serde_json::to_value(&waiting).unwrap();
        assert_eq!(wire["is_error"], true);
        assert_eq!(wire["error"]["code"], codes::APPROVAL_REQUIRED);
        assert_eq!(wire["approval"]["arguments"], json!({"path": "a"}));
        let back: ToolResult = serde_json::from_value(wire).unwrap();
        assert_eq!(back, waiting);
    }
}
