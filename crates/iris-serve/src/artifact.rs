//! `GET /v1/runs/{id}/artifacts/{call_id}`: the file a call's result points at, as a
//! download.
//!
//! Only a path the run's own event log recorded is served: the `artifact.path` of the
//! `tool_call_finished` (or `background_finished`) event of call `call_id` of run
//! `id` — for a subagent's child run, the events its parent's log carries wrapped in
//! `subagent` events of that child. The file is read confined to the served agent's
//! workspace (a child's workspace is never wider than its parent's): the recorded path
//! is resolved inside it ([`WorkspacePolicy::resolve_path`], a path that lands outside
//! is refused) and opened through the held workspace root with no symlink followed
//! ([`WorkspaceDir::open_file`]); a regular file of at most [`MAX_ARTIFACT_BYTES`].
//!
//! A file that is UTF-8 text passes through the host's secret masker, as every event
//! does: the events are masked, and a download must not show what they hide.

use std::io::Read;
use std::path::{Path, PathBuf};

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use iris_fs::workspace::{AccessError, WorkspaceDir, WorkspacePolicy};
use iris_runner::store::{RunRecord, RunStore};
use serde_json::Value;

use crate::error::{ApiError, codes};
use crate::host::Host;

/// The largest file served.
pub const MAX_ARTIFACT_BYTES: u64 = 32 * 1024 * 1024;

/// Log entries read per query while looking for the call.
const PAGE: usize = 500;

/// How many parents a run's chain may have (a child has one; children call no
/// subagents).
const MAX_DEPTH: usize = 4;

/// The longest file name a `Content-Disposition` carries.
const MAX_NAME_CHARS: usize = 128;

/// What the log recorded of an artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Recorded {
    path: PathBuf,
    mime_type: String,
}

fn not_found(message: impl Into<String>) -> ApiError {
    ApiError::new(codes::SERVE_ARTIFACT_NOT_FOUND, message)
}

fn refused(message: impl Into<String>) -> ApiError {
    ApiError::new(codes::SERVE_ARTIFACT_REFUSED, message)
}

fn unreadable(message: impl Into<String>) -> ApiError {
    ApiError::new(codes::SERVE_ARTIFACT_UNREADABLE, message)
}

/// The response for `GET /v1/runs/{run_id}/artifacts/{call_id}`.
pub(crate) async fn download(
    host: &Host,
    run_id: &str,
    call_id: &str,
) -> Result<Response, ApiError> {
    let record = host.load(run_id).await?;
    // The log that holds the run's events (its own, or its top parent's) and the agent
    // whose workspace holds its files.
    let mut top = record.clone();
    for _ in 0..MAX_DEPTH {
        let Some(parent) = top.parent.as_ref().map(|p| p.run_id.clone()) else {
            break;
        };
        top = host.load(&parent).await?;
    }
    let recorded = find(host, &top, run_id, call_id).await?.ok_or_else(|| {
        not_found(format!(
            "run `{run_id}` recorded no artifact for a call `{call_id}`"
        ))
    })?;
    let workspace = host
        .agents()
        .runners
        .get(&top.agent_id)
        .and_then(|r| r.environment())
        .map(|e| e.workspace.clone())
        .ok_or_else(|| {
            not_found(format!(
                "the agent `{}` of run `{}` is not served here, so its workspace is unknown",
                top.agent_id, top.run_id
            ))
        })?;
    let path = recorded.path.clone();
    let bytes = tokio::task::spawn_blocking(move || read_confined(&workspace, &path))
        .await
        .map_err(|e| unreadable(format!("the read stopped: {e}")))??;
    Ok(respond(host, &recorded, bytes))
}

/// The artifact of call `call_id` of run `run_id`, looked up in `top`'s log.
async fn find(
    host: &Host,
    top: &RunRecord,
    run_id: &str,
    call_id: &str,
) -> Result<Option<Recorded>, ApiError> {
    let mut after = 0;
    let mut found = None;
    loop {
        let page = host.store.events_after(&top.run_id, after, PAGE).await?;
        let full = page.len() == PAGE;
        for entry in page {
            after = entry.seq;
            let Ok(event) = serde_json::from_str::<Value>(&entry.event) else {
                continue;
            };
            if let Some(recorded) = artifact_of(&top.run_id, &event, run_id, call_id) {
                found = Some(recorded);
            }
        }
        if !full {
            return Ok(found);
        }
    }
}

/// The artifact `event` (logged for run `log_run`) records for call `call_id` of run
/// `run_id`, if it is that call's result and has one.
fn artifact_of(log_run: &str, event: &Value, run_id: &str, call_id: &str) -> Option<Recorded> {
    let mut owner = log_run;
    let mut event = event;
    // A child's events come wrapped in `subagent` events naming the child run.
    for _ in 0..=MAX_DEPTH {
        if event.get("type").and_then(Value::as_str) != Some("subagent") {
            break;
        }
        owner = event.get("child_run_id")?.as_str()?;
        event = event.get("event")?;
    }
    let kind = event.get("type").and_then(Value::as_str)?;
    if owner != run_id || !matches!(kind, "tool_call_finished" | "background_finished") {
        return None;
    }
    let result = event.get("result")?;
    if result.get("tool_use_id").and_then(Value::as_str) != Some(call_id) {
        return None;
    }
    let artifact = result.get("artifact")?;
    Some(Recorded {
        path: PathBuf::from(artifact.get("path")?.as_str()?),
        mime_type: artifact
            .get("mime_type")
            .and_then(Value::as_str)
            .unwrap_or("application/octet-stream")
            .to_owned(),
    })
}

/// Reads `path` inside `workspace`: resolved in it, opened from the held root with no
/// symlink followed, a regular file of at most [`MAX_ARTIFACT_BYTES`]. A workspace
/// that cannot be opened and a file that cannot be read are the server's failure
/// (`SERVE_ARTIFACT_UNREADABLE`), not the request's.
fn read_confined(workspace: &Path, path: &Path) -> Result<Vec<u8>, ApiError> {
    let shown = path.display();
    let root = WorkspaceDir::open_root(workspace).map_err(|e| {
        unreadable(format!(
            "the agent's workspace cannot be opened to read `{shown}`: {e}"
        ))
    })?;
    let resolved = WorkspacePolicy::new()
        .resolve_path(path, root.path())
        .map_err(|e| refused(format!("the recorded file `{shown}` is not served: {e}")))?;
    let access = |e: AccessError| match &e {
        _ if e.is_not_found() => not_found(format!("the recorded file `{shown}` is gone")),
        AccessError::Io { source, .. } => unreadable(format!(
            "the recorded file `{shown}` cannot be read: {source}"
        )),
        _ => refused(format!(
            "the recorded file `{shown}` is not served: {}",
            e.reason()
        )),
    };
    let rel = root.relative(&resolved).map_err(access)?;
    let (file, metadata) = root.open_file(rel).map_err(access)?;
    let too_large = || {
        refused(format!(
            "the recorded file `{shown}` is over the {MAX_ARTIFACT_BYTES}-byte limit of a download"
        ))
    };
    if metadata.len() > MAX_ARTIFACT_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(MAX_ARTIFACT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| unreadable(format!("the recorded file `{shown}` cannot be read: {e}")))?;
    if bytes.len() as u64 > MAX_ARTIFACT_BYTES {
        return Err(too_large());
    }
    Ok(bytes)
}

/// The `Content-Type` a download is sent with: text and JSON as recorded, anything
/// else as bytes.
fn content_type(mime_type: &str) -> &'static str {
    match mime_type.split(';').next().unwrap_or("").trim() {
        "text/plain" => "text/plain; charset=utf-8",
        "application/json" => "application/json",
        _ => "application/octet-stream",
    }
}

/// `name` as a `Content-Disposition` file name: letters, digits, `.`, `-` and `_`
/// kept, anything else `_`, no leading dot, at most [`MAX_NAME_CHARS`].
fn sanitize(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME_CHARS)
        .collect();
    let clean = clean.trim_start_matches('.');
    if clean.is_empty() {
        "artifact".to_owned()
    } else {
        clean.to_owned()
    }
}

/// The download: the bytes (UTF-8 text masked), typed, as an attachment, never
/// sniffed or cached.
fn respond(host: &Host, recorded: &Recorded, bytes: Vec<u8>) -> Response {
    let body = match String::from_utf8(bytes) {
        Ok(text) => host.masker.text(&text).into_bytes(),
        Err(not_text) => not_text.into_bytes(),
    };
    let name = sanitize(
        &recorded
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    );
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{name}\""))
        .unwrap_or_else(|_| HeaderValue::from_static("attachment"));
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static(content_type(&recorded.mime_type)),
            ),
            (header::CONTENT_DISPOSITION, disposition),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_sanitized() {
        assert_eq!(sanitize("report.txt"), "report.txt");
        assert_eq!(sanitize("a\"b;c\r\n.txt"), "a_b_c__.txt");
        assert_eq!(sanitize("..hidden"), "hidden");
        assert_eq!(sanitize("résumé.pdf"), "r_sum_.pdf");
        assert_eq!(sanitize(""), "artifact");
        assert_eq!(sanitize(&"x".repeat(300)).len(), MAX_NAME_CHARS);
    }

    #[test]
    fn types_are_text_json_or_bytes() {
        assert_eq!(content_type("text/plain"), "text/plain; charset=utf-8");
        assert_eq!(content_type("application/json"), "application/json");
        assert_eq!(content_type("text/html"), "application/octet-stream");
        assert_eq!(content_type("image/svg+xml"), "application/octet-stream");
    }

    #[test]
    fn only_the_named_runs_call_result_counts() {
        let finished = |call: &str| {
            json!({"type": "tool_call_finished", "turn": 1, "result": {
                "tool_use_id": call, "tool_name": "t",
                "artifact": {"path": "/ws/a.txt", "mime_type": "text/plain", "size_bytes": 1},
            }})
        };
        let want = Some(Recorded {
            path: "/ws/a.txt".into(),
            mime_type: "text/plain".into(),
        });
        assert_eq!(artifact_of("run_p", &finished("c1"), "run_p", "c1"), want);
        assert_eq!(artifact_of("run_p", &finished("c1"), "run_p", "c2"), None);
        let wrapped = json!({"type": "subagent", "call_id": "c9", "agent_selector": "s",
            "child_run_id": "run_c", "event": finished("c1")});
        assert_eq!(artifact_of("run_p", &wrapped, "run_c", "c1"), want);
        assert_eq!(artifact_of("run_p", &wrapped, "run_p", "c1"), None);
        let started = json!({"type": "tool_call_started", "call_id": "c1",
            "artifact": {"path": "/ws/a.txt"}});
        assert_eq!(artifact_of("run_p", &started, "run_p", "c1"), None);
    }
}
