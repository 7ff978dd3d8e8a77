//! Bounded output capture: keeps the head and the tail of a stream, counts the rest.
//!
//! A command may print gigabytes; the service keeps at most `limit` bytes per stream
//! (half from the start, half from the end) whatever the process writes, so memory
//! stays bounded while streaming. Dropped bytes are counted, never stored.

use std::collections::VecDeque;

use crate::request::{OutputStats, StreamStats};

/// Default per-stream byte limit (1 MiB: 512 KiB head + 512 KiB tail).
pub const DEFAULT_OUTPUT_LIMIT_BYTES: usize = 1024 * 1024;

/// Captures one stream within a byte limit.
#[derive(Debug)]
pub(crate) struct StreamCapture {
    head: Vec<u8>,
    head_cap: usize,
    tail: VecDeque<u8>,
    tail_cap: usize,
    seen: u64,
}

impl StreamCapture {
    pub(crate) fn new(limit: usize) -> Self {
        let head_cap = limit - limit / 2;
        Self {
            head: Vec::new(),
            head_cap,
            tail: VecDeque::new(),
            tail_cap: limit / 2,
            seen: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.seen += bytes.len() as u64;
        if self.head.len() < self.head_cap {
            let take = bytes.len().min(self.head_cap - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.is_empty() || self.tail_cap == 0 {
            return;
        }
        if bytes.len() >= self.tail_cap {
            // The chunk alone fills the tail: keep its end only.
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    fn kept(&self) -> u64 {
        (self.head.len() + self.tail.len()) as u64
    }

    pub(crate) fn stats(&self) -> StreamStats {
        StreamStats {
            bytes_seen: self.seen,
            bytes_kept: self.kept(),
            bytes_dropped: self.seen - self.kept(),
        }
    }

    /// The text: lossy UTF-8; when bytes were dropped, the head and the tail are cut at
    /// character boundaries and joined by a marker line.
    pub(crate) fn text(&self, name: &str) -> String {
        let dropped = self.seen - self.kept();
        if dropped == 0 {
            let mut all = self.head.clone();
            all.extend(self.tail.iter());
            return String::from_utf8_lossy(&all).into_owned();
        }
        let head = trim_head(&self.head);
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let tail = trim_tail(&tail);
        let mut text = String::from_utf8_lossy(head).into_owned();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "[... {dropped} bytes of {name} dropped; {} kept ...]\n",
            self.kept()
        ));
        text.push_str(&String::from_utf8_lossy(tail));
        text
    }
}

/// Drops a trailing partial UTF-8 character from the head.
fn trim_head(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Err(e) if e.error_len().is_none() => &bytes[..e.valid_up_to()],
        _ => bytes,
    }
}

/// Drops leading UTF-8 continuation bytes (at most three) from the tail.
fn trim_tail(bytes: &[u8]) -> &[u8] {
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|b| (**b & 0xC0) == 0x80)
        .count();
    &bytes[skip..]
}

/// stdout and stderr of one execution.
#[derive(Debug)]
pub(crate) struct Captures {
    pub(crate) stdout: StreamCapture,
    pub(crate) stderr: StreamCapture,
}

impl Captures {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            stdout: StreamCapture::new(limit),
            stderr: StreamCapture::new(limit),
        }
    }

    pub(crate) fn stats(&self) -> OutputStats {
        OutputStats {
            stdout: self.stdout.stats(),
            stderr: self.stderr.stats(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(limit: usize, chunks: &[&[u8]], expect_text: &str, expect: (u64, u64, u64)) {
        let mut capture = StreamCapture::new(limit);
        for chunk in chunks {
            capture.push(chunk);
        }
        let stats = capture.stats();
        assert_eq!(
            (stats.bytes_seen, stats.bytes_kept, stats.bytes_dropped),
            expect,
            "{chunks:?}"
        );
        assert_eq!(capture.text("stdout"), expect_text, "{chunks:?}");
    }

    #[test]
    fn head_and_tail_table() {
        check(8, &[b"abc"], "abc", (3, 3, 0));
        check(8, &[b"abcdefgh"], "abcdefgh", (8, 8, 0));
        check(8, &[b"abcd", b"efgh"], "abcdefgh", (8, 8, 0));
        check(
            8,
            &[b"abcdefghij"],
            "abcd\n[... 2 bytes of stdout dropped; 8 kept ...]\nghij",
            (10, 8, 2),
        );
        check(
            8,
            &[b"ab", b"cd", b"ef", b"gh", b"ij", b"kl"],
            "abcd\n[... 4 bytes of stdout dropped; 8 kept ...]\nijkl",
            (12, 8, 4),
        );
        check(
            4,
            &[b"0123456789", b"x"],
            "01\n[... 7 bytes of stdout dropped; 4 kept ...]\n9x",
            (11, 4, 7),
        );
        // A limit of 1 keeps one head byte and no tail.
        check(
            1,
            &[b"abc"],
            "a\n[... 2 bytes of stdout dropped; 1 kept ...]\n",
            (3, 1, 2),
        );
        check(
            0,
            &[b"abc"],
            "[... 3 bytes of stdout dropped; 0 kept ...]\n",
            (3, 0, 3),
        );
    }

    #[test]
    fn cuts_at_character_boundaries() {
        // "é" is two bytes. With a limit of 8 the head cut falls inside the second
        // "é"; with 6 the tail cut falls inside the fifth: the partial characters are
        // left out of the text, not mangled into replacement characters.
        check(
            8,
            &["aéébéé".as_bytes()],
            "aé\n[... 2 bytes of stdout dropped; 8 kept ...]\néé",
            (10, 8, 2),
        );
        check(
            6,
            &["aéébéé".as_bytes()],
            "aé\n[... 4 bytes of stdout dropped; 6 kept ...]\né",
            (10, 6, 4),
        );
    }
}
