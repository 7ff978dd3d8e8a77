//! A tiny HTTP/1.1 server on 127.0.0.1 that answers with the providers' documented wire
//! format (JSON bodies and chunked SSE streams), and helpers shared by the test modules.
// Each module uses a different subset of the helpers.
#![allow(dead_code)]
// A broken test server should fail the test loudly, so unwrap is the right tool here.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use iris_providers::chat::{
    CompletionRequest, CompletionResponse, Message, ModelToolCall, Part, Role, StreamEvent,
};
use iris_providers::retry::{RetryPolicy, RetryingProvider};
use iris_providers::{CompletionProvider, ProviderError, ProviderStream, next};
use iris_tools_core::{ContentBlock, ToolOutput, ToolResult, ToolSpec};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The key every test client sends; tests check it never leaks.
pub(crate) const TEST_KEY: &str = "sk-test-key-0123456789abcdef";

/// What the server answers to one request.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// A complete answer with a `content-length`.
    Body {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// A 200 `text/event-stream` sent with chunked transfer encoding, `piece` bytes per
    /// HTTP chunk (so SSE lines and JSON values are split at arbitrary points).
    /// `complete: false` drops the connection before the final chunk: a cut-off stream.
    Sse {
        body: String,
        piece: usize,
        complete: bool,
    },
    /// Read the request, then never answer.
    Hang,
}

impl Reply {
    /// A 200 JSON answer.
    pub(crate) fn json(body: Value) -> Self {
        Self::status_json(200, body)
    }

    /// Any status with a JSON body.
    pub(crate) fn status_json(status: u16, body: Value) -> Self {
        Reply::Body {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
        }
    }

    /// A complete SSE stream of these events, split into 7-byte HTTP chunks.
    pub(crate) fn sse(body: impl Into<String>) -> Self {
        Reply::Sse {
            body: body.into(),
            piece: 7,
            complete: true,
        }
    }

    /// A stream of these events that breaks off: the connection drops before the
    /// final HTTP chunk, 16 bytes a chunk.
    pub(crate) fn cut_off(body: impl Into<String>) -> Self {
        Reply::Sse {
            body: body.into(),
            piece: 16,
            complete: false,
        }
    }

    /// Adds a header to a body answer.
    pub(crate) fn header(mut self, name: &str, value: &str) -> Self {
        if let Reply::Body { headers, .. } = &mut self {
            headers.push((name.into(), value.into()));
        }
        self
    }
}

/// OpenAI-style SSE: each chunk as a `data:` event, then `data: [DONE]`.
pub(crate) fn openai_sse(chunks: &[Value]) -> String {
    let mut body = String::new();
    for chunk in chunks {
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    body
}

/// Anthropic-style SSE: each event named by its `type`.
pub(crate) fn anthropic_sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|event| {
            let name = event["type"].as_str().unwrap_or("message");
            format!("event: {name}\ndata: {event}\n\n")
        })
        .collect()
}

/// OpenAI Responses SSE: each event named by its `type` (as Anthropic's), with its
/// `sequence_number` filled in; no `[DONE]`.
pub(crate) fn responses_sse(events: &[Value]) -> String {
    let numbered: Vec<Value> = events
        .iter()
        .enumerate()
        .map(|(n, event)| {
            let mut event = event.clone();
            event["sequence_number"] = Value::from(n);
            event
        })
        .collect();
    anthropic_sse(&numbered)
}

/// Gemini `alt=sse`: each `GenerateContentResponse` as a `data:` event, separated by
/// `\r\n\r\n` as Google's servers write them; no terminator.
pub(crate) fn gemini_sse(chunks: &[Value]) -> String {
    chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\r\n\r\n"))
        .collect()
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) method: String,
    pub(crate) path: String,
    /// Header names lower-cased.
    pub(crate) headers: Vec<(String, String)>,
    /// The body parsed as JSON (`null` when it is not JSON).
    pub(crate) body: Value,
}

impl Recorded {
    /// The value of a header.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The server: every connection carries one request and gets the next reply of its
/// list (the last one repeats).
pub(crate) struct TestServer {
    addr: std::net::SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl TestServer {
    /// A server that answers every request with `reply`.
    pub(crate) async fn start(reply: Reply) -> Self {
        Self::sequence(vec![reply]).await
    }

    /// A server answering the n-th request with the n-th reply.
    pub(crate) async fn sequence(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&requests);
        let replies = Arc::new(replies);
        tokio::spawn(async move {
            let mut n = 0_usize;
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let reply = replies[n.min(replies.len() - 1)].clone();
                n += 1;
                let log = Arc::clone(&log);
                tokio::spawn(async move { serve(stream, reply, log).await });
            }
        });
        Self { addr, requests }
    }

    /// The base URL to give a client (`/v1` for OpenAI-style paths).
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// The only request received.
    pub(crate) fn only_request(&self) -> Recorded {
        let requests = self.requests();
        assert_eq!(requests.len(), 1, "{requests:#?}");
        requests.into_iter().next().unwrap()
    }
}

async fn serve(mut stream: TcpStream, reply: Reply, log: Arc<Mutex<Vec<Recorded>>>) {
    let Some(recorded) = read_request(&mut stream).await else {
        return;
    };
    log.lock().unwrap().push(recorded);
    match reply {
        Reply::Body {
            status,
            headers,
            body,
        } => {
            let mut head = format!("HTTP/1.1 {status} Test\r\n");
            for (name, value) in &headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str(&format!(
                "content-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            ));
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(body.as_bytes()).await;
            let _ = stream.shutdown().await;
        }
        Reply::Sse {
            body,
            piece,
            complete,
        } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n\
                        cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\
                        connection: close\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            for part in body.as_bytes().chunks(piece.max(1)) {
                let mut chunk = format!("{:x}\r\n", part.len()).into_bytes();
                chunk.extend_from_slice(part);
                chunk.extend_from_slice(b"\r\n");
                if stream.write_all(&chunk).await.is_err() {
                    return;
                }
                let _ = stream.flush().await;
            }
            if complete {
                let _ = stream.write_all(b"0\r\n\r\n").await;
                let _ = stream.shutdown().await;
            }
            // Otherwise the stream is dropped here: the body ends without its last
            // chunk, as when a connection breaks mid-answer.
        }
        Reply::Hang => std::future::pending::<()>().await,
    }
}

async fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0_u8; 8192];
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Recorded {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

/// Every event of a stream, the error (if any) last.
pub(crate) async fn drain(
    mut stream: ProviderStream<'_>,
) -> (Vec<StreamEvent>, Option<ProviderError>) {
    let mut events = Vec::new();
    while let Some(item) = next(&mut stream).await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => {
                // A failed stream ends after its error.
                assert!(next(&mut stream).await.is_none(), "items after an error");
                return (events, Some(error));
            }
        }
    }
    (events, None)
}

/// Streams `request` and returns its events and completed turn, checking the stream's
/// contract: exactly one `Completed`, last, equal to what the deltas add up to.
pub(crate) async fn stream_turn(
    provider: &dyn CompletionProvider,
    request: &CompletionRequest,
) -> (Vec<StreamEvent>, CompletionResponse) {
    let (events, error) = drain(provider.stream(request)).await;
    assert_eq!(error, None, "{events:#?}");
    let Some(StreamEvent::Completed(turn)) = events.last().cloned() else {
        panic!("the stream did not end with Completed: {events:#?}");
    };
    let completed = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Completed(_)))
        .count();
    assert_eq!(completed, 1);
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, turn.text);
    for (index, call) in turn.tool_calls.iter().enumerate() {
        let started = events.iter().any(|e| {
            matches!(e, StreamEvent::ToolCallStarted { index: i, id, name }
                if *i == index && *id == call.id && *name == call.name)
        });
        assert!(started, "no start for call {index}: {events:#?}");
        let raw: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallArgumentsDelta { index: i, delta } if *i == index => {
                    Some(delta.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(raw, call.raw_arguments, "argument deltas of call {index}");
    }
    (events, turn)
}

/// Asserts that neither an error's message nor its `Debug` carry the test key.
pub(crate) fn assert_no_key(error: &ProviderError) {
    assert!(!error.to_string().contains(TEST_KEY), "{error}");
    assert!(!format!("{error:?}").contains(TEST_KEY), "{error:?}");
}

/// The tool most fixtures call: `get_weather(location)`.
pub(crate) fn weather_spec() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Current weather for a city.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"]
        }),
    }
}

/// The Chat Completions fixtures' tool: `read_file(file_path)`.
pub(crate) fn read_file_spec() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "Read a text file from the workspace.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"file_path": {"type": "string"}},
            "required": ["file_path"]
        }),
    }
}

/// The errors of `complete` and of `stream` against a server answering `reply` to
/// every request, both checked to have `code`; the stream yields nothing before its
/// error, and neither error carries the test key.
pub(crate) async fn fails_with<P: CompletionProvider>(
    client: impl Fn(&TestServer) -> P,
    request: &CompletionRequest,
    reply: Reply,
    code: &str,
) -> (ProviderError, ProviderError) {
    let server = TestServer::start(reply.clone()).await;
    let client = client(&server);
    let (events, streamed) = drain(client.stream(request)).await;
    assert!(events.is_empty(), "{reply:?}: {events:#?}");
    let streamed = streamed.unwrap();
    let completed = client.complete(request).await.unwrap_err();
    for err in [&completed, &streamed] {
        assert_eq!(err.code(), code, "{reply:?}: {err}");
        assert_no_key(err);
    }
    (completed, streamed)
}

/// The turn of a request through a [`RetryingProvider`] (`attempts`, 5 s of waiting)
/// over a server that answers `limited`, then `ok`: streamed or completed, after
/// exactly one retry.
pub(crate) async fn after_one_retry<P: CompletionProvider>(
    client: impl Fn(&TestServer) -> P,
    request: &CompletionRequest,
    (limited, ok): (Reply, Reply),
    attempts: u32,
    streamed: bool,
) -> CompletionResponse {
    let server = TestServer::sequence(vec![limited, ok]).await;
    let provider = RetryingProvider::new(
        client(&server),
        RetryPolicy::new(attempts, Duration::from_secs(5)),
    );
    let turn = if streamed {
        stream_turn(&provider, request).await.1
    } else {
        provider.complete(request).await.unwrap()
    };
    assert_eq!(server.requests().len(), 2);
    turn
}

/// The builder methods the four HTTP clients share, for [`Format::of`].
pub(crate) trait HttpClient: CompletionProvider + std::fmt::Debug + Sized + 'static {
    /// `Client::new`.
    fn create(key: &str) -> Self;
    /// `Client::with_base_url`.
    fn at(self, base_url: &str) -> Result<Self, ProviderError>;
    /// `Client::with_timeout`.
    fn waiting(self, timeout: Duration) -> Result<Self, ProviderError>;
    /// `Client::base_url`.
    fn url(&self) -> String;
}

macro_rules! http_clients {
    ($($client:ty),*) => {$(
        impl HttpClient for $client {
            fn create(key: &str) -> Self {
                <$client>::new(key)
            }
            fn at(self, base_url: &str) -> Result<Self, ProviderError> {
                self.with_base_url(base_url)
            }
            fn waiting(self, timeout: Duration) -> Result<Self, ProviderError> {
                self.with_timeout(timeout)
            }
            fn url(&self) -> String {
                self.base_url().to_owned()
            }
        }
    )*};
}

http_clients!(
    iris_providers::openai_chat::Client,
    iris_providers::openai_responses::Client,
    iris_providers::anthropic::Client,
    iris_providers::gemini::Client
);

/// What a format is called and where it sends its key: the provider's name, the
/// default base URL, the path a test server's root takes in a base URL (`/v1`), and
/// the key header with what precedes the key in it.
pub(crate) type Wire = (
    &'static str,
    &'static str,
    &'static str,
    (&'static str, &'static str),
);

/// What [`Format::client`] builds: a client, or its configuration error.
pub(crate) type MakeClient =
    fn(&str, &str, Option<Duration>) -> Result<Box<dyn CompletionProvider>, ProviderError>;

/// A format's error statuses and error bodies, as in [`Format`].
pub(crate) type Errors = (
    &'static [(u16, &'static str, &'static str)],
    fn(u16, &str) -> Value,
);

/// One HTTP wire format, as the table-driven tests of `wire_formats` see it.
pub(crate) struct Format {
    /// The provider's name.
    pub(crate) name: &'static str,
    /// The base URL when none is given.
    pub(crate) default_base_url: &'static str,
    /// The path the server's root takes in a base URL (`/v1`).
    pub(crate) base_path: &'static str,
    /// The header that carries the key, and what precedes the key in it.
    pub(crate) key_header: (&'static str, &'static str),
    /// A client with this key and base URL, with a timeout when one is given; or its
    /// configuration error.
    pub(crate) client: MakeClient,
    /// The client's `Debug` and base URL with this key, at the default base URL.
    pub(crate) defaults: fn(&str) -> (String, String),
    /// A request the format can send.
    pub(crate) request: fn() -> CompletionRequest,
    /// A whole, non-streamed answer saying this text.
    pub(crate) answer: fn(&str) -> Value,
    /// HTTP statuses as (status, the format's name for the error, the code it means).
    pub(crate) statuses: &'static [(u16, &'static str, &'static str)],
    /// An error body for a status and the format's name for the error; its message
    /// echoes the test key.
    pub(crate) error_body: fn(u16, &str) -> Value,
}

impl Format {
    /// The format of client `C`.
    pub(crate) fn of<C: HttpClient>(
        (name, default_base_url, base_path, key_header): Wire,
        request: fn() -> CompletionRequest,
        answer: fn(&str) -> Value,
        (statuses, error_body): Errors,
    ) -> Self {
        Self {
            name,
            default_base_url,
            base_path,
            key_header,
            client: |key, base_url, timeout| {
                let client = C::create(key).at(base_url)?;
                Ok(Box::new(match timeout {
                    Some(timeout) => client.waiting(timeout)?,
                    None => client,
                }))
            },
            defaults: |key| {
                let client = C::create(key);
                (format!("{client:?}"), client.url())
            },
            request,
            answer,
            statuses,
            error_body,
        }
    }

    /// A client of the test server with the test key.
    pub(crate) fn client(&self, server: &TestServer) -> Box<dyn CompletionProvider> {
        (self.client)(TEST_KEY, &self.base_url(&server.url()), None).unwrap()
    }

    /// The base URL of a server at `root` (`http://127.0.0.1:port`).
    pub(crate) fn base_url(&self, root: &str) -> String {
        format!("{root}{}", self.base_path)
    }
}

/// The tool results the request-body fixtures replay: a `read_file` refused with
/// `PATH_OUTSIDE_WORKSPACE`, and a `screenshot` holding text and a PNG.
pub(crate) fn failed_read_and_screenshot(read_id: &str, shot_id: &str) -> (ToolResult, ToolResult) {
    let shot = ToolOutput::new(vec![
        ContentBlock::text("Rendered the page."),
        ContentBlock::image("image/png", "iVBORw0KGgo="),
    ])
    .into_result(shot_id, "screenshot");
    let failed = ToolOutput::err("PATH_OUTSIDE_WORKSPACE", "`/etc/passwd` is outside")
        .into_result(read_id, "read_file");
    (failed, shot)
}

/// The assistant turn that made those calls: "Let me look.", then `read_file` with
/// arguments and `screenshot` with none.
pub(crate) fn looking_turn(read_id: &str, shot_id: &str) -> CompletionResponse {
    let mut turn = CompletionResponse::text("Let me look.");
    turn.tool_calls = vec![
        ModelToolCall::parse(read_id, "read_file", r#"{"file_path":"/etc/passwd"}"#),
        ModelToolCall::parse(shot_id, "screenshot", ""),
    ];
    turn
}

/// The fixtures' first user message: a question and a JPEG.
pub(crate) fn picture_question() -> Message {
    Message::new(
        Role::User,
        vec![
            Part::text("What is in this picture?"),
            Part::image("image/jpeg", "/9j/4AAQ"),
        ],
    )
}

/// The events a stream yields against a server answering `reply`, before its error,
/// which must be `PROVIDER_BAD_RESPONSE` saying `reason`.
pub(crate) async fn bad_stream<P: CompletionProvider>(
    client: impl Fn(&TestServer) -> P,
    request: &CompletionRequest,
    reply: Reply,
    reason: &str,
) -> Vec<StreamEvent> {
    let server = TestServer::start(reply).await;
    let (events, err) = drain(client(&server).stream(request)).await;
    let err = err.unwrap();
    assert_eq!(err.code(), "PROVIDER_BAD_RESPONSE");
    assert!(err.to_string().contains(reason), "{err}");
    events
}
