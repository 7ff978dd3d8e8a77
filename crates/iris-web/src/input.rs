//! Typed parsing of tool input shared by both tools: one `INVALID_INPUT` error per
//! broken rule, naming the field in the message and in `details.field`.
//!
//! The parameter types of [`crate::params`] run these checks while the input is
//! parsed, and [`refine`] turns the parse's error into the tool's: the message as the
//! check wrote it, the field in `details.field`.

use iris_tools_core::{ToolDefinition, ToolErrorInfo, codes};
use serde_json::Value;

/// An `INVALID_INPUT` error about `field`.
pub(crate) fn invalid(field: impl Into<String>, message: impl Into<String>) -> ToolErrorInfo {
    ToolErrorInfo::new(codes::INVALID_INPUT, message).with_detail("field", field.into())
}

/// A string that is not blank, returned trimmed.
pub(crate) fn non_blank_string(field: &str, value: &Value) -> Result<String, ToolErrorInfo> {
    match value {
        Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
        Value::String(_) => Err(invalid(field, format!("`{field}` must not be blank"))),
        other => Err(invalid(
            field,
            format!("`{field}` must be a string, got {}", kind(other)),
        )),
    }
}

/// A strict integer in `min..=max`: `5.0`, `"5"` and `true` are refused.
pub(crate) fn integer_in(
    field: &str,
    value: &Value,
    min: u32,
    max: u32,
) -> Result<u32, ToolErrorInfo> {
    let range = || format!("`{field}` must be an integer from {min} to {max}");
    // `as_i64` is `None` for floats, even integral ones such as 5.0: the input must be
    // a strict integer.
    let Some(n) = value.as_i64().or_else(|| value.as_u64().map(|_| i64::MAX)) else {
        let got = match value {
            Value::Number(n) => format!("the floating-point number {n}"),
            other => kind(other).to_owned(),
        };
        return Err(invalid(field, format!("{}, got {got}", range())));
    };
    match u32::try_from(n) {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(invalid(field, format!("{}, got {value}", range()))),
    }
}

/// An array of at most `max` non-blank strings, each trimmed.
pub(crate) fn string_list(
    field: &str,
    value: &Value,
    max: usize,
) -> Result<Vec<String>, ToolErrorInfo> {
    let Value::Array(items) = value else {
        return Err(invalid(
            field,
            format!("`{field}` must be an array of strings, got {}", kind(value)),
        ));
    };
    if items.len() > max {
        return Err(invalid(
            field,
            format!("`{field}` has {} items; at most {max} allowed", items.len()),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| non_blank_string(&format!("{field}[{i}]"), item))
        .collect()
}

/// A short name for a JSON value's type, for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a floating-point number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Refines the error of a failed typed parse (the `input_error` of both tools): the
/// message the failed check wrote, without the parse's prefix, and the field it names
/// in `details.field`. An input that is not an object has no field to name.
///
/// A parameter's own message names its field first (`` `max_results` must be … ``);
/// serde reports a missing and an unknown field itself (`` missing field `query` ``,
/// `` unknown field `topic`, expected one of `query`, … ``).
pub(crate) fn refine(
    definition: &ToolDefinition,
    raw: &Value,
    error: ToolErrorInfo,
) -> ToolErrorInfo {
    let tool = definition.name.as_str();
    if error.code != codes::INVALID_INPUT {
        return error;
    }
    if !raw.is_object() {
        return ToolErrorInfo::new(
            codes::INVALID_INPUT,
            format!("{tool} input must be a JSON object, got {}", kind(raw)),
        );
    }
    let prefix = format!("invalid input for `{tool}`: ");
    let Some(message) = error.message.strip_prefix(&prefix) else {
        return error;
    };
    if let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'))
    {
        return invalid(field, format!("`{field}` is required"));
    }
    if let Some((field, expected)) = message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.rsplit_once("`, expected "))
    {
        let known: Vec<String> = expected
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|name| format!("`{name}`"))
            .collect();
        return invalid(
            field,
            format!(
                "unknown field `{}`; {tool} takes {}",
                field.escape_debug(),
                known.join(", ")
            ),
        );
    }
    match message
        .strip_prefix('`')
        .and_then(|rest| rest.split_once('`'))
    {
        Some((field, _)) => invalid(field, message),
        None => ToolErrorInfo::new(codes::INVALID_INPUT, message),
    }
}
