//! `/v1/openapi.json`: the API as an OpenAPI 3.1 document. The paths are written here;
//! every body's schema is derived from its type in [`crate::api`] (schemars, JSON
//! Schema 2020-12, which OpenAPI 3.1 uses as is), under `components/schemas`.

use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

use crate::api::{AnswerRun, CreateRun, ErrorBody, RunAccepted, RunList, RunView};

/// A response whose body is the component `name`.
fn body(description: &str, name: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{name}")}}},
    })
}

/// The error responses a route may give, by status.
fn errors(statuses: &[(&str, &str)]) -> serde_json::Map<String, Value> {
    statuses
        .iter()
        .map(|(status, description)| ((*status).to_owned(), body(description, "ErrorBody")))
        .collect()
}

/// The responses of a route: `ok` plus the errors.
fn responses(ok: (&str, Value), failures: &[(&str, &str)]) -> Value {
    let mut all = errors(failures);
    all.insert(ok.0.to_owned(), ok.1);
    all.insert(
        "401".into(),
        body(
            "no or a wrong bearer token (`SERVE_UNAUTHORIZED`)",
            "ErrorBody",
        ),
    );
    all.insert(
        "429".into(),
        body(
            "the client has too many requests in progress (`SERVE_TOO_MANY_REQUESTS`)",
            "ErrorBody",
        ),
    );
    Value::Object(all)
}

fn run_id_parameter() -> Value {
    json!({"name": "id", "in": "path", "required": true, "schema": {"type": "string"}})
}

/// The document.
pub fn document() -> Value {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| s.definitions_path = "#/components/schemas/".into())
        .into_generator();
    // Each call adds the type's schema to the definitions taken below.
    generator.subschema_for::<CreateRun>();
    generator.subschema_for::<RunAccepted>();
    generator.subschema_for::<AnswerRun>();
    generator.subschema_for::<RunView>();
    generator.subschema_for::<RunList>();
    generator.subschema_for::<ErrorBody>();
    let schemas = generator.take_definitions(true);
    let json_body = |name: &str| json!({"required": true, "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{name}")}}}});
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Iris runs",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Start runs of the served agents, watch their events, answer what they wait for, cancel them. Errors are {\"error\": {\"code\", \"message\"}} with a stable code.",
        },
        "paths": {
            "/v1/runs": {
                "post": {
                    "operationId": "createRun",
                    "summary": "Start a run; it is driven in the background.",
                    "requestBody": json_body("CreateRun"),
                    "responses": responses(("201", body("the run is stored and started", "RunAccepted")), &[
                        ("400", "the body does not parse (`SERVE_REQUEST_INVALID`)"),
                        ("413", "the body is too large (`SERVE_REQUEST_TOO_LARGE`)"),
                        ("422", "an unknown agent (`SERVE_AGENT_UNKNOWN`) or an empty input (`RUN_INPUT_INVALID`)"),
                        ("503", "the run store failed (`RUN_STORE_FAILED`) or the server is stopping (`SERVE_SHUTTING_DOWN`)"),
                    ]),
                },
                "get": {
                    "operationId": "listRuns",
                    "summary": "Runs, newest first, a page at a time.",
                    "parameters": [
                        {"name": "status", "in": "query", "schema": {"type": "string", "enum": ["running", "waiting", "completed", "failed", "cancelled"]}},
                        {"name": "agent", "in": "query", "schema": {"type": "string"}},
                        {"name": "cursor", "in": "query", "schema": {"type": "string"}, "description": "the previous page's next_cursor"},
                        {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}},
                    ],
                    "responses": responses(("200", body("a page of runs", "RunList")), &[
                        ("400", "a bad status, cursor or limit (`SERVE_REQUEST_INVALID`)"),
                        ("503", "the run store failed (`RUN_STORE_FAILED`)"),
                    ]),
                },
            },
            "/v1/runs/{id}": {
                "get": {
                    "operationId": "getRun",
                    "summary": "A run: status, usage, output or error, the interaction it waits for, its conversation.",
                    "parameters": [run_id_parameter()],
                    "responses": responses(("200", body("the run", "RunView")), &[
                        ("404", "no such run (`RUN_NOT_FOUND`)"),
                        ("503", "the run store failed (`RUN_STORE_FAILED`)"),
                    ]),
                },
            },
            "/v1/runs/{id}/answer": {
                "post": {
                    "operationId": "answerRun",
                    "summary": "Answer the interaction a waiting run waits for; the run goes on in the background.",
                    "parameters": [run_id_parameter()],
                    "requestBody": json_body("AnswerRun"),
                    "responses": responses(("202", body("the answer is taken and the run goes on", "RunAccepted")), &[
                        ("400", "the body does not parse (`SERVE_REQUEST_INVALID`)"),
                        ("404", "no such run (`RUN_NOT_FOUND`)"),
                        ("409", "the run does not wait for this interaction (`RUN_INTERACTION_STALE`), does not wait (`RUN_NOT_WAITING`), is driven elsewhere (`RUN_BUSY`) or is a subagent's child (`RUN_IS_SUBAGENT`)"),
                        ("413", "the body is too large (`SERVE_REQUEST_TOO_LARGE`)"),
                        ("422", "the wrong kind of answer, or not one of a question's options (`RUN_ANSWER_INVALID`); a run of an agent this server does not serve (`SERVE_AGENT_UNKNOWN`)"),
                        ("503", "the run store failed (`RUN_STORE_FAILED`) or the server is stopping (`SERVE_SHUTTING_DOWN`)"),
                    ]),
                },
            },
            "/v1/runs/{id}/cancel": {
                "post": {
                    "operationId": "cancelRun",
                    "summary": "Cancel a run this host drives, or a waiting run.",
                    "parameters": [run_id_parameter()],
                    "responses": responses(("200", body("the run, cancelled", "RunView")), &[
                        ("404", "no such run (`RUN_NOT_FOUND`)"),
                        ("409", "the run already ended (`SERVE_RUN_FINISHED`) or another host drives it (`SERVE_RUN_ELSEWHERE`)"),
                        ("503", "the run store failed (`RUN_STORE_FAILED`)"),
                    ]),
                },
            },
            "/v1/runs/{id}/events": {
                "get": {
                    "operationId": "runEvents",
                    "summary": "The run's events as Server-Sent Events: `id` is the event's number, `data` its JSON (`{\"type\": …}`), from the start or after `Last-Event-ID`; the stream ends after the run's final `finished` event.",
                    "parameters": [
                        run_id_parameter(),
                        {"name": "Last-Event-ID", "in": "header", "schema": {"type": "integer", "minimum": 0}},
                    ],
                    "responses": responses(("200", json!({
                        "description": "the event stream",
                        "content": {"text/event-stream": {"schema": {"type": "string"}}},
                    })), &[
                        ("400", "a `Last-Event-ID` that is not a number (`SERVE_REQUEST_INVALID`)"),
                        ("404", "no such run (`RUN_NOT_FOUND`)"),
                        ("503", "the run store failed (`RUN_STORE_FAILED`)"),
                    ]),
                },
            },
            "/v1/runs/{id}/artifacts/{call_id}": {
                "get": {
                    "operationId": "runArtifact",
                    "summary": "The file call `call_id`'s result recorded as its artifact in the run's event log (a subagent's child run: under the child's id), as a download: read inside the agent's workspace, UTF-8 text masked like the events.",
                    "parameters": [
                        run_id_parameter(),
                        {"name": "call_id", "in": "path", "required": true, "schema": {"type": "string"}},
                    ],
                    "responses": responses(("200", json!({
                        "description": "the file (`Content-Disposition: attachment`, `X-Content-Type-Options: nosniff`, `Cache-Control: no-store`)",
                        "content": {
                            "text/plain; charset=utf-8": {"schema": {"type": "string"}},
                            "application/json": {},
                            "application/octet-stream": {"schema": {"type": "string", "contentMediaType": "application/octet-stream"}},
                        },
                    })), &[
                        ("403", "the recorded file is not served: outside the workspace, through a symlink, not a regular file or over the size limit (`SERVE_ARTIFACT_REFUSED`)"),
                        ("404", "no such run (`RUN_NOT_FOUND`); no such call, no artifact, or its file is gone (`SERVE_ARTIFACT_NOT_FOUND`)"),
                        ("500", "the workspace or the file cannot be read (`SERVE_ARTIFACT_UNREADABLE`)"),
                        ("503", "the run store failed (`RUN_STORE_FAILED`)"),
                    ]),
                },
            },
            "/v1/events": {
                "get": {
                    "operationId": "runsFeed",
                    "summary": "The runs feed as Server-Sent Events: an event `run` each time a run is created or changes, on any host; its `data` is the run's RunListItem (as in `GET /v1/runs`). No ids and no replay: read `GET /v1/runs` on (re)connecting.",
                    "responses": responses(("200", json!({
                        "description": "the feed; each event's data is the JSON of a RunListItem",
                        "content": {"text/event-stream": {"schema": {"type": "string"}}},
                    })), &[]),
                },
            },
            "/v1/openapi.json": {
                "get": {
                    "operationId": "openapi",
                    "summary": "This document.",
                    "responses": {"200": {"description": "the OpenAPI document", "content": {"application/json": {}}}},
                },
            },
        },
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `$ref` in the document points at a schema it holds.
    #[test]
    fn every_reference_resolves() {
        fn refs(value: &Value, out: &mut Vec<String>) {
            match value {
                Value::Object(map) => {
                    if let Some(Value::String(r)) = map.get("$ref") {
                        out.push(r.clone());
                    }
                    map.values().for_each(|v| refs(v, out));
                }
                Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
                _ => {}
            }
        }
        let doc = document();
        let mut all = Vec::new();
        refs(&doc, &mut all);
        assert!(all.len() > 10, "{all:?}");
        for r in all {
            let name = r
                .strip_prefix("#/components/schemas/")
                .unwrap_or_else(|| panic!("{r}"));
            assert!(
                doc["components"]["schemas"].get(name).is_some(),
                "{r} does not resolve"
            );
        }
        let answer = &doc["components"]["schemas"]["AnswerRun"];
        assert!(answer.to_string().contains("approve"), "{answer}");
    }
}
