//! Tests for the tool-design lint.

use iris_providers::lint::{LintRule, lint_definition};
use iris_tools_core::ToolDefinition;
use serde_json::{Value, json};

const GOOD_DESC: &str = "Read one key from the application config file.\n\
                         Use for a single setting; use read_file for whole files.\n\
                         The config file must exist.";

fn schema_with(prop: Value, required: bool) -> Value {
    let required = if required { json!(["x"]) } else { json!([]) };
    json!({"type": "object", "properties": {"x": prop}, "required": required})
}

/// Lints a definition and compares the set of broken rules with `expect`.
fn check(name: &str, description: &str, schema: Value, expect: &[LintRule]) {
    let def = ToolDefinition::new(name, description, schema);
    let mut got: Vec<LintRule> = lint_definition(&def).iter().map(|f| f.rule).collect();
    got.dedup();
    assert_eq!(got, expect, "{name}: {description:?}");
}

#[test]
fn rules_table() {
    let ok_prop = json!({"type": "string", "description": "Dotted key path, e.g. server.port"});
    let long_desc = format!("Read one key.\nUse for settings; {}", "x".repeat(200));
    let cases: Vec<(&str, &str, Value, Vec<LintRule>)> = vec![
        (
            "read_config_key",
            GOOD_DESC,
            schema_with(ok_prop.clone(), true),
            vec![],
        ),
        // Name: a single generic word, or one word.
        (
            "run",
            GOOD_DESC,
            schema_with(ok_prop.clone(), true),
            vec![LintRule::NameMeaning],
        ),
        (
            "reader",
            GOOD_DESC,
            schema_with(ok_prop.clone(), true),
            vec![LintRule::NameMeaning],
        ),
        // Description shape: one line, too short, too long, four lines.
        (
            "read_config_key",
            "Read one key from the application configuration file and return it.",
            schema_with(ok_prop.clone(), true),
            vec![LintRule::DescriptionShape],
        ),
        (
            "read_config_key",
            "Read a key.\nUse for keys.",
            schema_with(ok_prop.clone(), true),
            vec![LintRule::DescriptionShape],
        ),
        (
            "read_config_key",
            &long_desc,
            schema_with(ok_prop.clone(), true),
            vec![LintRule::DescriptionShape],
        ),
        (
            "read_config_key",
            "Read one key from the config.\nUse for one setting.\nFile must exist.\nMore text here.",
            schema_with(ok_prop.clone(), true),
            vec![LintRule::DescriptionShape],
        ),
        // When line without a usage trigger.
        (
            "read_config_key",
            "Read one key from the application config file.\nReturns the value as a string of text.",
            schema_with(ok_prop.clone(), true),
            vec![LintRule::DescriptionWhen],
        ),
        // Noise: bold, filler, schema dump.
        (
            "read_config_key",
            "Read one **key** from the application config file.\nUse for a single setting; use read_file.",
            schema_with(ok_prop.clone(), true),
            vec![LintRule::DescriptionNoise],
        ),
        (
            "read_config_key",
            "This tool reads one key from the application config.\nUse for a single setting; use read_file.",
            schema_with(ok_prop.clone(), true),
            vec![LintRule::DescriptionNoise],
        ),
        (
            "read_config_key",
            "Read one key; returns {\"type\": \"string\"}.\nUse for a single setting; use read_file instead.",
            schema_with(ok_prop.clone(), true),
            vec![LintRule::DescriptionNoise],
        ),
        // English only: CJK in the description or a parameter description; Latin accents are fine.
        (
            "read_config_key",
            "读取配置文件中的一个键并返回它的值给调用方使用，适用于单个设置项的读取场景。\nUse for a single setting; use read_file.",
            schema_with(ok_prop.clone(), true),
            vec![LintRule::EnglishOnly],
        ),
        (
            "read_config_key",
            GOOD_DESC,
            schema_with(
                json!({"type": "string", "description": "配置键的路径"}),
                true,
            ),
            vec![LintRule::EnglishOnly],
        ),
        (
            "read_config_key",
            "Read one key from the café's application config file.\nUse for a single setting; use read_file.",
            schema_with(ok_prop.clone(), true),
            vec![],
        ),
        // Optional without default; optional with default passes.
        (
            "read_config_key",
            GOOD_DESC,
            schema_with(ok_prop.clone(), false),
            vec![LintRule::OptionalDefault],
        ),
        (
            "read_config_key",
            GOOD_DESC,
            schema_with(
                json!({"type": "integer", "description": "Lines to skip, e.g. 10", "default": 0}),
                false,
            ),
            vec![],
        ),
        // Parameter descriptions: missing; complex type too short (array, enum, object); long enough.
        (
            "read_config_key",
            GOOD_DESC,
            schema_with(json!({"type": "string"}), true),
            vec![LintRule::ParamDescription],
        ),
        (
            "read_config_key",
            GOOD_DESC,
            schema_with(
                json!({"type": "array", "items": {"type": "string"}, "description": "Keys."}),
                true,
            ),
            vec![LintRule::ParamDescription],
        ),
        (
            "read_config_key",
            GOOD_DESC,
            schema_with(json!({"enum": ["a", "b"], "description": "Mode."}), true),
            vec![LintRule::ParamDescription],
        ),
        (
            "read_config_key",
            GOOD_DESC,
            schema_with(json!({"type": "object", "description": "Opts."}), true),
            vec![LintRule::ParamDescription],
        ),
        (
            "read_config_key",
            GOOD_DESC,
            schema_with(
                json!({"type": "array", "items": {"type": "string"}, "description": "Keys to read, e.g. [\"a.b\"]"}),
                true,
            ),
            vec![],
        ),
    ];
    for (name, desc, schema, expect) in cases {
        check(name, desc, schema, &expect);
    }
}

#[test]
fn nested_object_properties_are_linted_with_their_pointer() {
    let schema = json!({
        "type": "object",
        "properties": {"opts": {
            "type": "object",
            "description": "Options for the read, e.g. {\"strict\": true}",
            "properties": {"strict": {"type": "boolean"}},
        }},
        "required": ["opts"],
    });
    let def = ToolDefinition::new("read_config_key", GOOD_DESC, schema);
    let findings = lint_definition(&def);
    let pointers: Vec<_> = findings
        .iter()
        .map(|f| (f.rule, f.pointer.clone()))
        .collect();
    assert_eq!(
        pointers,
        vec![
            (
                LintRule::ParamDescription,
                Some("/properties/opts/properties/strict".to_owned())
            ),
            (
                LintRule::OptionalDefault,
                Some("/properties/opts/properties/strict".to_owned())
            ),
        ]
    );
    assert_eq!(
        findings[0].to_string(),
        "read_config_key [param-description] at /properties/opts/properties/strict: `strict` has no \
         description; say how and when to set it, with an example"
    );
}
