//! [`History`]: a conversation's messages, shared instead of copied.
//!
//! A run loop keeps one history and sends all of it with every model request, and a
//! run store keeps what it persisted of it. Copying the messages for each of those
//! made every turn cost in proportion to the conversation's length. A `History` holds
//! each message behind an [`Arc`], in chunks that are themselves shared: a clone (a
//! request's copy, a store's snapshot) copies one pointer per 64 messages, and a
//! push copies at most one chunk's pointers when a snapshot shares the last chunk.
//!
//! Messages are never changed in place while something else shares them: every
//! mutation goes through [`Arc::make_mut`], which copies a shared chunk or message
//! first. So pointer identity implies equal contents, and
//! [`is_prefix_of`](History::is_prefix_of) tells a store cheaply whether a history
//! only grew since its snapshot (the new messages can be appended) or was changed.
//!
//! ```
//! use iris_providers::chat::{History, Message};
//!
//! let mut history = History::new();
//! history.push(Message::user("Hi"));
//! let snapshot = history.clone(); // what a store persisted
//! history.push(Message::assistant("Hello."));
//! assert!(snapshot.is_prefix_of(&history));
//! assert_eq!(history[1].text(), "Hello.");
//!
//! let mut edited = history.clone();
//! edited.set(0, Message::user("Hello?"));
//! assert!(!snapshot.is_prefix_of(&edited));
//! assert_eq!(edited.len(), 2);
//! ```

use std::fmt;
use std::ops::Index;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::chat::Message;

/// Messages per chunk: a clone copies `len / CHUNK` pointers.
pub(crate) const CHUNK: usize = 64;

/// A conversation's messages, oldest first, each behind an `Arc` in shared chunks of 64:
/// a clone copies one pointer per chunk, and appending never copies earlier messages.
///
/// Every chunk but the last holds exactly `CHUNK` (64) messages; the last is never empty.
#[derive(Clone, Default)]
pub struct History {
    chunks: Vec<Arc<Vec<Arc<Message>>>>,
    len: usize,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of messages.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no messages.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends a message (an owned [`Message`] or a shared `Arc<Message>`).
    pub fn push(&mut self, message: impl Into<Arc<Message>>) {
        let message = message.into();
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK => Arc::make_mut(last).push(message),
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(message);
                self.chunks.push(Arc::new(chunk));
            }
        }
        self.len += 1;
    }

    /// Removes and returns the last message.
    pub fn pop(&mut self) -> Option<Arc<Message>> {
        let last = self.chunks.last_mut()?;
        let message = Arc::make_mut(last).pop();
        if last.is_empty() {
            self.chunks.pop();
        }
        self.len -= 1;
        message
    }

    /// Keeps the first `len` messages.
    pub fn truncate(&mut self, len: usize) {
        while self.len > len {
            self.pop();
        }
    }

    /// Replaces message `index` (a no-op past the end).
    pub fn set(&mut self, index: usize, message: impl Into<Arc<Message>>) {
        if let Some(chunk) = self.chunks.get_mut(index / CHUNK)
            && let Some(slot) = Arc::make_mut(chunk).get_mut(index % CHUNK)
        {
            *slot = message.into();
        }
    }

    /// Message `index`.
    pub fn get(&self, index: usize) -> Option<&Message> {
        self.get_shared(index).map(|m| &**m)
    }

    /// Message `index`, shared.
    pub fn get_shared(&self, index: usize) -> Option<&Arc<Message>> {
        self.chunks.get(index / CHUNK)?.get(index % CHUNK)
    }

    /// The last message.
    pub fn last(&self) -> Option<&Message> {
        self.len.checked_sub(1).and_then(|i| self.get(i))
    }

    /// The messages, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Message> + '_ {
        self.shared().map(|m| &**m)
    }

    /// The messages as shared pointers, oldest first.
    pub fn shared(&self) -> impl DoubleEndedIterator<Item = &Arc<Message>> + '_ {
        self.chunks.iter().flat_map(|c| c.iter())
    }

    /// The messages from `start` on, as shared pointers (without walking the ones
    /// before `start`): what a store appends after the part it persisted.
    pub fn shared_from(&self, start: usize) -> impl Iterator<Item = &Arc<Message>> + '_ {
        let (first, skip) = (start / CHUNK, start % CHUNK);
        self.chunks
            .iter()
            .skip(first)
            .flat_map(|c| c.iter())
            .skip(skip)
    }

    /// Owned copies of the messages.
    pub fn to_vec(&self) -> Vec<Message> {
        self.iter().cloned().collect()
    }

    /// Whether `self` is a prefix of `longer` by identity: `longer` holds the very
    /// messages of `self` (the same allocations) first, and maybe more after them. Costs
    /// one pointer comparison per shared chunk, and at most one chunk's messages
    /// compared by pointer. `false` does not mean the contents differ; `true` means
    /// they are equal.
    pub fn is_prefix_of(&self, longer: &History) -> bool {
        if self.len > longer.len {
            return false;
        }
        self.chunks.iter().zip(&longer.chunks).all(|(a, b)| {
            Arc::ptr_eq(a, b) || a.iter().zip(b.iter()).all(|(x, y)| Arc::ptr_eq(x, y))
        })
    }
}

impl fmt::Debug for History {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for History {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len
            && self
                .shared()
                .zip(other.shared())
                .all(|(a, b)| Arc::ptr_eq(a, b) || a == b)
    }
}

impl Index<usize> for History {
    type Output = Message;

    fn index(&self, index: usize) -> &Message {
        match self.get(index) {
            Some(message) => message,
            None => panic!(
                "message index {index} out of range for a history of {} messages",
                self.len
            ),
        }
    }
}

impl<M: Into<Arc<Message>>> Extend<M> for History {
    fn extend<I: IntoIterator<Item = M>>(&mut self, messages: I) {
        for message in messages {
            self.push(message);
        }
    }
}

impl<M: Into<Arc<Message>>> FromIterator<M> for History {
    fn from_iter<I: IntoIterator<Item = M>>(messages: I) -> Self {
        let mut history = History::new();
        history.extend(messages);
        history
    }
}

impl From<Vec<Message>> for History {
    fn from(messages: Vec<Message>) -> Self {
        messages.into_iter().collect()
    }
}

impl<'a> IntoIterator for &'a History {
    type Item = &'a Message;
    type IntoIter = Box<dyn DoubleEndedIterator<Item = &'a Message> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

/// The serde form is a list of messages, as a `Vec<Message>`'s.
impl Serialize for History {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for History {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Vec::<Message>::deserialize(deserializer)?.into())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Tests fail by panicking.
    use super::*;

    fn numbered(n: usize) -> History {
        (0..n).map(|i| Message::user(i.to_string())).collect()
    }

    #[test]
    fn chunks_hold_the_messages_in_order_across_boundaries() {
        let mut h = numbered(CHUNK * 2 + 3);
        assert_eq!(h.len(), CHUNK * 2 + 3);
        assert_eq!(h[CHUNK].text(), CHUNK.to_string());
        let texts: Vec<String> = h.iter().map(Message::text).collect();
        assert_eq!(texts.len(), h.len());
        assert!(texts.iter().enumerate().all(|(i, t)| *t == i.to_string()));
        let tail: Vec<String> = h.shared_from(CHUNK - 1).map(|m| m.text()).collect();
        assert_eq!(tail.first().map(String::as_str), Some("63"));
        assert_eq!(tail.len(), CHUNK + 4);
        assert_eq!(h.iter().next_back().map(Message::text), Some("130".into()));
        h.truncate(CHUNK);
        assert_eq!((h.len(), h.chunks.len()), (CHUNK, 1));
        assert_eq!(h.last().map(Message::text), Some("63".into()));
        assert_eq!(h.shared_from(CHUNK).count(), 0);
    }

    #[test]
    fn a_snapshot_is_a_prefix_until_a_shared_message_changes() {
        let mut h = numbered(CHUNK + 1);
        let snapshot = h.clone();
        h.push(Message::assistant("more"));
        assert!(snapshot.is_prefix_of(&h));
        assert!(snapshot.is_prefix_of(&snapshot));
        assert!(!h.is_prefix_of(&snapshot));
        // A change copies the shared chunk: the snapshot keeps its message.
        let mut edited = h.clone();
        edited.set(3, Message::user("three"));
        assert_eq!(snapshot[3].text(), "3");
        assert!(!snapshot.is_prefix_of(&edited));
        // Popping into the snapshot's part and pushing equal contents back is not
        // the same history by identity (a store rewrites it).
        let mut redone = h.clone();
        redone.truncate(CHUNK);
        redone.push(Message::user(CHUNK.to_string()));
        assert!(!snapshot.is_prefix_of(&redone));
        assert_eq!(redone[CHUNK], snapshot[CHUNK]);
        // Equal contents compare equal whatever the sharing.
        assert_eq!(numbered(CHUNK + 1), snapshot);
    }

    #[test]
    fn the_serde_form_is_a_list_of_messages() {
        let h = numbered(3);
        let json = serde_json::to_value(&h).unwrap();
        assert_eq!(json, serde_json::to_value(h.to_vec()).unwrap());
        let back: History = serde_json::from_value(json).unwrap();
        assert_eq!(back, h);
    }
}
