//! Typed parsing of tool input shared by both tools: one `INVALID_INPUT` error per
//! broken rule, naming the field in the message and in `details.field`.

use iris_tools_core::{ToolErrorInfo, codes};
use serde_json::{Map, Value};

/// An `INVALID_INPUT` error about `field`.
pub(crate) fn invalid(field: impl Into<String>, message: impl Into<String>) -> ToolErrorInfo {
    ToolErrorInfo::new(codes::INVALID_INPUT, message).with_detail("field", field.into())
}

/// The input as an object whose keys are all in `known`.
pub(crate) fn object<'a>(
    input: &'a Value,
    tool: &str,
    known: &[&str],
) -> Result<&'a Map<String, Value>, ToolErrorInfo> {
    // A non-object input has no field to name, so `details.field` is left out.
    let object = input.as_object().ok_or_else(|| {
        ToolErrorInfo::new(
            codes::INVALID_INPUT,
            format!("{tool} input must be a JSON object, got {}", kind(input)),
        )
    })?;
    if let Some(extra) = object.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(invalid(
            extra.as_str(),
            format!(
                "unknown field `{}`; {tool} takes {}",
                extra.escape_debug(),
                known
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    Ok(object)
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
    // `as_i64` is `None` for floats, even integral ones such as 5.0: the seed asks for
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
