//! The request path the HTTP clients share: one [`WireFormat`] says what is particular
//! to a provider's wire (endpoint, key header, body, the reading of an answer); sending,
//! status mapping, the non-streamed read and the SSE stream are written once here, over
//! [`Transport`] and [`sse_stream`].
//!
//! Also the small helpers every wire format's encoding and decoding use.

use reqwest::header::{HeaderMap, HeaderName};
use serde_json::Value;

use crate::chat::{CompletionRequest, CompletionResponse, Message, Role};
use crate::http::Transport;
use crate::provider::{ProviderStream, iter};
use crate::provider_error::ProviderError;
use crate::sse::SseEvent;
use crate::streaming::{SseHandler, sse_stream};

/// What is particular to one provider's HTTP wire; [`complete`] and [`stream`] do the
/// rest.
pub(crate) trait WireFormat: Sync {
    /// The reader of one answer: its stream events, or its whole body.
    type Reader: SseHandler;

    /// The connection settings and the key.
    fn transport(&self) -> &Transport;

    /// The path under the base URL (`chat/completions`, `v1/messages`, …).
    fn endpoint(&self, request: &CompletionRequest, stream: bool) -> Result<String, ProviderError>;

    /// The JSON body sent for `request`.
    fn body(&self, request: &CompletionRequest, stream: bool) -> Result<Value, ProviderError>;

    /// The header that carries the key, and what goes before the key in it
    /// (`Bearer `); no key header is sent when the key is blank.
    fn key_header(&self) -> (HeaderName, &'static str);

    /// Headers sent besides the key (Anthropic's `anthropic-version`).
    fn extra_headers(&self, _headers: &mut HeaderMap) -> Result<(), ProviderError> {
        Ok(())
    }

    /// A reader for the answer to `request`.
    fn reader(&self, request: &CompletionRequest) -> Self::Reader;
}

/// The headers of a request: the key (marked sensitive), then the format's others.
fn headers<W: WireFormat>(wire: &W) -> Result<HeaderMap, ProviderError> {
    let key = &wire.transport().key;
    let mut headers = HeaderMap::new();
    if !key.is_blank() {
        let (name, prefix) = wire.key_header();
        headers.insert(name, key.header(prefix)?);
    }
    wire.extra_headers(&mut headers)?;
    Ok(headers)
}

/// Implements [`CompletionProvider`](crate::provider::CompletionProvider) for a
/// [`WireFormat`] client: its name, then [`stream`] and [`complete`].
macro_rules! http_provider {
    ($client:ty, $name:literal) => {
        impl $crate::provider::CompletionProvider for $client {
            fn name(&self) -> &str {
                $name
            }

            fn stream<'a>(
                &'a self,
                request: &'a $crate::chat::CompletionRequest,
            ) -> $crate::provider::ProviderStream<'a> {
                $crate::client::stream(self, request)
            }

            fn complete<'a>(
                &'a self,
                request: &'a $crate::chat::CompletionRequest,
            ) -> iris_tools_core::BoxFuture<
                'a,
                Result<$crate::chat::CompletionResponse, $crate::provider_error::ProviderError>,
            > {
                Box::pin($crate::client::complete(self, request))
            }
        }
    };
}
pub(crate) use http_provider;

/// Everything a request needs before it is sent, in the order its errors are checked:
/// the endpoint, the body, the headers.
fn prepare<W: WireFormat>(
    wire: &W,
    request: &CompletionRequest,
    stream: bool,
) -> Result<(String, Value, HeaderMap), ProviderError> {
    let path = wire.endpoint(request, stream)?;
    let body = wire.body(request, stream)?;
    Ok((path, body, headers(wire)?))
}

/// One non-streamed turn: sent once (no retries here), read whole.
pub(crate) async fn complete<W: WireFormat>(
    wire: &W,
    request: &CompletionRequest,
) -> Result<CompletionResponse, ProviderError> {
    let (path, body, headers) = prepare(wire, request, false)?;
    let transport = wire.transport();
    let response = transport.post(&path, headers, &body).await?;
    let bytes = transport.read_all(response).await?;
    wire.reader(request).whole_body(&bytes)
}

/// One streamed turn; a request that cannot be prepared is a stream of its error.
pub(crate) fn stream<'a, W: WireFormat>(
    wire: &'a W,
    request: &'a CompletionRequest,
) -> ProviderStream<'a>
where
    W::Reader: 'a,
{
    let (path, body, headers) = match prepare(wire, request, true) {
        Ok(prepared) => prepared,
        Err(error) => return iter([Err(error)]),
    };
    let transport = wire.transport();
    let open = Box::pin(async move { transport.post(&path, headers, &body).await });
    sse_stream(transport, open, wire.reader(request))
}

// ---------------------------------------------------------------------------------------
// Helpers of the wire formats

/// A request the wire format cannot express.
pub(crate) fn invalid(message: impl Into<String>) -> ProviderError {
    ProviderError::InvalidRequest {
        status: None,
        message: message.into(),
    }
}

/// An answer that is not what the wire format documents.
pub(crate) fn bad(reason: impl Into<String>) -> ProviderError {
    ProviderError::BadResponse {
        reason: reason.into(),
    }
}

/// A whole answer's body as JSON.
pub(crate) fn json_body(bytes: &[u8]) -> Result<Value, ProviderError> {
    serde_json::from_slice(bytes).map_err(|e| bad(format!("the body is not JSON ({e})")))
}

/// A stream event's data as JSON.
pub(crate) fn json_event(event: &SseEvent) -> Result<Value, ProviderError> {
    serde_json::from_str(&event.data).map_err(|e| bad(format!("a stream event is not JSON ({e})")))
}

/// The text of a [`Role::System`](crate::chat::Role::System) message, which may hold
/// nothing else.
pub(crate) fn system_text(message: &Message) -> Result<String, ProviderError> {
    if message.content.iter().any(|p| p.as_text().is_none()) {
        return Err(invalid("a system message may hold text only"));
    }
    Ok(message.text())
}

/// Messages as `(role, parts)`.
pub(crate) type Turns<T> = Vec<(&'static str, Vec<T>)>;

/// How a format encodes one message's content.
pub(crate) type Encode<T> = fn(&Message) -> Result<Vec<T>, ProviderError>;

/// A conversation for the formats that keep the system text apart and want the roles
/// to alternate (Anthropic, Gemini): the instructions and system messages joined by a
/// blank line, and the other messages as `(role, parts)` — assistant messages by
/// `assistant`, user and tool messages as `user` by `user`, empty ones dropped, and
/// consecutive ones of one role merged by `merge`.
pub(crate) fn alternating<T>(
    request: &CompletionRequest,
    assistant: (&'static str, Encode<T>),
    user: Encode<T>,
    merge: fn(&mut Vec<T>, Vec<T>),
) -> Result<(String, Turns<T>), ProviderError> {
    let mut system: Vec<String> = request
        .instructions
        .iter()
        .filter(|i| !i.is_empty())
        .cloned()
        .collect();
    let mut out: Turns<T> = Vec::new();
    for message in &request.messages {
        let (role, parts) = match message.role {
            Role::System => {
                system.push(system_text(message)?);
                continue;
            }
            Role::Assistant => (assistant.0, assistant.1(message)?),
            Role::User | Role::Tool => ("user", user(message)?),
        };
        if parts.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last, existing)) if *last == role => merge(existing, parts),
            _ => out.push((role, parts)),
        }
    }
    Ok((system.join("\n\n"), out))
}

/// Arguments as the wire's JSON text; a string is raw text of malformed arguments
/// ([`ModelToolCall::to_part`](crate::chat::ModelToolCall::to_part)) and goes back
/// verbatim.
pub(crate) fn argument_text(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

/// Arguments as an object, for the formats that send them as JSON (`input`, `args`): a
/// call whose arguments were malformed is recorded with none (its tool result says what
/// was wrong).
pub(crate) fn argument_object(arguments: &Value) -> Value {
    match arguments {
        Value::Object(_) => arguments.clone(),
        _ => Value::Object(serde_json::Map::new()),
    }
}
