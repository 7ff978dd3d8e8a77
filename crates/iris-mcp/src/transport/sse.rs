//! The legacy HTTP+SSE transport (MCP 2024-11-05), which rmcp no longer ships.
//!
//! The client opens a GET event stream; the server's first event, `endpoint`, names
//! the URL to POST JSON-RPC messages to (same origin, usually with a session id);
//! every later `message` event carries one JSON-RPC message from the server.

use std::collections::BTreeMap;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;

use super::{Diagnostics, IdScanner, MessageSink, Pending};

/// One server-sent event.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub(crate) event: String,
    pub(crate) data: String,
    /// Set when the event's data was over the cap and dropped: its size and the
    /// JSON-RPC `id` found in it.
    pub(crate) oversized: Option<(usize, Option<RequestId>)>,
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
            if let Some(event) = self.parser.next_event() {
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
///
/// Memory stays bounded by the cap: an event whose data grows past it is dropped (its
/// bytes go through an [`IdScanner`] so the request it answers can be failed), and so
/// is the rest of a line longer than the cap; the stream itself goes on.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    buf: Vec<u8>,
    event: String,
    data: Vec<String>,
    data_bytes: usize,
    max_event_bytes: usize,
    /// The current event's data went over the cap.
    oversized: bool,
    scanner: IdScanner,
    /// Discarding the rest of a line longer than the cap; `true` for a `data` line.
    skipping: Option<bool>,
}

impl SseParser {
    pub(crate) fn new(max_event_bytes: usize) -> Self {
        Self {
            max_event_bytes,
            ..Self::default()
        }
    }

    pub(crate) fn feed(&mut self, mut bytes: &[u8]) {
        if let Some(is_data) = self.skipping {
            let newline = bytes.iter().position(|b| *b == b'\n');
            let part = &bytes[..newline.unwrap_or(bytes.len())];
            if is_data {
                self.scanner.feed(part);
                self.data_bytes += part.len();
            }
            match newline {
                None => return,
                Some(at) => {
                    self.skipping = None;
                    bytes = &bytes[at + 1..];
                }
            }
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Starts dropping the current event: what it held so far goes to the scanner.
    fn overflow(&mut self) {
        if !self.oversized {
            self.oversized = true;
            for (i, line) in self.data.drain(..).enumerate() {
                if i > 0 {
                    self.scanner.feed(b"\n");
                }
                self.scanner.feed(line.as_bytes());
            }
        }
    }

    /// The next complete event, if the buffer holds one.
    pub(crate) fn next_event(&mut self) -> Option<SseEvent> {
        while let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
            let raw: Vec<u8> = self.buf.drain(..=pos).collect();
            let line = raw.strip_suffix(b"\n").unwrap_or(&raw);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let line = String::from_utf8_lossy(line);
            if line.is_empty() {
                if self.data.is_empty() && self.event.is_empty() && !self.oversized {
                    continue;
                }
                let oversized = std::mem::take(&mut self.oversized)
                    .then(|| (self.data_bytes, std::mem::take(&mut self.scanner).finish()));
                let event = SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data).join("\n"),
                    oversized,
                };
                self.data_bytes = 0;
                self.scanner = IdScanner::default();
                return Some(event);
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
                    if !self.oversized && self.data_bytes > self.max_event_bytes {
                        self.overflow();
                    }
                    if self.oversized {
                        self.scanner.feed(b"\n");
                        self.scanner.feed(value.as_bytes());
                    } else {
                        self.data.push(value.to_owned());
                    }
                }
                _ => {} // `id`, `retry` and unknown fields do not matter here
            }
        }
        if self.buf.len() > self.max_event_bytes {
            // A line longer than the cap: keep none of it.
            let is_data = self.buf.starts_with(b"data:")
                || (self.buf.starts_with(b"data") && self.buf.len() == 4);
            if is_data {
                self.overflow();
                let value = self.buf.strip_prefix(b"data:").unwrap_or(&[]);
                let value = value.strip_prefix(b" ").unwrap_or(value);
                self.scanner.feed(b"\n");
                self.scanner.feed(value);
                self.data_bytes += value.len();
            }
            self.buf = Vec::new();
            self.skipping = Some(is_data);
        }
        None
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
    pending: Pending,
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Builds a header map from lower-cased names; the error names the bad header. Every
/// value is marked sensitive (configured headers carry credentials): `Debug` shows it
/// as `Sensitive` and HTTP/2 never puts it in the HPACK table.
pub(crate) fn header_map(headers: &BTreeMap<String, String>) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let n =
            HeaderName::from_bytes(name.as_bytes()).map_err(|e| format!("header `{name}`: {e}"))?;
        let mut v = HeaderValue::from_str(value).map_err(|e| format!("header `{name}`: {e}"))?;
        v.set_sensitive(true);
        map.insert(n, v);
    }
    Ok(map)
}

/// The error of a response that is not a success. A redirect is refused, not
/// followed: reqwest would carry the configured headers (an `x-api-key`) to wherever
/// it points.
fn refused_status(request: &str, response: &reqwest::Response) -> String {
    let status = response.status();
    if !status.is_redirection() {
        return format!("{request} answered HTTP {status}");
    }
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|l| l.to_str().ok())
        .map(|l| format!(" to `{}`", crate::redact::redact_urls(l)))
        .unwrap_or_default();
    format!(
        "{request} answered HTTP {status}, a redirect{location}; redirects are not followed \
         (they could carry the configured headers elsewhere): configure the final URL"
    )
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
        // A redirect would carry the configured headers (`x-api-key` is not one
        // reqwest strips) to another host: a 3xx is an error instead.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let response = client
        .get(base.clone())
        .headers(headers.clone())
        .header(ACCEPT, "text/event-stream")
        .send()
        .await
        .map_err(|e| format!("GET {base} failed: {e}"))?;
    if !response.status().is_success() {
        return Err(refused_status(&format!("GET {base}"), &response));
    }
    let mut reader = SseReader {
        response,
        parser: SseParser::new(max_message_bytes),
    };
    let endpoint = loop {
        match reader.next_event().await? {
            Some(e) if e.event == "endpoint" && e.oversized.is_some() => {
                return Err(format!(
                    "the `endpoint` event is larger than {max_message_bytes} bytes"
                ));
            }
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
    let pending = Pending::default();
    let sink = MessageSink {
        server: server.to_owned(),
        tx,
        diagnostics,
        pending: pending.clone(),
    };
    let task = tokio::spawn(async move {
        loop {
            match reader.next_event().await {
                Ok(Some(event)) if event.event.is_empty() || event.event == "message" => {
                    let open = match event.oversized {
                        Some((bytes, id)) => {
                            sink.deliver_oversized(bytes, max_message_bytes, id).await
                        }
                        None => sink.deliver_line(event.data.as_bytes()).await,
                    };
                    if !open {
                        break;
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    sink.report(&e);
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
        pending,
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
        let pending = self.pending.clone();
        async move {
            // Before the POST: the answer may arrive on the stream before it returns.
            pending.on_send(&item);
            let sent = async {
                let response = request?
                    .send()
                    .await
                    .map_err(|e| std::io::Error::other(format!("POST failed: {e}")))?;
                if response.status().is_success() {
                    Ok(())
                } else {
                    Err(std::io::Error::other(refused_status("POST", &response)))
                }
            }
            .await;
            if sent.is_err() {
                pending.on_send_failed(&item);
            }
            sent
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_event_over_the_cap_is_dropped_and_the_stream_goes_on() {
        for chunk in [7, 4096] {
            let mut parser = SseParser::new(64);
            let big = format!(
                "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"id\":4,\ndata: \"result\":\"{}\"}}\n\n",
                "x".repeat(500)
            );
            let stream = format!("{big}data: {{\"small\":1}}\n\n");
            let mut events = Vec::new();
            for part in stream.as_bytes().chunks(chunk) {
                parser.feed(part);
                while let Some(e) = parser.next_event() {
                    events.push(e);
                }
            }
            assert_eq!(events.len(), 2, "chunks of {chunk}: {events:?}");
            let (bytes, id) = events[0].oversized.clone().unwrap();
            assert!(bytes > 500, "{bytes}");
            assert_eq!(id, Some(RequestId::Number(4)), "chunks of {chunk}");
            assert_eq!(events[0].data, "");
            assert_eq!(events[1].data, "{\"small\":1}");
            assert_eq!(events[1].oversized, None);
            assert!(parser.buf.capacity() < 64 * 1024);
        }
    }

    #[test]
    fn configured_header_values_are_sensitive() {
        let headers = BTreeMap::from([
            (
                "authorization".to_owned(),
                "Bearer hdr-secret-1357".to_owned(),
            ),
            ("x-api-key".to_owned(), "hdr-secret-2468".to_owned()),
        ]);
        let map = header_map(&headers).unwrap_or_default();
        assert_eq!(map.len(), 2);
        assert!(map.values().all(HeaderValue::is_sensitive), "{map:?}");
        let text = format!("{map:?}");
        assert!(!text.contains("hdr-secret"), "{text}");
        assert!(text.contains("x-api-key"), "{text}");
    }
}
