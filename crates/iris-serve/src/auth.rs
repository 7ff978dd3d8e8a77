//! Who may call: the listening rule ([`ServeOptions::check`](crate::ServeOptions::check))
//! and the per-request check — a bearer token when one is set (compared in constant
//! time by [`iris_mcp::serve::access`], the check `iris mcp serve` makes; never
//! echoed), and on a loopback server without `allow_remote` a `Host` header that names
//! the loopback, so a web page's DNS-rebinding trick cannot reach the port from a
//! browser.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use iris_mcp::serve::access;

use crate::error::{ApiError, codes};

/// What each request is checked against.
#[derive(Debug, Clone)]
pub(crate) struct Gate {
    /// The bearer token requests must carry.
    pub(crate) token: Option<Arc<[u8]>>,
    /// Whether the `Host` header must name the loopback.
    pub(crate) loopback_host: bool,
}

/// Whether a `Host` header names the loopback (`localhost`, `127.0.0.1`, `[::1]`, with
/// or without a port).
fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The middleware: refuses a request that fails the gate.
pub(crate) async fn check(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    if gate.loopback_host {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !loopback_host(host) {
            return ApiError::new(
                codes::SERVE_HOST_REFUSED,
                "this server answers requests for localhost only",
            )
            .into_response();
        }
    }
    if let Some(expected) = &gate.token {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| access::bearer_token(v.as_bytes()));
        match given {
            Some(given) if access::token_matches(given, expected) => {}
            Some(_) => {
                return ApiError::new(codes::SERVE_UNAUTHORIZED, "the bearer token is wrong")
                    .into_response();
            }
            None => {
                return ApiError::new(
                    codes::SERVE_UNAUTHORIZED,
                    "this server needs `Authorization: Bearer <token>`",
                )
                .into_response();
            }
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for host in [
            "localhost",
            "localhost:8800",
            "127.0.0.1:1",
            "[::1]:80",
            "[::1]",
        ] {
            assert!(loopback_host(host), "{host}");
        }
        for host in [
            "",
            "evil.example",
            "evil.example:8800",
            "10.0.0.1:80",
            "127.0.0.1.evil:80",
        ] {
            assert!(!loopback_host(host), "{host}");
        }
    }
}
