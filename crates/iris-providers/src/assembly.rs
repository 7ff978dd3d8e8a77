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

    /// The usage so far, announced only when it differs from what was (a stream that
    /// repeats it in every chunk).
    pub(crate) fn usage_changed(&mut self, usage: Usage, out: &mut VecDeque<Item>) {
        if self.usage != usage {
            self.usage(usage, out);
        }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Tests fail by panicking.

    use super::*;

    fn events(out: &mut VecDeque<Item>) -> Vec<StreamEvent> {
        out.drain(..).map(Result::unwrap).collect()
    }

    #[test]
    fn a_call_is_announced_once_named_with_what_was_buffered() {
        let mut calls = PartialCalls::default();
        let mut out = VecDeque::new();
        let index = calls.index("fc_1");
        calls.piece(index, "{\"a\"", &mut out);
        calls.start(index, &mut out);
        assert_eq!(events(&mut out), vec![], "no name yet");
        calls.get_mut(index).name = "read".into();
        calls.start(index, &mut out);
        calls.start(index, &mut out);
        calls.piece(index, ": 1", &mut out);
        calls.piece(index, "", &mut out);
        // The whole arguments add only what the pieces did not bring.
        calls.complete(index, "{\"a\": 1}", &mut out);
        calls.complete(index, "{\"a\": 1}", &mut out);
        assert_eq!(
            events(&mut out),
            vec![
                StreamEvent::ToolCallStarted {
                    index: 0,
                    id: "call_0".into(),
                    name: "read".into()
                },
                StreamEvent::ToolCallArgumentsDelta {
                    index: 0,
                    delta: "{\"a\"".into()
                },
                StreamEvent::ToolCallArgumentsDelta {
                    index: 0,
                    delta: ": 1".into()
                },
                StreamEvent::ToolCallArgumentsDelta {
                    index: 0,
                    delta: "}".into()
                },
            ]
        );
        assert_eq!(calls.index("fc_1"), 0);
        let opened = calls.open("fc_2", String::new(), String::new(), "{}".into(), &mut out);
        assert_eq!(opened, 1);
        assert_eq!(events(&mut out).len(), 2, "announced at once, even unnamed");
        let parsed = calls.finish();
        assert_eq!(parsed[0].id, "call_0");
        assert_eq!(parsed[0].arguments, serde_json::json!({"a": 1}));
        assert_eq!(parsed[1].id, "call_1");
        assert!(calls.finish().is_empty());
    }

    #[test]
    fn a_draft_keeps_the_first_id_and_becomes_the_turn() {
        let mut draft = Draft::default();
        let mut out = VecDeque::new();
        draft.identify(Some("r1"), None);
        draft.identify(Some("r2"), Some("m"));
        draft.text("Hel", &mut out);
        draft.text("", &mut out);
        draft.text("lo", &mut out);
        assert!(!draft.refused());
        draft.usage(Usage::new(3, 2), &mut out);
        assert_eq!(
            events(&mut out),
            vec![
                StreamEvent::TextDelta("Hel".into()),
                StreamEvent::TextDelta("lo".into()),
                StreamEvent::Usage(Usage::new(3, 2)),
            ]
        );
        let turn = draft.finish(Vec::new(), StopReason::EndTurn);
        assert_eq!(turn.text, "Hello");
        assert_eq!(turn.id.as_deref(), Some("r1"));
        assert_eq!(turn.model.as_deref(), Some("m"));
        assert_eq!(turn.refusal, None);
        assert_eq!(turn.usage, Usage::new(3, 2));

        let mut refusing = Draft::default();
        refusing.refusal("No.", &mut out);
        assert!(refusing.refused());
        let turn = refusing.finish(Vec::new(), StopReason::Refusal);
        assert_eq!(turn.refusal.as_deref(), Some("No."));
    }
}
