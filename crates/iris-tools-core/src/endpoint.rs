//! Which endpoints may receive a credential: the one rule every client that sends a key
//! (the model providers, the decision service, Tavily, MCP over HTTP) applies to the URL
//! it is configured with. `https` goes anywhere; plain `http` only to this machine
//! (`localhost`, `127.0.0.0/8`, `::1`), where nothing crosses a network.
//!
//! Pure string work on what a URL says, no lookup and no I/O: a name other than
//! `localhost` is never trusted to be local, whatever it resolves to.

// The address types only (parsing `127.0.0.1`), never a socket: core does no I/O.
use core::net::{IpAddr, Ipv6Addr};

/// Whether `host`, the host part of a URL, names this machine: `localhost` (in any
/// case), an IPv4 address in `127.0.0.0/8`, or `::1` with or without brackets.
///
/// The host is taken as written: a trailing dot, an IPv4-mapped IPv6 address or an
/// IPv4 address spelled in another base is not loopback here.
///
/// ```
/// use iris_tools_core::endpoint::is_loopback_host;
/// assert!(is_loopback_host("localhost"));
/// assert!(is_loopback_host("127.8.9.10"));
/// assert!(is_loopback_host("[::1]"));
/// assert!(!is_loopback_host("localhost.example.com"));
/// ```
pub fn is_loopback_host(host: &str) -> bool {
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<Ipv6Addr>().is_ok_and(|ip| ip.is_loopback()),
        None => host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback()),
    }
}

/// Whether a request to `url` may carry a credential: its scheme is `https`, or it is
/// `http` and its host is loopback ([`is_loopback_host`]).
///
/// The URL is read conservatively, so whatever an HTTP client makes of a strange URL,
/// `true` means the client connects to this machine or speaks TLS: an `http` URL with a
/// user part (`http://127.0.0.1@evil.example/` goes to `evil.example`) is refused
/// outright, as is a port that is not plain digits or anything else after the host.
/// Callers holding a parsed URL pass its normalized form (`url.as_str()`).
///
/// ```
/// use iris_tools_core::endpoint::sends_secrets_safely;
/// assert!(sends_secrets_safely("https://api.example.com/v1/"));
/// assert!(sends_secrets_safely("http://127.0.0.1:8080/v1/"));
/// assert!(!sends_secrets_safely("http://api.example.com/v1/"));
/// assert!(!sends_secrets_safely("http://127.0.0.1@evil.example/"));
/// ```
pub fn sends_secrets_safely(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once(':') else {
        return false;
    };
    if scheme.eq_ignore_ascii_case("https") {
        return true;
    }
    if !scheme.eq_ignore_ascii_case("http") {
        return false;
    }
    let Some(rest) = rest.strip_prefix("//") else {
        return false;
    };
    // A special scheme's authority ends at `/`, `\`, `?` or `#` (WHATWG URL).
    let authority = rest.split(['/', '\\', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return false;
    }
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((inner, after)) => match after.strip_prefix(':') {
                Some(port) => (&authority[..inner.len() + 2], port),
                None if after.is_empty() => (authority, ""),
                None => return false,
            },
            None => return false,
        },
        None => authority.split_once(':').unwrap_or((authority, "")),
    };
    port.bytes().all(|b| b.is_ascii_digit()) && is_loopback_host(host)
}
