//! The SSE stream driver the HTTP clients share, and the replay of a whole turn as
//! stream events (for non-streamed answers and scripts).

use std::collections::VecDeque;

use iris_tools_core::BoxFuture;
use reqwest::Response;

use crate::chat::{CompletionResponse, StreamEvent};
use crate::http::{Transport, is_event_stream};
use crate::provider::{ProviderStream, unfold};
use crate::provider_error::ProviderError;
use crate::sse::{SseDecoder, SseEvent};

/// What a queued stream item is.
pub(crate) type Item = Result<StreamEvent, ProviderError>;

/// One wire format's reading of an SSE stream.
pub(crate) trait SseHandler: Send {
    /// Handles one event, queueing what it means. Returns `true` when the event ends
    /// the stream (OpenAI's `[DONE]`, Anthropic's `message_stop`).
    fn event(&mut self, event: SseEvent, out: &mut VecDeque<Item>) -> Result<bool, ProviderError>;

    /// The assembled turn once the stream ended: `terminated` says whether the format's
    /// terminator arrived or the body just ended.
    fn finish(&mut self, terminated: bool) -> Result<CompletionResponse, ProviderError>;

    /// A server that ignored `stream: true` and answered one JSON body.
    fn whole_body(&mut self, body: &[u8]) -> Result<CompletionResponse, ProviderError>;
}

enum State<'a, H> {
    Opening(BoxFuture<'a, Result<Response, ProviderError>>, H),
    // Boxed: the running state is large and lives for the whole stream.
    Running(Box<Running<H>>),
    Done,
}

struct Running<H> {
    response: Option<Response>,
    decoder: SseDecoder,
    handler: H,
    queue: VecDeque<Item>,
}

/// The stream of a request: `open` sends it, `handler` reads the events.
pub(crate) fn sse_stream<'a, H: SseHandler + 'a>(
    transport: &'a Transport,
    open: BoxFuture<'a, Result<Response, ProviderError>>,
    handler: H,
) -> ProviderStream<'a> {
    unfold(State::Opening(open, handler), move |state| {
        Box::pin(async move {
            let mut running = match state {
                State::Done => return None,
                State::Opening(open, mut handler) => match open.await {
                    Err(error) => return Some((Err(error), State::Done)),
                    Ok(response) if !is_event_stream(&response) => {
                        let whole = match transport.read_all(response).await {
                            Ok(body) => handler.whole_body(&body),
                            Err(error) => Err(error),
                        };
                        let queue = match whole {
                            Ok(turn) => replay_events(turn).into_iter().map(Ok).collect(),
                            Err(error) => VecDeque::from([Err(error)]),
                        };
                        Box::new(Running {
                            response: None,
                            decoder: SseDecoder::default(),
                            handler,
                            queue,
                        })
                    }
                    Ok(response) => Box::new(Running {
                        response: Some(response),
                        decoder: SseDecoder::default(),
                        handler,
                        queue: VecDeque::new(),
                    }),
                },
                State::Running(running) => running,
            };
            loop {
                if let Some(item) = running.queue.pop_front() {
                    let next = if item.is_err() {
                        State::Done
                    } else {
                        State::Running(running)
                    };
                    return Some((item, next));
                }
                let response = running.response.as_mut()?;
                let ended = match transport.next_events(response, &mut running.decoder).await {
                    Err(error) => return Some((Err(error), State::Done)),
                    Ok(None) => Some(false),
                    Ok(Some(events)) => {
                        let mut ended = None;
                        for event in events {
                            match running.handler.event(event, &mut running.queue) {
                                Ok(false) => {}
                                Ok(true) => {
                                    ended = Some(true);
                                    break;
                                }
                                Err(error) => {
                                    running.queue.push_back(Err(error));
                                    running.response = None;
                                    break;
                                }
                            }
                        }
                        ended
                    }
                };
                if let Some(terminated) = ended {
                    // Anything after the terminator is ignored; dropping the response
                    // closes the connection.
                    running.response = None;
                    let turn = running.handler.finish(terminated);
                    running.queue.push_back(turn.map(StreamEvent::Completed));
                }
            }
        })
    })
}

/// A whole turn as the events a stream of it would yield.
pub(crate) fn replay_events(turn: CompletionResponse) -> Vec<StreamEvent> {
    let mut events = Vec::new();
    if !turn.text.is_empty() {
        events.push(StreamEvent::TextDelta(turn.text.clone()));
    }
    if let Some(refusal) = turn.refusal.as_ref().filter(|r| !r.is_empty()) {
        events.push(StreamEvent::RefusalDelta(refusal.clone()));
    }
    for (index, call) in turn.tool_calls.iter().enumerate() {
        events.push(StreamEvent::ToolCallStarted {
            index,
            id: call.id.clone(),
            name: call.name.clone(),
        });
        if !call.raw_arguments.is_empty() {
            events.push(StreamEvent::ToolCallArgumentsDelta {
                index,
                delta: call.raw_arguments.clone(),
            });
        }
    }
    events.push(StreamEvent::Usage(turn.usage));
    events.push(StreamEvent::Completed(turn));
    events
}
