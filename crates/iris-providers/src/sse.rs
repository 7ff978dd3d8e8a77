//! A Server-Sent Events decoder (the WHATWG `text/event-stream` rules), fed with the
//! body's bytes as they arrive.
//!
//! Lines end with `\n`, `\r\n` or `\r`; `event:` names the event, `data:` lines are
//! joined with `\n`, one space after the colon is dropped, `:` lines are comments, `id:`
//! and `retry:` are ignored (a model answer is never resumed), and a blank line
//! dispatches the event. An event still open when the body ends is dropped, as the
//! standard says; the clients treat a missing terminator as a truncated stream.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, or `message` when there was none.
    pub(crate) event: String,
    /// The `data:` lines joined with `\n`.
    pub(crate) data: String,
}

/// The decoder state between chunks.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    /// Bytes not yet split into lines.
    buf: Vec<u8>,
    /// How much of `buf` is known to hold no line terminator.
    scanned: usize,
    event: String,
    data: String,
    has_data: bool,
    /// Bytes of the event being built, for the size cap.
    event_bytes: usize,
}

/// The largest event (or line) accepted: a model's tool arguments fit easily, a runaway
/// stream does not exhaust memory.
pub(crate) const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

impl SseDecoder {
    /// Feeds the next bytes; returns the events they complete.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, String> {
        self.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        let mut i = self.scanned;
        while i < self.buf.len() {
            let b = self.buf[i];
            if b != b'\n' && b != b'\r' {
                i += 1;
                continue;
            }
            let end = i;
            if b == b'\r' {
                match self.buf.get(i + 1) {
                    // `\r` as the last byte: it may be the first half of `\r\n`.
                    None => break,
                    Some(b'\n') => i += 1,
                    Some(_) => {}
                }
            }
            let line = String::from_utf8_lossy(&self.buf[start..end]).into_owned();
            i += 1;
            start = i;
            if let Some(event) = self.line(&line)? {
                events.push(event);
            }
        }
        self.buf.drain(..start);
        self.scanned = i - start;
        if self.buf.len() > MAX_EVENT_BYTES {
            return Err(format!(
                "a stream line is longer than {MAX_EVENT_BYTES} bytes"
            ));
        }
        Ok(events)
    }

    fn line(&mut self, line: &str) -> Result<Option<SseEvent>, String> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
        self.event_bytes += line.len();
        if self.event_bytes > MAX_EVENT_BYTES {
            return Err(format!(
                "a stream event is larger than {MAX_EVENT_BYTES} bytes"
            ));
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        let data = std::mem::take(&mut self.data);
        let has_data = std::mem::replace(&mut self.has_data, false);
        self.event_bytes = 0;
        // An event with no data is not dispatched (the standard's rule).
        has_data.then(|| SseEvent {
            event: if event.is_empty() {
                "message".to_owned()
            } else {
                event
            },
            data,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Tests fail by panicking.

    use super::*;

    fn decode_in_pieces(text: &str, piece: usize) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::default();
        let mut events = Vec::new();
        for chunk in text.as_bytes().chunks(piece) {
            events.extend(decoder.feed(chunk).unwrap());
        }
        events
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn events_survive_any_chunking_and_every_line_ending() {
        let text = ": comment\nevent: a\ndata: one\ndata:two\n\r\ndata: {\"x\": \"é\"}\r\rid: 7\nretry: 10\ndata: last\r\n\r\ndata: open";
        let expected = vec![
            ev("a", "one\ntwo"),
            ev("message", "{\"x\": \"é\"}"),
            ev("message", "last"),
        ];
        for piece in 1..text.len() {
            assert_eq!(
                decode_in_pieces(text, piece),
                expected,
                "piece size {piece}"
            );
        }
    }

    #[test]
    fn an_event_without_data_is_not_dispatched() {
        assert_eq!(decode_in_pieces("event: ping\n\n", 4), vec![]);
    }
}
