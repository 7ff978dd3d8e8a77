//! Tests for the `adapters` area: provider request shapes for a small realistic catalog
//! (snapshots), the OpenAI strict conversion and the Gemini conversion (data-driven
//! tables), the errors each provider raises, and the strict-mode argument round trip.

// Test code may unwrap: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use iris_providers::adapters::{
    Provider, SchemaIssue, Strict, anthropic_messages, gemini_function_declarations, openai_chat,
    openai_responses, strip_strict_nulls, to_gemini_schema, to_provider, to_strict_schema,
};
use iris_tools_core::{ToolSpec, codes};
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------------------------------
// The catalog: four tools shaped like what `#[tool]`/schemars and MCP servers emit.
// ---------------------------------------------------------------------------------------

fn spec(name: &str, description: &str, input_schema: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        input_schema,
    }
}

/// `read_file` as the built-in file tools define it: a required path, optional offset and limit.
fn read_file() -> ToolSpec {
    spec(
        "read_file",
        "Read a text file from the workspace.\nUse for one known file; use grep_search to find files.",
        json!({
            "type": "object",
            "properties": {
                "file_path": {
                    "type": "string",
                    "description": "Path of the file, relative to the workspace root."
                },
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "default": 0,
                    "description": "First line to return, counted from 0."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 1000,
                    "default": 1000,
                    "description": "Maximum number of lines to return."
                }
            },
            "required": ["file_path"]
        }),
    )
}

/// A nested object, an enum, an array and optional fields, all inline.
fn create_ticket() -> ToolSpec {
    spec(
        "create_ticket",
        "Open a ticket in the issue tracker.\nUse for new work; use update_ticket to change one.",
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "CreateTicket",
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "One-line summary."},
                "priority": {
                    "type": "string",
                    "enum": ["low", "normal", "high"],
                    "default": "normal",
                    "description": "How urgent the ticket is."
                },
                "labels": {
                    "type": "array",
                    "items": {"type": "string"},
                    "maxItems": 10,
                    "description": "Labels to attach, e.g. [\"bug\", \"ui\"]."
                },
                "assignee": {
                    "type": "object",
                    "description": "Who should work on it.",
                    "properties": {
                        "name": {"type": "string", "description": "Display name."},
                        "email": {"type": "string", "format": "email"}
                    },
                    "required": ["name"]
                },
                "estimate_hours": {
                    "type": ["integer", "null"],
                    "format": "uint32",
                    "minimum": 0,
                    "description": "Estimated effort in hours."
                }
            },
            "required": ["title"]
        }),
    )
}

/// `$defs` + `$ref`, as schemars writes them: a described `$ref`, a plain `$ref` in an
/// array, and an `Option<enum>` as `anyOf` with `null`.
fn schedule_meeting() -> ToolSpec {
    spec(
        "schedule_meeting",
        "Book a meeting and send the invitations.\nUse for a new meeting; use move_meeting to reschedule.",
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "ScheduleMeeting",
            "type": "object",
            "properties": {
                "organizer": {"$ref": "#/$defs/Person", "description": "Who sends the invitations."},
                "attendees": {
                    "type": "array",
                    "items": {"$ref": "#/$defs/Person"},
                    "minItems": 1,
                    "description": "People to invite."
                },
                "room": {
                    "anyOf": [{"$ref": "#/$defs/Room"}, {"type": "null"}],
                    "description": "Room to book; none for a video call."
                },
                "starts_at": {"type": "string", "format": "date-time"},
                "duration_minutes": {
                    "type": "integer",
                    "format": "uint16",
                    "minimum": 5,
                    "maximum": 480
                }
            },
            "required": ["organizer", "attendees", "starts_at", "duration_minutes"],
            "$defs": {
                "Person": {
                    "description": "Someone with a calendar.",
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "email": {"type": "string", "format": "email"}
                    },
                    "required": ["email"]
                },
                "Room": {"type": "string", "enum": ["atlas", "borealis", "cirrus"]}
            }
        }),
    )
}

/// A recursive tree type, as schemars writes it for `root: Section`.
fn edit_outline() -> ToolSpec {
    spec(
        "edit_outline",
        "Replace the outline of a document.\nUse to restructure headings; use edit_file for body text.",
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "EditOutline",
            "type": "object",
            "properties": {
                "document_id": {"type": "string", "description": "Document to edit."},
                "root": {"description": "The new outline.", "$ref": "#/$defs/Section"}
            },
            "required": ["document_id", "root"],
            "$defs": {
                "Section": {
                    "description": "One section of an outline.",
                    "type": "object",
                    "properties": {
                        "heading": {"type": "string"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Section"}}
                    },
                    "required": ["heading", "children"]
                }
            }
        }),
    )
}

/// A tool without arguments.
fn list_rooms() -> ToolSpec {
    spec(
        "list_rooms",
        "List bookable meeting rooms.\nUse before schedule_meeting to pick a room.",
        json!({"type": "object", "properties": {}}),
    )
}

fn catalog() -> Vec<ToolSpec> {
    vec![
        read_file(),
        create_ticket(),
        schedule_meeting(),
        edit_outline(),
    ]
}

// ---------------------------------------------------------------------------------------
// Provider shapes: snapshots of the whole catalog.
// ---------------------------------------------------------------------------------------

#[test]
fn openai_chat_plain_passes_schemas_through() {
    let tools = openai_chat(&catalog(), Strict::No).unwrap();
    for (tool, spec) in tools.iter().zip(catalog()) {
        assert_eq!(tool["function"]["parameters"], spec.input_schema);
        assert!(tool["function"].get("strict").is_none(), "{}", spec.name);
    }
    insta::assert_json_snapshot!("openai_chat_plain", tools);
}

#[test]
fn openai_chat_strict_snapshot() {
    let tools = openai_chat(&catalog(), Strict::Yes).unwrap();
    for tool in &tools {
        assert_eq!(tool["function"]["strict"], true);
        assert_strict_invariants(&tool["function"]["parameters"], "");
    }
    insta::assert_json_snapshot!("openai_chat_strict", tools);
}

#[test]
fn openai_responses_strict_snapshot() {
    let tools = openai_responses(&catalog(), Strict::Yes).unwrap();
    for tool in &tools {
        assert_eq!(tool["strict"], true);
        assert!(tool.get("function").is_none(), "Responses tools are flat");
        assert_strict_invariants(&tool["parameters"], "");
    }
    insta::assert_json_snapshot!("openai_responses_strict", tools);
}

#[test]
fn openai_responses_plain_says_strict_false() {
    // The Responses API defaults `strict` to true, so "not strict" must be explicit.
    let tools = openai_responses(&catalog(), Strict::No).unwrap();
    for (tool, spec) in tools.iter().zip(catalog()) {
        assert_eq!(tool["strict"], false);
        assert_eq!(tool["parameters"], spec.input_schema);
    }
}

#[test]
fn anthropic_messages_snapshot() {
    let tools = anthropic_messages(&catalog());
    for (tool, spec) in tools.iter().zip(catalog()) {
        assert_eq!(tool["input_schema"], spec.input_schema);
    }
    insta::assert_json_snapshot!("anthropic_messages", tools);
}

#[test]
fn gemini_function_declarations_snapshot() {
    // The recursive outline cannot be inlined; it has its own error test below.
    let specs = vec![
        read_file(),
        create_ticket(),
        schedule_meeting(),
        list_rooms(),
    ];
    let tool = gemini_function_declarations(&specs).unwrap();
    assert_gemini_invariants(&tool);
    insta::assert_json_snapshot!("gemini_function_declarations", tool);
}

#[test]
fn to_provider_matches_the_single_adapters() {
    let specs = vec![read_file(), create_ticket(), schedule_meeting()];
    for strict in [Strict::Yes, Strict::No] {
        assert_eq!(
            to_provider(&specs, Provider::OpenAiChat, strict).unwrap(),
            openai_chat(&specs, strict).unwrap()
        );
        assert_eq!(
            to_provider(&specs, Provider::OpenAiResponses, strict).unwrap(),
            openai_responses(&specs, strict).unwrap()
        );
        assert_eq!(
            to_provider(&specs, Provider::AnthropicMessages, strict).unwrap(),
            anthropic_messages(&specs)
        );
        assert_eq!(
            to_provider(&specs, Provider::Gemini, strict).unwrap(),
            vec![gemini_function_declarations(&specs).unwrap()]
        );
    }
    assert_eq!(
        to_provider(&[], Provider::Gemini, Strict::No).unwrap(),
        Vec::<Value>::new()
    );
}

/// Structured Outputs' rules, checked on every object of a converted schema.
fn assert_strict_invariants(schema: &Value, pointer: &str) {
    let Value::Object(map) = schema else {
        panic!("{pointer}: not a schema object: {schema}");
    };
    assert!(!map.contains_key("default"), "{pointer}: default left in");
    if let Some(Value::Object(props)) = map.get("properties") {
        assert_eq!(map["additionalProperties"], false, "{pointer}");
        let required: Vec<&str> = map["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let names: Vec<&str> = props.keys().map(String::as_str).collect();
        assert_eq!(required, names, "{pointer}: every property is required");
        for (name, sub) in props {
            assert_strict_invariants(sub, &format!("{pointer}/properties/{name}"));
        }
    }
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = map.get(key) {
            for (name, sub) in defs {
                assert_strict_invariants(sub, &format!("{pointer}/{key}/{name}"));
            }
        }
    }
    if let Some(items) = map.get("items") {
        assert_strict_invariants(items, &format!("{pointer}/items"));
    }
    if let Some(Value::Array(branches)) = map.get("anyOf") {
        for (i, sub) in branches.iter().enumerate() {
            assert_strict_invariants(sub, &format!("{pointer}/anyOf/{i}"));
        }
    }
}

/// Gemini's `Schema` has no references, definitions or `additionalProperties`, and its
/// types are the upper-case `Type` enum.
fn assert_gemini_invariants(value: &Value) {
    match value {
        Value::Object(map) => {
            for banned in [
                "$ref",
                "$defs",
                "$schema",
                "additionalProperties",
                "const",
                "oneOf",
            ] {
                assert!(!map.contains_key(banned), "`{banned}` left in {value}");
            }
            if let Some(t) = map.get("type").and_then(Value::as_str) {
                assert_eq!(t, t.to_uppercase(), "type `{t}` is not a Gemini Type");
            }
            for (key, sub) in map {
                // `properties` maps names to schemas; the names themselves are free.
                if key != "default" && key != "example" {
                    assert_gemini_invariants(sub);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(assert_gemini_invariants),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------
// OpenAI strict conversion: input schema -> expected schema or error pointer.
// ---------------------------------------------------------------------------------------

enum Expect {
    Schema(Value),
    Error(&'static str, SchemaIssue),
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

fn strict_object(properties: Value) -> Value {
    let names: Vec<String> = properties.as_object().unwrap().keys().cloned().collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": names,
        "additionalProperties": false
    })
}

fn check_strict(case: &str, input: Value, expect: Expect) {
    let got = to_strict_schema(&input);
    match (got, expect) {
        (Ok(schema), Expect::Schema(want)) => {
            assert_eq!(schema, want, "case `{case}`");
            assert_strict_invariants(&schema, "");
        }
        (Err(err), Expect::Error(pointer, issue)) => {
            assert_eq!(
                (err.pointer.as_str(), &err.issue),
                (pointer, &issue),
                "case `{case}`"
            );
            assert!(
                err.to_string().contains(&format!("`#{pointer}`")),
                "case `{case}`: message `{err}` names the place"
            );
        }
        (got, _) => panic!("case `{case}`: unexpected {got:?}"),
    }
}

#[test]
fn strict_conversion_table() {
    use Expect::{Error, Schema};
    let cases: Vec<(&str, Value, Expect)> = vec![
        (
            "required stays, optional plain type gains null",
            object(
                json!({"a": {"type": "string"}, "b": {"type": "integer"}}),
                &["a"],
            ),
            Schema(strict_object(
                json!({"a": {"type": "string"}, "b": {"type": ["integer", "null"]}}),
            )),
        ),
        (
            "optional type list gains null",
            object(json!({"v": {"type": ["string", "integer"]}}), &[]),
            Schema(strict_object(
                json!({"v": {"type": ["string", "integer", "null"]}}),
            )),
        ),
        (
            "already nullable optional is unchanged",
            object(json!({"v": {"type": ["string", "null"]}}), &[]),
            Schema(strict_object(json!({"v": {"type": ["string", "null"]}}))),
        ),
        (
            "optional enum is wrapped, description on the wrapper",
            object(
                json!({"unit": {"type": "string", "enum": ["C", "F"], "description": "Scale."}}),
                &[],
            ),
            Schema(strict_object(json!({"unit": {
                "description": "Scale.",
                "anyOf": [{"type": "string", "enum": ["C", "F"]}, {"type": "null"}]
            }}))),
        ),
        (
            "optional const is wrapped",
            object(json!({"kind": {"const": "circle"}}), &[]),
            Schema(strict_object(
                json!({"kind": {"anyOf": [{"const": "circle"}, {"type": "null"}]}}),
            )),
        ),
        (
            "optional $ref is wrapped, definitions are made strict in place",
            json!({
                "type": "object",
                "properties": {"owner": {"$ref": "#/$defs/User"}},
                "$defs": {"User": object(json!({"id": {"type": "string"}, "nick": {"type": "string"}}), &["id"])}
            }),
            Schema(json!({
                "type": "object",
                "properties": {"owner": {"anyOf": [{"$ref": "#/$defs/User"}, {"type": "null"}]}},
                "required": ["owner"],
                "additionalProperties": false,
                "$defs": {"User": strict_object(json!({
                    "id": {"type": "string"},
                    "nick": {"type": ["string", "null"]}
                }))}
            })),
        ),
        (
            "optional anyOf gains a null branch",
            object(
                json!({"v": {"anyOf": [{"type": "string"}, {"type": "number"}]}}),
                &[],
            ),
            Schema(strict_object(json!({"v": {
                "anyOf": [{"type": "string"}, {"type": "number"}, {"type": "null"}]
            }}))),
        ),
        (
            "default moves into the description",
            object(
                json!({
                    "limit": {"type": "integer", "default": 1000, "description": "Max lines."},
                    "mode": {"type": "string", "default": "fast"}
                }),
                &["limit", "mode"],
            ),
            Schema(strict_object(json!({
                "limit": {"type": "integer", "description": "Max lines. Default: 1000."},
                "mode": {"type": "string", "description": "Default: \"fast\"."}
            }))),
        ),
        (
            "$ref with a sibling description is inlined, the sibling wins",
            json!({
                "type": "object",
                "properties": {"at": {"$ref": "#/$defs/Point", "description": "Where."}},
                "required": ["at"],
                "$defs": {"Point": {
                    "description": "A point.",
                    "type": "object",
                    "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                    "required": ["x", "y"]
                }}
            }),
            Schema(json!({
                "type": "object",
                "properties": {"at": {
                    "description": "Where.",
                    "type": "object",
                    "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                    "required": ["x", "y"],
                    "additionalProperties": false
                }},
                "required": ["at"],
                "additionalProperties": false,
                "$defs": {"Point": {
                    "description": "A point.",
                    "type": "object",
                    "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                    "required": ["x", "y"],
                    "additionalProperties": false
                }}
            })),
        ),
        (
            "recursion through the root stays a reference",
            object(
                json!({
                    "label": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#"}}
                }),
                &["label", "children"],
            ),
            Schema(strict_object(json!({
                "label": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#"}}
            }))),
        ),
        (
            "a recursive described $ref stays a bare reference inside its own inlining",
            json!({
                "type": "object",
                "properties": {"head": {"$ref": "#/$defs/Node", "description": "First."}},
                "required": ["head"],
                "$defs": {"Node": object(json!({
                    "value": {"type": "string"},
                    "next": {"$ref": "#/$defs/Node", "description": "Following."}
                }), &["value", "next"])}
            }),
            Schema(json!({
                "type": "object",
                "properties": {"head": {
                    "description": "First.",
                    "type": "object",
                    "properties": {
                        "value": {"type": "string"},
                        "next": {"$ref": "#/$defs/Node"}
                    },
                    "required": ["next", "value"],
                    "additionalProperties": false
                }},
                "required": ["head"],
                "additionalProperties": false,
                "$defs": {"Node": {
                    "type": "object",
                    "properties": {
                        "value": {"type": "string"},
                        "next": {
                            "description": "Following.",
                            "type": "object",
                            "properties": {
                                "value": {"type": "string"},
                                "next": {"$ref": "#/$defs/Node"}
                            },
                            "required": ["next", "value"],
                            "additionalProperties": false
                        }
                    },
                    "required": ["next", "value"],
                    "additionalProperties": false
                }}
            })),
        ),
        (
            "oneOf becomes anyOf",
            object(
                json!({"shape": {"oneOf": [
                    object(json!({"r": {"type": "number"}}), &["r"]),
                    object(json!({"side": {"type": "number"}}), &["side"])
                ]}}),
                &["shape"],
            ),
            Schema(strict_object(json!({"shape": {"anyOf": [
                strict_object(json!({"r": {"type": "number"}})),
                strict_object(json!({"side": {"type": "number"}}))
            ]}}))),
        ),
        (
            "one-element allOf is folded, the node's description wins",
            object(
                json!({"n": {"allOf": [{"type": "integer", "description": "inner"}], "description": "outer"}}),
                &["n"],
            ),
            Schema(strict_object(
                json!({"n": {"type": "integer", "description": "outer"}}),
            )),
        ),
        (
            "documented formats stay, generator formats and annotations go",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": "Input",
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "format": "uint32", "minimum": 0},
                    "mail": {"type": "string", "format": "email", "examples": ["a@b.c"]},
                    "day": {"type": "string", "format": "date", "readOnly": false}
                },
                "required": ["n", "mail", "day"]
            }),
            Schema(json!({
                "title": "Input",
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "minimum": 0},
                    "mail": {"type": "string", "format": "email"},
                    "day": {"type": "string", "format": "date"}
                },
                "required": ["day", "mail", "n"],
                "additionalProperties": false
            })),
        ),
        (
            "nested object without properties is closed",
            object(json!({"opts": {"type": "object"}}), &["opts"]),
            Schema(strict_object(json!({"opts": strict_object(json!({}))}))),
        ),
        (
            "nested properties without type become an object",
            object(
                json!({"p": {"properties": {"q": {"type": "boolean"}}, "required": ["q"]}}),
                &["p"],
            ),
            Schema(strict_object(
                json!({"p": strict_object(json!({"q": {"type": "boolean"}}))}),
            )),
        ),
        // Errors: each names the JSON Pointer of the offending place.
        (
            "root is a string",
            json!({"type": "string"}),
            Error("", SchemaIssue::RootNotObject),
        ),
        (
            "root is anyOf",
            json!({"type": "object", "anyOf": [{"type": "object"}]}),
            Error("", SchemaIssue::RootNotObject),
        ),
        (
            "map value schema",
            object(
                json!({"env": {"type": "object", "additionalProperties": {"type": "string"}}}),
                &[],
            ),
            Error(
                "/properties/env/additionalProperties",
                SchemaIssue::OpenAdditionalProperties,
            ),
        ),
        (
            "open object",
            json!({"type": "object", "properties": {}, "additionalProperties": true}),
            Error(
                "/additionalProperties",
                SchemaIssue::OpenAdditionalProperties,
            ),
        ),
        (
            "patternProperties",
            object(
                json!({"h": {"type": "object", "patternProperties": {"^x-": {"type": "string"}}}}),
                &[],
            ),
            Error(
                "/properties/h/patternProperties",
                SchemaIssue::UnsupportedKeyword("patternProperties".into()),
            ),
        ),
        (
            "not",
            object(json!({"v": {"type": "string", "not": {"const": ""}}}), &[]),
            Error(
                "/properties/v/not",
                SchemaIssue::UnsupportedKeyword("not".into()),
            ),
        ),
        (
            "if/then",
            object(
                json!({"v": {"type": "object", "if": {"required": ["a"]}, "then": {"required": ["b"]}}}),
                &[],
            ),
            Error(
                "/properties/v/if",
                SchemaIssue::UnsupportedKeyword("if".into()),
            ),
        ),
        (
            "allOf with several entries",
            object(
                json!({"v": {"allOf": [{"type": "string"}, {"minLength": 1}]}}),
                &[],
            ),
            Error(
                "/properties/v/allOf",
                SchemaIssue::UnsupportedKeyword("allOf".into()),
            ),
        ),
        (
            "non-local $ref",
            object(json!({"v": {"$ref": "https://example.com/user.json"}}), &[]),
            Error(
                "/properties/v/$ref",
                SchemaIssue::NonLocalRef("https://example.com/user.json".into()),
            ),
        ),
        (
            "dangling $ref",
            object(json!({"v": {"$ref": "#/$defs/Missing"}}), &[]),
            Error(
                "/properties/v/$ref",
                SchemaIssue::UnresolvedRef("#/$defs/Missing".into()),
            ),
        ),
        (
            "recursive $ref with a constraining sibling",
            json!({
                "type": "object",
                "properties": {},
                "$defs": {"L": {"type": "array", "items": {"$ref": "#/$defs/L", "maxItems": 3}}}
            }),
            Error(
                "/$defs/L/items/items/$ref",
                SchemaIssue::RecursiveRef("#/$defs/L".into()),
            ),
        ),
        (
            "free-form true schema",
            object(json!({"payload": true}), &[]),
            Error("/properties/payload", SchemaIssue::BooleanSchema(true)),
        ),
        (
            "untyped schema",
            object(json!({"payload": {"description": "Anything."}}), &[]),
            Error("/properties/payload", SchemaIssue::Untyped),
        ),
        (
            "tuple items",
            object(
                json!({"pair": {"type": "array", "items": [{"type": "string"}, {"type": "number"}]}}),
                &[],
            ),
            Error("/properties/pair/items", SchemaIssue::TupleItems),
        ),
        (
            "prefixItems",
            object(
                json!({"pair": {"type": "array", "prefixItems": [{"type": "string"}]}}),
                &[],
            ),
            Error(
                "/properties/pair/prefixItems",
                SchemaIssue::UnsupportedKeyword("prefixItems".into()),
            ),
        ),
        (
            "array without items",
            object(json!({"list": {"type": "array"}}), &[]),
            Error("/properties/list", SchemaIssue::ArrayWithoutItems),
        ),
        (
            "validation-only constraints move into the description",
            object(
                json!({"name": {"type": "string", "minLength": 1, "maxLength": 8, "description": "A name."},
                       "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}}),
                &["name", "tags"],
            ),
            Schema(json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "A name. Constraints: maxLength 8, minLength 1."},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "Constraints: uniqueItems true."}
                },
                "required": ["name", "tags"],
                "additionalProperties": false
            })),
        ),
        (
            "required name without a property",
            object(json!({"a": {"type": "string"}}), &["a", "b"]),
            Error(
                "/required",
                SchemaIssue::RequiredWithoutProperty("b".into()),
            ),
        ),
        (
            "unknown type name",
            object(json!({"a": {"type": "text"}}), &[]),
            Error(
                "/properties/a",
                SchemaIssue::UnsupportedType("`text`".into()),
            ),
        ),
    ];
    for (case, input, expect) in cases {
        check_strict(case, input, expect);
    }
}

#[test]
fn strict_limits_table() {
    use Expect::Error;
    // Eleven objects nested in each other: the root is level 1, `/properties/n`×10 is 11.
    let mut deep = json!({"type": "object", "properties": {}});
    for _ in 0..10 {
        deep = json!({"type": "object", "properties": {"n": deep}});
    }
    let deepest = "/properties/n".repeat(10);
    let deepest: &'static str = Box::leak(deepest.into_boxed_str());

    let many: Map<String, Value> = (0..5_001)
        .map(|i| (format!("p{i}"), json!({"type": "string"})))
        .collect();
    let enum_of = |n: usize, width: usize| -> Value {
        let values: Vec<String> = (0..n).map(|i| format!("{i:0width$}")).collect();
        json!({"type": "string", "enum": values})
    };
    let long = "x".repeat(60_001);

    let cases: Vec<(&str, Value, Expect)> = vec![
        (
            "11 levels of objects",
            deep,
            Error(deepest, SchemaIssue::TooDeep { limit: 10 }),
        ),
        (
            "5,001 properties",
            json!({"type": "object", "properties": many}),
            Error("", SchemaIssue::TooManyProperties { limit: 5_000 }),
        ),
        (
            "1,001 enum values across two enums",
            object(
                json!({"a": enum_of(600, 4), "b": enum_of(401, 4)}),
                &["a", "b"],
            ),
            Error(
                "/properties/b",
                SchemaIssue::TooManyEnumValues { limit: 1_000 },
            ),
        ),
        (
            "an enum of 251 values over 15,000 characters",
            object(json!({"a": enum_of(251, 60)}), &["a"]),
            Error(
                "/properties/a",
                SchemaIssue::LargeEnumTooLong { limit: 15_000 },
            ),
        ),
        (
            "over 120,000 characters of const strings",
            object(
                json!({"a": {"type": "string", "const": long}, "b": {"type": "string", "const": long}}),
                &["a", "b"],
            ),
            Error("/properties/b", SchemaIssue::TooMuchText { limit: 120_000 }),
        ),
    ];
    for (case, input, expect) in cases {
        check_strict(case, input, expect);
    }

    // At the limits themselves everything converts.
    let mut ten = json!({"type": "object", "properties": {}});
    for _ in 0..9 {
        ten = json!({"type": "object", "properties": {"n": ten}});
    }
    assert!(to_strict_schema(&ten).is_ok());
    let five_k: Map<String, Value> = (0..5_000)
        .map(|i| (format!("p{i}"), json!({"type": "string"})))
        .collect();
    assert!(to_strict_schema(&json!({"type": "object", "properties": five_k})).is_ok());
}

// ---------------------------------------------------------------------------------------
// Gemini conversion: input schema -> expected `Schema` or error pointer.
// ---------------------------------------------------------------------------------------

fn check_gemini(case: &str, input: Value, expect: Expect) {
    match (to_gemini_schema(&input), expect) {
        (Ok(schema), Expect::Schema(want)) => {
            assert_eq!(schema, want, "case `{case}`");
            assert_gemini_invariants(&schema);
        }
        (Err(err), Expect::Error(pointer, issue)) => {
            assert_eq!(
                (err.pointer.as_str(), &err.issue),
                (pointer, &issue),
                "case `{case}`"
            );
            assert!(
                err.to_string().contains(&format!("`#{pointer}`")),
                "case `{case}`: message `{err}` names the place"
            );
        }
        (got, _) => panic!("case `{case}`: unexpected {got:?}"),
    }
}

#[test]
fn gemini_conversion_table() {
    use Expect::{Error, Schema};
    let cases: Vec<(&str, Value, Expect)> = vec![
        (
            "types upper-cased, $schema and additionalProperties dropped, title kept",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": "Input",
                "type": "object",
                "properties": {"n": {"type": "integer"}, "ok": {"type": "boolean"}},
                "required": ["n"],
                "additionalProperties": false
            }),
            Schema(json!({
                "title": "Input",
                "type": "OBJECT",
                "properties": {"n": {"type": "INTEGER"}, "ok": {"type": "BOOLEAN"}},
                "required": ["n"]
            })),
        ),
        (
            "null in a type list becomes nullable",
            object(json!({"v": {"type": ["number", "null"]}}), &[]),
            Schema(
                json!({"type": "OBJECT", "properties": {"v": {"type": "NUMBER", "nullable": true}}}),
            ),
        ),
        (
            "anyOf [$ref, null] is merged, the node's description wins",
            json!({
                "type": "object",
                "properties": {"room": {
                    "anyOf": [{"$ref": "#/$defs/Room"}, {"type": "null"}],
                    "description": "Room to book."
                }},
                "$defs": {"Room": {"type": "string", "enum": ["a", "b"], "description": "A room."}}
            }),
            Schema(json!({"type": "OBJECT", "properties": {"room": {
                "type": "STRING",
                "enum": ["a", "b"],
                "description": "Room to book.",
                "nullable": true
            }}})),
        ),
        (
            "$ref is inlined with its siblings, definitions dropped",
            json!({
                "type": "object",
                "properties": {"at": {"$ref": "#/$defs/Point", "description": "Where."}},
                "required": ["at"],
                "$defs": {"Point": object(json!({"x": {"type": "number"}}), &["x"])}
            }),
            Schema(json!({
                "type": "OBJECT",
                "properties": {"at": {
                    "description": "Where.",
                    "type": "OBJECT",
                    "properties": {"x": {"type": "NUMBER"}},
                    "required": ["x"]
                }},
                "required": ["at"]
            })),
        ),
        (
            "null in enum becomes nullable, const becomes enum",
            object(
                json!({
                    "unit": {"type": ["string", "null"], "enum": ["C", "F", null]},
                    "kind": {"type": "string", "const": "circle"}
                }),
                &[],
            ),
            Schema(json!({"type": "OBJECT", "properties": {
                "unit": {"type": "STRING", "enum": ["C", "F"], "nullable": true},
                "kind": {"type": "STRING", "enum": ["circle"]}
            }})),
        ),
        (
            "oneOf becomes anyOf",
            object(
                json!({"id": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}),
                &["id"],
            ),
            Schema(json!({
                "type": "OBJECT",
                "properties": {"id": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]}},
                "required": ["id"]
            })),
        ),
        (
            "documented formats stay, others go",
            object(
                json!({
                    "a": {"type": "integer", "format": "uint32"},
                    "b": {"type": "integer", "format": "int64"},
                    "c": {"type": "string", "format": "date-time"},
                    "d": {"type": "string", "format": "email"},
                    "e": {"type": "number", "format": "double"}
                }),
                &[],
            ),
            Schema(json!({"type": "OBJECT", "properties": {
                "a": {"type": "INTEGER"},
                "b": {"type": "INTEGER", "format": "int64"},
                "c": {"type": "STRING", "format": "date-time"},
                "d": {"type": "STRING"},
                "e": {"type": "NUMBER", "format": "double"}
            }})),
        ),
        (
            "constraints without a Schema field are dropped, the others kept",
            object(
                json!({
                    "n": {"type": "integer", "minimum": 1, "exclusiveMaximum": 10, "multipleOf": 2},
                    "s": {"type": "string", "minLength": 1, "maxLength": 8, "pattern": "^[a-z]+$"},
                    "l": {"type": "array", "items": {"type": "string"}, "uniqueItems": true, "maxItems": 3}
                }),
                &[],
            ),
            Schema(json!({"type": "OBJECT", "properties": {
                "n": {"type": "INTEGER", "minimum": 1},
                "s": {"type": "STRING", "minLength": 1, "maxLength": 8, "pattern": "^[a-z]+$"},
                "l": {"type": "ARRAY", "items": {"type": "STRING"}, "maxItems": 3}
            }})),
        ),
        (
            "extra-properties schema next to declared properties is dropped",
            object(
                json!({"h": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}}),
                &[],
            ),
            Schema(json!({"type": "OBJECT", "properties": {
                "h": {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}}
            }})),
        ),
        (
            "missing types are inferred",
            object(
                json!({"p": {"properties": {"q": {"type": "string"}}}, "e": {"enum": ["x", "y"]}}),
                &[],
            ),
            Schema(json!({"type": "OBJECT", "properties": {
                "p": {"type": "OBJECT", "properties": {"q": {"type": "STRING"}}},
                "e": {"type": "STRING", "enum": ["x", "y"]}
            }})),
        ),
        (
            "root without properties stays a bare OBJECT",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
            Schema(json!({"type": "OBJECT"})),
        ),
        // Errors.
        (
            "root is an array",
            json!({"type": "array", "items": {"type": "string"}}),
            Error("", SchemaIssue::RootNotObject),
        ),
        (
            "recursion through the root",
            object(
                json!({"children": {"type": "array", "items": {"$ref": "#"}}}),
                &[],
            ),
            Error(
                "/properties/children/items/$ref",
                SchemaIssue::RecursiveRef("#".into()),
            ),
        ),
        (
            "recursion through $defs",
            json!({
                "type": "object",
                "properties": {"root": {"$ref": "#/$defs/S"}},
                "$defs": {"S": object(json!({"kids": {"type": "array", "items": {"$ref": "#/$defs/S"}}}), &[])}
            }),
            Error(
                "/properties/root/properties/kids/items/$ref",
                SchemaIssue::RecursiveRef("#/$defs/S".into()),
            ),
        ),
        (
            "non-local $ref",
            object(json!({"u": {"$ref": "user.json#/User"}}), &[]),
            Error(
                "/properties/u/$ref",
                SchemaIssue::NonLocalRef("user.json#/User".into()),
            ),
        ),
        (
            "map",
            object(
                json!({"env": {"type": "object", "additionalProperties": {"type": "string"}}}),
                &[],
            ),
            Error(
                "/properties/env/additionalProperties",
                SchemaIssue::OpenAdditionalProperties,
            ),
        ),
        (
            "nested object without properties",
            object(json!({"opts": {"type": "object"}}), &[]),
            Error("/properties/opts", SchemaIssue::EmptyObject),
        ),
        (
            "integer enum",
            object(
                json!({"level": {"type": "integer", "enum": [1, 2, 3]}}),
                &[],
            ),
            Error("/properties/level/enum", SchemaIssue::NonStringEnum),
        ),
        (
            "several non-null types",
            object(json!({"id": {"type": ["string", "integer"]}}), &[]),
            Error(
                "/properties/id",
                SchemaIssue::UnsupportedType("`string` + `integer`".into()),
            ),
        ),
        (
            "null on its own",
            object(json!({"nothing": {"type": "null"}}), &[]),
            Error(
                "/properties/nothing",
                SchemaIssue::UnsupportedType("`null` on its own".into()),
            ),
        ),
        (
            "not",
            object(json!({"v": {"type": "string", "not": {"const": ""}}}), &[]),
            Error(
                "/properties/v/not",
                SchemaIssue::UnsupportedKeyword("not".into()),
            ),
        ),
        (
            "patternProperties",
            object(
                json!({"h": {"type": "object", "patternProperties": {"^x-": {"type": "string"}}}}),
                &[],
            ),
            Error(
                "/properties/h/patternProperties",
                SchemaIssue::UnsupportedKeyword("patternProperties".into()),
            ),
        ),
        (
            "free-form value",
            object(json!({"payload": true}), &[]),
            Error("/properties/payload", SchemaIssue::BooleanSchema(true)),
        ),
        (
            "untyped schema",
            object(json!({"payload": {}}), &[]),
            Error("/properties/payload", SchemaIssue::Untyped),
        ),
        (
            "array without items",
            object(json!({"list": {"type": "array"}}), &[]),
            Error("/properties/list", SchemaIssue::ArrayWithoutItems),
        ),
        (
            "tuple items",
            object(
                json!({"pair": {"type": "array", "items": [{"type": "string"}]}}),
                &[],
            ),
            Error("/properties/pair/items", SchemaIssue::TupleItems),
        ),
    ];
    for (case, input, expect) in cases {
        check_gemini(case, input, expect);
    }
}

// ---------------------------------------------------------------------------------------
// Errors through the public adapters, for each provider.
// ---------------------------------------------------------------------------------------

#[test]
fn unsupported_schemas_per_provider() {
    // (provider, strict, schema, Some(pointer) for an error or None for success)
    let map = object(
        json!({"env": {"type": "object", "additionalProperties": {"type": "string"}}}),
        &[],
    );
    let pattern = object(
        json!({"h": {"type": "object", "patternProperties": {"^x-": {"type": "string"}}}}),
        &[],
    );
    let not_object = json!({"type": "string"});
    let tree = edit_outline().input_schema;
    let cases: Vec<(Provider, Strict, Value, Option<&str>)> = vec![
        (
            Provider::OpenAiChat,
            Strict::No,
            not_object.clone(),
            Some("#"),
        ),
        (
            Provider::OpenAiResponses,
            Strict::No,
            not_object.clone(),
            Some("#"),
        ),
        (Provider::OpenAiChat, Strict::No, map.clone(), None),
        (
            Provider::OpenAiChat,
            Strict::Yes,
            map.clone(),
            Some("#/properties/env/additionalProperties"),
        ),
        (
            Provider::OpenAiResponses,
            Strict::Yes,
            pattern.clone(),
            Some("#/properties/h/patternProperties"),
        ),
        (Provider::OpenAiResponses, Strict::Yes, tree.clone(), None),
        (
            Provider::Gemini,
            Strict::No,
            tree.clone(),
            Some("#/properties/root/properties/children/items/$ref"),
        ),
        (
            Provider::Gemini,
            Strict::No,
            map.clone(),
            Some("#/properties/env/additionalProperties"),
        ),
        (Provider::Gemini, Strict::No, not_object.clone(), Some("#")),
        // Anthropic takes JSON Schema as is: nothing to refuse.
        (Provider::AnthropicMessages, Strict::Yes, tree, None),
        (Provider::AnthropicMessages, Strict::No, pattern, None),
        (Provider::AnthropicMessages, Strict::No, not_object, None),
    ];
    for (provider, strict, schema, expect) in cases {
        let specs = [
            read_file(),
            spec("odd_tool", "A tool with an odd schema.", schema),
        ];
        let got = to_provider(&specs, provider, strict);
        let label = format!("{provider} {strict:?}");
        match (got, expect) {
            (Ok(tools), None) => assert!(!tools.is_empty(), "{label}"),
            (Err(err), Some(pointer)) => {
                assert_eq!(err.code(), codes::UNSUPPORTED_SCHEMA, "{label}");
                let message = err.to_string();
                let expected_start =
                    format!("tool `odd_tool`: schema not supported by {provider}: ");
                assert!(message.starts_with(&expected_start), "{label}: {message}");
                assert!(
                    message.contains(&format!("at `{pointer}`")),
                    "{label}: {message}"
                );
                assert_eq!(err.to_info().code, codes::UNSUPPORTED_SCHEMA);
            }
            (got, _) => panic!("{label}: unexpected {got:?}"),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Strict-mode arguments back to the original schema.
// ---------------------------------------------------------------------------------------

fn check_strip(case: &str, schema: &Value, from_model: Value, expect: Value) {
    assert_eq!(
        strip_strict_nulls(schema, from_model),
        expect,
        "case `{case}`"
    );
}

#[test]
fn strip_strict_nulls_table() {
    let ticket = create_ticket().input_schema;
    let meeting = schedule_meeting().input_schema;
    let cases: Vec<(&str, &Value, Value, Value)> = vec![
        (
            "optional nulls go, a nullable optional keeps its null",
            &ticket,
            json!({"title": "t", "priority": null, "labels": null, "assignee": null, "estimate_hours": null}),
            json!({"title": "t", "estimate_hours": null}),
        ),
        (
            "nested optional null goes, given values stay",
            &ticket,
            json!({"title": "t", "assignee": {"name": "Ann", "email": null}, "labels": ["ui"]}),
            json!({"title": "t", "assignee": {"name": "Ann"}, "labels": ["ui"]}),
        ),
        (
            "through $ref and array items; `room` admits null, so its null stays",
            &meeting,
            json!({
                "organizer": {"name": null, "email": "o@x.io"},
                "attendees": [{"name": null, "email": "a@x.io"}, {"name": "Bo", "email": "b@x.io"}],
                "room": null,
                "starts_at": "2026-01-05T10:00:00Z",
                "duration_minutes": 30
            }),
            json!({
                "organizer": {"email": "o@x.io"},
                "attendees": [{"email": "a@x.io"}, {"name": "Bo", "email": "b@x.io"}],
                "room": null,
                "starts_at": "2026-01-05T10:00:00Z",
                "duration_minutes": 30
            }),
        ),
        (
            "a required null is not ours to remove",
            &ticket,
            json!({"title": null}),
            json!({"title": null}),
        ),
        (
            "non-object arguments are returned as they are",
            &ticket,
            json!([1, 2]),
            json!([1, 2]),
        ),
    ];
    for (case, schema, from_model, expect) in cases {
        check_strip(case, schema, from_model, expect);
    }
}

/// Builds the arguments a strict model sends when it gives nothing optional: every
/// property present, `null` wherever the strict schema allows it, a placeholder value
/// elsewhere.
fn all_null_arguments(strict: &Value, root: &Value, depth: usize) -> Value {
    assert!(depth < 16, "runaway recursion in the test generator");
    let schema = match strict.get("$ref").and_then(Value::as_str) {
        Some("#") => root,
        Some(r) => root.pointer(&r[1..]).unwrap(),
        None => strict,
    };
    let admits_null = |s: &Value| {
        s.get("type").is_some_and(|t| {
            t == "null" || t.as_array().is_some_and(|a| a.contains(&json!("null")))
        }) || s
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|b| b.contains(&json!({"type": "null"})))
    };
    if let Some(Value::Object(props)) = schema.get("properties") {
        let fields: Map<String, Value> = props
            .iter()
            .map(|(name, sub)| {
                let value = if admits_null(sub) {
                    Value::Null
                } else {
                    all_null_arguments(sub, root, depth + 1)
                };
                (name.clone(), value)
            })
            .collect();
        return Value::Object(fields);
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values[0].clone();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => match schema.get("format").and_then(Value::as_str) {
            Some("email") => json!("someone@example.com"),
            Some("date-time") => json!("2026-01-05T10:00:00Z"),
            _ => json!("text"),
        },
        Some("integer" | "number") => schema.get("minimum").cloned().unwrap_or(json!(0)),
        Some("boolean") => json!(true),
        Some("array") => {
            let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let items = &schema["items"];
            Value::Array(
                (0..min)
                    .map(|_| all_null_arguments(items, root, depth + 1))
                    .collect(),
            )
        }
        other => panic!("test generator does not handle {other:?} in {schema}"),
    }
}

#[test]
fn strict_round_trip_validates_against_the_original_schema() {
    // Without stripping, the nulls strict mode makes the model send break the original
    // schema; after stripping, the same arguments are valid for it.
    for spec in [
        read_file(),
        create_ticket(),
        schedule_meeting(),
        edit_outline(),
    ] {
        let original = &spec.input_schema;
        let strict = to_strict_schema(original).unwrap();
        let from_model = all_null_arguments(&strict, &strict, 0);
        assert!(
            jsonschema::is_valid(&strict, &from_model),
            "{}: generated arguments must satisfy the strict schema: {from_model}",
            spec.name
        );
        let has_optional_nulls = from_model.as_object().unwrap().values().any(Value::is_null);
        if has_optional_nulls {
            assert!(
                !jsonschema::is_valid(original, &from_model),
                "{}: nulls should break the original schema",
                spec.name
            );
        }
        let stripped = strip_strict_nulls(original, from_model);
        assert!(
            jsonschema::is_valid(original, &stripped),
            "{}: stripped arguments must satisfy the original schema: {stripped}",
            spec.name
        );
    }
}
