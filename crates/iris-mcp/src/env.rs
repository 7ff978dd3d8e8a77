//! Environment expressions and dotenv files.
//!
//! Expressions, expanded **once** from the host environment at prepare time:
//!
//! | expression | value |
//! |---|---|
//! | `${VAR}`, `${env:VAR}` | the host variable; unset is an error naming the field |
//! | `${VAR:-default}` | the host variable, or `default` when it is unset or empty |
//! | `${workspaceFolder}`, `${input:…}`, … | left exactly as written (other clients' placeholders) |
//!
//! One pass: text produced by an expansion is never scanned again, so a variable whose
//! value contains `${OTHER}` passes it through literally. `$VAR` without braces and a
//! `${` without a closing `}` are plain text.

use std::collections::BTreeMap;

/// Host variables a stdio server inherits without being listed in `env_vars` — the
/// same set the official Python SDK passes on POSIX.
pub const DEFAULT_INHERITED_ENV_VARS: [&str; 6] =
    ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// Placeholders other MCP clients (VS Code, Cursor, Claude) define. Iris does not
/// interpret them and leaves them in place.
pub const CLIENT_PLACEHOLDERS: [&str; 14] = [
    "workspaceFolder",
    "workspaceFolderBasename",
    "workspaceRoot",
    "userHome",
    "cwd",
    "file",
    "fileBasename",
    "fileDirname",
    "fileExtname",
    "relativeFile",
    "pathSeparator",
    "execPath",
    "lineNumber",
    "selectedText",
];

/// A snapshot of host variables that expressions read.
///
/// [`HostEnv::capture`] reads the process environment; tests build one from pairs
/// (changing the real environment is `unsafe` in Rust 2024).
///
/// ```
/// use iris_mcp::env::{expand, HostEnv};
/// let host = HostEnv::from_iter([("TOKEN", "s3cret"), ("EMPTY", "")]);
/// assert_eq!(expand("Bearer ${TOKEN}", &host).unwrap(), "Bearer s3cret");
/// assert_eq!(expand("${env:TOKEN}", &host).unwrap(), "s3cret");
/// assert_eq!(expand("${EMPTY:-fallback}", &host).unwrap(), "fallback");
/// assert_eq!(expand("${workspaceFolder}/x", &host).unwrap(), "${workspaceFolder}/x");
/// assert!(expand("${MISSING}", &host).unwrap_err().contains("`MISSING` is not set"));
/// ```
///
/// Its `Debug` output lists the variable names, never their values (the host's
/// environment holds its secrets).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct HostEnv {
    vars: BTreeMap<String, String>,
}

impl std::fmt::Debug for HostEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostEnv")
            .field("len", &self.vars.len())
            .field("names", &self.vars.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl HostEnv {
    /// The current process environment (non-Unicode entries are skipped).
    pub fn capture() -> Self {
        Self {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        }
    }

    /// One variable.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// Adds or replaces one variable.
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.vars.insert(name.into(), value.into());
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for HostEnv {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Self {
            vars: iter
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }
}

/// Whether `name` is a portable environment variable name: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Expands the expressions in `raw` once (see the module docs). The error is a
/// one-line reason; the caller adds file, server and field.
pub fn expand(raw: &str, host: &HostEnv) -> Result<String, String> {
    expand_recording(raw, host, &mut Vec::new())
}

/// [`expand`], also pushing onto `values` every value a host variable supplied (not
/// `${VAR:-default}` defaults, which the file holds, nor the variables every stdio
/// server inherits anyway): what must never be printed back.
pub(crate) fn expand_recording(
    raw: &str,
    host: &HostEnv,
    values: &mut Vec<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            // No closing brace: the rest is plain text.
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let whole = &rest[start..start + 2 + end + 1];
        match expand_one(inner, host)? {
            Some((value, from_host)) => {
                out.push_str(&value);
                if from_host {
                    values.push(value);
                }
            }
            None => out.push_str(whole),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The host variables the expressions in `raw` read, in order (`${VAR}`,
/// `${env:VAR}`, `${VAR:-default}`; other clients' placeholders are not variables).
pub(crate) fn referenced_vars(raw: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = raw;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            break;
        };
        let inner = &after[..end];
        let name = inner
            .strip_prefix("env:")
            .or_else(|| inner.split_once(":-").map(|(n, _)| n))
            .unwrap_or(inner);
        if is_var_name(name) && !CLIENT_PLACEHOLDERS.contains(&name) {
            names.push(name.to_owned());
        }
        rest = &after[end + 1..];
    }
    names
}

/// The value of one `${inner}` and whether it is a host variable's (worth keeping
/// secret), or `None` to leave it as written.
fn expand_one(inner: &str, host: &HostEnv) -> Result<Option<(String, bool)>, String> {
    let secret = |name: &str| !DEFAULT_INHERITED_ENV_VARS.contains(&name);
    if let Some(name) = inner.strip_prefix("env:") {
        return lookup(name, host).map(|v| Some((v, secret(name))));
    }
    if let Some((name, default)) = inner.split_once(":-") {
        if !is_var_name(name) {
            return Err(format!("`${{{inner}}}`: `{name}` is not a variable name"));
        }
        return Ok(Some(match host.get(name) {
            Some(v) if !v.is_empty() => (v.to_owned(), secret(name)),
            _ => (default.to_owned(), false),
        }));
    }
    if CLIENT_PLACEHOLDERS.contains(&inner) || (inner.contains(':') && !inner.contains(":-")) {
        // `${workspaceFolder}`, `${input:token}`, `${config:x}`: another client's.
        return Ok(None);
    }
    if !is_var_name(inner) {
        return Err(format!("`${{{inner}}}` is not a valid expression"));
    }
    lookup(inner, host).map(|v| Some((v, secret(inner))))
}

fn lookup(name: &str, host: &HostEnv) -> Result<String, String> {
    if !is_var_name(name) {
        return Err(format!("`{name}` is not a variable name"));
    }
    host.get(name)
        .map(str::to_owned)
        .ok_or_else(|| format!("environment variable `{name}` is not set"))
}

/// Parses a dotenv file: `KEY=value` lines, optional `export `, `#` comments, blank
/// lines, `'single'` (literal) and `"double"` (with `\n`, `\t`, `\"`, `\\` escapes)
/// quotes, and ` #` comments after unquoted values. Values are not expanded.
///
/// ```
/// let vars = iris_mcp::env::parse_dotenv("# c\nexport A=1\nB = 'two words'\nC=\"x\\ny\" \nD=v # note\n").unwrap();
/// assert_eq!(vars["A"], "1");
/// assert_eq!(vars["B"], "two words");
/// assert_eq!(vars["C"], "x\ny");
/// assert_eq!(vars["D"], "v");
/// ```
pub fn parse_dotenv(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut vars = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!("line {line_no}: expected KEY=value"));
        };
        let key = key.trim();
        if !is_var_name(key) {
            return Err(format!("line {line_no}: `{key}` is not a variable name"));
        }
        let value = value.trim();
        let value = if let Some(body) = value.strip_prefix('\'') {
            body.strip_suffix('\'')
                .ok_or_else(|| format!("line {line_no}: unterminated ' quote"))?
                .to_owned()
        } else if let Some(body) = value.strip_prefix('"') {
            let body = body
                .strip_suffix('"')
                .ok_or_else(|| format!("line {line_no}: unterminated \" quote"))?;
            unescape(body)
        } else {
            match value.find(" #") {
                Some(at) => value[..at].trim_end().to_owned(),
                None => value.to_owned(),
            }
        };
        vars.insert(key.to_owned(), value);
    }
    Ok(vars)
}

fn unescape(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn referenced_variables_are_found() {
        assert_eq!(
            referenced_vars(
                "Bearer ${TOKEN} ${env:OTHER} ${A:-x} ${workspaceFolder} ${input:y} ${"
            ),
            ["TOKEN", "OTHER", "A"]
        );
    }
}
