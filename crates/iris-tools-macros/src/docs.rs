//! Doc comments: the tool description and per-parameter descriptions.
//!
//! The description is the doc text outside every section. A section starts at a
//! Markdown heading (`# Arguments`, `# Errors`, …) and runs to the next heading, or at a
//! Google-style header line (`Args:`, `Returns:`, …) and runs while lines stay indented
//! deeper than the header. Parameter descriptions come from a `# Arguments` list
//! (``* `path` - text``) or an `Args:` section (`path: text`, `path (str): text`).

use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// Headings and header words that introduce a parameter list.
const ARG_TITLES: &[&str] = &[
    "arguments",
    "args",
    "parameters",
    "params",
    "keyword args",
    "keyword arguments",
];

/// Google-style header words that are recognized as sections (besides `ARG_TITLES`).
const OTHER_GOOGLE_TITLES: &[&str] = &[
    "returns", "return", "yields", "raises", "errors", "examples", "example", "note", "notes",
    "panics", "safety", "see also",
];

/// The text of the `#[doc = "…"]` attributes (what `///` comments become), one entry
/// per line, with the single leading space of `/// text` removed. Non-literal docs
/// (`#[doc = include_str!(…)]`) cannot be read by a macro and are skipped.
pub(crate) fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let mut lines: Vec<String> = Vec::new();
    for attr in attrs {
        let Meta::NameValue(nv) = &attr.meta else {
            continue;
        };
        if !nv.path.is_ident("doc") {
            continue;
        }
        if let Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) = &nv.value
        {
            for line in s.value().split('\n') {
                lines.push(line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned());
            }
        }
    }
    if lines.is_empty() {
        None
    } else {
        Some(lines.join("\n"))
    }
}

/// A function's doc comment, split into the parts a tool uses.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ParsedDoc {
    /// Everything outside the sections, trimmed; empty when there is none.
    pub(crate) description: String,
    /// `(parameter, description)` from `# Arguments` / `Args:`, in order.
    pub(crate) params: Vec<(String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Description,
    /// A Markdown `# Arguments` list.
    MarkdownArgs,
    /// A Google-style `Args:` section with its header indentation and the indentation
    /// of its entries (known after the first one).
    GoogleArgs {
        header: usize,
        entry: Option<usize>,
    },
    /// Any other section; `Some(indent)` for a Google-style one.
    Other {
        google: Option<usize>,
    },
}

/// Splits doc text into description and parameter descriptions.
pub(crate) fn parse(text: &str) -> ParsedDoc {
    let mut description: Vec<&str> = Vec::new();
    let mut params: Vec<(String, String)> = Vec::new();
    let mut current: Option<(String, String)> = None;
    let mut section = Section::Description;
    let mut in_fence = false;

    let flush = |current: &mut Option<(String, String)>, params: &mut Vec<(String, String)>| {
        if let Some((name, text)) = current.take() {
            let text = text.trim().to_owned();
            if !text.is_empty() {
                params.push((name, text));
            }
        }
    };

    for line in text.lines() {
        let trimmed = line.trim();
        let indent = line.len() - line.trim_start().len();
        let fence = trimmed.starts_with("```") || trimmed.starts_with("~~~");
        if !in_fence && !fence {
            if let Some(title) = markdown_heading(trimmed) {
                flush(&mut current, &mut params);
                section = if is_arg_title(title) {
                    Section::MarkdownArgs
                } else {
                    Section::Other { google: None }
                };
                continue;
            }
            if let Some(title) = google_header(trimmed) {
                flush(&mut current, &mut params);
                section = if is_arg_title(title) {
                    Section::GoogleArgs {
                        header: indent,
                        entry: None,
                    }
                } else {
                    Section::Other {
                        google: Some(indent),
                    }
                };
                continue;
            }
            // A Google-style section ends at the first line back at (or left of) its
            // header's indentation.
            let google_indent = match section {
                Section::GoogleArgs { header, .. } => Some(header),
                Section::Other { google } => google,
                _ => None,
            };
            if google_indent.is_some_and(|h| !trimmed.is_empty() && indent <= h) {
                flush(&mut current, &mut params);
                section = Section::Description;
            }
        }
        if fence {
            in_fence = !in_fence;
        }
        match &mut section {
            Section::Description => description.push(line),
            Section::Other { .. } => {}
            Section::MarkdownArgs => {
                if let Some(item) = trimmed
                    .strip_prefix("* ")
                    .or_else(|| trimmed.strip_prefix("- "))
                    .or_else(|| trimmed.strip_prefix("+ "))
                {
                    flush(&mut current, &mut params);
                    current = markdown_item(item);
                } else if trimmed.is_empty() {
                    flush(&mut current, &mut params);
                } else if let Some((_, text)) = &mut current {
                    text.push(' ');
                    text.push_str(trimmed);
                }
            }
            Section::GoogleArgs { entry, .. } => {
                if trimmed.is_empty() {
                    flush(&mut current, &mut params);
                } else if entry.is_none_or(|e| indent <= e) {
                    match google_entry(trimmed) {
                        Some(item) => {
                            flush(&mut current, &mut params);
                            *entry = Some(indent);
                            current = Some(item);
                        }
                        None => {
                            if let Some((_, text)) = &mut current {
                                text.push(' ');
                                text.push_str(trimmed);
                            }
                        }
                    }
                } else if let Some((_, text)) = &mut current {
                    text.push(' ');
                    text.push_str(trimmed);
                }
            }
        }
    }
    flush(&mut current, &mut params);

    ParsedDoc {
        description: tidy(&description),
        params,
    }
}

/// Joins description lines, dropping blank lines at both ends and runs of blank lines.
fn tidy(lines: &[&str]) -> String {
    let mut out: Vec<&str> = Vec::new();
    for line in lines {
        let line = line.trim_end();
        if line.is_empty() && out.last().is_none_or(|l| l.is_empty()) {
            continue;
        }
        out.push(line);
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    out.join("\n")
}

fn is_arg_title(title: &str) -> bool {
    ARG_TITLES.contains(&title.trim().to_ascii_lowercase().as_str())
}

/// `# Title` (levels 1–6) → `Title`.
fn markdown_heading(trimmed: &str) -> Option<&str> {
    let hashes = trimmed.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &trimmed[hashes..];
    rest.starts_with(' ').then(|| rest.trim())
}

/// `Args:` alone on a line → `Args`, for the recognized header words only, so prose
/// ending in a colon stays prose.
fn google_header(trimmed: &str) -> Option<&str> {
    let title = trimmed.strip_suffix(':')?;
    let lower = title.to_ascii_lowercase();
    (ARG_TITLES.contains(&lower.as_str()) || OTHER_GOOGLE_TITLES.contains(&lower.as_str()))
        .then_some(title)
}

/// A parameter name at the start of `text`: `` `name` `` or a bare identifier
/// (`r#` is dropped). Returns the name and the rest.
fn leading_name(text: &str) -> Option<(String, &str)> {
    let (name, rest) = if let Some(quoted) = text.strip_prefix('`') {
        let end = quoted.find('`')?;
        (&quoted[..end], &quoted[end + 1..])
    } else {
        let end = text
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '#'))
            .unwrap_or(text.len());
        (&text[..end], &text[end..])
    };
    let name = name.strip_prefix("r#").unwrap_or(name);
    let valid = !name.is_empty()
        && name.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    valid.then(|| (name.to_owned(), rest))
}

/// Skips one `(type)` group.
fn skip_parens(text: &str) -> &str {
    let text = text.trim_start();
    if text.starts_with('(')
        && let Some(end) = text.find(')')
    {
        return text[end + 1..].trim_start();
    }
    text
}

/// ``* `name` - text`` (the bullet already removed); also `–`, `—` or `:` as the
/// separator, and an optional `(type)`.
///
/// A bare (unquoted) name needs the separator, so a list item of plain prose is not
/// mistaken for a parameter.
fn markdown_item(item: &str) -> Option<(String, String)> {
    let item = item.trim();
    let quoted = item.starts_with('`');
    let (name, rest) = leading_name(item)?;
    let rest = skip_parens(rest);
    let text = match ["-", "–", "—", ":"]
        .iter()
        .find_map(|sep| rest.strip_prefix(sep))
    {
        Some(text) => text,
        None if quoted => rest,
        None => return None,
    };
    Some((name, text.trim().to_owned()))
}

/// `name: text` or `name (type): text`.
fn google_entry(trimmed: &str) -> Option<(String, String)> {
    let (name, rest) = leading_name(trimmed)?;
    let rest = skip_parens(rest);
    let text = rest.strip_prefix(':')?;
    Some((name, text.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, description: &str, params: &[(&str, &str)]) {
        let parsed = parse(text);
        assert_eq!(parsed.description, description, "description of:\n{text}");
        let params: Vec<(String, String)> = params
            .iter()
            .map(|(n, d)| ((*n).to_owned(), (*d).to_owned()))
            .collect();
        assert_eq!(parsed.params, params, "params of:\n{text}");
    }

    #[test]
    fn descriptions_and_parameters() {
        type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);
        let cases: &[Case<'_>] = &[
            ("", "", &[]),
            ("Read a key.", "Read a key.", &[]),
            (
                "Read a key.\n\nUse for one setting.\n\n# Arguments\n* `key` - dotted path\n* `default` - fallback",
                "Read a key.\n\nUse for one setting.",
                &[("key", "dotted path"), ("default", "fallback")],
            ),
            (
                "Summary.\n\n# Arguments\n\n* `path` - the file,\n  relative to the workspace\n- limit: at most this many\n+ `r#type` (str) – the kind",
                "Summary.",
                &[
                    ("path", "the file, relative to the workspace"),
                    ("limit", "at most this many"),
                    ("type", "the kind"),
                ],
            ),
            (
                "Summary.\n\nArgs:\n    path: the file\n        relative to the root\n    limit (int): at most\n\nReturns:\n    the lines\n\nTrailing prose.",
                "Summary.\n\nTrailing prose.",
                &[
                    ("path", "the file relative to the root"),
                    ("limit", "at most"),
                ],
            ),
            (
                "Summary.\n\n# Errors\nFails when x.\n\n# Examples\n```\n# Arguments\n```\n# Arguments\n* `a` - first",
                "Summary.",
                &[("a", "first")],
            ),
            (
                "Keep code:\n\n```text\nArgs:\n  not: a section\n```",
                "Keep code:\n\n```text\nArgs:\n  not: a section\n```",
                &[],
            ),
            (
                "Prose that ends in a colon:\n  indented detail",
                "Prose that ends in a colon:\n  indented detail",
                &[],
            ),
            (
                "# Arguments\n* `a` -\n* not a name - skipped\n* `b` - kept",
                "",
                &[("b", "kept")],
            ),
        ];
        for (text, description, params) in cases {
            check(text, description, params);
        }
    }

    #[test]
    fn doc_attributes_become_lines() {
        let attrs: Vec<Attribute> = vec![
            syn::parse_quote!(#[doc = " First line."]),
            syn::parse_quote!(#[doc = ""]),
            syn::parse_quote!(#[doc = "  indented"]),
            syn::parse_quote!(#[inline]),
            syn::parse_quote!(#[doc = include_str!("x.md")]),
        ];
        assert_eq!(
            doc_text(&attrs).as_deref(),
            Some("First line.\n\n indented")
        );
        assert_eq!(doc_text(&[]), None);
    }
}
