//! The terminal prompt for an MCP server's request for user input (elicitation),
//! shared by `iris call` and `iris run`.
//!
//! Form mode asks one line per field of the requested schema (its title or name,
//! its type, whether it is required, an enum's choices and a default); URL mode
//! shows the URL and asks whether the user went there. Declining (`n` at the first
//! question), the end of input and a signal are answered as such; without a
//! terminal the request is declined with [`NO_TERMINAL`].

use iris_mcp::{ElicitationAnswer, ElicitationKind, ElicitationRequest};
use iris_tools_core::CancellationSignal;
use serde_json::{Map, Value, json};

use crate::output::{err_line, prompt};
use crate::read_blocking;

/// Why an elicitation is declined when no terminal can answer it.
pub(crate) const NO_TERMINAL: &str =
    "no terminal can answer here (stdin is not a terminal, or it carries the input)";

/// One line from stdin off the async thread; `None` at end of input or on a signal.
async fn read_line(cancel: &CancellationSignal) -> Option<String> {
    let read = read_blocking(cancel, || {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|n| (n, line))
    })
    .await;
    match read {
        Ok(Ok((n, line))) if n > 0 => Some(line.trim_end_matches(['\r', '\n']).to_owned()),
        _ => None,
    }
}

/// The answer when the user stopped answering: cancelled by a signal, or input
/// ended.
fn stopped(cancel: &CancellationSignal) -> ElicitationAnswer {
    let reason = if cancel.requested() {
        "the run was cancelled while the terminal asked"
    } else {
        "the input ended before the user answered"
    };
    ElicitationAnswer::Cancel {
        reason: reason.into(),
    }
}

fn yes(line: &str) -> bool {
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// Asks the terminal.
pub(crate) async fn ask(
    request: &ElicitationRequest,
    cancel: &CancellationSignal,
) -> ElicitationAnswer {
    let during = if request.tool.is_empty() {
        String::new()
    } else {
        format!(" during {} ({})", request.tool, request.call_id)
    };
    err_line(&format!(
        "iris: MCP server `{}` asks for input{during}: {}",
        request.server, request.message
    ));
    match &request.kind {
        ElicitationKind::Url { url, .. } => {
            err_line(&format!("  open: {url}"));
            prompt("Did you open it and finish there? [y/N] ");
            match read_line(cancel).await {
                Some(line) if yes(&line) => ElicitationAnswer::Accept { content: None },
                Some(_) => ElicitationAnswer::decline("the user declined at the terminal"),
                None => stopped(cancel),
            }
        }
        ElicitationKind::Form { requested_schema } => form(requested_schema, cancel).await,
        _ => ElicitationAnswer::decline("iris cannot show this kind of request"),
    }
}

async fn form(schema: &Value, cancel: &CancellationSignal) -> ElicitationAnswer {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    prompt("Answer it? [Y/n] ");
    match read_line(cancel).await {
        Some(line) if matches!(line.trim().to_ascii_lowercase().as_str(), "n" | "no") => {
            return ElicitationAnswer::decline("the user declined at the terminal");
        }
        Some(_) => {}
        None => return stopped(cancel),
    }
    let mut content = Map::new();
    for (name, field) in properties {
        let is_required = required.contains(&name.as_str());
        loop {
            prompt(&field_prompt(name, field, is_required));
            let Some(line) = read_line(cancel).await else {
                return stopped(cancel);
            };
            let text = line.trim();
            if text.is_empty() {
                if let Some(default) = field.get("default") {
                    content.insert(name.clone(), default.clone());
                    break;
                }
                if !is_required {
                    break;
                }
                err_line("iris: this field is required");
                continue;
            }
            match parse_field(field, text) {
                Ok(value) => {
                    content.insert(name.clone(), value);
                    break;
                }
                Err(why) => err_line(&format!("iris: {why}; try again")),
            }
        }
    }
    ElicitationAnswer::accept(Value::Object(content))
}

/// The enum choices of a field (`enum`, or `oneOf` of `const`s).
fn choices(field: &Value) -> Vec<String> {
    if let Some(values) = field.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect();
    }
    field
        .get("oneOf")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.get("const").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn field_prompt(name: &str, field: &Value, required: bool) -> String {
    let label = field.get("title").and_then(Value::as_str).unwrap_or(name);
    let kind = field
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string");
    let mut text = format!("  {label} ({kind}");
    if required {
        text.push_str(", required");
    }
    let options = choices(field);
    if !options.is_empty() {
        text.push_str(&format!(", one of {}", options.join(" | ")));
    }
    text.push(')');
    if let Some(description) = field.get("description").and_then(Value::as_str) {
        text.push_str(&format!(" {description}"));
    }
    if let Some(default) = field.get("default") {
        text.push_str(&format!(" [{default}]"));
    }
    text.push_str(": ");
    text
}

/// One typed answer, checked against the field's type and choices.
fn parse_field(field: &Value, text: &str) -> Result<Value, String> {
    let options = choices(field);
    if !options.is_empty() {
        let by_number = text
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| options.get(i));
        return options
            .iter()
            .find(|o| *o == text)
            .or(by_number)
            .map(|o| json!(o))
            .ok_or_else(|| format!("`{text}` is not one of {}", options.join(" | ")));
    }
    match field
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string")
    {
        "boolean" => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(json!(true)),
            "n" | "no" | "false" => Ok(json!(false)),
            _ => Err(format!("`{text}` is not yes or no")),
        },
        "integer" => text
            .parse::<i64>()
            .map(|n| json!(n))
            .map_err(|_| format!("`{text}` is not an integer")),
        "number" => text
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .map(|n| json!(n))
            .ok_or_else(|| format!("`{text}` is not a number")),
        _ => Ok(json!(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_typed_by_the_schema() {
        let rows: &[(Value, &str, Result<Value, ()>)] = &[
            (json!({"type": "string"}), "blue", Ok(json!("blue"))),
            (json!({"type": "integer"}), "42", Ok(json!(42))),
            (json!({"type": "integer"}), "4.2", Err(())),
            (json!({"type": "number"}), "4.5", Ok(json!(4.5))),
            (json!({"type": "number"}), "NaN", Err(())),
            (json!({"type": "boolean"}), "y", Ok(json!(true))),
            (json!({"type": "boolean"}), "false", Ok(json!(false))),
            (json!({"type": "boolean"}), "maybe", Err(())),
            (
                json!({"type": "string", "enum": ["red", "green"]}),
                "2",
                Ok(json!("green")),
            ),
            (
                json!({"type": "string", "enum": ["red", "green"]}),
                "blue",
                Err(()),
            ),
            (
                json!({"type": "string", "oneOf": [{"const": "a"}, {"const": "b"}]}),
                "b",
                Ok(json!("b")),
            ),
        ];
        for (field, text, expected) in rows {
            let got = parse_field(field, text).map_err(|_| ());
            assert_eq!(&got, expected, "{field} {text}");
        }
    }

    #[test]
    fn a_prompt_names_type_requirement_choices_and_default() {
        let field = json!({"type": "string", "title": "Colour", "enum": ["red", "green"], "default": "red"});
        assert_eq!(
            field_prompt("colour", &field, true),
            "  Colour (string, required, one of red | green) [\"red\"]: "
        );
    }
}
