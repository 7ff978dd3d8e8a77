//! A hook's JSON reply: what command hooks print on stdout and HTTP hooks answer in
//! their response body.
//!
//! One JSON object whose keys depend on the event (every key is optional, `null` is the
//! same as absent, `{}` is no result):
//!
//! | event | keys |
//! |---|---|
//! | `tool.before` | `deny_reason` (string), `updated_input` (object), `ask` (string) |
//! | `tool.after` | `feedback` (string), `additional_context` (string) |
//! | `run.started` | `additional_context` (string) |
//! | `run.finished` | none |
//!
//! A key the event does not allow, an empty string or a value of the wrong type is a
//! protocol error (`HOOK_PROTOCOL_ERROR`), which for `tool.before` denies the call.

use serde_json::{Map, Value};

use crate::event::HookEventKind;
use crate::registration::{HookResult, RunStartedResult, ToolAfterResult, ToolBeforeResult};

/// The keys a reply to `kind` may hold.
fn allowed_keys(kind: HookEventKind) -> &'static [&'static str] {
    match kind {
        HookEventKind::ToolBefore => &["deny_reason", "updated_input", "ask"],
        HookEventKind::ToolAfter => &["feedback", "additional_context"],
        HookEventKind::RunStarted => &["additional_context"],
        HookEventKind::RunFinished => &[],
    }
}

/// Parses a reply: exactly one JSON object with the keys the event allows.
///
/// ```
/// use iris_hooks::{HookEventKind, HookResult};
/// use iris_hooks::reply::parse_answer;
///
/// assert_eq!(parse_answer(HookEventKind::ToolBefore, "{}"), Ok(HookResult::None));
/// assert_eq!(
///     parse_answer(HookEventKind::ToolBefore, r#"{"ask": "touches prod"}"#),
///     Ok(HookResult::ask("touches prod"))
/// );
/// assert!(parse_answer(HookEventKind::ToolAfter, r#"{"ask": "x"}"#).is_err());
/// ```
pub fn parse_answer(kind: HookEventKind, text: &str) -> Result<HookResult, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("the reply was empty; answer `{}` for no result".into());
    }
    let value: Value = serde_json::from_str(text)
        .map_err(|e| format!("the reply is not exactly one JSON object: {e}"))?;
    let Value::Object(map) = value else {
        return Err(format!(
            "the reply must be a JSON object, got {}",
            kind_of(&value)
        ));
    };
    let allowed = allowed_keys(kind);
    if let Some(extra) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(if allowed.is_empty() {
            format!("unexpected key `{extra}`; a {kind} hook must answer `{{}}`")
        } else {
            let keys: Vec<String> = allowed.iter().map(|k| format!("`{k}`")).collect();
            format!(
                "unexpected key `{extra}` for a {kind} hook; allowed: {}",
                keys.join(", ")
            )
        });
    }
    let result = match kind {
        HookEventKind::ToolBefore => {
            let before = ToolBeforeResult {
                deny_reason: text_of(&map, "deny_reason")?,
                updated_input: object_of(&map, "updated_input")?,
                ask: text_of(&map, "ask")?,
            };
            (before != ToolBeforeResult::default()).then_some(HookResult::ToolBefore(before))
        }
        HookEventKind::ToolAfter => {
            let after = ToolAfterResult {
                feedback: text_of(&map, "feedback")?,
                additional_context: text_of(&map, "additional_context")?,
            };
            (after != ToolAfterResult::default()).then_some(HookResult::ToolAfter(after))
        }
        HookEventKind::RunStarted => text_of(&map, "additional_context")?.map(|text| {
            HookResult::RunStarted(RunStartedResult {
                additional_context: Some(text),
            })
        }),
        HookEventKind::RunFinished => None,
    };
    Ok(result.unwrap_or_default())
}

fn text_of(map: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Err(format!("`{key}` must not be empty")),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("`{key}` must be a string, got {}", kind_of(other))),
    }
}

fn object_of(map: &Map<String, Value>, key: &str) -> Result<Option<Value>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value @ Value::Object(_)) => Ok(Some(value.clone())),
        Some(other) => Err(format!(
            "`{key}` must be a JSON object (the tool's whole input), got {}",
            kind_of(other)
        )),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
