//! The host side of a running script: the private Unix socket, and each inner call
//! run through the executor.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use iris_executor::ToolExecutor;
use iris_tools_core::{ToolErrorInfo, ToolExecutionContext, ToolResult, ToolUse, codes as core};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

use crate::callable::NEVER_CALLABLE;
use crate::codes;

/// The longest request line a script may send (arguments included).
const MAX_REQUEST_BYTES: u64 = 8 * 1024 * 1024;
/// The longest socket path a `sockaddr_un` holds on every Unix (with its NUL).
const MAX_SOCKET_PATH: usize = 103;
/// Error codes that mean the inner call's body never started.
const NOT_STARTED: [&str; 8] = [
    core::INVALID_INPUT,
    core::PERMISSION_DENIED,
    core::HOOK_DENIED,
    core::CIRCUIT_OPEN,
    core::TOOL_NOT_FOUND,
    core::TOOL_NOT_LOADED,
    core::APPROVAL_REQUIRED,
    codes::SCRIPT_CALL_REFUSED,
];

/// A unique-enough hex string: std's randomly keyed hasher over a counter and the
/// clock (no RNG dependency). It names the socket and authenticates requests.
pub(crate) fn random_hex() -> String {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let mut out = String::with_capacity(32);
    for round in 0..2u8 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(COUNTER.fetch_add(1, Ordering::Relaxed));
        h.write_u8(round);
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        h.write_u32(std::process::id());
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out
}

/// The socket's directory and file: `<workspace>/.iris/script/<random>.sock`, inside
/// the workspace so a Docker container (which mounts the workspace at the same path)
/// reaches it too. Removed when dropped.
#[derive(Debug)]
pub(crate) struct SocketPath {
    path: PathBuf,
}

impl SocketPath {
    pub(crate) fn new(workspace: &Path) -> Result<Self, ToolErrorInfo> {
        let dir = workspace.join(".iris").join("script");
        iris_fs::state_dir::create_at(workspace)
            .and_then(|_| std::fs::create_dir_all(&dir))
            .map_err(|e| {
                ToolErrorInfo::new(
                    codes::SCRIPT_CHANNEL_UNAVAILABLE,
                    format!("cannot create the script channel directory: {e}"),
                )
            })?;
        let name: String = random_hex().chars().take(16).collect();
        let path = dir.join(format!("{name}.sock"));
        let len = path.as_os_str().len();
        if len > MAX_SOCKET_PATH {
            return Err(ToolErrorInfo::new(
                codes::SCRIPT_CHANNEL_UNAVAILABLE,
                format!(
                    "the script channel's socket path is {len} bytes; Unix sockets allow {MAX_SOCKET_PATH} (use a shorter workspace path)"
                ),
            )
            .with_detail("socket_path", path.to_string_lossy().into_owned()));
        }
        Ok(Self { path })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SocketPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// One inner call as the host saw it, in start order.
#[derive(Debug, Clone)]
pub(crate) struct CallRecord {
    pub(crate) call_id: String,
    pub(crate) tool: String,
    /// Read-only or idempotent: running it again on a re-run is harmless.
    pub(crate) replayable: bool,
    /// `None` while running (or when the script ended first); `Some(None)` for a
    /// success, `Some(Some(code))` for an error.
    pub(crate) outcome: Option<Option<String>>,
}

impl CallRecord {
    /// Whether the body may have run with a side effect a re-run would repeat.
    pub(crate) fn may_have_side_effect(&self) -> bool {
        !self.replayable
            && !matches!(&self.outcome, Some(Some(code)) if NOT_STARTED.contains(&code.as_str()))
    }
}

/// An inner call that waits for a human.
#[derive(Debug, Clone)]
pub(crate) struct PendingApproval {
    pub(crate) call_id: String,
    pub(crate) tool: String,
    pub(crate) arguments: Value,
    pub(crate) reason: String,
}

/// One approved inner call, matched by tool and arguments, at most once.
#[derive(Debug)]
pub(crate) struct Grant {
    pub(crate) tool: String,
    pub(crate) arguments: Value,
    pub(crate) used: bool,
}

/// Everything the connection tasks of one script share.
pub(crate) struct Session {
    pub(crate) executor: ToolExecutor,
    pub(crate) callable: BTreeSet<String>,
    /// The parent's context, with the parent id set and the inner cancellation.
    pub(crate) ctx: ToolExecutionContext,
    pub(crate) parent_id: String,
    pub(crate) deadline: tokio::time::Instant,
    pub(crate) token: String,
    pub(crate) next: AtomicUsize,
    pub(crate) grants: Mutex<Vec<Grant>>,
    pub(crate) log: Mutex<Vec<CallRecord>>,
    pub(crate) approval: Mutex<Option<PendingApproval>>,
    pub(crate) approval_needed: Notify,
}

#[derive(Deserialize)]
struct Request {
    token: String,
    tool: String,
    #[serde(default)]
    arguments: Option<Value>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every update is one push or one field write: a panic cannot leave it half-done.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn error_reply(info: &ToolErrorInfo) -> Value {
    json!({"error": {"code": info.code, "message": info.message, "details": info.details}})
}

impl Session {
    /// Serves one connection: request lines, each answered by one reply line, until
    /// the program closes it (a connection the sandbox helper pre-connected serves
    /// every call of one thread in turn).
    #[cfg(unix)]
    pub(crate) async fn serve(self: Arc<Self>, stream: tokio::net::UnixStream) {
        use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _};
        let (read, mut write) = stream.into_split();
        let mut reader = tokio::io::BufReader::new(read.take(MAX_REQUEST_BYTES));
        loop {
            reader.get_mut().set_limit(MAX_REQUEST_BYTES);
            let mut line = Vec::new();
            let (reply, last) = match reader.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) if !line.ends_with(b"\n") => (
                    error_reply(&ToolErrorInfo::new(
                        codes::SCRIPT_PROTOCOL_ERROR,
                        format!(
                            "a request must be one JSON line of at most {MAX_REQUEST_BYTES} bytes"
                        ),
                    )),
                    true,
                ),
                Ok(_) => (self.handle(&line).await, false),
            };
            let python = serde_json::from_slice::<Value>(&line)
                .ok()
                .is_some_and(|r| r.get("format").and_then(Value::as_str) == Some("python"));
            let mut bytes = if python {
                py_literal(&reply).into_bytes()
            } else {
                serde_json::to_vec(&reply).unwrap_or_else(|_| b"{}".to_vec())
            };
            bytes.push(b'\n');
            if write.write_all(&bytes).await.is_err() || last {
                break;
            }
        }
        let _ = write.shutdown().await;
    }

    async fn handle(&self, line: &[u8]) -> Value {
        let request: Request = match serde_json::from_slice(line) {
            Ok(r) => r,
            Err(e) => {
                return error_reply(&ToolErrorInfo::new(
                    codes::SCRIPT_PROTOCOL_ERROR,
                    format!("the request is not valid: {e}"),
                ));
            }
        };
        if request.token != self.token {
            tracing::warn!(target: crate::TRACING_TARGET, "a script-channel request with a wrong token was refused");
            return error_reply(&ToolErrorInfo::new(
                codes::SCRIPT_PROTOCOL_ERROR,
                "the request's token does not match this script",
            ));
        }
        let arguments = match request.arguments {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(v) => v,
        };
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let call_id = format!("{}_s{n}", self.parent_id);
        let (tool, replayable) = match self.executor.registry().get(&request.tool) {
            Ok(t) => (
                t.definition().name.clone(),
                t.is_read_only() || t.definition().idempotent,
            ),
            Err(_) => (request.tool.clone(), true),
        };
        let index = {
            let mut log = lock(&self.log);
            log.push(CallRecord {
                call_id: call_id.clone(),
                tool: tool.clone(),
                replayable,
                outcome: None,
            });
            log.len() - 1
        };
        let finish = |outcome: Option<String>| {
            if let Some(r) = lock(&self.log).get_mut(index) {
                r.outcome = Some(outcome);
            }
        };
        if lock(&self.approval).is_some() {
            // An inner call waits for a human and the program is being stopped: a
            // program that caught that error must not go on calling tools, or the
            // approved re-run would repeat what it did meanwhile.
            finish(Some(codes::SCRIPT_CALL_REFUSED.to_owned()));
            return error_reply(&ToolErrorInfo::new(
                codes::SCRIPT_CALL_REFUSED,
                "the script is stopping: an earlier inner call waits for approval",
            ));
        }
        if !self.callable.contains(&tool) {
            let reason = if NEVER_CALLABLE.contains(&tool.as_str()) {
                format!("a script cannot call `{tool}`")
            } else if self.executor.registry().contains(&tool) {
                format!(
                    "`{tool}` is not callable from scripts in this request (not read-only and not listed under tools.script.callable, or not loaded)"
                )
            } else {
                format!("no callable tool is named `{tool}`")
            };
            finish(Some(codes::SCRIPT_CALL_REFUSED.to_owned()));
            return error_reply(
                &ToolErrorInfo::new(codes::SCRIPT_CALL_REFUSED, reason)
                    .with_detail("tool_name", tool.as_str()),
            );
        }
        let now = tokio::time::Instant::now();
        if now >= self.deadline {
            finish(Some(core::TOOL_TIMEOUT.to_owned()));
            return error_reply(&ToolErrorInfo::new(
                core::TOOL_TIMEOUT,
                "the script's deadline has passed",
            ));
        }
        let mut ctx = self.ctx.clone();
        ctx.tool_timeout = Some(self.deadline - now);
        let approved = {
            let mut grants = lock(&self.grants);
            grants
                .iter_mut()
                .find(|g| !g.used && g.tool == tool && g.arguments == arguments)
                .map(|g| {
                    g.used = true;
                    call_id.as_str()
                })
        };
        let call = ToolUse::new(call_id.clone(), tool.clone(), arguments.clone());
        let result = self.executor.execute_one(&call, &ctx, approved).await;
        if let Some(approval) = result.output.approval() {
            finish(Some(core::APPROVAL_REQUIRED.to_owned()));
            let mut pending = lock(&self.approval);
            if pending.is_none() {
                *pending = Some(PendingApproval {
                    call_id: call_id.clone(),
                    tool: tool.clone(),
                    arguments: approval.arguments.clone(),
                    reason: approval.reason.clone(),
                });
            }
            drop(pending);
            self.approval_needed.notify_one();
            return error_reply(&approval.to_error());
        }
        finish(result.error_code().map(str::to_owned));
        reply_of(&result)
    }
}

fn reply_of(result: &ToolResult) -> Value {
    match result.output.error_info() {
        Some(info) => error_reply(info),
        None => json!({"text": result.model_content(), "data": result.output.data}),
    }
}

/// A JSON value as a Python literal (`ast.literal_eval` reads it): JSON's string and
/// number syntax is Python's; `true`, `false` and `null` are spelled the Python way.
fn py_literal(value: &Value) -> String {
    let mut out = String::new();
    write_py(value, &mut out);
    out
}

fn write_py(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => out.push_str(&serde_json::to_string(s).unwrap_or_default()),
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_py(v, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k).unwrap_or_default());
                out.push(':');
                write_py(v, out);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(callable: &[&str]) -> Session {
        Session {
            executor: ToolExecutor::new(iris_tools_core::ToolRegistry::new()),
            callable: callable.iter().map(|s| (*s).to_owned()).collect(),
            ctx: ToolExecutionContext::new("."),
            parent_id: "call_1".into(),
            deadline: tokio::time::Instant::now() + std::time::Duration::from_secs(60),
            token: "t".into(),
            next: AtomicUsize::new(0),
            grants: Mutex::new(Vec::new()),
            log: Mutex::new(Vec::new()),
            approval: Mutex::new(None),
            approval_needed: Notify::new(),
        }
    }

    /// Once an inner call waits for a human, a program that caught that error cannot
    /// go on calling tools (the approved re-run would repeat what it did meanwhile).
    #[tokio::test]
    async fn calls_after_an_approval_request_are_refused() {
        let s = session(&["echo"]);
        *lock(&s.approval) = Some(PendingApproval {
            call_id: "call_1_s1".into(),
            tool: "deploy".into(),
            arguments: json!({}),
            reason: "r".into(),
        });
        let reply = s
            .handle(br#"{"token": "t", "tool": "echo", "arguments": {}}"#)
            .await;
        assert_eq!(reply["error"]["code"], "SCRIPT_CALL_REFUSED");
        assert_eq!(
            lock(&s.log)[0].outcome,
            Some(Some("SCRIPT_CALL_REFUSED".into()))
        );
    }

    #[tokio::test]
    async fn a_wrong_token_or_a_bad_line_is_a_protocol_error() {
        let s = session(&[]);
        let wrong = s.handle(br#"{"token": "x", "tool": "echo"}"#).await;
        assert_eq!(wrong["error"]["code"], "SCRIPT_PROTOCOL_ERROR");
        let bad = s.handle(b"not json").await;
        assert_eq!(bad["error"]["code"], "SCRIPT_PROTOCOL_ERROR");
        assert!(lock(&s.log).is_empty(), "nothing was attempted");
    }

    #[test]
    fn python_literals_spell_constants_the_python_way() {
        let v = json!({"a": [true, false, null, 1.5, "x\"y\n\u{e9}"]});
        assert_eq!(
            py_literal(&v),
            "{\"a\":[True,False,None,1.5,\"x\\\"y\\n\u{e9}\"]}"
        );
    }
}
