//! The runtime builder (an explicit input type) and `schema_for_input` (the Python reference's
//! `schema_from_pydantic_model`): same shapes and rules as `#[tool]`.

use iris_macro_tests::gallery::config;
use iris_tools_core::typed::{Json, TypedTool, schema_for_input};
use iris_tools_core::{Tool, ToolCapability, ToolExecutionContext, codes};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::support::{Expect, check};

/// The same parameters as the gallery's `read_config`, as an explicit input type.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Only the schema is compared.
struct ReadConfigInput {
    /// dotted key path, e.g. `server.port`
    key: String,
    /// value returned when the key is missing
    default: Option<String>,
}

/// As the Python reference's `schema_from_pydantic_model`: an object schema whose properties are the
/// fields with their doc comments, `Option` fields optional, unknown fields refused —
/// and the same shape `#[tool]` gives the same parameters.
#[test]
fn schema_for_input_has_the_shape_the_macro_produces() {
    let schema = schema_for_input::<ReadConfigInput>();
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {
                "key": {"type": "string", "description": "dotted key path, e.g. `server.port`"},
                "default": {
                    "type": ["string", "null"],
                    "description": "value returned when the key is missing"
                }
            },
            "required": ["key"],
            "additionalProperties": false
        })
    );
    assert_eq!(schema, config::read_config::input_schema());
}

/// A lookup input with a host-bound `tenant`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LookupInput {
    /// The user id.
    id: u64,
    /// Which tenant's directory to search; bound by the host.
    tenant: String,
    /// Include disabled users.
    #[serde(default)]
    include_disabled: bool,
}

fn lookup_builder() -> iris_tools_core::typed::TypedToolBuilder {
    TypedTool::builder("lookup_user")
        .description("Look up one user by id.")
        .capabilities([ToolCapability::Read])
        .group("directory")
        .aliases(["find_user"])
        .tags(["users"])
        .version("3")
        .timeout(std::time::Duration::from_secs(5))
        .concurrency_safe(false)
        .metadata("owner", "identity-team")
}

#[tokio::test]
async fn a_built_tool_parses_typed_input_and_hides_presets() {
    let tool = lookup_builder()
        .preset("tenant", "acme")
        .build(|input: LookupInput, ctx: ToolExecutionContext| async move {
            Json(json!({
                "id": input.id,
                "tenant": input.tenant,
                "disabled": input.include_disabled,
                "session": ctx.session_id,
            }))
        })
        .unwrap();

    let definition = tool.definition();
    insta::assert_json_snapshot!(definition);
    assert!(!tool.is_concurrency_safe());
    assert!(tool.unbound_presets().is_empty());

    let ctx = ToolExecutionContext::new("/w").session_id("s-9");
    let cases = [
        (
            json!({"id": 7}),
            Expect::Text(r#"{"disabled":false,"id":7,"session":"s-9","tenant":"acme"}"#),
        ),
        (
            json!({"id": 7, "include_disabled": true}),
            Expect::Contains(r#""disabled":true"#),
        ),
        (json!({"id": "7"}), Expect::Invalid(codes::INVALID_INPUT)),
        (
            json!({"id": 7, "tenant": "evil"}),
            Expect::Invalid(codes::INVALID_INPUT),
        ),
        (json!([7]), Expect::Invalid(codes::INVALID_INPUT)),
    ];
    for (input, expect) in cases {
        check(&tool, input, &ctx, expect).await;
    }

    // Re-binding after build goes through the same checks.
    let rebound = tool.preset("tenant", "globex").unwrap();
    let result = rebound
        .run(iris_tools_core::ToolInput::new(json!({"id": 1})), &ctx)
        .await;
    assert!(result.model_content().contains("globex"));
}

#[test]
fn build_rejects_bad_definitions_and_presets() {
    let body = |_: LookupInput, _: ToolExecutionContext| async { "ok" };
    let cases: Vec<(iris_tools_core::typed::TypedToolBuilder, &str)> = vec![
        (
            TypedTool::builder("lookup-user"),
            "may contain only ASCII letters",
        ),
        (
            lookup_builder().aliases(["lookup_user"]),
            "repeats the tool name",
        ),
        (
            lookup_builder().preset("tenant", 5),
            "preset `tenant` does not fit its schema",
        ),
        (
            lookup_builder().preset("region", "eu"),
            "preset `region` is not a field of the input type",
        ),
    ];
    for (builder, fragment) in cases {
        let error = builder.build(body).unwrap_err();
        assert_eq!(error.code(), codes::INVALID_DEFINITION);
        assert!(error.to_string().contains(fragment), "{error}");
    }

    // An input type whose schema is not an object cannot describe tool arguments.
    let error = TypedTool::builder("count")
        .build(|n: u32, _: ToolExecutionContext| async move { n.to_string() })
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("root must have \"type\": \"object\""),
        "{error}"
    );
}

#[test]
fn builder_defaults_and_deprecation() {
    let body = |_: LookupInput, _: ToolExecutionContext| async {};
    let plain = TypedTool::builder("lookup_user")
        .preset("tenant", "t")
        .build(body)
        .unwrap();
    let definition = plain.definition();
    assert_eq!(
        definition.description, "lookup_user",
        "description falls back to the name"
    );
    assert_eq!(definition.group, "core");
    assert!(definition.metadata.is_empty());
    assert!(plain.is_concurrency_safe());

    let deprecated = TypedTool::builder("lookup_user")
        .description("Look up a user.")
        .deprecated(true)
        .deprecation_message("use `find_user`")
        .preset("tenant", "t")
        .build(body)
        .unwrap();
    let definition = deprecated.definition();
    assert_eq!(
        definition.description,
        "Look up a user.\n\nDeprecated: use `find_user`"
    );
    assert_eq!(definition.metadata["deprecated"], Value::Bool(true));

    let message_only = TypedTool::builder("lookup_user")
        .description("Look up a user.")
        .deprecation_message("ignored without deprecated(true)")
        .preset("tenant", "t")
        .build(body)
        .unwrap();
    assert_eq!(message_only.definition().description, "Look up a user.");
}
