//! Streamable HTTP: rmcp's tower service at `/mcp` behind a bearer-token check, on a
//! loopback address unless the host explicitly allows another. It is served by axum,
//! the HTTP server `iris serve` uses too.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use iris_tools_core::CancellationSignal;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;

use super::{McpToolServer, access};
use crate::error::{McpError, Result, codes};

/// The endpoint's path.
pub const MCP_PATH: &str = "/mcp";
/// How long open connections get to finish after shutdown before they are dropped.
const DRAIN: Duration = Duration::from_secs(2);

/// Where and how [`McpToolServer::bind_http`] listens.
///
/// ```
/// use iris_mcp::serve::HttpOptions;
/// let options = HttpOptions::new("127.0.0.1:0".parse().unwrap()).bearer_token("s3cret");
/// assert!(!options.allow_remote);
/// ```
#[derive(Clone)]
pub struct HttpOptions {
    /// The address to bind (port 0 picks a free one; see [`HttpServer::local_addr`]).
    pub addr: SocketAddr,
    /// Bind an address that is not loopback (`127.0.0.0/8`, `::1`). Off by default:
    /// anything that reaches the port could call the tools. When on, a bearer token is
    /// required and the `Host` header is not checked.
    pub allow_remote: bool,
    /// Requests must carry `Authorization: Bearer <token>`; others get `401`.
    pub bearer_token: Option<String>,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("addr", &self.addr)
            .field("allow_remote", &self.allow_remote)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl HttpOptions {
    /// Loopback-only, no token.
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            allow_remote: false,
            bearer_token: None,
        }
    }

    /// Requires `Authorization: Bearer <token>`.
    #[must_use]
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Allows a non-loopback address (a token is still required).
    #[must_use]
    pub fn allow_remote(mut self, allow: bool) -> Self {
        self.allow_remote = allow;
        self
    }

    /// Whether these options may be served: a non-loopback address needs
    /// [`HttpOptions::allow_remote`] and a bearer token. [`McpToolServer::bind_http`]
    /// checks it too; a host checks early to start nothing when it fails.
    ///
    /// ```
    /// use iris_mcp::serve::HttpOptions;
    /// let remote = HttpOptions::new("0.0.0.0:8931".parse().unwrap());
    /// assert_eq!(remote.check().unwrap_err().code(), "MCP_SERVE_ADDRESS_REFUSED");
    /// assert!(remote.clone().allow_remote(true).bearer_token("t").check().is_ok());
    /// // An empty or blank token is no token.
    /// let blank = remote.allow_remote(true).bearer_token(" ");
    /// assert_eq!(blank.check().unwrap_err().code(), "MCP_SERVE_ADDRESS_REFUSED");
    /// ```
    ///
    /// # Errors
    /// `MCP_SERVE_ADDRESS_REFUSED` saying which rule (an empty or whitespace-only
    /// token counts as none).
    pub fn check(&self) -> Result<()> {
        match super::access::remote_refusal(
            self.addr,
            self.allow_remote,
            self.bearer_token.as_deref(),
            "call the tools",
        ) {
            Some(message) => Err(McpError::Serve {
                code: codes::MCP_SERVE_ADDRESS_REFUSED,
                message,
            }),
            None => Ok(()),
        }
    }
}

/// A bound streamable-HTTP endpoint, not yet serving.
#[derive(Debug)]
pub struct HttpServer {
    server: McpToolServer,
    listener: TcpListener,
    options: HttpOptions,
}

pub(crate) async fn bind(server: McpToolServer, options: HttpOptions) -> Result<HttpServer> {
    options.check()?;
    let listener = TcpListener::bind(options.addr)
        .await
        .map_err(|e| McpError::Serve {
            code: codes::MCP_SERVE_FAILED,
            message: format!("cannot listen on {}: {e}", options.addr),
        })?;
    Ok(HttpServer {
        server,
        listener,
        options,
    })
}

impl HttpServer {
    /// The bound address (the real port when 0 was asked for).
    ///
    /// # Errors
    /// `MCP_SERVE_FAILED` when the socket cannot say.
    pub fn local_addr(&self) -> Result<SocketAddr> {
        self.listener.local_addr().map_err(|e| McpError::Serve {
            code: codes::MCP_SERVE_FAILED,
            message: format!("the listening socket has no address: {e}"),
        })
    }

    /// Serves until `shutdown` fires: then stops accepting, ends the MCP sessions and
    /// their streams, cancels calls in flight, and gives open connections a moment
    /// to finish.
    ///
    /// # Errors
    /// `MCP_SERVE_FAILED` when serving fails for good.
    pub async fn run(self, shutdown: &CancellationSignal) -> Result<()> {
        let mut config = StreamableHttpServerConfig::default();
        if self.options.allow_remote {
            // Clients of a remote endpoint name it by its public host name.
            config = config.disable_allowed_hosts();
        }
        let sessions = config.cancellation_token.clone();
        let server = self.server.clone();
        let handler_shutdown = shutdown.clone();
        let service = StreamableHttpService::new(
            move || Ok(server.handler(handler_shutdown.clone())),
            LocalSessionManager::default().into(),
            config,
        );
        let token: Option<Arc<[u8]>> = self.options.bearer_token.map(|t| t.into_bytes().into());
        let router = Router::new()
            .route_service(MCP_PATH, service)
            .fallback(|| async {
                plain(
                    StatusCode::NOT_FOUND,
                    &format!("the MCP endpoint is {MCP_PATH}"),
                )
            })
            .layer(middleware::from_fn_with_state(token, check));
        let stopping = shutdown.clone();
        let served = axum::serve(self.listener, router).with_graceful_shutdown(async move {
            stopping.cancelled().await;
            // Ends the sessions' event streams, so their connections can close.
            sessions.cancel();
        });
        // Connections still open `DRAIN` after the signal are not waited for.
        let drained = async {
            shutdown.cancelled().await;
            tokio::time::sleep(DRAIN).await;
        };
        tokio::select! {
            outcome = served => outcome.map_err(|e| McpError::Serve {
                code: codes::MCP_SERVE_FAILED,
                message: format!("serving failed: {e}"),
            }),
            () = drained => Ok(()),
        }
    }
}

/// `401` without the right bearer token (the token is never echoed); else the request
/// goes on to the endpoint (or the `404` of any other path).
async fn check(State(token): State<Option<Arc<[u8]>>>, req: Request, next: Next) -> Response {
    let Some(expected) = token else {
        return next.run(req).await;
    };
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| access::bearer_token(v.as_bytes()));
    match given {
        Some(given) if access::token_matches(given, &expected) => next.run(req).await,
        Some(_) => unauthorized("the bearer token is wrong"),
        None => unauthorized("this endpoint needs `Authorization: Bearer <token>`"),
    }
}

fn plain(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({"error": message}).to_string();
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

fn unauthorized(message: &str) -> Response {
    let mut response = plain(StatusCode::UNAUTHORIZED, message);
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_address_needs_permission_and_a_real_token() {
        let remote = HttpOptions::new(SocketAddr::from(([0, 0, 0, 0], 8931)));
        let code = |o: &HttpOptions| o.check().err().map(|e| e.code());
        let refused = Some(codes::MCP_SERVE_ADDRESS_REFUSED);
        assert_eq!(code(&remote), refused);
        assert_eq!(code(&remote.clone().bearer_token("t0k")), refused);
        let allowed = remote.allow_remote(true);
        assert_eq!(code(&allowed), refused);
        for blank in ["", " ", "\t\n"] {
            assert_eq!(
                code(&allowed.clone().bearer_token(blank)),
                refused,
                "{blank:?}"
            );
        }
        assert_eq!(code(&allowed.bearer_token("t0k")), None);
        // Loopback needs neither.
        let local = HttpOptions::new(SocketAddr::from(([127, 0, 0, 1], 0)));
        assert_eq!(code(&local), None);
        assert_eq!(code(&local.bearer_token("")), None);
    }

    #[test]
    fn debug_never_shows_the_token() {
        let options =
            HttpOptions::new(SocketAddr::from(([127, 0, 0, 1], 0))).bearer_token("s3cret");
        assert!(!format!("{options:?}").contains("s3cret"));
    }
}
