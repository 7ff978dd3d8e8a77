//! Just enough line-based TOML reading for the tidy checks on `Cargo.toml` files: tables,
//! `key = value` pairs (joined over lines while an array or inline table is open), dotted
//! keys, inline tables and arrays of strings. Anything fancier (multi-line strings, arrays of
//! tables) is not needed by the manifests this workspace writes.

/// One `key = value` pair of a manifest.
#[derive(Debug, Clone)]
pub(crate) struct KeyValue {
    /// The table it sits in (`dependencies`, `workspace.dependencies`, …); empty at the top.
    pub(crate) table: String,
    /// The line of that table's `[header]` (0 at the top).
    pub(crate) table_line: usize,
    /// The dotted key, unquoted: `serde.workspace` is `["serde", "workspace"]`.
    pub(crate) key: Vec<String>,
    /// The raw value, comments stripped, lines joined with spaces.
    pub(crate) value: String,
    /// The first line of the pair (1-based).
    pub(crate) line: usize,
    /// The last line of the pair (1-based), later than `line` when the value spans lines.
    pub(crate) end_line: usize,
}

/// A parsed manifest: its lines (to locate things) and its key/value pairs.
#[derive(Debug)]
pub(crate) struct Manifest {
    lines: Vec<String>,
    /// Every `key = value` pair, in file order.
    pub(crate) pairs: Vec<KeyValue>,
}

/// One attribute of a dependency (`version`, `features`, `workspace`, …).
#[derive(Debug, Clone)]
pub(crate) struct Attr {
    /// The attribute's (possibly dotted) key.
    pub(crate) key: String,
    /// Its raw value.
    pub(crate) value: String,
    /// The first line it was written on.
    pub(crate) line: usize,
    /// The last line it was written on.
    pub(crate) end_line: usize,
}

/// A dependency declared in some dependency table, in any of the three TOML spellings
/// (`name = "1"`, `name = { … }` / `name.key = …`, or a `[table.name]` of its own).
#[derive(Debug)]
pub(crate) struct Dep {
    /// The table that declares it.
    pub(crate) table: String,
    /// The dependency key (the name the code uses).
    pub(crate) key: String,
    /// Where it is first declared.
    pub(crate) line: usize,
    /// Its attributes; a bare `name = "1"` has just `version`.
    pub(crate) attrs: Vec<Attr>,
}

impl Dep {
    /// The raw value of attribute `key`, if set.
    pub(crate) fn attr(&self, key: &str) -> Option<&Attr> {
        self.attrs.iter().find(|a| a.key == key)
    }

    /// The package it resolves to: `package = "…"` when renamed, otherwise its key.
    pub(crate) fn package(&self) -> String {
        self.attr("package")
            .map_or_else(|| self.key.clone(), |a| unquote(&a.value).to_string())
    }

    /// Whether it is inherited with `workspace = true`.
    pub(crate) fn inherits_workspace(&self) -> bool {
        self.attr("workspace")
            .is_some_and(|a| a.value.trim() == "true")
    }
}

impl Manifest {
    /// Reads the pairs and tables of `text`.
    pub(crate) fn parse(text: &str) -> Manifest {
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        let mut pairs = Vec::new();
        let mut table = String::new();
        let mut table_line = 0;
        let mut i = 0;
        while i < lines.len() {
            let start = i;
            let code = strip_comment(&lines[i]).trim().to_string();
            i += 1;
            if code.is_empty() {
                continue;
            }
            if code.starts_with('[') {
                table = code
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .trim()
                    .to_string();
                table_line = start + 1;
                continue;
            }
            let Some(eq) = find_outside_strings(&code, '=') else {
                continue;
            };
            let key = split_key(&code[..eq]);
            let mut value = code[eq + 1..].trim().to_string();
            while depth(&value) > 0 && i < lines.len() {
                value.push(' ');
                value.push_str(strip_comment(&lines[i]).trim());
                i += 1;
            }
            pairs.push(KeyValue {
                table: table.clone(),
                table_line,
                key,
                value,
                line: start + 1,
                end_line: i,
            });
        }
        Manifest { lines, pairs }
    }

    /// The pairs of table `name`.
    pub(crate) fn table<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a KeyValue> {
        self.pairs.iter().filter(move |kv| kv.table == name)
    }

    /// The line where `[name]` starts, if the manifest has that table.
    pub(crate) fn table_line(&self, name: &str) -> Option<usize> {
        self.lines
            .iter()
            .position(|l| {
                let code = strip_comment(l).trim();
                code.starts_with('[')
                    && code.trim_start_matches('[').trim_end_matches(']').trim() == name
            })
            .map(|i| i + 1)
    }

    /// The string value of top-level key `key` of table `table` (`name` in `[package]`).
    pub(crate) fn string(&self, table: &str, key: &str) -> Option<(String, usize)> {
        self.table(table)
            .find(|kv| kv.key.len() == 1 && kv.key[0] == key)
            .map(|kv| (unquote(&kv.value).to_string(), kv.line))
    }

    /// Every dependency declared in a table for which `is_table` holds, including the
    /// `[table.name]` form.
    pub(crate) fn dependencies(&self, is_table: impl Fn(&str) -> bool) -> Vec<Dep> {
        let mut deps: Vec<Dep> = Vec::new();
        for kv in &self.pairs {
            let (table, key, line, attrs) = if is_table(&kv.table) {
                let Some(name) = kv.key.first() else { continue };
                let attrs = if kv.key.len() > 1 {
                    vec![attr(kv.key[1..].join("."), kv.value.clone(), kv)]
                } else if kv.value.starts_with('{') {
                    inline_table(&kv.value)
                        .into_iter()
                        .map(|(k, v)| attr(k, v, kv))
                        .collect()
                } else {
                    vec![attr("version".to_string(), kv.value.clone(), kv)]
                };
                (kv.table.clone(), name.clone(), kv.line, attrs)
            } else if let Some((parent, name)) = kv.table.rsplit_once('.')
                && is_table(parent)
            {
                let attrs = vec![attr(kv.key.join("."), kv.value.clone(), kv)];
                let name = unquote(name).to_string();
                (parent.to_string(), name, kv.table_line, attrs)
            } else {
                continue;
            };
            match deps.iter_mut().find(|d| d.table == table && d.key == key) {
                Some(dep) => dep.attrs.extend(attrs),
                None => deps.push(Dep {
                    table,
                    key,
                    line,
                    attrs,
                }),
            }
        }
        deps
    }

    /// The first line in `first..=last` that contains `needle`, or `first`.
    pub(crate) fn locate(&self, first: usize, last: usize, needle: &str) -> usize {
        (first..=last)
            .find(|&n| {
                self.lines
                    .get(n.wrapping_sub(1))
                    .is_some_and(|l| strip_comment(l).contains(needle))
            })
            .unwrap_or(first)
    }
}

fn attr(key: String, value: String, kv: &KeyValue) -> Attr {
    Attr {
        key,
        value,
        line: kv.line,
        end_line: kv.end_line,
    }
}

/// `line` without its `#` comment (a `#` inside a string is kept).
pub(crate) fn strip_comment(line: &str) -> &str {
    find_outside_strings(line, '#').map_or(line, |i| &line[..i])
}

/// The byte index of the first `wanted` outside a TOML string.
fn find_outside_strings(text: &str, wanted: char) -> Option<usize> {
    let mut found = None;
    for_each_outside_strings(text, |i, c| {
        if c == wanted && found.is_none() {
            found = Some(i);
        }
    });
    found
}

/// How many `[`/`{` are still open in `text` (outside strings).
fn depth(text: &str) -> i32 {
    let mut depth = 0;
    for_each_outside_strings(text, |_, c| match c {
        '[' | '{' => depth += 1,
        ']' | '}' => depth -= 1,
        _ => {}
    });
    depth
}

fn for_each_outside_strings(text: &str, mut f: impl FnMut(usize, char)) {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' && q == '"' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None if c == '"' || c == '\'' => quote = Some(c),
            None => f(i, c),
        }
    }
}

/// A dotted key split into unquoted parts.
fn split_key(key: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut start = 0;
    for_each_outside_strings(key, |i, c| {
        if c == '.' {
            parts.push(unquote(&key[start..i]).to_string());
            start = i + 1;
        }
    });
    parts.push(unquote(&key[start..]).to_string());
    parts
}

/// `value` without surrounding whitespace and quotes.
pub(crate) fn unquote(value: &str) -> &str {
    let v = value.trim();
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q).and_then(|s| s.strip_suffix(q)) {
            return inner;
        }
    }
    v
}

/// The `key = value` pairs of an inline table `{ … }`, with dotted keys joined by `.`.
fn inline_table(value: &str) -> Vec<(String, String)> {
    let inner = value
        .trim()
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .unwrap_or("");
    let mut parts = Vec::new();
    let mut level = 0;
    let mut start = 0;
    for_each_outside_strings(inner, |i, c| match c {
        '[' | '{' => level += 1,
        ']' | '}' => level -= 1,
        ',' if level == 0 => {
            parts.push(&inner[start..i]);
            start = i + 1;
        }
        _ => {}
    });
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter_map(|part| {
            let eq = find_outside_strings(part, '=')?;
            let key = split_key(&part[..eq]).join(".");
            Some((key, part[eq + 1..].trim().to_string()))
        })
        .collect()
}

/// The strings of an array value such as `["sync", "rt"]`.
pub(crate) fn strings(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<(char, String)> = None;
    let mut escaped = false;
    for c in value.chars() {
        match &mut current {
            Some((q, s)) => {
                if escaped {
                    s.push(c);
                    escaped = false;
                } else if c == '\\' && *q == '"' {
                    escaped = true;
                } else if c == *q {
                    out.push(std::mem::take(s));
                    current = None;
                } else {
                    s.push(c);
                }
            }
            None if c == '"' || c == '\'' => current = Some((c, String::new())),
            None => {}
        }
    }
    out
}
