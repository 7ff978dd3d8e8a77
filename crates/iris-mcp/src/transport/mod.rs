//! Transports: stdio (a child process), legacy HTTP+SSE, and streamable HTTP (rmcp's).
//!
//! The two transports this crate owns (stdio, SSE) share [`MessageSink`], which turns
//! raw messages into rmcp's and knows which requests are still waiting for an answer
//! ([`Pending`]). A message it has to drop (larger than the cap, not JSON-RPC, nested
//! deeper than the parser allows) that answers one of those requests is replaced by a
//! JSON-RPC error for that id, so the request fails at once with
//! [`codes::MCP_RESPONSE_TOO_LARGE`] or [`codes::MCP_RESPONSE_INVALID`] instead of
//! waiting out its timeout — the way rmcp's streamable HTTP client fails a request
//! whose response stream broke.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ErrorCode, ErrorData, JsonRpcMessage, RequestId,
    ServerJsonRpcMessage,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::error::codes;
use crate::redact::Redactor;

pub(crate) mod sse;
pub(crate) mod stdio;

/// Default cap on one incoming message: big enough for a 20 MB tool result with room
/// to spare, small enough that a peer that never ends a line cannot exhaust memory.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Diagnostics kept per server before older ones are counted instead of stored.
const MAX_DIAGNOSTICS: usize = 20;

/// Protocol-level complaints about one server (non-JSON stdout lines, oversized
/// messages), shared by its transport and the manager. Every message is redacted on
/// the way in.
#[derive(Debug, Clone, Default)]
pub(crate) struct Diagnostics {
    inner: Arc<Mutex<DiagnosticsInner>>,
    redactor: Redactor,
}

#[derive(Debug, Default)]
struct DiagnosticsInner {
    /// (code, message); the code is one of [`codes`].
    messages: Vec<(&'static str, String)>,
    dropped: usize,
}

impl Diagnostics {
    /// Diagnostics whose messages pass through `redactor`.
    pub(crate) fn new(redactor: Redactor) -> Self {
        Self {
            inner: Arc::default(),
            redactor,
        }
    }

    /// The redactor of this server.
    pub(crate) fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// Stores a protocol complaint (`MCP_PROTOCOL_WARNING`), redacted, and returns
    /// what was stored.
    pub(crate) fn push(&self, message: &str) -> String {
        self.push_coded(codes::MCP_PROTOCOL_WARNING, message)
    }

    /// Stores `message` (redacted) under `code` and returns what was stored.
    pub(crate) fn push_coded(&self, code: &'static str, message: &str) -> String {
        let message = self.redactor.redact(message);
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.messages.len() < MAX_DIAGNOSTICS {
            inner.messages.push((code, message.clone()));
        } else {
            inner.dropped += 1;
        }
        message
    }

    /// The stored messages, plus one line counting those not stored.
    pub(crate) fn snapshot(&self) -> Vec<String> {
        self.snapshot_coded().into_iter().map(|(_, m)| m).collect()
    }

    /// The stored (code, message) pairs, plus one warning counting those not stored.
    pub(crate) fn snapshot_coded(&self) -> Vec<(&'static str, String)> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = inner.messages.clone();
        if inner.dropped > 0 {
            out.push((
                codes::MCP_PROTOCOL_WARNING,
                format!("… and {} more", inner.dropped),
            ));
        }
        out
    }
}

/// The ids of the requests sent to a server and not answered yet (nor cancelled).
#[derive(Debug, Clone, Default)]
pub(crate) struct Pending {
    ids: Arc<Mutex<HashSet<RequestId>>>,
}

impl Pending {
    /// Notes an outgoing message: a request starts waiting, a cancellation stops.
    pub(crate) fn on_send(&self, msg: &ClientJsonRpcMessage) {
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        match msg {
            JsonRpcMessage::Request(r) => {
                ids.insert(r.id.clone());
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    ids.remove(id);
                }
            }
            _ => {}
        }
    }

    /// Forgets a request a failed send never delivered.
    pub(crate) fn on_send_failed(&self, msg: &ClientJsonRpcMessage) {
        if let JsonRpcMessage::Request(r) = msg {
            self.take(&r.id);
        }
    }

    /// Notes an incoming answer.
    fn on_receive(&self, msg: &ServerJsonRpcMessage) {
        let id = match msg {
            JsonRpcMessage::Response(r) => Some(&r.id),
            JsonRpcMessage::Error(e) => e.id.as_ref(),
            _ => None,
        };
        if let Some(id) = id {
            self.take(id);
        }
    }

    /// Whether `id` was waiting; it no longer is.
    fn take(&self, id: &RequestId) -> bool {
        self.ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id)
    }
}

/// A per-process random value that marks the errors this crate puts in place of a
/// dropped answer, so a server cannot pass its own error off as one.
fn marker_nonce() -> u64 {
    static NONCE: OnceLock<u64> = OnceLock::new();
    *NONCE.get_or_init(|| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        h.finish()
    })
}

const MARKER_CODE: &str = "iris_code";
const MARKER_NONCE: &str = "iris_nonce";

/// The JSON-RPC error that stands in for a dropped answer to request `id`.
fn stand_in_error(code: &'static str, message: String, id: RequestId) -> ServerJsonRpcMessage {
    let data = json!({ MARKER_CODE: code, MARKER_NONCE: marker_nonce() });
    ServerJsonRpcMessage::error(
        ErrorData::new(ErrorCode::INTERNAL_ERROR, message, Some(data)),
        Some(id),
    )
}

/// The code of an error this crate put in place of a dropped answer
/// ([`codes::MCP_RESPONSE_TOO_LARGE`], [`codes::MCP_RESPONSE_INVALID`]), or `None` for
/// an error the server sent.
pub(crate) fn stand_in_code(error: &ErrorData) -> Option<&'static str> {
    let data = error.data.as_ref()?;
    if data.get(MARKER_NONCE).and_then(Value::as_u64) != Some(marker_nonce()) {
        return None;
    }
    match data.get(MARKER_CODE).and_then(Value::as_str)? {
        codes::MCP_RESPONSE_TOO_LARGE => Some(codes::MCP_RESPONSE_TOO_LARGE),
        codes::MCP_RESPONSE_INVALID => Some(codes::MCP_RESPONSE_INVALID),
        _ => None,
    }
}

/// Finds the top-level `id` of a JSON-RPC message without holding the message: bytes
/// are fed as they arrive (a message over the cap is never buffered whole) and only
/// the key being read and the `id` value (both bounded) are kept. Nesting depth is a
/// counter, so a pathologically deep message costs nothing extra.
#[derive(Debug, Default)]
pub(crate) struct IdScanner {
    started: bool,
    /// Not an object, or the top-level object already ended.
    done: bool,
    depth: usize,
    in_string: bool,
    escaped: bool,
    expect_key: bool,
    reading_key: bool,
    key: Vec<u8>,
    value_is_id: bool,
    capturing: bool,
    id: Vec<u8>,
    id_unusable: bool,
    saw_id: bool,
    saw_method: bool,
}

/// Longest `id` value kept (a longer one is not a request id this crate sent).
const MAX_ID_BYTES: usize = 128;
/// Longest key kept: enough to recognise `id` and `method`.
const MAX_KEY_BYTES: usize = 8;

impl IdScanner {
    /// Feeds the next bytes of the message.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        let mut i = 0;
        while i < bytes.len() && !self.done {
            let b = bytes[i];
            i += 1;
            if !self.started {
                if b.is_ascii_whitespace() || b == 0xEF || b == 0xBB || b == 0xBF {
                    continue; // whitespace or a byte-order mark
                }
                self.started = true;
                if b == b'{' {
                    self.depth = 1;
                    self.expect_key = true;
                } else {
                    self.done = true;
                }
                continue;
            }
            if self.in_string {
                if !self.capturing && !self.reading_key && !self.escaped {
                    // Skip the body of a long string in one step.
                    let rest = &bytes[i - 1..];
                    match rest.iter().position(|c| *c == b'"' || *c == b'\\') {
                        Some(at) => i += at,
                        None => {
                            i = bytes.len();
                            continue;
                        }
                    }
                }
                let b = bytes[i - 1];
                let closing = !self.escaped && b == b'"';
                if self.capturing {
                    self.capture(b);
                }
                // A key longer than the bound is kept cut, and then equals neither.
                if self.reading_key && !closing && self.key.len() < MAX_KEY_BYTES {
                    self.key.push(b);
                }
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if closing {
                    self.in_string = false;
                    if self.reading_key {
                        self.reading_key = false;
                        self.value_is_id = self.key == b"id";
                        self.saw_method |= self.key == b"method";
                    }
                }
                continue;
            }
            match b {
                b'"' => {
                    self.in_string = true;
                    if self.depth == 1 && self.expect_key {
                        self.reading_key = true;
                        self.key.clear();
                    } else if self.capturing {
                        self.capture(b);
                    }
                }
                b'{' | b'[' => {
                    if self.capturing {
                        self.id_unusable = true; // an id is a string or a number
                    }
                    self.depth += 1;
                }
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        self.capturing = false;
                        self.done = true;
                    } else if self.capturing {
                        self.capture(b);
                    }
                }
                b':' if self.depth == 1 => {
                    self.expect_key = false;
                    if self.value_is_id {
                        self.capturing = true;
                        self.saw_id = true;
                        self.id.clear();
                        self.id_unusable = false;
                    }
                }
                b',' if self.depth == 1 => {
                    self.capturing = false;
                    self.value_is_id = false;
                    self.expect_key = true;
                }
                _ => {
                    if self.capturing {
                        self.capture(b);
                    }
                }
            }
        }
    }

    fn capture(&mut self, b: u8) {
        if self.id.len() < MAX_ID_BYTES {
            self.id.push(b);
        } else {
            self.id_unusable = true;
        }
    }

    /// The `id` of a response or error (a message with `id` and without `method`).
    pub(crate) fn finish(&self) -> Option<RequestId> {
        if !self.saw_id || self.saw_method || self.id_unusable {
            return None;
        }
        serde_json::from_slice::<RequestId>(self.id.trim_ascii()).ok()
    }
}

/// Turns raw message bytes into rmcp messages for a transport's receive side.
#[derive(Debug)]
pub(crate) struct MessageSink {
    pub(crate) server: String,
    pub(crate) tx: mpsc::Sender<ServerJsonRpcMessage>,
    pub(crate) diagnostics: Diagnostics,
    pub(crate) pending: Pending,
}

impl MessageSink {
    /// Parses one message and forwards it. Returns false when the receiver is gone.
    ///
    /// A line that is not a JSON-RPC message is *reported* and skipped: the session
    /// goes on (a banner or a stray print must not kill it) and the user can see why
    /// the server misbehaved. When it answers a waiting request, that request fails at
    /// once with `MCP_RESPONSE_INVALID`.
    pub(crate) async fn deliver_line(&self, line: &[u8]) -> bool {
        let line = trim_line(line);
        if line.is_empty() {
            return true;
        }
        match serde_json::from_slice::<ServerJsonRpcMessage>(line) {
            Ok(msg) => {
                self.pending.on_receive(&msg);
                self.tx.send(msg).await.is_ok()
            }
            Err(e) => {
                let mut scanner = IdScanner::default();
                scanner.feed(line);
                if let Some(id) = scanner.finish().filter(|id| self.pending.take(id)) {
                    let reason = format!("the server's answer is not valid JSON-RPC ({e})");
                    self.report(&format!("{reason}; request {id} failed"));
                    let message = format!("{reason}; it was dropped");
                    return self
                        .tx
                        .send(stand_in_error(codes::MCP_RESPONSE_INVALID, message, id))
                        .await
                        .is_ok();
                }
                if let Some(reason) = classify_unparsable(line) {
                    self.report(&reason);
                }
                true
            }
        }
    }

    /// A message of `bytes` bytes, over the cap `max`, was dropped; `id` is what its
    /// [`IdScanner`] found. A waiting request it answered fails at once with
    /// `MCP_RESPONSE_TOO_LARGE`. Returns false when the receiver is gone.
    pub(crate) async fn deliver_oversized(
        &self,
        bytes: usize,
        max: usize,
        id: Option<RequestId>,
    ) -> bool {
        match id.filter(|id| self.pending.take(id)) {
            Some(id) => {
                self.report(&format!(
                    "the answer to request {id} ({bytes} bytes) is larger than the {max}-byte message cap; it was dropped"
                ));
                let message = format!(
                    "the server's answer is larger than {max} bytes (the message cap); it was dropped"
                );
                self.tx
                    .send(stand_in_error(codes::MCP_RESPONSE_TOO_LARGE, message, id))
                    .await
                    .is_ok()
            }
            None => {
                self.report(&format!("a message larger than {max} bytes was dropped"));
                true
            }
        }
    }

    pub(crate) fn report(&self, message: &str) {
        let message = self.diagnostics.push(message);
        tracing::warn!(server = %self.server, "{message}");
    }
}

fn trim_line(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.strip_prefix(b"\xEF\xBB\xBF".as_slice())
        .unwrap_or(line)
}

/// Why a line that rmcp cannot parse is worth reporting, or `None` when it is a
/// notification outside the MCP vocabulary (some servers send LSP-style ones), which
/// is ignored quietly as the official SDKs do.
pub(crate) fn classify_unparsable(line: &[u8]) -> Option<String> {
    let preview = || {
        let text = String::from_utf8_lossy(line);
        let mut p: String = text.chars().take(120).collect();
        if text.chars().count() > 120 {
            p.push('…');
        }
        p
    };
    match serde_json::from_slice::<Value>(line) {
        Err(_) => Some(format!(
            "ignored a stdout line that is not JSON-RPC: {}",
            preview()
        )),
        Ok(v) => {
            let is_notification = v.get("id").is_none() && v.get("method").is_some();
            if is_notification {
                None
            } else {
                Some(format!(
                    "ignored a JSON message that is not valid MCP: {}",
                    preview()
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str, chunk: usize) -> Option<RequestId> {
        let mut scanner = IdScanner::default();
        for part in text.as_bytes().chunks(chunk) {
            scanner.feed(part);
        }
        scanner.finish()
    }

    #[test]
    fn the_scanner_finds_the_top_level_id_of_answers_only() {
        let number = Some(RequestId::Number(7));
        let string = Some(RequestId::String("a\"b".into()));
        let rows: &[(&str, Option<RequestId>)] = &[
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{"x":[1,2]}}"#,
                number.clone(),
            ),
            (
                r#"  {"result": {"id": 5, "t": "}{\"id\":1"}, "id" : 7 }"#,
                number.clone(),
            ),
            (r#"{"error": {"code": 1}, "id": "a\"b"}"#, string),
            (r#"{"id": 3, "method": "ping"}"#, None),
            (r#"{"method": "notifications/message"}"#, None),
            (r#"{"result": {"id": 5}}"#, None),
            (r#"[{"id": 1}]"#, None),
            (r#"{"id": [1], "result": 0}"#, None),
            (r#"{"identifier": 1, "result": 0}"#, None),
            ("not json at all", None),
        ];
        for (text, want) in rows {
            for chunk in [1, 3, 1024] {
                assert_eq!(&scan(text, chunk), want, "{text} in chunks of {chunk}");
            }
        }
        // Depth costs nothing: a million levels inside the result.
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{}{}}}"#,
            "[".repeat(1_000_000),
            "]".repeat(1_000_000)
        );
        assert_eq!(scan(&deep, 64 * 1024), number);
    }

    #[test]
    fn stand_in_errors_are_recognised_and_forgeries_are_not() {
        let JsonRpcMessage::Error(e) = stand_in_error(
            codes::MCP_RESPONSE_TOO_LARGE,
            "too big".into(),
            RequestId::Number(1),
        ) else {
            panic!("not an error");
        };
        assert_eq!(stand_in_code(&e.error), Some(codes::MCP_RESPONSE_TOO_LARGE));
        let forged = ErrorData::new(
            ErrorCode::INTERNAL_ERROR,
            "x",
            Some(json!({MARKER_CODE: codes::MCP_RESPONSE_TOO_LARGE, MARKER_NONCE: 1})),
        );
        assert_eq!(stand_in_code(&forged), None);
    }
}
