//! Helpers shared by the test modules; the local HTTP server that answers with the
//! providers' documented wire format (JSON bodies and chunked SSE streams) and the SSE
//! encodings are iris-test-support's.
// Each module uses a different subset of the helpers.
#![allow(dead_code)]
// A broken test server should fail the test loudly, so unwrap is the right tool here.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use iris_providers::chat::{
    CompletionRequest, CompletionResponse, Message, ModelToolCall, Part, Role, StreamEvent,
};
use iris_providers::retry::{RetryPolicy, RetryingProvider};
use iris_providers::{CompletionProvider, ProviderError, ProviderStream, next};
use iris_tools_core::{ContentBlock, ToolOutput, ToolResult, ToolSpec};
use serde_json::{Value, json};

pub(crate) use iris_test_support::http::{Reply, TestServer};
pub(crate) use iris_test_support::sse::{anthropic_sse, gemini_sse, openai_sse, responses_sse};

/// The key every test client sends; tests check it never leaks.
pub(crate) const TEST_KEY: &str = "sk-test-key-0123456789abcdef";

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
