//! Everything `iris` writes goes through here: text is escaped so config files, MCP
//! servers, skills and tools cannot drive the terminal, and a closed pipe
//! (`iris … | head`) is not a panic.
//!
//! - [`escape`] is the one helper every text printer uses: C0 controls (ESC, CR, BEL,
//!   …), DEL, C1 controls and the bidirectional-text and line-separator controls are
//!   shown as `\x1b` / `\u{202e}` escapes. [`Mode::Line`] (table cells, messages) also
//!   escapes newlines and tabs, so one value can never forge another line;
//!   [`Mode::Block`] (a tool's output) keeps `\n`, `\t` and `\r\n`.
//! - `--json` output is serde's exact JSON (it escapes control characters itself).
//! - A write to a closed stdout (`EPIPE`) stops further output silently: the reader
//!   wanted no more, and the exit code stays the command's own. Any other stdout error
//!   (a full disk) is remembered and reported once at exit ([`stdout_error`]).
//!   Errors writing stderr are ignored: there is nowhere left to report them.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{ErrorKind, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

/// How much of the text's layout survives [`escape`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// One line: newlines and tabs are escaped too.
    Line,
    /// Multi-line text: `\n`, `\t` and `\r\n` are kept.
    Block,
}

/// Whether `c` is shown escaped in `mode`.
fn is_unsafe(c: char, mode: Mode) -> bool {
    match c {
        '\n' | '\t' => mode == Mode::Line,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        // Bidirectional controls (they reorder what is shown: "Trojan Source") and the
        // Unicode line and paragraph separators.
        '\u{061c}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}'
        | '\u{2028}'
        | '\u{2029}' => true,
        _ => false,
    }
}

/// `text` with every terminal control shown as an escape (see the module docs).
/// Borrowed when nothing needed escaping.
pub(crate) fn escape(text: &str, mode: Mode) -> Cow<'_, str> {
    if !text.chars().any(|c| is_unsafe(c, mode)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' && mode == Mode::Block && chars.peek() == Some(&'\n') {
            out.push(c);
            continue;
        }
        if !is_unsafe(c, mode) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{0}'..='\u{1f}' | '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            _ => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
}

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
static STDOUT_ERROR: Mutex<Option<String>> = Mutex::new(None);

fn write_stdout(bytes: &[u8]) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    let written = stdout.write_all(bytes).and_then(|()| stdout.flush());
    if let Err(e) = written {
        // Either way no more output is attempted: a closed pipe is the reader's choice,
        // anything else would only fail again.
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != ErrorKind::BrokenPipe
            && let Ok(mut slot) = STDOUT_ERROR.lock()
        {
            slot.get_or_insert_with(|| e.to_string());
        }
    }
}

/// A stdout write error other than a closed pipe, if one happened.
pub(crate) fn stdout_error() -> Option<String> {
    STDOUT_ERROR.lock().ok().and_then(|slot| slot.clone())
}

/// Prints one line of text on stdout, escaped as [`Mode::Line`].
pub(crate) fn line(text: &str) {
    let mut text = escape(text, Mode::Line).into_owned();
    text.push('\n');
    write_stdout(text.as_bytes());
}

/// Prints multi-line text on stdout, escaped as [`Mode::Block`], ending it with a
/// newline when it has none.
pub(crate) fn block(text: &str) {
    let mut text = escape(text, Mode::Block).into_owned();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    write_stdout(text.as_bytes());
}

/// Prints `value` as pretty JSON on stdout, exactly (no escaping beyond JSON's own).
pub(crate) fn print_json(value: &Value) {
    // Serializing a Value cannot fail; an empty line is the safe fallback.
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    write_stdout(text.as_bytes());
}

/// Prints `value` as one line of compact JSON on stdout (`iris run --json`: JSON lines).
pub(crate) fn json_line(value: &Value) {
    let mut text = serde_json::to_string(value).unwrap_or_default();
    text.push('\n');
    write_stdout(text.as_bytes());
}

/// Writes streamed text on stdout as it arrives, escaped as [`Mode::Block`], with no
/// newline added (the model's answer, delta by delta).
pub(crate) fn text(text: &str) {
    write_stdout(escape(text, Mode::Block).as_bytes());
}

/// The terminal sequence that moves to the start of the line and erases it.
const ERASE_LINE: &str = "\r\x1b[2K";

/// Replaces the status line on a terminal's stderr with `text` (escaped as
/// [`Mode::Line`]; only the erase sequence itself is a control).
pub(crate) fn status(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let line = format!("{ERASE_LINE}{}", escape(text, Mode::Line));
    let _ = stderr
        .write_all(line.as_bytes())
        .and_then(|()| stderr.flush());
}

/// Erases the status line on a terminal's stderr.
pub(crate) fn clear_status() {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr
        .write_all(ERASE_LINE.as_bytes())
        .and_then(|()| stderr.flush());
}

/// Writes `text` on stderr, escaped as [`Mode::Line`], without a newline (a prompt).
pub(crate) fn prompt(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr
        .write_all(escape(text, Mode::Line).as_bytes())
        .and_then(|()| stderr.flush());
}

/// Prints one line on stderr, escaped as [`Mode::Line`].
pub(crate) fn err_line(text: &str) {
    let mut text = escape(text, Mode::Line).into_owned();
    text.push('\n');
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_controls_and_keeps_text() {
        let rows: &[(&str, Mode, &str)] = &[
            ("plain ✓ text", Mode::Line, "plain ✓ text"),
            ("\x1b[31mred\x1b[0m", Mode::Line, "\\x1b[31mred\\x1b[0m"),
            ("a\nb\tc\r\n", Mode::Line, "a\\nb\\tc\\r\\n"),
            ("a\nb\tc\r\nd\re", Mode::Block, "a\nb\tc\r\nd\\re"),
            (
                "\u{202e}evil\u{2066}",
                Mode::Block,
                "\\u{202e}evil\\u{2066}",
            ),
            (
                "\u{9b}31m \u{7f} \u{0}",
                Mode::Line,
                "\\u{9b}31m \\x7f \\x00",
            ),
            ("\u{200f}\u{2028}", Mode::Line, "\\u{200f}\\u{2028}"),
            ("C:\\path\\x1b", Mode::Line, "C:\\path\\x1b"),
        ];
        for (text, mode, expected) in rows {
            assert_eq!(escape(text, *mode), *expected, "{text:?} {mode:?}");
        }
        assert!(matches!(escape("ok", Mode::Line), Cow::Borrowed(_)));
    }
}
