//! Paging of UTF-8 text by lines and characters, and clipping of long lines.
//!
//! A page is an exact slice of the file: concatenating the pages of a file (without
//! line numbers) gives back the file byte for byte. Positions are counted in
//! characters (Unicode scalar values), so a page never splits a UTF-8 sequence.

/// What one `read_file` call asks for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PageRequest {
    /// First line, 0-based.
    pub(crate) offset: usize,
    /// First character within that line, 0-based.
    pub(crate) column: usize,
    /// Most lines (or line pieces) to return.
    pub(crate) limit: usize,
    /// Most characters to return, line-number prefixes included.
    pub(crate) budget: usize,
    /// Whether each line gets a `cat -n` style prefix.
    pub(crate) line_numbers: bool,
}

/// One page of text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Page {
    /// The body: the exact slice, with prefixes when asked.
    pub(crate) body: String,
    /// Characters of file content in the body (prefixes excluded).
    pub(crate) content_chars: usize,
    /// Lines (or line pieces) in the body.
    pub(crate) lines: usize,
    /// Where the next page starts (`None` at the end of the file).
    pub(crate) next: Option<(usize, usize)>,
    /// Whether the character budget ended the page.
    pub(crate) budget_hit: bool,
    /// Lines in the whole file.
    pub(crate) total_lines: usize,
}

/// Why a page cannot be cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PageError {
    /// `offset` is beyond the last line.
    OffsetPastEnd { offset: usize, total_lines: usize },
    /// `column` is at or beyond the end of the line.
    ColumnPastEnd {
        offset: usize,
        column: usize,
        line_chars: usize,
    },
}

/// Number of lines: `\n` terminators, plus one for a final line without one.
pub(crate) fn count_lines(text: &str) -> usize {
    let bytes = text.as_bytes();
    let newlines = memchr::memchr_iter(b'\n', bytes).count();
    match bytes.last() {
        None | Some(b'\n') => newlines,
        Some(_) => newlines + 1,
    }
}

/// Byte index where line `n` (0-based) starts; `text.len()` for the end.
fn line_start(text: &str, n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    memchr::memchr_iter(b'\n', text.as_bytes())
        .nth(n - 1)
        .map_or(text.len(), |i| i + 1)
}

/// Byte index just past the line starting at `start` (its `\n` included).
fn line_end(text: &str, start: usize) -> usize {
    memchr::memchr(b'\n', &text.as_bytes()[start..]).map_or(text.len(), |i| start + i + 1)
}

/// The `cat -n` style prefix of 0-based line `idx` (shown 1-based, as editors do).
pub(crate) fn line_prefix(idx: usize) -> String {
    format!("{:>6}\t", idx + 1)
}

/// Cuts one page out of `text`.
pub(crate) fn page(text: &str, req: &PageRequest) -> Result<Page, PageError> {
    let total_lines = count_lines(text);
    if req.offset > total_lines {
        return Err(PageError::OffsetPastEnd {
            offset: req.offset,
            total_lines,
        });
    }
    let mut pos = line_start(text, req.offset);
    if req.column > 0 {
        let line = &text[pos..line_end(text, pos)];
        match line.char_indices().nth(req.column) {
            Some((b, _)) => pos += b,
            None => {
                return Err(PageError::ColumnPastEnd {
                    offset: req.offset,
                    column: req.column,
                    line_chars: line.chars().count(),
                });
            }
        }
    }
    let mut page = Page {
        body: String::new(),
        content_chars: 0,
        lines: 0,
        next: None,
        budget_hit: false,
        total_lines,
    };
    let mut line_idx = req.offset;
    let mut column = req.column;
    let mut remaining = req.budget;
    while page.lines < req.limit && pos < text.len() {
        let end = line_end(text, pos);
        let seg = &text[pos..end];
        let prefix = if req.line_numbers {
            line_prefix(line_idx)
        } else {
            String::new()
        };
        // The prefix is ASCII, so its byte length is its character count.
        if prefix.len() >= remaining {
            page.next = Some((line_idx, column));
            page.budget_hit = true;
            return Ok(page);
        }
        let room = remaining - prefix.len();
        // A segment of at most `room` bytes has at most `room` characters; longer
        // ones are counted only up to `room + 1`, so a 10 MB line costs O(budget).
        let fits = seg.len() <= room || seg.chars().take(room + 1).count() <= room;
        page.body.push_str(&prefix);
        page.lines += 1;
        if fits {
            let n = seg.chars().count();
            page.body.push_str(seg);
            page.content_chars += n;
            remaining -= prefix.len() + n;
            pos = end;
            line_idx += 1;
            column = 0;
        } else {
            let cut = seg.char_indices().nth(room).map_or(seg.len(), |(b, _)| b);
            page.body.push_str(&seg[..cut]);
            page.content_chars += room;
            page.next = Some((line_idx, column + room));
            page.budget_hit = true;
            return Ok(page);
        }
    }
    if pos < text.len() {
        page.next = Some((line_idx, column));
    }
    Ok(page)
}

/// Clips `line` to at most `max` characters, keeping a window around the character
/// index `focus` (where the match starts); an ellipsis marks each clipped side.
pub(crate) fn clip_line(line: &str, focus: usize, max: usize) -> (String, bool) {
    let total = line.chars().count();
    if total <= max {
        return (line.to_owned(), false);
    }
    // Show a third of the window before the match, the rest after it.
    let start = focus.saturating_sub(max / 3).min(total - max);
    let mut out = String::with_capacity(max + 8);
    if start > 0 {
        out.push('…');
    }
    out.extend(line.chars().skip(start).take(max));
    if start + max < total {
        out.push('…');
    }
    (out, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(offset: usize, column: usize, limit: usize, budget: usize) -> PageRequest {
        PageRequest {
            offset,
            column,
            limit,
            budget,
            line_numbers: false,
        }
    }

    #[test]
    fn count_lines_table() {
        for (text, expect) in [
            ("", 0),
            ("a", 1),
            ("a\n", 1),
            ("a\nb", 2),
            ("\n\n", 2),
            ("a\r\nb\r\n", 2),
        ] {
            assert_eq!(count_lines(text), expect, "{text:?}");
        }
    }

    #[test]
    fn page_table() {
        type Case = (
            &'static str,
            PageRequest,
            &'static str,
            Option<(usize, usize)>,
            bool,
        );
        // (text, request, body, next, budget_hit)
        let cases: Vec<Case> = vec![
            ("a\nb\nc\n", req(0, 0, 1000, 100), "a\nb\nc\n", None, false),
            ("a\nb\nc\n", req(1, 0, 1, 100), "b\n", Some((2, 0)), false),
            ("a\nb\nc", req(2, 0, 1000, 100), "c", None, false),
            ("a\nb\nc", req(3, 0, 1000, 100), "", None, false),
            ("abcdef\n", req(0, 0, 1000, 3), "abc", Some((0, 3)), true),
            ("abcdef\n", req(0, 3, 1000, 3), "def", Some((0, 6)), true),
            ("abcdef\n", req(0, 6, 1000, 3), "\n", None, false),
            (
                "héllo wörld",
                req(0, 1, 1000, 4),
                "éllo",
                Some((0, 5)),
                true,
            ),
            ("日本語\n", req(0, 0, 0, 100), "", Some((0, 0)), false),
            ("ab\ncd\n", req(0, 0, 1000, 3), "ab\n", Some((1, 0)), true),
        ];
        for (text, r, body, next, hit) in cases {
            let p = page(text, &r).unwrap_or_else(|e| panic!("{text:?} {r:?}: {e:?}"));
            assert_eq!(
                (p.body.as_str(), p.next, p.budget_hit),
                (body, next, hit),
                "{text:?} {r:?}"
            );
        }
    }

    #[test]
    fn page_errors() {
        assert_eq!(
            page("a\nb\n", &req(3, 0, 10, 100)),
            Err(PageError::OffsetPastEnd {
                offset: 3,
                total_lines: 2
            })
        );
        assert_eq!(
            page("ab\n", &req(0, 3, 10, 100)),
            Err(PageError::ColumnPastEnd {
                offset: 0,
                column: 3,
                line_chars: 3
            })
        );
        assert!(matches!(
            page("ab", &req(1, 1, 10, 100)),
            Err(PageError::ColumnPastEnd { .. })
        ));
    }

    #[test]
    fn clip_line_table() {
        for (line, focus, max, expect, clipped) in [
            ("short", 0, 10, "short", false),
            ("0123456789abcdef", 0, 6, "012345…", true),
            ("0123456789abcdef", 9, 6, "…789abc…", true),
            ("0123456789abcdef", 15, 6, "…abcdef", true),
            ("ééééééééé", 8, 3, "…ééé", true),
        ] {
            assert_eq!(
                clip_line(line, focus, max),
                (expect.to_owned(), clipped),
                "{line:?} {focus}"
            );
        }
    }
}
