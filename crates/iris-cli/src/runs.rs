//! `iris runs` and `iris runs show RUN_ID`: the runs of the YAML's `run_store` (the
//! same store `iris run` and `iris resume` use), read without assembling the agent's
//! tools (nothing is started).
//!
//! Everything shown comes from the store and may hold model or tool text: it is
//! escaped like all other output ([`crate::output`]); `--json` is exact JSON.

use std::sync::Arc;
use std::time::Duration;

use iris_providers::chat::{Message, Part, Role};
use iris_runner::config::RunStoreConfig;
use iris_runner::store::RunRecord;
use iris_runner::{LoadedConfig, RunStatus, RunStore};
use iris_tools_core::ContentBlock;
use serde_json::{Value, json};

use crate::output::{line, print_json};
use crate::run::{answer_commands, not_found, refusal};
use crate::{Failure, cell};

/// The longest text of one history entry `runs show` prints (in characters); the rest
/// is cut with `…` (`--json` has it whole).
const SHOWN_CHARS: usize = 2_000;

/// The store the YAML's `run_store` names, as `AgentRunner::builder_from_loaded` opens it:
/// SQLite at `<workspace>/.iris/runs.db` by default (relative paths against the
/// workspace), PostgreSQL from the URL in `url_env`, or memory. For a SQLite file that
/// does not exist yet (no run was ever stored; listing creates nothing), the store's
/// description: `sqlite <path>`.
///
/// # Errors
/// `RUN_STORE_FAILED` (exit 3): the file or database cannot be opened, or `url_env` is
/// not set.
async fn open_store(loaded: &LoadedConfig) -> Result<Result<Arc<dyn RunStore>, String>, Failure> {
    if let RunStoreConfig::Sqlite { path } = &loaded.config.run_store {
        let path = loaded
            .workspace
            .join(path.as_deref().unwrap_or(".iris/runs.db".as_ref()));
        if !path.exists() {
            return Ok(Err(format!("sqlite {}", path.display())));
        }
    }
    Ok(Ok(iris_runner::open_store(loaded).await?))
}

/// `iris runs [--status S] [--limit N]`: newest first.
pub(crate) async fn list(
    loaded: &LoadedConfig,
    status: Option<RunStatus>,
    limit: usize,
    json: bool,
) -> Result<u8, Failure> {
    let store = open_store(loaded).await?;
    let (describe, runs) = match &store {
        Ok(store) => (
            store.describe(),
            store
                .list(status, limit)
                .await
                .map_err(|e| refusal(e.into()))?,
        ),
        Err(missing) => (missing.clone(), Vec::new()),
    };
    if json {
        let rows: Vec<Value> = runs
            .iter()
            .map(|r| {
                let mut row = serde_json::to_value(r).unwrap_or_default();
                row["updated_at"] = json!(utc(r.updated_at_ms));
                row
            })
            .collect();
        print_json(&json!({"store": describe, "runs": rows}));
        return Ok(0);
    }
    if runs.is_empty() {
        let which = status.map_or(String::new(), |s| format!("{s} "));
        line(&format!("no {which}runs in the run store ({describe})"));
        return Ok(0);
    }
    let width = runs
        .iter()
        .map(|r| r.run_id.chars().count())
        .max()
        .unwrap_or(0)
        .max(6);
    let agent_width = runs
        .iter()
        .map(|r| r.agent_id.chars().count())
        .max()
        .unwrap_or(0)
        .max(5);
    line(&format!(
        "{:<width$} {:<9} {:<agent_width$} {:>5} {:<20} WAITING FOR",
        "RUN", "STATUS", "AGENT", "TURNS", "UPDATED"
    ));
    for r in &runs {
        line(&format!(
            "{:<width$} {:<9} {:<agent_width$} {:>5} {:<20} {}",
            cell(&r.run_id),
            r.status.as_str(),
            cell(&r.agent_id),
            r.turns,
            utc(r.updated_at_ms),
            r.waiting_for.as_deref().map_or("-".to_owned(), cell),
        ));
    }
    Ok(0)
}

/// `iris runs show RUN_ID`: the record, the history and the pending interaction.
///
/// # Errors
/// `RUN_NOT_FOUND` (exit 1), `RUN_STORE_FAILED` (exit 3).
pub(crate) async fn show(
    loaded: &LoadedConfig,
    run_id: &str,
    json: bool,
    iris: &str,
) -> Result<u8, Failure> {
    let store = match open_store(loaded).await? {
        Ok(store) => store,
        Err(missing) => return Err(not_found(run_id, &missing)),
    };
    let record = store
        .load(run_id)
        .await
        .map_err(|e| refusal(e.into()))?
        .ok_or_else(|| not_found(run_id, &store.describe()))?;
    let commands = record
        .interaction
        .as_ref()
        .filter(|_| record.status == RunStatus::Waiting)
        // A subagent's child run is answered through its parent run.
        .map(|p| {
            let target = record.parent.as_ref().map_or(run_id, |r| r.run_id.as_str());
            answer_commands(iris, target, &p.interaction)
        })
        .unwrap_or_default();
    if json {
        print_json(&json!({"run": record, "answer_with": commands}));
        return Ok(0);
    }
    print_record(&record, &commands);
    Ok(0)
}

fn print_record(record: &RunRecord, commands: &[String]) {
    line(&format!("run:      {}", record.run_id));
    line(&format!("status:   {}", record.status));
    line(&format!("agent:    {}", record.agent_id));
    line(&format!("session:  {}", record.session_id));
    if let Some(parent) = &record.parent {
        line(&format!(
            "parent:   {} (subagent {}, call {})",
            parent.run_id, parent.agent_selector, parent.call_id
        ));
    }
    line(&format!(
        "turns:    {} ({} input, {} output tokens)",
        record.turns, record.usage.input_tokens, record.usage.output_tokens
    ));
    let spent = &record.spent;
    let calls: u32 = spent.tool_calls.values().sum();
    let per_tool: Vec<String> = spent
        .tool_calls
        .iter()
        .map(|(tool, n)| format!("{tool} {n}"))
        .collect();
    let child = spent.child_usage;
    // The budget's counts (`limits`): shown once there is something to show.
    if calls > 0 || child.input_tokens + child.output_tokens > 0 {
        line(&format!(
            "spent:    {calls} tool calls ({}), {:.1} s driven, subagents {} input, {} output tokens",
            per_tool.join(", "),
            Duration::from_millis(spent.driven_ms).as_secs_f64(),
            child.input_tokens,
            child.output_tokens
        ));
    }
    line(&format!("created:  {}", utc(record.created_at_ms)));
    line(&format!("updated:  {}", utc(record.updated_at_ms)));
    line("");
    line(&format!("history ({} messages):", record.history.len()));
    for message in &record.history {
        print_message(message);
    }
    if let Some(turn) = &record.pending {
        let done = turn.results.iter().filter(|r| r.is_some()).count();
        line("");
        line(&format!(
            "turn in progress: {} ({done} of {} calls finished)",
            turn.turn,
            turn.calls.len()
        ));
        for (call, result) in turn.calls.iter().zip(&turn.results) {
            let state = match result {
                None => "not finished".to_owned(),
                Some(r) => match r.error_code() {
                    None => "ok".to_owned(),
                    Some(code) => format!("error[{code}]"),
                },
            };
            line(&format!(
                "  call {} ({}) {} ... {state}",
                call.name,
                call.id,
                shorten(&call.arguments.to_string())
            ));
        }
    }
    if let Some(output) = &record.output {
        line("");
        line(&format!("output: {}", shorten(output)));
    }
    if let Some(error) = &record.error {
        line("");
        line(&format!("error[{}]: {}", error.code, error.message));
    }
    if let Some(pending) = record
        .interaction
        .as_ref()
        .filter(|_| record.status == RunStatus::Waiting)
    {
        line("");
        line(&format!(
            "waiting for ({}, interaction {}): {}",
            pending.interaction.kind(),
            pending.id,
            pending.interaction.summary()
        ));
        line("answer it with:");
        for command in commands {
            line(&format!("  {command}"));
        }
    }
}

/// One history message: a line per part, `role: text`, each tool call and result.
fn print_message(message: &Message) {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    for part in &message.content {
        let text = match part {
            Part::Text { text } => shorten(text),
            Part::Image { mime_type, .. } => format!("[image {mime_type}]"),
            Part::ToolCall {
                id,
                name,
                arguments,
                ..
            } => format!("call {name} ({id}) {}", shorten(&arguments.to_string())),
            Part::ToolResult(block) => {
                let status = if block.is_error { "error" } else { "ok" };
                let content: Vec<String> = block
                    .content
                    .iter()
                    .map(|c| match c {
                        ContentBlock::Text { text } => text.clone(),
                        ContentBlock::Image { mime_type, .. } => format!("[image {mime_type}]"),
                        _ => "[content]".to_owned(),
                    })
                    .collect();
                format!(
                    "result {} ({}) {status}: {}",
                    block.tool_name,
                    block.tool_use_id,
                    shorten(&content.join("\n"))
                )
            }
            _ => "[part]".to_owned(),
        };
        // `line` escapes: newlines show as `\n`, so one entry is one line.
        line(&format!("  {role}: {text}"));
    }
}

/// `text` cut to [`SHOWN_CHARS`] characters.
fn shorten(text: &str) -> String {
    if text.chars().count() <= SHOWN_CHARS {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(SHOWN_CHARS).collect();
    cut.push('…');
    cut
}

/// Milliseconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (UTC).
pub(crate) fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (h, m, s) = (rest / 3600, rest % 3600 / 60, rest % 60);
    // Howard Hinnant's days-to-civil algorithm, for days since 1970-01-01.
    let z = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_796_123_456_789), "2026-12-01T11:10:56Z");
    }

    #[test]
    fn long_text_is_cut() {
        let long = "x".repeat(SHOWN_CHARS + 5);
        assert_eq!(shorten(&long).chars().count(), SHOWN_CHARS + 1);
        assert_eq!(shorten("short"), "short");
    }
}
