//! Text tools: sync bodies, a thread-pool body, enums, defaults and raw identifiers.

use std::collections::BTreeMap;
use std::fmt;

use iris_tools_core::tool;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Counts of one text.
#[derive(Debug, Serialize)]
pub struct WordStats {
    /// Whitespace-separated words.
    pub words: usize,
    /// Lines (a trailing newline does not start a new one).
    pub lines: usize,
    /// Unicode scalar values.
    pub chars: usize,
}

/// Count the words, lines and characters of a text.
///
/// Use for quick size checks; use `read_file` first for file contents.
#[tool(group = "text")]
pub fn word_count(
    /// The text to measure.
    text: String,
) -> WordStats {
    WordStats {
        words: text.split_whitespace().count(),
        lines: text.lines().count(),
        chars: text.chars().count(),
    }
}

/// Turn a title into a URL slug.
///
/// # Arguments
/// * `text` - the title, any language
/// * `separator` - what joins the words
/// * `max_len` - longest slug kept, in characters
#[tool(group = "text", tags("url"))]
pub fn slugify(
    text: String,
    #[default = "-"] separator: String,
    #[default = 80] max_len: usize,
) -> String {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    words.join(&separator).chars().take(max_len).collect()
}

/// How `tokenize` splits a text.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TokenKind {
    /// Whitespace-separated words.
    Words,
    /// Sentences ending in `.`, `!` or `?`.
    Sentences,
    /// Single characters.
    Characters,
}

/// Split a text into tokens of one kind.
///
/// # Arguments
/// * `text` - the text to split
/// * `type` - the kind of token
#[tool(group = "text")]
pub fn tokenize(text: String, r#type: TokenKind) -> Vec<String> {
    match r#type {
        TokenKind::Words => text.split_whitespace().map(str::to_owned).collect(),
        TokenKind::Sentences => text
            .split_inclusive(['.', '!', '?'])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        TokenKind::Characters => text.chars().map(String::from).collect(),
    }
}

/// A non-cryptographic hash function.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HashAlgorithm {
    /// 64-bit FNV-1a.
    #[default]
    Fnv1a,
    /// 64-bit djb2.
    Djb2,
}

/// Hash a text with a fast non-cryptographic hash, as 16 hex digits.
///
/// Use to compare or bucket texts; never for passwords or signatures.
///
/// # Arguments
/// * `text` - the text to hash
/// * `algorithm` - which hash function
#[tool(group = "text", execution_mode = "thread")]
pub fn hash_text(text: String, #[default] algorithm: HashAlgorithm) -> String {
    let hash = match algorithm {
        HashAlgorithm::Fnv1a => text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        }),
        HashAlgorithm::Djb2 => text.bytes().fold(5381_u64, |h, b| {
            h.wrapping_mul(33).wrapping_add(u64::from(b))
        }),
    };
    format!("{hash:016x}")
}

/// Why a table could not be rendered.
#[derive(Debug)]
pub struct TableError(String);

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Render rows as a Markdown table.
///
/// # Arguments
/// * `rows` - one map per row, column name to cell text
/// * `columns` - column order; defaults to the first row's keys in sorted order
#[tool(group = "text", tags("markdown", "table"))]
pub fn format_table(
    rows: Vec<BTreeMap<String, String>>,
    columns: Option<Vec<String>>,
) -> Result<String, TableError> {
    let columns = match columns {
        Some(columns) => columns,
        None => rows
            .first()
            .map(|r| r.keys().cloned().collect())
            .ok_or_else(|| TableError("no rows and no columns: nothing to render".into()))?,
    };
    let mut out = format!(
        "| {} |\n|{}\n",
        columns.join(" | "),
        "---|".repeat(columns.len())
    );
    for row in &rows {
        let cells: Vec<&str> = columns
            .iter()
            .map(|c| row.get(c).map_or("", String::as_str))
            .collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    Ok(out.trim_end().to_owned())
}

/// Check whether a string looks like an email address.
#[tool(group = "text")]
pub fn validate_email(
    /// The candidate address.
    #[schemars(length(min = 3, max = 254))]
    address: String,
) -> bool {
    match address.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty() && domain.contains('.') && !domain.ends_with('.')
        }
        None => false,
    }
}
