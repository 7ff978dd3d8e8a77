//! [`ServeOptions`] (where to listen, who may call) and [`Server`] (bound, then run
//! until a signal).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use iris_tools_core::CancellationSignal;
use tokio::net::TcpListener;

use crate::agents::Agents;
use crate::auth::Gate;
use crate::error::ServeError;
use crate::host::Host;
use crate::limit::ClientLimit;
use crate::routes;

/// How long open connections get to finish once the server stops accepting.
pub const CONNECTION_GRACE: Duration = Duration::from_secs(2);

/// How long closing the agents' tools (MCP servers, command services) may take.
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(15);

/// The default of [`ServeOptions::max_per_client`].
pub const DEFAULT_MAX_PER_CLIENT: usize = 64;

/// How a server stopped ([`Server::run`]).
#[derive(Debug)]
pub struct Stopped {
    /// The runs this process was still driving, left (leases released) for any host
    /// to recover.
    pub given_up: Vec<String>,
    /// Whether the agents' tools closed.
    pub closed: Result<(), ServeError>,
}

/// Where a server listens and who may call it.
///
/// ```
/// use iris_serve::ServeOptions;
/// let local = ServeOptions::new("127.0.0.1:8800".parse().unwrap());
/// assert!(local.check().is_ok());
/// let lan = ServeOptions::new("0.0.0.0:8800".parse().unwrap());
/// assert_eq!(lan.check().unwrap_err().code(), "SERVE_ADDRESS_REFUSED");
/// assert!(lan.allow_remote(true).bearer_token("s3cret").check().is_ok());
/// ```
#[derive(Clone)]
pub struct ServeOptions {
    /// The address (port 0 picks a free port).
    pub addr: SocketAddr,
    /// The bearer token every request must carry (`Authorization: Bearer <token>`).
    pub bearer_token: Option<String>,
    /// Whether a non-loopback address is allowed (it also needs a token).
    pub allow_remote: bool,
    /// Variables whose values the server must never show (the token's variable is
    /// added by the CLI); the served agents' own credential variables are added by
    /// [`Agents`].
    pub secret_vars: Vec<String>,
    /// The most requests one client address may have in progress at once, an open
    /// event stream counting until it closes (default [`DEFAULT_MAX_PER_CLIENT`]); the
    /// next is `429 SERVE_TOO_MANY_REQUESTS`.
    pub max_per_client: usize,
}

impl std::fmt::Debug for ServeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeOptions")
            .field("addr", &self.addr)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .field("allow_remote", &self.allow_remote)
            .field("secret_vars", &self.secret_vars)
            .field("max_per_client", &self.max_per_client)
            .finish()
    }
}

impl ServeOptions {
    /// Listens on `addr`, no token, loopback only.
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            bearer_token: None,
            allow_remote: false,
            secret_vars: Vec::new(),
            max_per_client: DEFAULT_MAX_PER_CLIENT,
        }
    }

    /// At most `max` requests in progress per client address (at least 1).
    #[must_use]
    pub fn max_per_client(mut self, max: usize) -> Self {
        self.max_per_client = max.max(1);
        self
    }

    /// Requires this bearer token.
    #[must_use]
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Allows a non-loopback address (with a token).
    #[must_use]
    pub fn allow_remote(mut self, allow: bool) -> Self {
        self.allow_remote = allow;
        self
    }

    /// Never shows the values of these variables.
    #[must_use]
    pub fn secret_vars(mut self, vars: impl IntoIterator<Item = String>) -> Self {
        self.secret_vars.extend(vars);
        self
    }

    /// The listening rule, `iris mcp serve`'s ([`iris_mcp::serve::access`]): a loopback address is always
    /// allowed; any other needs `allow_remote` and a non-blank bearer token.
    ///
    /// # Errors
    /// `SERVE_ADDRESS_REFUSED` saying which rule.
    pub fn check(&self) -> Result<(), ServeError> {
        match iris_mcp::serve::access::remote_refusal(
            self.addr,
            self.allow_remote,
            self.bearer_token.as_deref(),
            "start runs and answer approvals",
        ) {
            Some(message) => Err(ServeError::AddressRefused { message }),
            None => Ok(()),
        }
    }
}

/// A bound address, checked against the listening rule ([`ServeOptions::bind`]):
/// bound before the agents start, so an address in use is reported first.
#[derive(Debug)]
pub struct Bound {
    listener: TcpListener,
    options: ServeOptions,
}

impl Bound {
    /// The bound address (the port chosen for port 0).
    ///
    /// # Errors
    /// `SERVE_BIND_FAILED` when the socket cannot say.
    pub fn local_addr(&self) -> Result<SocketAddr, ServeError> {
        self.listener.local_addr().map_err(|e| ServeError::Bind {
            addr: self.options.addr,
            message: e.to_string(),
        })
    }
}

impl ServeOptions {
    /// Checks the listening rule ([`ServeOptions::check`]) and binds.
    ///
    /// # Errors
    /// `SERVE_ADDRESS_REFUSED`, `SERVE_BIND_FAILED`.
    pub async fn bind(self) -> Result<Bound, ServeError> {
        self.check()?;
        let listener = TcpListener::bind(self.addr)
            .await
            .map_err(|e| ServeError::Bind {
                addr: self.addr,
                message: e.to_string(),
            })?;
        Ok(Bound {
            listener,
            options: self,
        })
    }
}

/// A server: the agents on a bound address, not yet serving.
#[derive(Debug)]
pub struct Server {
    host: Arc<Host>,
    listener: TcpListener,
    gate: Gate,
    limit: ClientLimit,
}

impl Server {
    /// Serves `agents` on `bound`.
    pub fn new(agents: Agents, bound: Bound) -> Self {
        let Bound { listener, options } = bound;
        let gate = Gate {
            token: options
                .bearer_token
                .as_deref()
                .map(|t| Arc::from(t.as_bytes())),
            loopback_host: !options.allow_remote,
        };
        Self {
            host: Arc::new(Host::new(agents, &options.secret_vars)),
            listener,
            gate,
            limit: ClientLimit::new(options.max_per_client),
        }
    }

    /// The bound address (the port chosen for port 0).
    ///
    /// # Errors
    /// `SERVE_BIND_FAILED` when the socket cannot say.
    pub fn local_addr(&self) -> Result<SocketAddr, ServeError> {
        self.listener.local_addr().map_err(|e| ServeError::Bind {
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
            message: e.to_string(),
        })
    }

    /// The served agents.
    pub fn agents(&self) -> &Agents {
        self.host.agents()
    }

    /// Serves until `stop` is raised, taking over the runs of hosts that stopped
    /// ([`RECOVER_EVERY`](crate::RECOVER_EVERY)), then stops: no new connections; event streams
    /// end; open requests get [`CONNECTION_GRACE`]; the runs this process drives get
    /// [`SHUTDOWN_GRACE`](crate::SHUTDOWN_GRACE) to stop on their own, then their
    /// leases are released and they are left as last saved, for any host to recover.
    /// Then the agents' tools are closed ([`Agents::close`], at most
    /// [`CLOSE_TIMEOUT`]).
    pub async fn run(self, stop: &CancellationSignal) -> Stopped {
        let Self {
            host,
            listener,
            gate,
            limit,
        } = self;
        let app = routes::router(Arc::clone(&host), gate, limit)
            .into_make_service_with_connect_info::<SocketAddr>();
        let stopping = host.stopping.clone();
        let signal = stop.clone();
        let serving = axum::serve(listener, app).with_graceful_shutdown(async move {
            signal.cancelled().await;
            // Event streams end now, so their connections can close.
            stopping.cancel();
        });
        let mut serving = tokio::spawn(serving.into_future());
        // Runs whose host stopped are taken over until this one stops.
        let recovering = tokio::spawn(crate::recover::watch(Arc::clone(&host)));
        // Run changes go to the runs feed until the server stops.
        let watching = tokio::spawn(crate::feed::watch(Arc::clone(&host)));
        stop.cancelled().await;
        if tokio::time::timeout(CONNECTION_GRACE, &mut serving)
            .await
            .is_err()
        {
            serving.abort();
        }
        // No new take-over; one under way finishes handing its run to the host, so
        // the run is stopped below like every other.
        host.stopping.cancel();
        let _ = recovering.await;
        let _ = watching.await;
        let given_up = host.stop().await;
        let closed = match tokio::time::timeout(CLOSE_TIMEOUT, host.agents().close()).await {
            Ok(closed) => closed,
            Err(_) => Err(ServeError::Agent {
                message: format!(
                    "closing the agents' tools did not finish within {} s",
                    CLOSE_TIMEOUT.as_secs()
                ),
            }),
        };
        Stopped { given_up, closed }
    }
}
