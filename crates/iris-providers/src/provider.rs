//! The [`CompletionProvider`] trait every wire format implements, and the stream helpers
//! that go with it.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;
use iris_tools_core::BoxFuture;

use crate::chat::{CompletionRequest, CompletionResponse, StreamEvent};
use crate::provider_error::ProviderError;

/// A streamed model turn: events, then the end. Boxed so that
/// [`CompletionProvider`] stays object-safe.
pub type ProviderStream<'a> =
    Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send + 'a>>;

/// One model behind one wire format: the provider layer the run loop stands on.
///
/// Object-safe (`Arc<dyn CompletionProvider>`), with boxed futures and streams like the
/// rest of Iris. Implementations own their whole format: request encoding (messages,
/// tools, tool results with images), streaming, tool-call assembly, usage, errors.
///
/// * [`stream`](Self::stream) yields [`StreamEvent`]s ending with exactly one
///   [`StreamEvent::Completed`]; on failure it yields one `Err` and ends. Dropping the
///   stream abandons the request (the connection is closed).
/// * [`complete`](Self::complete) returns the assembled turn; the default drains
///   `stream` with [`collect`].
///
/// Malformed tool-call arguments never fail a request: they arrive as
/// [`ModelToolCall::problem`](crate::chat::ModelToolCall::problem).
///
/// ```
/// use iris_providers::{CompletionProvider, ScriptedProvider};
/// use iris_providers::chat::{CompletionRequest, Message};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let provider: std::sync::Arc<dyn CompletionProvider> =
///     std::sync::Arc::new(ScriptedProvider::from_yaml("- text: Hello!")?);
/// let request = CompletionRequest::new("scripted").with_message(Message::user("Hi"));
/// let turn = provider.complete(&request).await?;
/// assert_eq!(turn.text, "Hello!");
/// # Ok::<(), iris_providers::ProviderError>(())
/// # }).unwrap();
/// ```
pub trait CompletionProvider: Send + Sync {
    /// The provider's stable name as the agent YAML's `model.provider` spells it
    /// (`openai`, `openai-responses`, `anthropic`, `gemini`, `scripted`); for `openai`
    /// and `anthropic` also OpenTelemetry's `gen_ai.provider.name`.
    fn name(&self) -> &str;

    /// Streams one model turn.
    fn stream<'a>(&'a self, request: &'a CompletionRequest) -> ProviderStream<'a>;

    /// One model turn, complete. The default drains [`CompletionProvider::stream`].
    fn complete<'a>(
        &'a self,
        request: &'a CompletionRequest,
    ) -> BoxFuture<'a, Result<CompletionResponse, ProviderError>> {
        Box::pin(collect(self.stream(request)))
    }
}

impl fmt::Debug for dyn CompletionProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompletionProvider")
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}

impl<P: CompletionProvider + ?Sized> CompletionProvider for Arc<P> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn stream<'a>(&'a self, request: &'a CompletionRequest) -> ProviderStream<'a> {
        (**self).stream(request)
    }

    fn complete<'a>(
        &'a self,
        request: &'a CompletionRequest,
    ) -> BoxFuture<'a, Result<CompletionResponse, ProviderError>> {
        (**self).complete(request)
    }
}

impl<P: CompletionProvider + ?Sized> CompletionProvider for Box<P> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn stream<'a>(&'a self, request: &'a CompletionRequest) -> ProviderStream<'a> {
        (**self).stream(request)
    }

    fn complete<'a>(
        &'a self,
        request: &'a CompletionRequest,
    ) -> BoxFuture<'a, Result<CompletionResponse, ProviderError>> {
        (**self).complete(request)
    }
}

/// The next item of a stream (what `StreamExt::next` does, without a dependency on
/// `futures-util`).
///
/// ```
/// use iris_providers::{CompletionProvider, ScriptedProvider, next};
/// use iris_providers::chat::{CompletionRequest, StreamEvent};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let provider = ScriptedProvider::from_yaml("- text: Hi")?;
/// let request = CompletionRequest::new("scripted");
/// let mut stream = provider.stream(&request);
/// let mut text = String::new();
/// while let Some(event) = next(&mut stream).await {
///     if let StreamEvent::TextDelta(delta) = event? {
///         text.push_str(&delta);
///     }
/// }
/// assert_eq!(text, "Hi");
/// # Ok::<(), iris_providers::ProviderError>(())
/// # }).unwrap();
/// ```
pub async fn next<S: Stream + Unpin + ?Sized>(stream: &mut S) -> Option<S::Item> {
    std::future::poll_fn(|cx| Pin::new(&mut *stream).poll_next(cx)).await
}

/// Drains a stream into its [`StreamEvent::Completed`] turn.
///
/// # Errors
/// The stream's own error, or `PROVIDER_BAD_RESPONSE` when it ends without a completed
/// turn.
pub async fn collect(mut stream: ProviderStream<'_>) -> Result<CompletionResponse, ProviderError> {
    while let Some(event) = next(&mut stream).await {
        if let StreamEvent::Completed(response) = event? {
            return Ok(response);
        }
    }
    Err(ProviderError::BadResponse {
        reason: "the stream ended without a completed turn".into(),
    })
}

/// A step of an [`unfold`] stream: the next item and the state after it, or the end.
pub(crate) type Step<'a, S> = BoxFuture<'a, Option<(Result<StreamEvent, ProviderError>, S)>>;

/// A stream driven by a state machine: `step(state)` yields the next item and the new
/// state, or `None` at the end (`futures::stream::unfold`, without the dependency).
pub(crate) fn unfold<'a, S, F>(state: S, step: F) -> ProviderStream<'a>
where
    S: Send + 'a,
    F: FnMut(S) -> Step<'a, S> + Send + 'a,
{
    Box::pin(Unfold {
        state: Some(state),
        step,
        pending: None,
    })
}

/// A stream that yields `items`, then ends.
pub(crate) fn iter<'a>(
    items: impl IntoIterator<Item = Result<StreamEvent, ProviderError>>,
) -> ProviderStream<'a> {
    let items: std::collections::VecDeque<_> = items.into_iter().collect();
    unfold(items, |mut items| {
        Box::pin(async move { items.pop_front().map(|item| (item, items)) })
    })
}

struct Unfold<'a, S, F> {
    state: Option<S>,
    step: F,
    pending: Option<Step<'a, S>>,
}

// The state is moved into the step's boxed future and never pinned in place, so the
// stream may move freely whatever `S` and `F` are.
impl<S, F> Unpin for Unfold<'_, S, F> {}

impl<'a, S, F> Stream for Unfold<'a, S, F>
where
    F: FnMut(S) -> Step<'a, S>,
{
    type Item = Result<StreamEvent, ProviderError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let pending = match &mut this.pending {
            Some(pending) => pending,
            None => {
                let Some(state) = this.state.take() else {
                    return Poll::Ready(None);
                };
                this.pending.insert((this.step)(state))
            }
        };
        match pending.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(next) => {
                this.pending = None;
                Poll::Ready(next.map(|(item, state)| {
                    this.state = Some(state);
                    item
                }))
            }
        }
    }
}
