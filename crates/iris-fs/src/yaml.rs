//! Taking in YAML a repository ships without letting its shape cost quadratic time, and
//! reporting YAML errors without quoting the file.
//!
//! - [`check_yaml_nesting`] refuses YAML whose flow collections (`[`, `{`) nest deeper
//!   than a limit before any YAML parser sees it. serde_yaml does not do this job: it
//!   hands the whole document to libyaml (unsafe-libyaml 0.2), whose scanner walks its
//!   stack of flow levels for every token, so deep flow nesting costs quadratic time;
//!   serde_yaml's recursion limit (128) only applies afterwards, when the events are
//!   turned into values. Measured in a release build: 40,000 `[` take 1.5 s and 200 KB
//!   of `[` took 42 s, before serde_yaml reports "recursion limit exceeded". Every
//!   caller that parses YAML from a file a repository ships runs this pass first.
//! - [`yaml_error_summary`] turns a serde_yaml error into a message without the text it
//!   quotes (a value there may be a secret).
//!
//! ```
//! use iris_fs::yaml::{MAX_YAML_FLOW_DEPTH, check_yaml_nesting};
//! let deep = format!("a: {}", "[".repeat(MAX_YAML_FLOW_DEPTH + 1));
//! let err = check_yaml_nesting(&deep, MAX_YAML_FLOW_DEPTH).unwrap_err();
//! assert_eq!((err.line, err.column), (1, 4 + MAX_YAML_FLOW_DEPTH));
//! ```

/// How deep YAML flow collections (`[`, `{`) may nest in configuration text.
pub const MAX_YAML_FLOW_DEPTH: usize = 64;

/// YAML whose flow collections nest deeper than the limit, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "flow collections (`[`, `{{`) nest deeper than {limit} levels at line {line} column {column}"
)]
pub struct NestingError {
    /// The limit that was passed.
    pub limit: usize,
    /// 1-based line of the collection that went too deep.
    pub line: usize,
    /// 1-based column (in characters) of that collection.
    pub column: usize,
}

/// Refuses YAML whose flow collections (`[`, `{`) nest deeper than `max_depth`, in one
/// linear pass that never parses the document.
///
/// The pass follows libyaml's scanner (the one serde_yaml uses) closely enough to know
/// where it sees flow collections: quoted scalars, comments, plain scalars, block
/// scalars and their indentation, tags, anchors, directives and document markers, so
/// brackets inside text do not count and brackets that do count cannot hide in
/// something that only looks like text. Where the input is not valid YAML the pass
/// keeps going; libyaml stops at the first error, so counting further can only refuse
/// more, never less. Block nesting is not limited here: it costs libyaml linear time and
/// serde_yaml's own recursion limit (128) stops it.
///
/// ```
/// use iris_fs::yaml::check_yaml_nesting;
/// assert!(check_yaml_nesting("a: [[1], {b: [2]}]\nc: '[[[['\n# [[[[\n", 3).is_ok());
/// let err = check_yaml_nesting("a: [[[1]]]\n", 2).unwrap_err();
/// assert_eq!((err.line, err.column), (1, 6));
/// ```
///
/// # Errors
/// [`NestingError`] at the first collection that opens level `max_depth + 1`.
pub fn check_yaml_nesting(text: &str, max_depth: usize) -> Result<(), NestingError> {
    YamlScan::new(text.as_bytes(), max_depth).run()
}

/// A serde_yaml error message with nothing of the file's content in it: what kind of
/// problem, the expected shape, the key path when it is made of field names, and the
/// position. serde_yaml quotes the offending text (`invalid type: string "…"`, `unknown
/// field `…``, `duplicate entry with key "…"`), which may be a secret in a file a config
/// points to; libyaml's syntax messages never quote content and are kept.
///
/// `message` is the error's `Display`, `location` its `(line, column)` (serde_yaml's
/// `Error::location`).
///
/// ```
/// use iris_fs::yaml::yaml_error_summary;
/// let shown = "timeout_seconds: invalid type: string \"sk-live-1\", expected f64 at line 1 column 18";
/// assert_eq!(
///     yaml_error_summary(shown, Some((1, 18))),
///     "`timeout_seconds`: invalid type, expected f64 at line 1 column 18"
/// );
/// let shown = "did not find expected node content at line 2 column 1, while parsing a flow node";
/// assert_eq!(yaml_error_summary(shown, Some((2, 1))), shown);
/// ```
pub fn yaml_error_summary(message: &str, location: Option<(usize, usize)>) -> String {
    let (core, context) = match location {
        Some((line, column)) => {
            let at = format!(" at line {line} column {column}");
            match message.split_once(&at) {
                Some((core, rest)) => (core, libyaml_context(rest)),
                None => (message, None),
            }
        }
        None => (message, None),
    };
    let mut out = summarize_core(core);
    if let Some((line, column)) = location {
        out.push_str(&format!(" at line {line} column {column}"));
    }
    if let Some(context) = context {
        out.push_str(", ");
        out.push_str(context);
    }
    out
}

/// libyaml's `, while parsing a block mapping` context (fixed text, optionally with its
/// own position), or `None` for anything else.
fn libyaml_context(rest: &str) -> Option<&str> {
    let context = rest.strip_prefix(", ")?;
    let words = context.split(" at line ").next().unwrap_or(context);
    let fixed =
        words.starts_with("while ") && words.bytes().all(|b| b.is_ascii_lowercase() || b == b' ');
    let position = context[words.len()..]
        .strip_prefix(" at line ")
        .is_none_or(|p| {
            p.bytes()
                .all(|b| b.is_ascii_digit() || b" column".contains(&b))
        });
    (fixed && position).then_some(context)
}

/// The kind of a serde message, and only the parts of it the code wrote.
fn summarize_core(core: &str) -> String {
    // (marker, summary, takes the expectation that ends the message)
    const KINDS: [(&str, &str, bool); 8] = [
        ("invalid type: ", "invalid type", true),
        ("invalid value: ", "invalid value", true),
        ("invalid length ", "invalid length", true),
        ("unknown field `", "unknown key", true),
        ("unknown variant `", "unknown value", true),
        ("missing field `", "missing key", false),
        ("duplicate field `", "duplicate key", false),
        ("duplicate entry ", "duplicate key", false),
    ];
    let found = KINDS
        .iter()
        .filter_map(|kind| core.find(kind.0).map(|at| (at, kind)))
        .min_by_key(|(at, _)| *at);
    let Some((at, &(marker, summary, expects))) = found else {
        // libyaml's syntax messages and serde_yaml's fixed ones quote nothing.
        let quiet = !core.contains(['"', '`']) && !core.is_empty();
        return if quiet {
            core.to_owned()
        } else {
            "does not have the expected shape".to_owned()
        };
    };
    // What comes first is serde_yaml's key path (`tools.discovery: `). When it is not
    // made of names, the marker may sit in quoted content: say nothing specific.
    let prefix = &core[..at];
    let path = match prefix.strip_suffix(": ") {
        _ if prefix.is_empty() => None,
        Some(path) if is_field_path(path) => Some(path),
        _ => return "does not have the expected shape".to_owned(),
    };
    let mut out = String::new();
    // A duplicate entry's path is made of mapping keys, which are content.
    if let Some(path) = path.filter(|_| marker != "duplicate entry ") {
        out.push_str(&format!("`{path}`: "));
    }
    out.push_str(summary);
    // The missing field's name is the code's, and the message ends with it; anything
    // after it means the marker was content (a key path of mapping keys).
    if marker == "missing field `" {
        match core[at + marker.len()..].strip_suffix('`') {
            Some(field) if is_field_path(field) => out.push_str(&format!(" `{field}`")),
            _ => return "does not have the expected shape".to_owned(),
        }
    }
    if expects
        && let Some((_, expected)) = core.rsplit_once(", expected ")
        && is_expectation(expected)
    {
        out.push_str(", expected ");
        out.push_str(expected);
    }
    out
}

/// `tools.discovery`, `agents[0].path`: names a struct's fields are made of.
fn is_field_path(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 128
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-[]".contains(&b))
}

/// `f64`, `a boolean`, `struct DecisionConfig`, `one of `a`, `b``: what serde's visitors
/// say they expect (the code's words, never the file's).
fn is_expectation(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 512
        && !text.contains('"')
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b" _.,-`<>()".contains(&b))
}

/// A possible simple key at flow level 0 (only those decide block indentation).
#[derive(Debug, Clone, Copy)]
struct SimpleKey {
    line: usize,
    column: usize,
    index: usize,
}

/// The parts of libyaml's scanner state that decide where flow collections are.
struct YamlScan<'a> {
    s: &'a [u8],
    max_depth: usize,
    pos: usize,
    /// Characters since the start (libyaml's `mark.index`).
    index: usize,
    line: usize,
    /// Characters since the line start (libyaml's `mark.column`).
    column: usize,
    flow: usize,
    /// The block indentation column (libyaml's `parser->indent`), -1 at the top.
    indent: isize,
    indents: Vec<isize>,
    simple_key_allowed: bool,
    /// The possible simple key of flow level 0.
    key: Option<SimpleKey>,
}

fn is_alpha(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// libyaml's tag URI characters (`uri_char` adds `,`, `[` and `]` for verbatim tags).
fn is_uri(b: u8, verbatim: bool) -> bool {
    is_alpha(b)
        || b";/?:@&=+$.%!~*'()".contains(&b)
        || (verbatim && matches!(b, b',' | b'[' | b']'))
}

impl<'a> YamlScan<'a> {
    fn new(s: &'a [u8], max_depth: usize) -> Self {
        Self {
            s,
            max_depth,
            pos: 0,
            index: 0,
            line: 0,
            column: 0,
            flow: 0,
            indent: -1,
            indents: Vec::new(),
            simple_key_allowed: true,
            key: None,
        }
    }

    fn at(&self, offset: usize) -> u8 {
        self.s.get(self.pos + offset).copied().unwrap_or(0)
    }

    fn eof(&self) -> bool {
        self.pos >= self.s.len()
    }

    /// The length of a line break at `offset` (CR LF counts as one), or 0.
    fn break_len(&self, offset: usize) -> usize {
        match (self.at(offset), self.at(offset + 1), self.at(offset + 2)) {
            (b'\r', b'\n', _) => 2,
            (b'\r' | b'\n', _, _) => 1,
            (0xC2, 0x85, _) => 2,           // NEL
            (0xE2, 0x80, 0xA8 | 0xA9) => 3, // LS, PS
            _ => 0,
        }
    }

    fn is_break(&self, offset: usize) -> bool {
        self.break_len(offset) > 0
    }

    fn is_blank(&self, offset: usize) -> bool {
        matches!(self.at(offset), b' ' | b'\t')
    }

    /// Blank, break or end of input (libyaml's `IS_BLANKZ`).
    fn is_blankz(&self, offset: usize) -> bool {
        self.pos + offset >= self.s.len() || self.is_blank(offset) || self.is_break(offset)
    }

    /// Skips one character (not a line break).
    fn skip(&mut self) {
        let width = match self.at(0) {
            b if b < 0x80 => 1,
            b if b >= 0xF0 => 4,
            b if b >= 0xE0 => 3,
            _ => 2,
        };
        self.pos = (self.pos + width).min(self.s.len());
        self.index += 1;
        self.column += 1;
    }

    /// Skips one line break, or one character when there is none.
    fn skip_line(&mut self) {
        let len = self.break_len(0);
        if len == 0 {
            self.skip();
            return;
        }
        self.pos += len;
        self.index += if len == 2 && self.s[self.pos - 2] == b'\r' {
            2
        } else {
            1
        };
        self.line += 1;
        self.column = 0;
    }

    fn document_indicator(&self) -> bool {
        self.column == 0
            && ((self.at(0) == b'-' && self.at(1) == b'-' && self.at(2) == b'-')
                || (self.at(0) == b'.' && self.at(1) == b'.' && self.at(2) == b'.'))
            && self.is_blankz(3)
    }

    fn run(mut self) -> Result<(), NestingError> {
        loop {
            self.scan_to_next_token();
            self.stale_simple_keys();
            self.unroll_indent(self.column_isize());
            if self.eof() {
                return Ok(());
            }
            self.fetch_token()?;
        }
    }

    fn column_isize(&self) -> isize {
        isize::try_from(self.column).unwrap_or(isize::MAX)
    }

    fn scan_to_next_token(&mut self) {
        loop {
            if self.column == 0 && self.s[self.pos..].starts_with("\u{feff}".as_bytes()) {
                self.skip();
            }
            // libyaml skips a tab here only in flow context or where no simple key may
            // start; elsewhere a tab is an error. Skipping it always only reads further.
            while self.is_blank(0) {
                self.skip();
            }
            if self.at(0) == b'#' {
                while !self.eof() && !self.is_break(0) {
                    self.skip();
                }
            }
            if !self.is_break(0) {
                return;
            }
            self.skip_line();
            if self.flow == 0 {
                self.simple_key_allowed = true;
            }
        }
    }

    fn stale_simple_keys(&mut self) {
        if let Some(key) = self.key
            && (key.line < self.line || key.index + 1024 < self.index)
        {
            self.key = None;
        }
    }

    fn save_simple_key(&mut self) {
        if self.flow == 0 && self.simple_key_allowed {
            self.key = Some(SimpleKey {
                line: self.line,
                column: self.column,
                index: self.index,
            });
        }
    }

    /// libyaml's `remove_simple_key` on the current level (only level 0 is tracked).
    fn remove_simple_key(&mut self) {
        if self.flow == 0 {
            self.key = None;
        }
    }

    fn roll_indent(&mut self, column: usize) {
        let column = isize::try_from(column).unwrap_or(isize::MAX);
        if self.flow == 0 && self.indent < column {
            self.indents.push(self.indent);
            self.indent = column;
        }
    }

    fn unroll_indent(&mut self, column: isize) {
        if self.flow != 0 {
            return;
        }
        while self.indent > column {
            self.indent = self.indents.pop().unwrap_or(-1);
        }
    }

    fn fetch_token(&mut self) -> Result<(), NestingError> {
        let c = self.at(0);
        if self.column == 0 && c == b'%' {
            // A directive runs to the end of its line.
            self.unroll_indent(-1);
            self.remove_simple_key();
            self.simple_key_allowed = false;
            while !self.eof() && !self.is_break(0) {
                self.skip();
            }
            if self.is_break(0) {
                self.skip_line();
            }
            return Ok(());
        }
        if self.document_indicator() {
            self.unroll_indent(-1);
            self.remove_simple_key();
            self.simple_key_allowed = false;
            self.skip();
            self.skip();
            self.skip();
            return Ok(());
        }
        match c {
            b'[' | b'{' => {
                self.save_simple_key();
                if self.flow >= self.max_depth {
                    return Err(NestingError {
                        limit: self.max_depth,
                        line: self.line + 1,
                        column: self.column + 1,
                    });
                }
                self.flow += 1;
                self.simple_key_allowed = true;
                self.skip();
            }
            b']' | b'}' => {
                self.remove_simple_key();
                self.flow = self.flow.saturating_sub(1);
                self.simple_key_allowed = false;
                self.skip();
            }
            b',' => {
                self.remove_simple_key();
                self.simple_key_allowed = true;
                self.skip();
            }
            b'-' if self.is_blankz(1) => {
                if self.flow == 0 {
                    self.roll_indent(self.column);
                }
                self.remove_simple_key();
                self.simple_key_allowed = true;
                self.skip();
            }
            b'?' if self.flow > 0 || self.is_blankz(1) => {
                if self.flow == 0 {
                    self.roll_indent(self.column);
                }
                self.remove_simple_key();
                self.simple_key_allowed = self.flow == 0;
                self.skip();
            }
            b':' if self.flow > 0 || self.is_blankz(1) => {
                if self.flow == 0 {
                    match self.key.take() {
                        Some(key) => {
                            self.roll_indent(key.column);
                            self.simple_key_allowed = false;
                        }
                        None => {
                            self.roll_indent(self.column);
                            self.simple_key_allowed = true;
                        }
                    }
                } else {
                    self.simple_key_allowed = false;
                }
                self.skip();
            }
            b'*' | b'&' => {
                self.save_simple_key();
                self.simple_key_allowed = false;
                self.skip();
                while is_alpha(self.at(0)) {
                    self.skip();
                }
            }
            b'!' => {
                self.save_simple_key();
                self.simple_key_allowed = false;
                self.scan_tag();
            }
            b'|' | b'>' if self.flow == 0 => {
                self.remove_simple_key();
                self.simple_key_allowed = true;
                self.scan_block_scalar();
            }
            b'\'' | b'"' => {
                self.save_simple_key();
                self.simple_key_allowed = false;
                self.scan_quoted(c == b'\'');
            }
            _ if self.starts_plain_scalar() => {
                self.save_simple_key();
                self.simple_key_allowed = false;
                self.scan_plain_scalar();
            }
            // libyaml stops here ("found character that cannot start any token").
            _ => self.skip(),
        }
        Ok(())
    }

    fn starts_plain_scalar(&self) -> bool {
        let c = self.at(0);
        !(self.is_blankz(0) || b"-?:,[]{}#&*!|>'\"%@`".contains(&c))
            || (c == b'-' && !self.is_blank(1))
            || (self.flow == 0 && matches!(c, b'?' | b':') && !self.is_blankz(1))
    }

    fn scan_tag(&mut self) {
        self.skip(); // `!`
        if self.at(0) == b'<' {
            self.skip();
            while is_uri(self.at(0), true) {
                self.skip();
            }
            if self.at(0) == b'>' {
                self.skip();
            }
        } else {
            // The handle (`!`, `!!`, `!name!`) and the suffix: all from these characters.
            while is_uri(self.at(0), false) {
                self.skip();
            }
        }
    }

    fn scan_quoted(&mut self, single: bool) {
        self.skip(); // the opening quote
        loop {
            if self.eof() || self.document_indicator() {
                return; // libyaml: an error
            }
            let c = self.at(0);
            if single && c == b'\'' && self.at(1) == b'\'' {
                self.skip();
                self.skip();
            } else if c == if single { b'\'' } else { b'"' } {
                self.skip();
                return;
            } else if !single && c == b'\\' {
                self.skip();
                if self.is_break(0) {
                    self.skip_line();
                } else if !self.eof() {
                    self.skip();
                }
            } else if self.is_break(0) {
                self.skip_line();
            } else {
                self.skip();
            }
        }
    }

    fn scan_plain_scalar(&mut self) {
        let indent = self.indent + 1;
        let mut leading_blanks = false;
        loop {
            if self.document_indicator() || self.at(0) == b'#' {
                break;
            }
            while !self.is_blankz(0) {
                let c = self.at(0);
                if (c == b':' && self.is_blankz(1))
                    || (self.flow > 0 && matches!(c, b',' | b'[' | b']' | b'{' | b'}'))
                {
                    break;
                }
                // In flow context `:` before `,?[]{}` is an error in libyaml; reading it as
                // text reads further.
                self.skip();
            }
            if !(self.is_blank(0) || self.is_break(0)) {
                break;
            }
            while self.is_blank(0) || self.is_break(0) {
                if self.is_blank(0) {
                    self.skip();
                } else {
                    self.skip_line();
                    leading_blanks = true;
                }
            }
            if self.flow == 0 && self.column_isize() < indent {
                break;
            }
        }
        if leading_blanks {
            self.simple_key_allowed = true;
        }
    }

    fn scan_block_scalar(&mut self) {
        self.skip(); // `|` or `>`
        let mut increment = 0_isize;
        let digit = |b: u8| (b'1'..=b'9').contains(&b).then(|| isize::from(b - b'0'));
        if matches!(self.at(0), b'+' | b'-') {
            self.skip();
            if let Some(d) = digit(self.at(0)) {
                increment = d;
                self.skip();
            }
        } else if let Some(d) = digit(self.at(0)) {
            increment = d;
            self.skip();
            if matches!(self.at(0), b'+' | b'-') {
                self.skip();
            }
        }
        while self.is_blank(0) {
            self.skip();
        }
        if self.at(0) == b'#' {
            while !self.eof() && !self.is_break(0) {
                self.skip();
            }
        }
        if !self.eof() && !self.is_break(0) {
            return; // libyaml: an error
        }
        if self.is_break(0) {
            self.skip_line();
        }
        let mut indent = 0_isize;
        if increment != 0 {
            indent = if self.indent >= 0 {
                self.indent + increment
            } else {
                increment
            };
        }
        self.block_scalar_breaks(&mut indent);
        while self.column_isize() == indent && !self.eof() {
            while !self.eof() && !self.is_break(0) {
                self.skip();
            }
            if self.eof() {
                break;
            }
            self.skip_line();
            self.block_scalar_breaks(&mut indent);
        }
    }

    fn block_scalar_breaks(&mut self, indent: &mut isize) {
        let mut max_indent = 0_isize;
        loop {
            while (*indent == 0 || self.column_isize() < *indent) && self.at(0) == b' ' {
                self.skip();
            }
            max_indent = max_indent.max(self.column_isize());
            if !self.is_break(0) {
                break;
            }
            self.skip_line();
        }
        if *indent == 0 {
            *indent = max_indent.max(self.indent + 1).max(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Shape {
        timeout: f64,
        #[serde(default)]
        tools: Tools,
        #[serde(default)]
        mode: Option<Mode2>,
    }

    #[derive(Debug, Default, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Tools {
        discovery: bool,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Mode2 {
        Fast,
    }

    #[test]
    fn yaml_error_summaries_quote_no_content() {
        let summary = |yaml: &str, typed: bool| {
            let err = if typed {
                serde_yaml::from_str::<Shape>(yaml).err()
            } else {
                serde_yaml::from_str::<serde_yaml::Value>(yaml).err()
            };
            let err = err.unwrap_or_else(|| panic!("{yaml} parsed"));
            let location = err.location().map(|l| (l.line(), l.column()));
            yaml_error_summary(&err.to_string(), location)
        };
        let table: &[(&str, bool, &str)] = &[
            (
                "api_key = sk-SECRET\n",
                true,
                "invalid type, expected struct Shape at line 1 column 1",
            ),
            (
                "timeout: sk-SECRET\n",
                true,
                "`timeout`: invalid type, expected f64 at line 1 column 10",
            ),
            (
                "timeout: 1\ntools: {discovery: sk-SECRET}\n",
                true,
                "`tools.discovery`: invalid type, expected a boolean at line 2 column 20",
            ),
            (
                "timeout: 1\nsk-SECRET: 1\n",
                true,
                "unknown key, expected one of `timeout`, `tools`, `mode` at line 2 column 1",
            ),
            (
                "timeout: 1\nmode: sk-SECRET\n",
                true,
                "`mode`: unknown value, expected `fast` at line 2 column 7",
            ),
            (
                "tools: {}\n",
                true,
                "`tools`: missing key `discovery` at line 1 column 8",
            ),
            (
                "a: 1\nsk-SECRET: 1\nsk-SECRET: 2\n",
                false,
                "duplicate key at line 1 column 1",
            ),
            (
                "token: \"sk-SECRET\n",
                false,
                "found unexpected end of stream at line 2 column 1, while scanning a quoted \
                 scalar at line 1 column 8",
            ),
            (
                "a: [sk-SECRET\n",
                false,
                "did not find expected ',' or ']' at line 2 column 1, while parsing a flow \
                 sequence at line 1 column 4",
            ),
            (
                "'missing field `sk-SECRET`': {k: 1, k: 2}\n",
                false,
                "does not have the expected shape at line 1 column 30",
            ),
        ];
        for (yaml, typed, want) in table {
            let got = summary(yaml, *typed);
            assert_eq!(&got, want, "{yaml}");
            assert!(!got.contains("SECRET"), "{got}");
        }
    }

    #[test]
    fn nesting_table() {
        // (text, deepest flow level the scan sees)
        let table: &[(&str, usize)] = &[
            ("a: 1\n", 0),
            ("a: [1, [2, {b: [3]}]]\n", 4),
            ("a: '[[[['\nb: \"[[\\\"[[\"\n", 0),
            ("a: x # [[[[\nb: 1\n", 0),
            ("a: x#[[\n", 0),
            ("a: |\n  [[[[\n  ]]]]\nb: [1]\n", 1),
            ("a: >-\n  '[[\nb: [[1]]\n", 2),
            ("- [a, b]\n- c [d]\n", 1),
            ("key: !<tag:[x]> [1]\n", 1),
            ("[a, 'b]]]', \"c]]]\", # ]]]\n [d]]\n", 2),
            ("%TAG ! tag:x,[[[\n--- [1]\n", 1),
            ("a: b\n  [c\n", 0),
            // `'` inside a plain scalar is text, even after a line break...
            ("[a\n  'b, [c]]\n", 2),
            // ...so the `]` after it closes the collection.
            ("[a 'b]]]', [c]]\n", 1),
            ("{a: [b]}: c\nd: |\n   x\n  [[\n", 2),
            // A block scalar's content is indented past its parent's key (here 2), so
            // the less indented line after it is YAML again.
            ("a:\n  b: |\n  c: [[[x]]]\n", 3),
            ("a:\n  b: |1\n   '[[\n  c: [[1]]\n", 2),
            ("- - |\n   [[\n  - [[1]]\n", 2),
        ];
        for (text, want) in table {
            let ok = check_yaml_nesting(text, *want);
            assert!(ok.is_ok(), "{text:?} at {want}: {ok:?}");
            if *want > 0 {
                assert!(
                    check_yaml_nesting(text, want - 1).is_err(),
                    "{text:?} deeper than {}",
                    want - 1
                );
            }
        }
    }

    /// The deepest flow level the scan sees.
    fn scan_depth(text: &str) -> usize {
        let (mut lo, mut hi) = (0, text.len() + 1);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if check_yaml_nesting(text, mid).is_ok() {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }

    /// How deep a parsed value nests (keys included): at least its flow depth.
    fn value_depth(value: &serde_yaml::Value) -> usize {
        use serde_yaml::Value;
        match value {
            Value::Sequence(items) => 1 + items.iter().map(value_depth).max().unwrap_or(0),
            Value::Mapping(map) => {
                1 + map
                    .iter()
                    .map(|(k, v)| value_depth(k).max(value_depth(v)))
                    .max()
                    .unwrap_or(0)
            }
            Value::Tagged(tagged) => value_depth(&tagged.value),
            _ => 0,
        }
    }

    /// Flow scalars that hold brackets, quotes and `#` but open or close nothing.
    const FLOW_VALUES: &[&str] = &[
        "'x]]}}'",
        "'it''s ]]'",
        "\"a\\\"]]\\\\\"",
        "\"multi\n  line ]]\"",
        "!<tag:x,]]> v",
        "!x'y v",
        "&b v",
        "*a",
        "plain'quote",
        "plain\"dq",
        "x#y",
        "a 'b",
        "a \"b",
        "!!str 'q]'",
        "\"\\x41]\"",
        "multi\n   line'd",
    ];

    /// What may stand where a flow collection allows white space.
    const FLOW_GAPS: &[&str] = &[" ", "# ]]] '\n", "# [[[ \"\n", "\n  ", "\r\n\t"];

    /// Block-context lines (unique keys) before the deep part: block scalars, quoted
    /// and plain scalars, comments holding brackets and quotes.
    const BLOCK_NOISE: &[&str] = &[
        "a: |\n  ]]] '\n  \"[[\n",
        "b: >2\n   ]]]'\n",
        "c: 'x]]'\n",
        "d: \"y ]] \\\" '\"\n",
        "e: it's\n",
        "f: x # ]]] '\n",
        "# ]]] \"\n",
        "g: [a, ']]']\n",
        "h: plain\n  continued ' ]]\n",
        "i: !<x]]> v\n",
        "j:\n  - k: |\n      ]]] '\n  - |-\n    ]]\n",
        "l: \"multi\n  line ]]\"\n",
    ];

    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            usize::try_from(self.0 % n as u64).unwrap_or(0)
        }

        fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
            from[self.below(from.len())]
        }

        fn gap(&mut self, doc: &mut String) {
            doc.push_str(if self.below(3) == 0 {
                self.pick(FLOW_GAPS)
            } else {
                " "
            });
        }

        /// A flow node nesting `depth` collections, with noise around each level.
        fn node(&mut self, depth: usize, doc: &mut String) {
            if depth == 0 {
                doc.push_str(self.pick(FLOW_VALUES));
                return;
            }
            let seq = self.below(2) == 0;
            doc.push(if seq { '[' } else { '{' });
            self.gap(doc);
            if self.below(3) == 0 {
                if !seq {
                    doc.push_str("k0: ");
                }
                doc.push_str(self.pick(FLOW_VALUES));
                doc.push(',');
                self.gap(doc);
            }
            if !seq {
                doc.push_str("k: ");
            }
            self.node(depth - 1, doc);
            if self.below(3) == 0 {
                doc.push(',');
                self.gap(doc);
                if !seq {
                    doc.push_str("k2: ");
                }
                doc.push_str(self.pick(FLOW_VALUES));
            }
            self.gap(doc);
            doc.push(if seq { ']' } else { '}' });
        }
    }

    /// Soundness against libyaml itself: random documents that nest flow collections
    /// (to 5..60 or 130..200 levels) with noise at every level. Whenever serde_yaml hits
    /// its recursion limit, the scan must refuse at 64; whenever it parses, the scan
    /// must not see more levels than the value has.
    #[test]
    fn scan_agrees_with_libyaml_on_random_documents() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let (mut deep_checked, mut parsed_checked) = (0, 0);
        for _ in 0..2000 {
            let mut doc = String::from("anchor: &a v\n");
            for line in BLOCK_NOISE {
                if rng.below(3) == 0 {
                    doc.push_str(line);
                }
            }
            doc.push_str("deep: ");
            let depth = if rng.below(2) == 0 {
                5 + rng.below(55)
            } else {
                130 + rng.below(70)
            };
            rng.node(depth, &mut doc);
            doc.push('\n');
            let scanned = scan_depth(&doc);
            match serde_yaml::from_str::<serde_yaml::Value>(&doc) {
                Ok(value) => {
                    parsed_checked += 1;
                    assert!(scanned <= value_depth(&value), "over-counted:\n{doc}");
                }
                Err(e) if e.to_string().starts_with("recursion limit exceeded") => {
                    deep_checked += 1;
                    assert!(scanned > MAX_YAML_FLOW_DEPTH, "under-counted:\n{doc}");
                }
                // Documents broken elsewhere say nothing about nesting.
                Err(_) => {}
            }
        }
        assert!(
            deep_checked > 500 && parsed_checked > 200,
            "{deep_checked} {parsed_checked}"
        );
    }

    #[test]
    fn line_breaks_end_comments() {
        // NEL, LS and PS end a comment for libyaml; the brackets after them count.
        for brk in ["\u{85}", "\u{2028}", "\u{2029}", "\r"] {
            let text = format!("# x{brk}[[[1]]]\n");
            assert!(check_yaml_nesting(&text, 2).is_err(), "{brk:?}");
        }
    }
}
