//! Keeping secrets out of what the MCP layer says.
//!
//! Every error message, diagnostic and stderr line this crate produces passes through a
//! [`Redactor`] before anyone sees it (an error's `Display`, a snapshot, a log line, a
//! tool result the model reads). Two passes:
//!
//! 1. **Known secrets**: the values a server's configuration carries — header values
//!    (and the token of `Bearer …`), the URL's userinfo and query values, every value an
//!    expression (`${VAR}`) substituted, and the variables a stdio server gets from
//!    `env_vars` and `envFile` — are replaced wherever they appear.
//! 2. **URL shapes**: in any `scheme://…` the userinfo, every query value and the
//!    fragment become `<redacted>` (`https://host/mcp?api_key=<redacted>`), so a URL
//!    with a secret nobody declared (a session id the server handed out) is covered too.
//!
//! Values shorter than [`MIN_SECRET_CHARS`](iris_tools_core::secrets::MIN_SECRET_CHARS)
//! are not replaced by the first pass (a `1`
//! would turn "exit status: 1" into nonsense); the second pass still covers them
//! inside URLs.

use iris_tools_core::secrets::KnownSecrets;

pub(crate) use iris_tools_core::secrets::REDACTED;

/// Replaces known secrets and the secret parts of URLs in text. Cheap to clone; the
/// clones share one list, so a secret [added](Redactor::add) later (a token a host
/// supplied at run time) is covered by every holder.
///
/// Its `Debug` output says how many secrets it holds, never what they are.
#[derive(Clone, Debug, Default)]
pub(crate) struct Redactor {
    secrets: KnownSecrets,
}

impl Redactor {
    /// A redactor for these values (short and duplicate ones are dropped).
    pub(crate) fn new(values: impl IntoIterator<Item = String>) -> Self {
        Self {
            secrets: KnownSecrets::new(values),
        }
    }

    /// Covers these values too, for this redactor and every clone of it.
    pub(crate) fn add(&self, values: impl IntoIterator<Item = String>) {
        self.secrets.add(values);
    }

    /// `text` with every known secret and every URL's secret parts replaced.
    pub(crate) fn redact(&self, text: &str) -> String {
        redact_urls(&self.secrets.replace(text))
    }
}

/// The secret-looking parts of a header value: the whole value and, for
/// `<scheme> <token>` (`Bearer abc`, `Basic abc`), the token alone.
pub(crate) fn header_secrets(value: &str) -> Vec<String> {
    let mut out = vec![value.to_owned()];
    if let Some((_, token)) = value.split_once(' ') {
        out.push(token.trim().to_owned());
    }
    out
}

/// The secret parts of a URL as written and as decoded: userinfo, query values and the
/// fragment.
pub(crate) fn url_secrets(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Some(scheme_end) = url.find("://") else {
        return out;
    };
    let body = &url[scheme_end + 3..];
    let parts = UrlParts::split(body);
    if let Some(userinfo) = parts.userinfo {
        out.push(userinfo.to_owned());
        if let Some((user, password)) = userinfo.split_once(':') {
            out.push(user.to_owned());
            out.push(password.to_owned());
        }
    }
    if let Some(query) = parts.query {
        for pair in query.split('&') {
            let value = pair.split_once('=').map_or(pair, |(_, v)| v);
            out.push(value.to_owned());
        }
    }
    if let Some(fragment) = parts.fragment {
        out.push(fragment.to_owned());
    }
    // A message may quote the value decoded (`%40` as `@`, `+` as a space).
    let decoded: Vec<String> = out
        .iter()
        .flat_map(|v| [percent_decode(v, false), percent_decode(v, true)])
        .collect();
    out.extend(decoded);
    out.retain(|v| !v.is_empty());
    out
}

/// `%XX` escapes decoded (and `+` as a space when `plus`); invalid UTF-8 is replaced.
fn percent_decode(text: &str, plus: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let byte = hex(bytes[i + 1])
                    .zip(hex(bytes[i + 2]))
                    .and_then(|(h, l)| u8::try_from(h * 16 + l).ok());
                if let Some(byte) = byte {
                    out.push(byte);
                    i += 3;
                    continue;
                }
                out.push(b'%');
            }
            b'+' if plus => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The pieces of a URL after `scheme://`.
struct UrlParts<'a> {
    userinfo: Option<&'a str>,
    host_and_path: &'a str,
    query: Option<&'a str>,
    fragment: Option<&'a str>,
}

impl<'a> UrlParts<'a> {
    fn split(body: &'a str) -> Self {
        let authority_end = body.find(['/', '?', '#']).unwrap_or(body.len());
        let (userinfo, rest) = match body[..authority_end].rfind('@') {
            Some(at) => (Some(&body[..at]), &body[at + 1..]),
            None => (None, body),
        };
        let (before_fragment, fragment) = match rest.split_once('#') {
            Some((b, f)) => (b, Some(f)),
            None => (rest, None),
        };
        let (host_and_path, query) = match before_fragment.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (before_fragment, None),
        };
        Self {
            userinfo,
            host_and_path,
            query,
            fragment,
        }
    }
}

/// Characters that end a URL inside free text.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`')
}

/// `text` with the userinfo, query values and fragment of every `scheme://…` replaced
/// by `<redacted>`; the scheme, host, port, path and query parameter names stay.
///
/// ```text
/// GET http://u:pw@127.0.0.1:8/sse?token=abc&x= failed  →  GET http://<redacted>@127.0.0.1:8/sse?token=<redacted>&x= failed
/// ```
pub(crate) fn redact_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(sep) = rest.find("://") {
        let before = &rest[..sep];
        let scheme_len = before
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            .count();
        let scheme_start = sep - scheme_len;
        let is_scheme = before[scheme_start..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic());
        if !is_scheme {
            out.push_str(&rest[..sep + 3]);
            rest = &rest[sep + 3..];
            continue;
        }
        let tail = &rest[sep + 3..];
        let mut end = tail.find(ends_url).unwrap_or(tail.len());
        // `(http://…)`: the closing parenthesis belongs to the sentence.
        if before[..scheme_start].ends_with('(') && tail[..end].ends_with(')') {
            end -= 1;
        }
        out.push_str(&rest[..sep + 3]);
        out.push_str(&redact_url_body(&tail[..end]));
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

fn redact_url_body(body: &str) -> String {
    let parts = UrlParts::split(body);
    let mut out = String::with_capacity(body.len());
    if parts.userinfo.is_some() {
        out.push_str(REDACTED);
        out.push('@');
    }
    out.push_str(parts.host_and_path);
    if let Some(query) = parts.query {
        out.push('?');
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, "")) => format!("{name}="),
                Some((name, _)) => format!("{name}={REDACTED}"),
                None if pair.is_empty() => String::new(),
                None => REDACTED.to_owned(),
            })
            .collect();
        out.push_str(&pairs.join("&"));
    }
    if let Some(fragment) = parts.fragment {
        out.push('#');
        if !fragment.is_empty() {
            out.push_str(REDACTED);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_keep_their_shape_and_lose_their_secrets() {
        let rows = [
            (
                "error sending request for url (http://127.0.0.1:9/mcp?api_key=s3cret&mode=x)",
                "error sending request for url (http://127.0.0.1:9/mcp?api_key=<redacted>&mode=<redacted>)",
            ),
            (
                "GET http://iris:pw@127.0.0.1:9/sse?token=t failed",
                "GET http://<redacted>@127.0.0.1:9/sse?token=<redacted> failed",
            ),
            (
                "`ftp://u:p@h/x?k=v#frag` is not",
                "`ftp://<redacted>@h/x?k=<redacted>#<redacted>` is not",
            ),
            ("https://host/mcp?bare&e=", "https://host/mcp?<redacted>&e="),
            ("no url: a://b is 1://2", "no url: a://b is 1://2"),
            ("https://host/path", "https://host/path"),
        ];
        for (input, want) in rows {
            assert_eq!(redact_urls(input), want, "{input}");
            assert_eq!(redact_urls(want), want, "idempotent: {want}");
        }
    }

    #[test]
    fn known_secrets_are_replaced_longest_first() {
        let r = Redactor::new([
            "token-abcdef".to_owned(),
            "abcdef".to_owned(),
            "1".to_owned(),
        ]);
        assert_eq!(
            r.redact("got token-abcdef and abcdef, exit status: 1"),
            "got <redacted> and <redacted>, exit status: 1"
        );
        // A value added later reaches every clone.
        let clone = r.clone();
        r.add(["tok-added-999".to_owned(), "2".to_owned()]);
        assert_eq!(clone.redact("tok-added-999, 2"), "<redacted>, 2");
        assert_eq!(
            header_secrets("Bearer tok-123456"),
            ["Bearer tok-123456", "tok-123456"]
        );
        let secrets = url_secrets("http://u:p%40ss@h/x?k=a%20b&j=c#f");
        for want in ["u:p%40ss", "p%40ss", "p@ss", "a%20b", "a b", "c", "f"] {
            assert!(secrets.iter().any(|s| s == want), "{want} in {secrets:?}");
        }
    }

    #[test]
    fn debug_counts_the_secrets_and_never_shows_one() {
        let r = Redactor::new(["debug-secret-4242".to_owned()]);
        r.add(["added-secret-8484".to_owned()]);
        let text = format!("{r:?}");
        assert!(!text.contains("debug-secret-4242"), "{text}");
        assert!(!text.contains("added-secret-8484"), "{text}");
        assert!(text.contains("<2 redacted>"), "{text}");
    }
}
