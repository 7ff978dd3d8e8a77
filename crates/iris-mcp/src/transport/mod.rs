//! Transports: stdio (a child process), legacy HTTP+SSE, and streamable HTTP (rmcp's).

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::ServerJsonRpcMessage;
use serde_json::Value;
use tokio::sync::mpsc;

pub(crate) mod sse;
pub(crate) mod stdio;

/// Default cap on one incoming message: big enough for a 20 MB tool result with room
/// to spare, small enough that a peer that never ends a line cannot exhaust memory.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Diagnostics kept per server before older ones are counted instead of stored.
const MAX_DIAGNOSTICS: usize = 20;

/// Protocol-level complaints about one server (non-JSON stdout lines, oversized
/// messages), shared by its transport and the manager.
#[derive(Debug, Clone, Default)]
pub(crate) struct Diagnostics {
    inner: Arc<Mutex<DiagnosticsInner>>,
}

#[derive(Debug, Default)]
struct DiagnosticsInner {
    messages: Vec<String>,
    dropped: usize,
}

impl Diagnostics {
    pub(crate) fn push(&self, message: String) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.messages.len() < MAX_DIAGNOSTICS {
            inner.messages.push(message);
        } else {
            inner.dropped += 1;
        }
    }

    /// The stored messages, plus one line counting those not stored.
    pub(crate) fn snapshot(&self) -> Vec<String> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = inner.messages.clone();
        if inner.dropped > 0 {
            out.push(format!("… and {} more", inner.dropped));
        }
        out
    }
}

/// Turns raw message bytes into rmcp messages for a transport's receive side.
#[derive(Debug)]
pub(crate) struct MessageSink {
    pub(crate) server: String,
    pub(crate) tx: mpsc::Sender<ServerJsonRpcMessage>,
    pub(crate) diagnostics: Diagnostics,
}

impl MessageSink {
    /// Parses one message and forwards it. Returns false when the receiver is gone.
    ///
    /// A line that is not a JSON-RPC message is *reported* and skipped: the session
    /// goes on (a banner or a stray print must not kill it) and the user can see why
    /// the server misbehaved.
    pub(crate) async fn deliver_line(&self, line: &[u8]) -> bool {
        let line = trim_line(line);
        if line.is_empty() {
            return true;
        }
        match serde_json::from_slice::<ServerJsonRpcMessage>(line) {
            Ok(msg) => self.tx.send(msg).await.is_ok(),
            Err(_) => {
                if let Some(reason) = classify_unparsable(line) {
                    self.report(reason);
                }
                true
            }
        }
    }

    pub(crate) fn report(&self, message: String) {
        tracing::warn!(server = %self.server, "{message}");
        self.diagnostics.push(message);
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
