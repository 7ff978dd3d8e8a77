//! `iris mcp serve`: a registry's tools served to MCP clients over stdio or
//! streamable HTTP, every call through the [`ToolExecutor`] (permission, hooks,
//! middleware, deadlines, artifacts).
//!
//! - **Listing.** A session lists what the model would see: the view's active tools,
//!   plus the deferred tools `tool_search` revealed in that session (a
//!   [`SessionScope`]; iris-runner's adds the reveals). Names, descriptions and input
//!   schemas are the registry's; `readOnlyHint`, `destructiveHint`, `idempotentHint`
//!   and `openWorldHint` follow the declared capabilities; `_meta["iris/tool"]` holds
//!   the group, capabilities and `deferred`.
//! - **Calls.** A result's content is what Iris shows the model
//!   (`ToolResult::model_blocks`): a body longer than the tool's `max_result_chars` is
//!   saved under `<workspace>/.iris/tool-results/<session>/` and comes back as its
//!   preview plus the reference to the saved file; `_meta["iris/result"]` carries the
//!   error's `code`/`message`/`retryable`/`details`, the `artifact` (path, MIME type,
//!   size, `text_path`) and `approved`.
//! - **Progress.** A call whose request carries a `progressToken` reports the
//!   executor's heartbeats as `notifications/progress` (seconds run, of the deadline).
//! - **Approvals.** A call the permission policy holds for a human is asked of the
//!   client with a form elicitation (`decision`: `approve` / `deny`, optional
//!   `reason`): on a session (stdio or HTTP after `initialize`) by
//!   `elicitation/create`, on a 2026-07-28 request by an `input_required` result
//!   whose retry carries the answer (the `requestState` is a random one-use handle,
//!   valid 15 minutes, for the same tool and arguments; any other retry is a
//!   JSON-RPC `invalid_params` error whose `data.code` is
//!   [`MCP_APPROVAL_STATE_INVALID`](crate::codes::MCP_APPROVAL_STATE_INVALID)). A client that did not
//!   declare elicitation gets [`MCP_APPROVAL_UNAVAILABLE`](crate::codes::MCP_APPROVAL_UNAVAILABLE);
//!   a denial is `APPROVAL_DENIED`.

pub mod access;
mod approval;
mod convert;
mod handler;
mod http;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use iris_executor::ToolExecutor;
use iris_tools_core::{
    CancellationSignal, Tool, ToolExecutionContext, ToolRegistryView, ViewFilter,
};
use rmcp::ServiceExt;
use rmcp::service::ServerInitializeError;

pub use http::{HttpOptions, HttpServer, MCP_PATH};

use crate::error::{McpError, Result, codes};

/// The session id of stateless (2026-07-28 HTTP) calls: they have no session, so they
/// share one read state and one artifact folder.
pub const STATELESS_SESSION: &str = "mcp-stateless";

/// What one MCP session sees of the registry: the tools it lists (only those are
/// callable) and what a call's context carries.
///
/// A scope lives as long as its session: the server drops it when the session ends
/// (stdin closes, an HTTP session is deleted or idle for 5 minutes, the server stops), so
/// per-session state kept in it (reveals, read observations) goes with the session.
pub trait SessionScope: Send + Sync + fmt::Debug {
    /// The tools to list now, in registration order.
    fn listed(&self) -> Vec<Arc<dyn Tool>>;
    /// The context of one call of this session, with what the scope tracks attached.
    fn prepare(&self, ctx: ToolExecutionContext) -> ToolExecutionContext;
}

/// Makes the [`SessionScope`] of each new session.
pub trait ScopeFactory: Send + Sync + fmt::Debug {
    /// A fresh scope for one session.
    fn session(&self) -> Arc<dyn SessionScope>;
}

/// The default scope: the view's active tools; nothing is ever revealed.
///
/// ```
/// use iris_mcp::serve::{ActiveTools, SessionScope};
/// use iris_tools_core::{FnTool, ToolDefinition, ToolOutput, ToolRegistry, ViewFilter};
/// use serde_json::json;
///
/// let registry = ToolRegistry::new();
/// for (name, deferred) in [("ping", false), ("later", true)] {
///     let def = ToolDefinition::new(name, "A test tool.", json!({"type": "object"}))
///         .with_deferred(deferred);
///     registry.register(FnTool::new(def, |_, _| async { ToolOutput::text("ok") })).unwrap();
/// }
/// let scope = ActiveTools::new(registry.view(ViewFilter::default()));
/// let names: Vec<String> = scope.listed().iter().map(|t| t.definition().name.clone()).collect();
/// assert_eq!(names, ["ping"]);
/// ```
#[derive(Debug, Clone)]
pub struct ActiveTools {
    view: ToolRegistryView,
}

impl ActiveTools {
    /// The active tools of `view`.
    pub fn new(view: ToolRegistryView) -> Self {
        Self { view }
    }
}

impl SessionScope for ActiveTools {
    fn listed(&self) -> Vec<Arc<dyn Tool>> {
        self.view.active_tools()
    }

    fn prepare(&self, ctx: ToolExecutionContext) -> ToolExecutionContext {
        ctx
    }
}

impl ScopeFactory for ActiveTools {
    fn session(&self) -> Arc<dyn SessionScope> {
        Arc::new(self.clone())
    }
}

/// What every session of one server shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) executor: ToolExecutor,
    pub(crate) workspace: PathBuf,
    pub(crate) scopes: Arc<dyn ScopeFactory>,
    /// The scope of stateless requests, made once.
    pub(crate) stateless: Arc<dyn SessionScope>,
    pub(crate) pending: approval::PendingApprovals,
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) instructions: Option<String>,
    sessions: AtomicU64,
}

/// An executor served over MCP (see the [module docs](self)).
///
/// ```no_run
/// use iris_executor::ToolExecutor;
/// use iris_mcp::serve::McpToolServer;
/// use iris_tools_core::{CancellationSignal, ToolRegistry};
///
/// # async fn run() -> iris_mcp::Result<()> {
/// let executor = ToolExecutor::new(ToolRegistry::new());
/// let server = McpToolServer::new(executor, "/srv/workspace");
/// // Until stdin ends or `shutdown` fires.
/// server.serve_stdio(&CancellationSignal::new()).await
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct McpToolServer {
    shared: Arc<Shared>,
}

impl McpToolServer {
    /// Serves `executor`'s registry, calls running in `workspace`; each session lists
    /// the registry's active tools ([`ActiveTools`]) until
    /// [`McpToolServer::with_scopes`] says otherwise.
    pub fn new(executor: ToolExecutor, workspace: impl Into<PathBuf>) -> Self {
        let scopes: Arc<dyn ScopeFactory> = Arc::new(ActiveTools::new(
            executor.registry().view(ViewFilter::default()),
        ));
        Self {
            shared: Arc::new(Shared {
                stateless: scopes.session(),
                scopes,
                executor,
                workspace: workspace.into(),
                pending: approval::PendingApprovals::default(),
                name: "iris".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                instructions: None,
                sessions: AtomicU64::new(0),
            }),
        }
    }

    /// Applies a builder change; a server already cloned is forked first (a fresh
    /// approval store and session counter), so a clone never sees another's settings.
    fn change(mut self, f: impl FnOnce(&mut Shared)) -> Self {
        if Arc::get_mut(&mut self.shared).is_none() {
            let s = &self.shared;
            self.shared = Arc::new(Shared {
                executor: s.executor.clone(),
                workspace: s.workspace.clone(),
                scopes: Arc::clone(&s.scopes),
                stateless: Arc::clone(&s.stateless),
                pending: approval::PendingApprovals::default(),
                name: s.name.clone(),
                version: s.version.clone(),
                instructions: s.instructions.clone(),
                sessions: AtomicU64::new(0),
            });
        }
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            f(shared);
        }
        self
    }

    /// What each session sees (see [`SessionScope`]).
    #[must_use]
    pub fn with_scopes(self, scopes: Arc<dyn ScopeFactory>) -> Self {
        self.change(|s| {
            s.stateless = scopes.session();
            s.scopes = scopes;
        })
    }

    /// The implementation name and version clients see (default `iris` and this
    /// crate's version).
    #[must_use]
    pub fn with_server_info(self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.change(|s| {
            s.name = name.into();
            s.version = version.into();
        })
    }

    /// Instructions clients may show their model.
    #[must_use]
    pub fn with_instructions(self, instructions: impl Into<String>) -> Self {
        self.change(|s| s.instructions = Some(instructions.into()))
    }

    /// A handler for one new session.
    pub(crate) fn handler(&self, shutdown: CancellationSignal) -> handler::IrisServer {
        let n = self.shared.sessions.fetch_add(1, Ordering::Relaxed) + 1;
        handler::IrisServer {
            shared: Arc::clone(&self.shared),
            scope: self.shared.scopes.session(),
            session_id: format!("mcp-{n}"),
            shutdown,
        }
    }

    /// Serves one session over this process's stdin and stdout until stdin ends (the
    /// client closed it) or `shutdown` fires; calls in flight are then cancelled.
    ///
    /// # Errors
    /// `MCP_SERVE_FAILED` when the session could not start (the first message was not
    /// MCP).
    pub async fn serve_stdio(&self, shutdown: &CancellationSignal) -> Result<()> {
        self.serve_io(rmcp::transport::stdio(), shutdown).await
    }

    /// [`McpToolServer::serve_stdio`] over any byte stream pair (a socket, a pipe, an
    /// in-memory duplex in tests).
    ///
    /// # Errors
    /// As [`McpToolServer::serve_stdio`].
    pub async fn serve_io<R, W>(&self, io: (R, W), shutdown: &CancellationSignal) -> Result<()>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let handler = self.handler(shutdown.clone());
        let running = tokio::select! {
            started = handler.serve(io) => match started {
                Ok(running) => running,
                // The client went away before the session started: nothing to serve.
                Err(ServerInitializeError::ConnectionClosed(_) | ServerInitializeError::Cancelled) => {
                    return Ok(());
                }
                Err(e) => {
                    return Err(McpError::Serve {
                        code: codes::MCP_SERVE_FAILED,
                        message: format!("the MCP session did not start: {e}"),
                    });
                }
            },
            () = shutdown.cancelled() => return Ok(()),
        };
        let token = running.cancellation_token();
        let waiting = running.waiting();
        tokio::pin!(waiting);
        tokio::select! {
            _ = &mut waiting => {}
            () = shutdown.cancelled() => {
                token.cancel();
                let _ = waiting.await;
            }
        }
        Ok(())
    }

    /// Binds a streamable-HTTP endpoint (`/mcp`) as `options` say; run it with
    /// [`HttpServer::run`].
    ///
    /// # Errors
    /// `MCP_SERVE_ADDRESS_REFUSED` for a non-loopback address without
    /// [`HttpOptions::allow_remote`] or without a bearer token; `MCP_SERVE_FAILED`
    /// when the address cannot be bound.
    pub async fn bind_http(&self, options: HttpOptions) -> Result<HttpServer> {
        http::bind(self.clone(), options).await
    }
}
