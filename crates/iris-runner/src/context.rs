//! Context retention and read-back: old observation results shown to the model as
//! previews, and `context_read` / `context_search` to get them back.
//!
//! With `context_policy.retention` set (the Python reference's `context_retention`,
//! `context_read`, `context_search`):
//!
//! * **Previews.** A result of a tool whose definition says
//!   `context_retention = observation` (the file tools' reads, listings and searches,
//!   the web tools), in a tool message older than the last `recent_turns` tool turns,
//!   is sent to the model as its first `preview_chars` characters plus a line naming its
//!   reference: `[… 12,345 more characters: context_read {"ref": "result:call_3_1"}]`.
//!   The run's history — what the run store keeps — holds the whole result; only the
//!   request is shortened.
//! * **`context_read(ref, representation, offset, limit)`** reads a message
//!   (`message:<index>`, 0-based in the history) or a tool result
//!   (`result:<call id>`) back, as `text` (what the model saw, in full) or `raw` (the
//!   stored JSON), in pages of `limit` characters (default 4,000, at most 20,000) from
//!   `offset`; the result's `data` says `total_chars` and `next_offset` (`null` at the
//!   end).
//! * **`context_search(query, cursor, limit)`** scans the history, message by message
//!   and each tool result on its own, for text that holds `query` (case-insensitive),
//!   at most `limit` hits (default 10, at most 50), each with its reference and a
//!   snippet; `data.next_cursor` is where the next page starts (pass it as `cursor`;
//!   `null` at the end, default 0: the start).
//!
//! Both are read-only, auto-allowed and answered by the run loop itself (they read the
//! run's history); outside a run they are a `TOOL_FAILED` error saying so.

use std::collections::HashSet;
use std::sync::Arc;

use iris_providers::chat::{History, Message, Part, Role};
use iris_tools_core::{ContentBlock, ContextRetention, ToolOutput, ToolRegistry, codes};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use crate::loop_tools::context_read::CONTEXT_READ;
pub use crate::loop_tools::context_search::CONTEXT_SEARCH;
use crate::loop_tools::{context_read, context_search};

/// The default and the largest page of `context_read`, in characters.
pub(crate) const READ_DEFAULT: usize = 4_000;
pub(crate) const READ_MAX: usize = 20_000;
/// The default and the largest number of `context_search` hits.
pub(crate) const SEARCH_DEFAULT: usize = 10;
pub(crate) const SEARCH_MAX: usize = 50;
/// Characters of a search snippet around the match.
const SNIPPET: usize = 160;

/// `context_policy.retention`: when observation results become previews.
///
/// ```
/// use iris_runner::context::RetentionConfig;
/// let r: RetentionConfig = serde_yaml::from_str("{recent_turns: 2}").unwrap();
/// assert_eq!((r.recent_turns, r.preview_chars), (2, 400));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionConfig {
    /// Tool turns whose results are sent whole (the newest ones); default 3.
    pub recent_turns: u32,
    /// Characters an older observation result keeps; default 400.
    pub preview_chars: usize,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        Self {
            recent_turns: 3,
            preview_chars: 400,
        }
    }
}

/// The text of one message as the model saw it (tool results with their blocks).
fn message_text(message: &Message) -> String {
    let mut out = Vec::new();
    for part in &message.content {
        match part {
            Part::Text { text } => out.push(text.clone()),
            Part::ToolCall {
                name, arguments, ..
            } => out.push(format!("[call {name} {arguments}]")),
            Part::ToolResult(block) => out.push(blocks_text(&block.content)),
            _ => {}
        }
    }
    out.join("\n")
}

fn blocks_text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn bad(message: impl Into<String>) -> ToolOutput {
    ToolOutput::err(codes::INVALID_INPUT, message.into())
}

/// Answers a `context_read` call over `history`.
pub(crate) fn read(history: &History, args: &context_read::Input) -> ToolOutput {
    let reference = args.reference.as_str();
    let raw = args.representation == context_read::Representation::Raw;
    let (offset, limit) = (args.offset, args.limit);
    if limit == 0 {
        return bad("`limit` must be at least 1");
    }
    let text = if let Some(call_id) = reference.strip_prefix("result:") {
        let found = history
            .iter()
            .flat_map(|m| &m.content)
            .find_map(|p| match p {
                Part::ToolResult(block) if block.tool_use_id == call_id => Some(block),
                _ => None,
            });
        match found {
            Some(block) if raw => serde_json::to_string(block).unwrap_or_default(),
            Some(block) => blocks_text(&block.content),
            None => {
                return ToolOutput::err(
                    codes::TOOL_NOT_FOUND,
                    format!("no tool result of call `{call_id}` in this conversation"),
                );
            }
        }
    } else if let Some(index) = reference.strip_prefix("message:") {
        let Ok(index) = index.parse::<usize>() else {
            return bad("`message:<index>` takes a 0-based number");
        };
        match history.get(index) {
            Some(m) if raw => serde_json::to_string(m).unwrap_or_default(),
            Some(m) => message_text(m),
            None => {
                return ToolOutput::err(
                    codes::TOOL_NOT_FOUND,
                    format!(
                        "the conversation has {} messages; there is no message {index}",
                        history.len()
                    ),
                );
            }
        }
    } else {
        return bad("`ref` is `result:<call id>` or `message:<index>`");
    };
    let total = text.chars().count();
    let page: String = text.chars().skip(offset).take(limit).collect();
    let end = offset.saturating_add(page.chars().count());
    let next = (end < total).then_some(end);
    ToolOutput::text(page).with_data(
        "context",
        json!({"ref": reference, "total_chars": total, "offset": offset, "next_offset": next}),
    )
}

/// Answers a `context_search` call over `history`.
pub(crate) fn search(history: &History, args: &context_search::Input) -> ToolOutput {
    if args.query.trim().is_empty() {
        return bad("`query` must be a non-empty string");
    }
    let query = args.query.to_lowercase();
    let (cursor, limit) = (args.cursor, args.limit);
    if limit == 0 {
        return bad("`limit` must be at least 1");
    }
    // The scan's positions: each tool result of a tool message on its own, each other
    // message whole. A cursor is a position, so a page ends exactly at `limit` hits
    // even inside a tool message that holds a whole turn's results.
    let positions = history.iter().enumerate().flat_map(
        |(index, message)| -> Vec<(usize, &Message, String, String)> {
            match message.role {
                Role::Tool => message
                    .content
                    .iter()
                    .filter_map(|p| match p {
                        Part::ToolResult(b) => Some((
                            index,
                            message,
                            format!("result:{}", b.tool_use_id),
                            blocks_text(&b.content),
                        )),
                        _ => None,
                    })
                    .collect(),
                _ => vec![(
                    index,
                    message,
                    format!("message:{index}"),
                    message_text(message),
                )],
            }
        },
    );
    let mut hits = Vec::new();
    let mut next_cursor = None;
    for (position, (index, message, reference, text)) in positions.enumerate().skip(cursor) {
        if hits.len() == limit {
            next_cursor = Some(position);
            break;
        }
        let lower = text.to_lowercase();
        if let Some(at) = lower.find(&query) {
            // Char-safe snippet around the match.
            let start_char = lower[..at].chars().count().saturating_sub(SNIPPET / 2);
            let snippet: String = text.chars().skip(start_char).take(SNIPPET).collect();
            hits.push(json!({
                "ref": reference,
                "message": index,
                "role": message.role,
                "snippet": snippet,
            }));
        }
    }
    let text = if hits.is_empty() {
        format!("no message holds `{query}`")
    } else {
        hits.iter()
            .map(|h| {
                format!(
                    "{}: {}",
                    h["ref"].as_str().unwrap_or(""),
                    h["snippet"].as_str().unwrap_or("")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    ToolOutput::text(text)
        .with_data("hits", Value::Array(hits))
        .with_data("next_cursor", json!(next_cursor))
}

/// The history a request carries: observation results in tool messages older than
/// the last `recent_turns` tool messages shortened to previews. `None` when nothing
/// changes (no retention, or nothing old enough and long enough).
pub(crate) fn request_history(
    history: &History,
    registry: &ToolRegistry,
    retention: &RetentionConfig,
) -> Option<History> {
    let tool_messages: Vec<usize> = history
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Tool)
        .map(|(i, _)| i)
        .collect();
    let keep = usize::try_from(retention.recent_turns).unwrap_or(usize::MAX);
    if tool_messages.len() <= keep {
        return None;
    }
    let old: HashSet<usize> = tool_messages[..tool_messages.len() - keep]
        .iter()
        .copied()
        .collect();
    let observation = |name: &str| {
        registry
            .get(name)
            .is_ok_and(|t| t.definition().context_retention == ContextRetention::Observation)
    };
    let mut changed = false;
    let out: History = history
        .shared()
        .enumerate()
        .map(|(i, message)| {
            if !old.contains(&i) {
                return Arc::clone(message);
            }
            let content = message
                .content
                .iter()
                .map(|part| match part {
                    Part::ToolResult(block) if observation(&block.tool_name) => {
                        let text = blocks_text(&block.content);
                        let total = text.chars().count();
                        if total <= retention.preview_chars {
                            return part.clone();
                        }
                        changed = true;
                        let head: String = text.chars().take(retention.preview_chars).collect();
                        let mut shortened = block.clone();
                        shortened.content = vec![ContentBlock::text(format!(
                            "{head}\n[… {} more characters: context_read {{\"ref\": \"result:{}\"}}]",
                            total - retention.preview_chars,
                            block.tool_use_id
                        ))];
                        Part::ToolResult(shortened)
                    }
                    other => other.clone(),
                })
                .collect();
            Arc::new(Message::new(message.role, content))
        })
        .collect();
    changed.then_some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use iris_tools_core::ToolOutput;

    fn read(history: &History, args: &Value) -> ToolOutput {
        super::read(history, &serde_json::from_value(args.clone()).unwrap())
    }

    fn search(history: &History, args: &Value) -> ToolOutput {
        super::search(history, &serde_json::from_value(args.clone()).unwrap())
    }

    fn history() -> History {
        let result = ToolOutput::text("alpha ".repeat(100)).into_result("call_1_1", "read_file");
        History::from(vec![
            Message::user("find alpha"),
            Message::tool_results([&result]),
            Message::assistant("Found it."),
        ])
    }

    #[test]
    fn read_pages_a_result_and_a_message() {
        let h = history();
        let page = read(&h, &json!({"ref": "result:call_1_1", "limit": 10}));
        assert_eq!(page.model_content(), "alpha alph");
        assert_eq!(page.data["context"]["next_offset"], 10);
        assert_eq!(page.data["context"]["total_chars"], 600);
        let last = read(&h, &json!({"ref": "result:call_1_1", "offset": 595}));
        assert_eq!(last.data["context"]["next_offset"], Value::Null);
        assert_eq!(
            read(&h, &json!({"ref": "message:2"})).model_content(),
            "Found it."
        );
        let raw = read(&h, &json!({"ref": "message:0", "representation": "raw"}));
        assert!(raw.model_content().contains("\"role\":\"user\""));
        assert_eq!(
            read(&h, &json!({"ref": "message:9"})).error_code(),
            Some("TOOL_NOT_FOUND")
        );
        assert_eq!(
            read(&h, &json!({"ref": "result:nope"})).error_code(),
            Some("TOOL_NOT_FOUND")
        );
        assert_eq!(
            read(&h, &json!({"ref": "x"})).error_code(),
            Some("INVALID_INPUT")
        );
        assert_eq!(
            read(&h, &json!({"ref": "message:0", "limit": 0})).error_code(),
            Some("INVALID_INPUT")
        );
    }

    #[test]
    fn search_finds_refs_and_continues_with_a_cursor() {
        let h = history();
        let found = search(&h, &json!({"query": "ALPHA", "limit": 1}));
        assert_eq!(found.data["hits"][0]["ref"], "message:0");
        assert_eq!(found.data["next_cursor"], 1);
        let more = search(&h, &json!({"query": "alpha", "cursor": 1}));
        assert_eq!(more.data["hits"][0]["ref"], "result:call_1_1");
        assert_eq!(more.data["next_cursor"], Value::Null);
        assert_eq!(
            search(&h, &json!({"query": ""})).error_code(),
            Some("INVALID_INPUT")
        );
    }

    #[test]
    fn search_pages_end_at_limit_inside_one_tool_message() {
        // One tool message holding a whole turn's three results, all matching.
        let results: Vec<_> = (1..=3)
            .map(|i| {
                ToolOutput::text(format!("beta {i}"))
                    .into_result(&format!("call_1_{i}"), "read_file")
            })
            .collect();
        let h = History::from(vec![
            Message::user("look for beta"),
            Message::tool_results(&results),
            Message::assistant("no beta here"),
        ]);
        let refs = |out: &ToolOutput| -> Vec<String> {
            out.data["hits"]
                .as_array()
                .map(|hits| {
                    hits.iter()
                        .filter_map(|h| h["ref"].as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        let first = search(&h, &json!({"query": "beta", "limit": 2}));
        assert_eq!(refs(&first), ["message:0", "result:call_1_1"]);
        let second = search(
            &h,
            &json!({"query": "beta", "limit": 2, "cursor": first.data["next_cursor"]}),
        );
        assert_eq!(refs(&second), ["result:call_1_2", "result:call_1_3"]);
        let third = search(
            &h,
            &json!({"query": "beta", "limit": 2, "cursor": second.data["next_cursor"]}),
        );
        assert_eq!(refs(&third), ["message:2"]);
        assert_eq!(third.data["next_cursor"], Value::Null);
        assert_eq!(third.data["hits"][0]["message"], 2);
    }
}
