//! Input schemas: 2020-12, local `$ref`s only.

use iris_mcp::schema::normalize_input_schema;
use serde_json::{Value, json};

fn check(schema: Value, expect: Result<Value, &str>) {
    let got = normalize_input_schema(&schema);
    match (got, expect) {
        (Ok(g), Ok(w)) => assert_eq!(g, w, "{schema}"),
        (Err(e), Err(f)) => assert!(e.contains(f), "{schema}\n got: {e}\nwant: {f}"),
        (g, w) => panic!("{schema}: got {g:?}, want {w:?}"),
    }
}

#[test]
fn schema_table() {
    let defs = json!({"type": "object", "properties": {"p": {"$ref": "#/$defs/P"}}, "$defs": {"P": {"type": "integer"}}});
    check(defs.clone(), Ok(defs));
    check(
        json!({"properties": {}}),
        Ok(json!({"type": "object", "properties": {}})),
    );
    let draft7 = json!({"type": "object", "properties": {"p": {"$ref": "#/definitions/P"}}, "definitions": {"P": {"type": "string"}}});
    check(draft7.clone(), Ok(draft7));
    let anchor = json!({"type": "object", "properties": {"p": {"$ref": "#node"}}, "$defs": {"N": {"$anchor": "node", "type": "string"}}});
    check(anchor.clone(), Ok(anchor));
    let escaped = json!({"type": "object", "properties": {"p": {"$ref": "#/$defs/a~1b%20c"}}, "$defs": {"a/b c": {"type": "string"}}});
    check(escaped.clone(), Ok(escaped));
    let recursive = json!({"type": "object", "properties": {"tree": {"$ref": "#"}}});
    check(recursive.clone(), Ok(recursive));
    // `$ref` as data inside `const`/`enum`/`default` is not a reference.
    let data = json!({"type": "object", "properties": {"p": {"const": {"$ref": "http://x"}}}});
    check(data.clone(), Ok(data));

    check(
        json!({"type": "object", "properties": {"p": {"$ref": "https://example.com/p.json"}}}),
        Err(
            "remote $ref `https://example.com/p.json` at #/properties/p is not allowed; only local references",
        ),
    );
    check(
        json!({"type": "object", "properties": {"p": {"$ref": "other.json#/P"}}}),
        Err("remote $ref `other.json#/P`"),
    );
    check(
        json!({"type": "object", "properties": {"p": {"$ref": "#/$defs/Missing"}}}),
        Err("$ref `#/$defs/Missing` at #/properties/p does not resolve inside the schema"),
    );
    check(
        json!({"type": "object", "properties": {"p": {"$ref": "#nowhere"}}}),
        Err("names no $anchor"),
    );
    check(
        json!({"type": "array"}),
        Err("inputSchema root must be of type \"object\", found \"array\""),
    );
    check(json!("object"), Err("inputSchema must be a JSON object"));
    check(
        json!({"type": "object", "properties": {"p": {"type": 12}}}),
        Err("is not a valid 2020-12 schema"),
    );
}
