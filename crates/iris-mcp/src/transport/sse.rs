//! The legacy HTTP+SSE transport (MCP 2024-11-05), which rmcp no longer ships.
//!
//! The client opens a GET event stream; the server's first event, `endpoint`, names
//! the URL to POST JSON-RPC messages to (same origin, usually with a session id);
//! every later `message` event carries one JSON-RPC message from the server.

use std::collections::BTreeMap;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;

use super::{Diagnostics, MessageSink};

/// One server-sent event.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub(crate) event: String,
    pub(crate) data: String,
}

/// Incremental `text/event-stream` parser over a response body.
#[derive(Debug)]
struct SseReader {
    response: reqwest::Response,
    parser: SseParser,
}

impl SseReader {
    async fn next_event(&mut self) -> Result<Option<SseEvent>, String> {
        loop {
            if let Some(event) = self.parser.next_event()? {
                return Ok(Some(event));
            }
            match self.response.chunk().await {
                Ok(Some(chunk)) => self.parser.feed(&chunk),
                Ok(None) => return Ok(None),
                Err(e) => return Err(format!("the event stream broke: {e}")),
            }
        }
    }
}

/// The pure part of the reader: bytes in, events out.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    buf: Vec<u8>,
    event: String,
    data: Vec<String>,
    data_bytes: usize,
    max_event_bytes: usize,
}

impl SseParser {
    pub(crate) fn new(max_event_bytes: usize) -> Self {
        Self {
            max_event_bytes,
            ..Self::default()
        }
    }

    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete event, if the buffer holds one.
    pub(crate) fn next_event(&mut self) -> Result<Option<SseEvent>, String> {
        while let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
            let raw: Vec<u8> = self.buf.drain(..=pos).collect();
            let line = raw.strip_suffix(b"\n").unwrap_or(&raw);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let line = String::from_utf8_lossy(line);
            if line.is_empty() {
                if self.data.is_empty() && self.event.is_empty() {
                    continue;
                }
                let event = SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data).join("\n"),
                };
                self.data_bytes = 0;
                return Ok(Some(event));
            }
            if line.starts_with(':') {
                continue; // a comment (keep-alive)
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (line.as_ref(), ""),
            };
            match field {
                "event" => value.clone_into(&mut self.event),
                "data" => {
                    self.data_bytes += value.len();
                    if self.data_bytes > self.max_event_bytes {
                        return Err(format!(
                            "an event larger than {} bytes arrived",
                            self.max_event_bytes
                        ));
                    }
                    self.data.push(value.to_owned());
                }
                _ => {} // `id`, `retry` and unknown fields do not matter here
            }
        }
        if self.buf.len() > self.max_event_bytes {
            return Err(format!(
                "a line longer than {} bytes arrived",
                self.max_event_bytes
            ));
        }
        Ok(None)
    }
}

/// rmcp's view of an SSE connection.
#[derive(Debug)]
pub(crate) struct SseTransport {
    client: reqwest::Client,
    endpoint: reqwest::Url,
    headers: HeaderMap,
    rx: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Builds a header map from lower-cased names; the error names the bad header.
pub(crate) fn header_map(headers: &BTreeMap<String, String>) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let n =
            HeaderName::from_bytes(name.as_bytes()).map_err(|e| format!("header `{name}`: {e}"))?;
        let v = HeaderValue::from_str(value).map_err(|e| format!("header `{name}`: {e}"))?;
        map.insert(n, v);
    }
    Ok(map)
}

/// Opens the event stream and waits for the `endpoint` event.
pub(crate) async fn connect(
    server: &str,
    url: &str,
    headers: &BTreeMap<String, String>,
    max_message_bytes: usize,
    diagnostics: Diagnostics,
) -> Result<SseTransport, String> {
    let base = reqwest::Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
    let headers = header_map(headers)?;
    let client = reqwest::Client::builder()
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let response = client
        .get(base.clone())
        .headers(headers.clone())
        .header(ACCEPT, "text/event-stream")
        .send()
        .await
        .map_err(|e| format!("GET {base} failed: {e}"))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("GET {base} answered HTTP {status}"));
    }
    let mut reader = SseReader {
        response,
        parser: SseParser::new(max_message_bytes),
    };
    let endpoint = loop {
        match reader.next_event().await? {
            Some(e) if e.event == "endpoint" => break e.data,
            Some(_) => {}
            None => return Err("the event stream ended before the `endpoint` event".into()),
        }
    };
    let endpoint = base
        .join(endpoint.trim())
        .map_err(|e| format!("bad endpoint `{endpoint}`: {e}"))?;
    if endpoint.origin() != base.origin() {
        return Err(format!(
            "the endpoint `{endpoint}` is not on the server's origin `{}`",
            base.origin().ascii_serialization()
        ));
    }

    let (tx, rx) = mpsc::channel(64);
    let sink = MessageSink {
        server: server.to_owned(),
        tx,
        diagnostics,
    };
    let task = tokio::spawn(async move {
        loop {
            match reader.next_event().await {
                Ok(Some(event)) if event.event.is_empty() || event.event == "message" => {
                    if !sink.deliver_line(event.data.as_bytes()).await {
                        break;
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    sink.report(e);
                    break;
                }
            }
        }
    });
    Ok(SseTransport {
        client,
        endpoint,
        headers,
        rx,
        reader: task,
    })
}

impl Transport<RoleClient> for SseTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request = serde_json::to_vec(&item).map(|body| {
            self.client
                .post(self.endpoint.clone())
                .headers(self.headers.clone())
                .header(CONTENT_TYPE, "application/json")
                .body(body)
        });
        async move {
            let response = request?
                .send()
                .await
                .map_err(|e| std::io::Error::other(format!("POST failed: {e}")))?;
            let status = response.status();
            if status.is_success() {
                Ok(())
            } else {
                Err(std::io::Error::other(format!(
                    "POST answered HTTP {status}"
                )))
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.rx.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        Ok(())
    }
}
