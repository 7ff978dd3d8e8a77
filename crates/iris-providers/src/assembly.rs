//! What the wire formats' readers share while they assemble a turn: the text, refusal,
//! usage, id and model of a [`Draft`], and the tool calls of [`PartialCalls`], each piece
//! queued as the stream event it means as it comes in — so the events of a stream always
//! add up to its turn.

use std::collections::VecDeque;

use crate::chat::{CompletionResponse, ModelToolCall, StopReason, StreamEvent, Usage};
use crate::streaming::Item;

/// A turn being read: everything but its tool calls and stop reason.
#[derive(Debug, Default)]
pub(crate) struct Draft {
    pub(crate) id: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) text: String,
    /// Empty when the model did not refuse.
    pub(crate) refusal: String,
    pub(crate) usage: Usage,
}

impl Draft {
    /// Keeps the first id and model the answer names.
    pub(crate) fn identify(&mut self, id: Option<&str>, model: Option<&str>) {
        if self.id.is_none() {
            self.id = id.map(str::to_owned);
        }
        if self.model.is_none() {
            self.model = model.map(str::to_owned);
        }
    }

    /// The next piece of the text (an empty piece is nothing).
    pub(crate) fn text(&mut self, piece: &str, out: &mut VecDeque<Item>) {
        if !piece.is_empty() {
            self.text.push_str(piece);
            out.push_back(Ok(StreamEvent::TextDelta(piece.to_owned())));
        }
    }

    /// The next piece of a refusal (an empty piece is nothing).
    pub(crate) fn refusal(&mut self, piece: &str, out: &mut VecDeque<Item>) {
        if !piece.is_empty() {
            self.refusal.push_str(piece);
            out.push_back(Ok(StreamEvent::RefusalDelta(piece.to_owned())));
        }
    }

    /// Whether the model refused.
    pub(crate) fn refused(&self) -> bool {
        !self.refusal.is_empty()
    }

    /// The usage so far, announced.
    pub(crate) fn usage(&mut self, usage: Usage, out: &mut VecDeque<Item>) {
        self.usage = usage;
        out.push_back(Ok(StreamEvent::Usage(usage)));
    }

    /// The finished turn (the draft is left empty).
    pub(crate) fn finish(
        &mut self,
        tool_calls: Vec<ModelToolCall>,
        stop: StopReason,
    ) -> CompletionResponse {
        let mut response = CompletionResponse::text(std::mem::take(&mut self.text));
        response.tool_calls = tool_calls;
        response.stop = stop;
        response.usage = self.usage;
        response.refusal = self.refused().then(|| std::mem::take(&mut self.refusal));
        response.id = self.id.take();
        response.model = self.model.take();
        response
    }
}

/// A tool call whose name, id and arguments arrive in pieces.
#[derive(Debug)]
pub(crate) struct PartialCall<K> {
    /// How the wire names the call while it streams (an index, an item id).
    pub(crate) key: K,
    /// Empty until the wire says; `call_<index>` when it never does.
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) arguments: String,
    /// Whether [`StreamEvent::ToolCallStarted`] was queued.
    started: bool,
}

/// The tool calls of a turn, by order of appearance: a call's index is its position.
///
/// A call is announced once its name is known, with the arguments buffered so far;
/// later pieces are queued as they come.
#[derive(Debug)]
pub(crate) struct PartialCalls<K>(Vec<PartialCall<K>>);

impl<K> Default for PartialCalls<K> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<K: PartialEq> PartialCalls<K> {
    /// The index of the call with this key, created when new.
    pub(crate) fn index(&mut self, key: K) -> usize {
        if let Some(index) = self.0.iter().position(|c| c.key == key) {
            return index;
        }
        self.0.push(PartialCall {
            key,
            id: String::new(),
            name: String::new(),
            arguments: String::new(),
            started: false,
        });
        self.0.len() - 1
    }

    /// A call that starts whole, announced at once even without a name (an empty id
    /// becomes `call_<index>`); returns its index.
    pub(crate) fn open(
        &mut self,
        key: K,
        id: String,
        name: String,
        arguments: String,
        out: &mut VecDeque<Item>,
    ) -> usize {
        let index = self.0.len();
        self.0.push(PartialCall {
            key,
            id,
            name,
            arguments,
            started: false,
        });
        self.announce(index, out);
        index
    }
}

impl<K> PartialCalls<K> {
    /// The last call.
    pub(crate) fn last(&self) -> Option<&PartialCall<K>> {
        self.0.last()
    }

    /// The call at `index`.
    pub(crate) fn get_mut(&mut self, index: usize) -> &mut PartialCall<K> {
        &mut self.0[index]
    }

    /// Announces the call once its name is known.
    pub(crate) fn start(&mut self, index: usize, out: &mut VecDeque<Item>) {
        let call = &self.0[index];
        if !call.started && !call.name.is_empty() {
            self.announce(index, out);
        }
    }

    fn announce(&mut self, index: usize, out: &mut VecDeque<Item>) {
        let call = &mut self.0[index];
        call.started = true;
        if call.id.is_empty() {
            call.id = format!("call_{index}");
        }
        out.push_back(Ok(StreamEvent::ToolCallStarted {
            index,
            id: call.id.clone(),
            name: call.name.clone(),
        }));
        if !call.arguments.is_empty() {
            out.push_back(Ok(StreamEvent::ToolCallArgumentsDelta {
                index,
                delta: call.arguments.clone(),
            }));
        }
    }

    /// The next piece of a call's arguments, queued once the call is announced.
    pub(crate) fn piece(&mut self, index: usize, piece: &str, out: &mut VecDeque<Item>) {
        if piece.is_empty() {
            return;
        }
        let call = &mut self.0[index];
        call.arguments.push_str(piece);
        if call.started {
            out.push_back(Ok(StreamEvent::ToolCallArgumentsDelta {
                index,
                delta: piece.to_owned(),
            }));
        }
    }

    /// A call's whole arguments: whatever the pieces did not bring yet is added.
    pub(crate) fn complete(&mut self, index: usize, full: &str, out: &mut VecDeque<Item>) {
        if let Some(rest) = full.strip_prefix(self.0[index].arguments.as_str()) {
            let rest = rest.to_owned();
            self.piece(index, &rest, out);
        }
    }

    /// The calls, parsed (the list is left empty).
    pub(crate) fn finish(&mut self) -> Vec<ModelToolCall> {
        std::mem::take(&mut self.0)
            .into_iter()
            .enumerate()
            .map(|(index, call)| {
                let id = if call.id.is_empty() {
                    format!("call_{index}")
                } else {
                    call.id
                };
                ModelToolCall::parse(id, call.name, call.arguments)
            })
            .collect()
    }
}
