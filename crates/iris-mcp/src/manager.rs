//! [`MCPManager`]: starts the configured servers, publishes their tools, closes them.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};

use iris_tools_core::{Tool, ToolCapability, ToolDefinition, ToolRegistry};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::config::{MCPConfig, ServerConfig};
use crate::connection::{self, Attempt, Connection, StartupError};
use crate::env::HostEnv;
use crate::error::{McpError, Result, codes};
use crate::naming::NameAllocator;
use crate::redact::Redactor;
use crate::schema::normalize_input_schema;
use crate::tool::McpTool;
use crate::transport::DEFAULT_MAX_MESSAGE_BYTES;

/// The catalog group of every MCP tool.
pub const MCP_GROUP: &str = "mcp";

/// Where a server ended up after `prepare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerStatus {
    /// Connected; its tools are published.
    Ready,
    /// Optional and failed to start; see the diagnostics.
    Failed,
    /// `enabled: false` / `disabled: true`; not started.
    Disabled,
}

/// One server in a [`MCPCatalogSnapshot`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpServerSnapshot {
    /// The raw server name.
    pub name: String,
    /// The transport.
    pub transport: &'static str,
    /// Ready, failed or disabled.
    pub status: ServerStatus,
    /// Whether a failure would have failed `prepare`.
    pub required: bool,
    /// The protocol revision actually negotiated (`2026-07-28`, `2025-11-25`, …).
    pub protocol_version: Option<String>,
    /// The server's self-reported name, when it sent one.
    pub server_name: Option<String>,
    /// The server's self-reported version, when it sent one.
    pub server_version: Option<String>,
    /// Tools published from this server.
    pub tool_count: usize,
}

/// One published tool in a [`MCPCatalogSnapshot`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpToolDescriptor {
    /// The Iris name (`mcp__<server>__<tool>`, maybe suffixed).
    pub name: String,
    /// The raw server name.
    pub server: String,
    /// The raw tool name on the wire.
    pub wire_name: String,
    /// The description the model sees.
    pub description: String,
    /// The checked input schema.
    pub input_schema: Value,
    /// The server's `annotations`, as sent (hints, not guarantees).
    pub annotations: Option<Value>,
    /// Whether the tool runs under the read-only policy (`trust_annotations` +
    /// `readOnlyHint: true`).
    pub read_only: bool,
    /// Whether the schema is disclosed only after discovery.
    pub deferred: bool,
}

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosticSeverity {
    /// Something was skipped or ignored; the rest works.
    Warning,
    /// An optional server failed.
    Error,
}

/// Something a user should know about a server: why an optional one failed, a tool
/// that was skipped, a stdout line that was not JSON-RPC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpDiagnostic {
    /// The raw server name (empty for file-level notes).
    pub server: String,
    /// Warning or error.
    pub severity: DiagnosticSeverity,
    /// A stable code from [`crate::codes`].
    pub code: String,
    /// One line.
    pub message: String,
}

/// What `prepare` found: servers, their tools and diagnostics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MCPCatalogSnapshot {
    /// Every configured server, by name.
    pub servers: Vec<McpServerSnapshot>,
    /// Every published tool, in registration order.
    pub tools: Vec<McpToolDescriptor>,
    /// Notes and optional failures.
    pub diagnostics: Vec<McpDiagnostic>,
}

impl MCPCatalogSnapshot {
    /// The descriptor of a published tool by (raw server, raw wire name).
    pub fn tool(&self, server: &str, wire_name: &str) -> Option<&McpToolDescriptor> {
        self.tools
            .iter()
            .find(|t| t.server == server && t.wire_name == wire_name)
    }

    /// A server by raw name.
    pub fn server(&self, name: &str) -> Option<&McpServerSnapshot> {
        self.servers.iter().find(|s| s.name == name)
    }
}

#[derive(Debug)]
enum State {
    Idle,
    Prepared(Vec<Arc<Connection>>),
    Closed,
}

/// Owns the connections to the servers of one [`MCPConfig`] and publishes their tools
/// into a [`ToolRegistry`].
///
/// `prepare` starts every enabled server concurrently, each within its
/// `startup_timeout_sec` (connect, handshake and the full `tools/list`). A required
/// server's failure fails `prepare` (and closes whatever did start); an optional one's
/// becomes a diagnostic. The full catalog is published in one all-or-nothing
/// registration. `close` ends every connection and process; the tools stay registered
/// and answer `MCP_CONNECTION_CLOSED` afterwards.
///
/// ```no_run
/// # async fn demo() -> Result<(), iris_mcp::McpError> {
/// use iris_mcp::{load_mcp_config, MCPManager, McpOverrides};
/// use iris_tools_core::ToolRegistry;
///
/// let config = load_mcp_config(".mcp.json", &McpOverrides::new())?;
/// let registry = ToolRegistry::new();
/// let manager = MCPManager::new(config, registry.clone(), "/srv/workspace", false);
/// assert!(manager.snapshot().is_none());
/// let snapshot = manager.prepare().await?;
/// for tool in &snapshot.tools {
///     println!("{} -> {}/{}", tool.name, tool.server, tool.wire_name);
/// }
/// manager.close().await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct MCPManager {
    config: MCPConfig,
    registry: ToolRegistry,
    workspace_root: PathBuf,
    defer_tools: bool,
    host_env: Option<HostEnv>,
    max_message_bytes: usize,
    state: tokio::sync::Mutex<State>,
    snapshot: RwLock<Option<Arc<MCPCatalogSnapshot>>>,
}

struct Started {
    server: ServerConfig,
    outcome: std::result::Result<(Arc<Connection>, Vec<Value>), StartupError>,
    diagnostics: Vec<String>,
}

impl MCPManager {
    /// A manager for `config` that will publish into `registry`. `workspace_root` is
    /// the default `cwd` of stdio servers; `defer_tools` publishes every tool as
    /// deferred (the `context_policy.deferred_tools` switch).
    pub fn new(
        config: MCPConfig,
        registry: ToolRegistry,
        workspace_root: impl Into<PathBuf>,
        defer_tools: bool,
    ) -> Self {
        Self {
            config,
            registry,
            workspace_root: workspace_root.into(),
            defer_tools,
            host_env: None,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            state: tokio::sync::Mutex::new(State::Idle),
            snapshot: RwLock::new(None),
        }
    }

    /// Uses `env` instead of the process environment for `${VAR}` expressions,
    /// `env_vars`, `env_http_headers` and `bearer_token_env_var`.
    #[must_use]
    pub fn with_host_env(mut self, env: HostEnv) -> Self {
        self.host_env = Some(env);
        self
    }

    /// Caps one incoming message (default 64 MiB).
    #[must_use]
    pub fn with_max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes.max(1024);
        self
    }

    /// The config this manager serves.
    pub fn config(&self) -> &MCPConfig {
        &self.config
    }

    /// The catalog, once `prepare` succeeded; `None` before.
    pub fn snapshot(&self) -> Option<Arc<MCPCatalogSnapshot>> {
        self.snapshot
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Protocol complaints collected since `prepare` (non-JSON stdout lines, oversized
    /// messages), per server. The snapshot holds those seen during startup.
    pub async fn live_diagnostics(&self) -> Vec<McpDiagnostic> {
        let state = self.state.lock().await;
        let State::Prepared(connections) = &*state else {
            return Vec::new();
        };
        connections
            .iter()
            .flat_map(|c| {
                c.diagnostics.snapshot().into_iter().map(|m| McpDiagnostic {
                    server: c.server.clone(),
                    severity: DiagnosticSeverity::Warning,
                    code: codes::MCP_PROTOCOL_WARNING.into(),
                    message: m,
                })
            })
            .collect()
    }

    /// The pids of the running stdio servers (their process group ids), for hosts
    /// that supervise processes.
    pub async fn server_pids(&self) -> Vec<(String, u32)> {
        let state = self.state.lock().await;
        let State::Prepared(connections) = &*state else {
            return Vec::new();
        };
        connections
            .iter()
            .filter_map(|c| Some((c.server.clone(), c.process.as_ref()?.pid()?)))
            .collect()
    }

    /// Starts every enabled server concurrently and publishes the catalog. Calling it
    /// again after success returns the same snapshot.
    pub async fn prepare(&self) -> Result<Arc<MCPCatalogSnapshot>> {
        let mut state = self.state.lock().await;
        match &*state {
            State::Closed => return Err(McpError::Closed),
            State::Prepared(_) => {
                if let Some(s) = self.snapshot() {
                    return Ok(s);
                }
            }
            State::Idle => {}
        }
        let host = self.host_env.clone().unwrap_or_else(HostEnv::capture);
        let mut tasks = JoinSet::new();
        for server in self.config.enabled_servers() {
            let server = server.clone();
            let host = host.clone();
            let workspace = self.workspace_root.clone();
            let max = self.max_message_bytes;
            tasks.spawn(async move { start_one(server, &workspace, &host, max).await });
        }
        let mut started: Vec<Started> = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok(s) => started.push(s),
                Err(e) => tracing::error!(error = %e, "an MCP startup task panicked"),
            }
        }
        started.sort_by(|a, b| a.server.name.cmp(&b.server.name));

        let mut diagnostics: Vec<McpDiagnostic> = self
            .config
            .warnings
            .iter()
            .map(|w| McpDiagnostic {
                server: String::new(),
                severity: DiagnosticSeverity::Warning,
                code: codes::MCP_INVALID_CONFIG.into(),
                message: w.clone(),
            })
            .collect();
        let mut ready: Vec<(ServerConfig, Arc<Connection>, Vec<Value>)> = Vec::new();
        let mut failure: Option<McpError> = None;
        let mut failed: BTreeSet<String> = BTreeSet::new();
        for s in started {
            for message in s.diagnostics {
                diagnostics.push(McpDiagnostic {
                    server: s.server.name.clone(),
                    severity: DiagnosticSeverity::Warning,
                    code: codes::MCP_PROTOCOL_WARNING.into(),
                    message,
                });
            }
            match s.outcome {
                Ok((conn, tools)) => ready.push((s.server, conn, tools)),
                Err(e) => {
                    failed.insert(s.server.name.clone());
                    if s.server.required {
                        failure.get_or_insert(McpError::Startup {
                            server: s.server.name.clone(),
                            code: e.code,
                            message: e.message,
                        });
                    } else {
                        diagnostics.push(McpDiagnostic {
                            server: s.server.name.clone(),
                            severity: DiagnosticSeverity::Error,
                            code: e.code.into(),
                            message: e.message,
                        });
                    }
                }
            }
        }
        if let Some(err) = failure {
            close_all(ready.iter().map(|(_, c, _)| Arc::clone(c)).collect()).await;
            return Err(err);
        }

        let (tools, descriptors) = self.build_tools(&ready, &mut diagnostics);
        if let Err(e) = self.registry.register_many(tools) {
            close_all(ready.iter().map(|(_, c, _)| Arc::clone(c)).collect()).await;
            return Err(McpError::Registry(e));
        }

        let servers = self
            .config
            .servers
            .values()
            .map(|cfg| {
                let conn = ready
                    .iter()
                    .find(|(s, _, _)| s.name == cfg.name)
                    .map(|(_, c, _)| c);
                McpServerSnapshot {
                    name: cfg.name.clone(),
                    transport: cfg.transport.kind().as_str(),
                    status: if !cfg.enabled {
                        ServerStatus::Disabled
                    } else if failed.contains(&cfg.name) || conn.is_none() {
                        ServerStatus::Failed
                    } else {
                        ServerStatus::Ready
                    },
                    required: cfg.required,
                    protocol_version: conn.map(|c| c.protocol.clone()),
                    server_name: conn.and_then(|c| c.server_info.as_ref().map(|i| i.0.clone())),
                    server_version: conn.and_then(|c| c.server_info.as_ref().map(|i| i.1.clone())),
                    tool_count: descriptors.iter().filter(|d| d.server == cfg.name).count(),
                }
            })
            .collect();
        let snapshot = Arc::new(MCPCatalogSnapshot {
            servers,
            tools: descriptors,
            diagnostics,
        });
        *self
            .snapshot
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&snapshot));
        *state = State::Prepared(ready.into_iter().map(|(_, c, _)| c).collect());
        Ok(snapshot)
    }

    fn build_tools(
        &self,
        ready: &[(ServerConfig, Arc<Connection>, Vec<Value>)],
        diagnostics: &mut Vec<McpDiagnostic>,
    ) -> (Vec<Arc<dyn Tool>>, Vec<McpToolDescriptor>) {
        let mut names = NameAllocator::new(self.registry.names());
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut descriptors = Vec::new();
        for (server, conn, listed) in ready {
            let mut seen = BTreeSet::new();
            for raw in listed {
                let warn = |message: String| McpDiagnostic {
                    server: server.name.clone(),
                    severity: DiagnosticSeverity::Warning,
                    code: codes::MCP_INVALID_SCHEMA.into(),
                    message,
                };
                let Some(wire) = raw.get("name").and_then(Value::as_str) else {
                    diagnostics.push(warn("a listed tool has no name; skipped".into()));
                    continue;
                };
                if !server.tool_enabled(wire) {
                    continue;
                }
                if !seen.insert(wire.to_owned()) {
                    diagnostics.push(warn(format!(
                        "tool `{wire}` is listed twice; the first is kept"
                    )));
                    continue;
                }
                let schema =
                    match normalize_input_schema(raw.get("inputSchema").unwrap_or(&Value::Null)) {
                        Ok(s) => s,
                        Err(reason) => {
                            diagnostics.push(warn(format!("tool `{wire}` skipped: {reason}")));
                            continue;
                        }
                    };
                let mut name = names.allocate(&server.name, wire);
                while self.registry.contains(&name) {
                    // Taken by an alias of a non-MCP tool.
                    name = names.allocate(&server.name, wire);
                }
                let annotations = raw.get("annotations").cloned();
                let read_only_hint = annotations
                    .as_ref()
                    .and_then(|a| a.get("readOnlyHint"))
                    .and_then(Value::as_bool)
                    == Some(true);
                let read_only = server.trust_annotations && read_only_hint;
                let description = raw
                    .get("description")
                    .and_then(Value::as_str)
                    .filter(|d| !d.trim().is_empty())
                    .or_else(|| raw.get("title").and_then(Value::as_str))
                    .map_or_else(
                        || format!("MCP tool `{wire}` from server `{}`.", server.name),
                        str::to_owned,
                    );
                let mut metadata = serde_json::Map::new();
                metadata.insert("server".into(), json!(server.name));
                metadata.insert("tool".into(), json!(wire));
                metadata.insert("transport".into(), json!(conn.kind.as_str()));
                if let Some(title) = raw.get("title") {
                    metadata.insert("title".into(), title.clone());
                }
                if let Some(a) = &annotations {
                    metadata.insert("annotations".into(), a.clone());
                }
                if let Some(o) = raw.get("outputSchema") {
                    metadata.insert("output_schema".into(), o.clone());
                }
                let definition =
                    ToolDefinition::new(name.clone(), description.clone(), schema.clone())
                        .with_capabilities([ToolCapability::Mcp])
                        .with_group(MCP_GROUP)
                        .with_deferred(self.defer_tools)
                        .with_timeout(server.tool_timeout)
                        .with_metadata("mcp", serde_json::Value::Object(metadata));
                descriptors.push(McpToolDescriptor {
                    name,
                    server: server.name.clone(),
                    wire_name: wire.to_owned(),
                    description,
                    input_schema: schema,
                    annotations,
                    read_only,
                    deferred: self.defer_tools,
                });
                tools.push(Arc::new(McpTool::new(
                    definition,
                    wire.to_owned(),
                    read_only,
                    server.tool_timeout,
                    Arc::clone(conn),
                )));
            }
        }
        (tools, descriptors)
    }

    /// Ends every connection and stdio process group (stdin closed, then SIGTERM,
    /// then SIGKILL; every process reaped). Idempotent; `prepare` is refused after.
    pub async fn close(&self) {
        let mut state = self.state.lock().await;
        let previous = std::mem::replace(&mut *state, State::Closed);
        if let State::Prepared(connections) = previous {
            close_all(connections).await;
        }
    }
}

async fn close_all(connections: Vec<Arc<Connection>>) {
    let mut tasks = JoinSet::new();
    for c in connections {
        tasks.spawn(async move { c.close().await });
    }
    while tasks.join_next().await.is_some() {}
}

async fn start_one(
    server: ServerConfig,
    workspace: &std::path::Path,
    host: &HostEnv,
    max_message_bytes: usize,
) -> Started {
    let (transport, secrets) = match server.resolve_with_secrets(workspace, host) {
        Ok(resolved) => resolved,
        Err(e) => {
            return Started {
                server,
                outcome: Err(StartupError {
                    code: codes::MCP_INVALID_CONFIG,
                    message: e.to_string(),
                    complete: true,
                }),
                diagnostics: Vec::new(),
            };
        }
    };
    // Everything said about this server from here on passes through its redactor.
    let attempt = Attempt::new(Redactor::new(secrets));
    let timeout = server.startup_timeout;
    let run = async {
        let conn = connection::connect(
            &server.name,
            transport,
            max_message_bytes,
            timeout,
            &attempt,
        )
        .await?;
        let conn = Arc::new(conn);
        match conn.list_tools().await {
            Ok(tools) => Ok((conn, tools)),
            Err(e) => {
                conn.close().await;
                Err(e)
            }
        }
    };
    let outcome = match tokio::time::timeout(timeout, run).await {
        Ok(Ok(ok)) => Ok(ok),
        Ok(Err(e)) if e.complete => Err(e),
        Ok(Err(e)) => Err(StartupError {
            code: e.code,
            message: attempt.explain(&e.message).await,
            complete: true,
        }),
        Err(_) => Err(StartupError {
            code: codes::MCP_STARTUP_TIMEOUT,
            message: attempt
                .explain(&format!(
                    "did not finish startup within {:.3}s",
                    timeout.as_secs_f64()
                ))
                .await,
            complete: true,
        }),
    };
    if outcome.is_err()
        && let Some(process) = attempt.process()
    {
        process.shutdown().await;
    }
    let outcome = outcome.map_err(|mut e| {
        e.message = attempt.redactor().redact(&e.message);
        e
    });
    Started {
        server,
        outcome,
        diagnostics: attempt.diagnostics.snapshot(),
    }
}
