//! Who may reach an HTTP server of Iris's — `iris mcp serve --http` here, and
//! `iris serve` (the `iris-serve` crate) — in one place: the listening rule
//! ([`remote_refusal`]) and the bearer-token check ([`bearer_token`],
//! [`token_matches`]).

use std::net::SocketAddr;

/// Why `addr` may not be listened on, or `None` when it may: a loopback address always
/// may; any other needs `allow_remote` and a bearer token that is not blank. `reach`
/// says what a caller that reaches the port could do ("call the tools").
///
/// ```
/// use iris_mcp::serve::access::remote_refusal;
/// let lan = "0.0.0.0:8800".parse().unwrap();
/// assert!(remote_refusal("127.0.0.1:8800".parse().unwrap(), false, None, "x").is_none());
/// assert!(remote_refusal(lan, false, Some("t0k"), "x").is_some());
/// assert!(remote_refusal(lan, true, Some(" "), "x").is_some());
/// assert!(remote_refusal(lan, true, Some("t0k"), "x").is_none());
/// ```
pub fn remote_refusal(
    addr: SocketAddr,
    allow_remote: bool,
    bearer_token: Option<&str>,
    reach: &str,
) -> Option<String> {
    let ip = addr.ip();
    if ip.is_loopback() {
        return None;
    }
    if !allow_remote {
        return Some(format!(
            "{ip} is not a loopback address: anything that reaches it could {reach}; bind \
             127.0.0.1, or allow it explicitly (--allow-remote) with a bearer token \
             (--token-env)"
        ));
    }
    if bearer_token.is_none_or(|t| t.trim().is_empty()) {
        return Some(format!(
            "{ip} is not a loopback address and no bearer token is set, or it is empty \
             (--token-env VAR)"
        ));
    }
    None
}

/// The token of an `Authorization: Bearer <token>` header's value.
///
/// ```
/// use iris_mcp::serve::access::bearer_token;
/// assert_eq!(bearer_token(b"Bearer abc"), Some(&b"abc"[..]));
/// assert_eq!(bearer_token(b"Basic abc"), None);
/// ```
pub fn bearer_token(authorization: &[u8]) -> Option<&[u8]> {
    authorization
        .strip_prefix(b"Bearer ")
        .or_else(|| authorization.strip_prefix(b"bearer "))
}

/// Whether a given token is the expected one, compared without stopping at the first
/// differing byte.
pub fn token_matches(given: &[u8], expected: &[u8]) -> bool {
    if given.len() != expected.len() {
        return false;
    }
    given
        .iter()
        .zip(expected)
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(token_matches(b"abc", b"abc"));
        assert!(!token_matches(b"abc", b"abd"));
        assert!(!token_matches(b"abc", b"abcd"));
    }
}
