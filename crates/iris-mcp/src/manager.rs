//! [`MCPManager`]: starts the configured servers, publishes their tools, follows
//! their catalog changes, closes them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use iris_tools_core::{Tool, ToolCapability, ToolDefinition, ToolRegistry};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::client::ServerEvents;
use crate::config::{MCPConfig, ServerConfig};
use crate::connection::{self, Attempt, StartupError};
use crate::env::HostEnv;
use crate::error::{McpError, Result, codes};
use crate::naming::NameAllocator;
use crate::redact::Redactor;
use crate::schema::{compile_output_schema, normalize_input_schema};
use crate::server::{Server, ServerSpec};
use crate::tool::{McpTool, McpToolSpec};
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
    /// Whether a call broken by a lost connection is replayed after the server
    /// restarted (`trust_annotations` + `readOnlyHint` or `idempotentHint: true`).
    pub replays_on_reconnect: bool,
    /// Whether results are checked against the tool's `outputSchema`.
    pub checks_output: bool,
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

/// What `prepare` (or the latest [`MCPManager::refresh_catalog`]) found: servers,
/// their tools and diagnostics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MCPCatalogSnapshot {
    /// The [`MCPManager::catalog_generation`] this snapshot reflects.
    pub generation: u64,
    /// Every configured server, by name.
    pub servers: Vec<McpServerSnapshot>,
    /// Every published tool the servers list, in registration order (tools a
    /// refresh added come after the ones published before).
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

/// One started server with what the catalog needs about it.
#[derive(Debug)]
struct Live {
    config: ServerConfig,
    server: Arc<Server>,
}

/// The published tools, by (raw server, wire name), in registration order.
#[derive(Debug, Default)]
struct Catalog {
    entries: Vec<(McpToolDescriptor, Arc<McpTool>)>,
}

impl Catalog {
    fn find(&self, server: &str, wire: &str) -> Option<&(McpToolDescriptor, Arc<McpTool>)> {
        self.entries
            .iter()
            .find(|(d, _)| d.server == server && d.wire_name == wire)
    }
}

#[derive(Debug)]
struct Prepared {
    servers: Vec<Live>,
    catalog: Catalog,
    /// What `prepare` found (config warnings, skipped tools, optional failures).
    base_diagnostics: Vec<McpDiagnostic>,
    /// What refreshes found since, newest last, at most [`MAX_REFRESH_NOTES`].
    refresh_notes: std::collections::VecDeque<McpDiagnostic>,
}

/// Refresh diagnostics kept in the snapshot (a server that keeps failing must not
/// grow it without bound).
const MAX_REFRESH_NOTES: usize = 50;

#[derive(Debug)]
enum State {
    Idle,
    Prepared(Prepared),
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
/// A server that dies (or whose stream closes) is started again by the next call of
/// one of its tools, with backoff after failed attempts (1 s, doubling, at most
/// 30 s). A server that says its tool list changed (`notifications/tools/list_changed`,
/// or the 2026-07-28 `subscriptions/listen` stream) bumps
/// [`MCPManager::catalog_generation`]; the host calls
/// [`MCPManager::refresh_catalog`] between model requests to re-read those servers.
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
/// // Between model requests:
/// if manager.catalog_generation() != snapshot.generation {
///     let snapshot = manager.refresh_catalog().await?;
///     println!("{} tools now", snapshot.tools.len());
/// }
/// manager.close().await;
/// # Ok(()) }
/// ```
///
/// Its `Debug` output names servers, host variables and values set with
/// [`MCPManager::set_secret`], never their values.
pub struct MCPManager {
    config: MCPConfig,
    registry: ToolRegistry,
    workspace_root: PathBuf,
    defer_tools: bool,
    host_env: Option<HostEnv>,
    max_message_bytes: usize,
    /// The sandbox of the stdio servers that opted in (`sandbox: true`).
    sandbox: crate::McpSandbox,
    generation: Arc<AtomicU64>,
    state: tokio::sync::Mutex<State>,
    snapshot: RwLock<Option<Arc<MCPCatalogSnapshot>>>,
    /// The started servers whose credentials come from host variables, for
    /// [`MCPManager::set_secret`] (which cannot wait for `state`).
    credentialed: RwLock<Vec<(ServerConfig, Arc<Server>)>>,
    /// Host variables a host supplied at run time; they win over the environment.
    secrets: RwLock<BTreeMap<String, String>>,
}

impl std::fmt::Debug for MCPManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Names only: the config's, the environment's and `set_secret`'s values are
        // credentials (their own `Debug` hides them too).
        let state = match self.state.try_lock() {
            Ok(state) => match &*state {
                State::Idle => "idle".to_owned(),
                State::Prepared(p) => format!(
                    "prepared ({} servers, {} tools)",
                    p.servers.len(),
                    p.catalog.entries.len()
                ),
                State::Closed => "closed".to_owned(),
            },
            Err(_) => "busy".to_owned(),
        };
        let credentialed: Vec<String> = self
            .credentialed
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(config, _)| config.name.clone())
            .collect();
        let secrets: Vec<String> = self
            .secrets
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        f.debug_struct("MCPManager")
            .field("config", &self.config)
            .field("workspace_root", &self.workspace_root)
            .field("defer_tools", &self.defer_tools)
            .field("host_env", &self.host_env)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("generation", &self.catalog_generation())
            .field("state", &state)
            .field("credentialed", &credentialed)
            .field("secrets", &secrets)
            .finish_non_exhaustive()
    }
}

struct Started {
    server: ServerConfig,
    outcome: std::result::Result<(Arc<Server>, Vec<Value>), StartupError>,
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
        let workspace_root: PathBuf = workspace_root.into();
        Self {
            config,
            registry,
            sandbox: crate::McpSandbox::new(
                crate::SandboxPolicy::default(),
                Vec::new(),
                workspace_root.clone(),
            ),
            workspace_root,
            defer_tools,
            host_env: None,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            generation: Arc::default(),
            state: tokio::sync::Mutex::new(State::Idle),
            snapshot: RwLock::new(None),
            credentialed: RwLock::new(Vec::new()),
            secrets: RwLock::new(BTreeMap::new()),
        }
    }

    /// Uses `env` instead of the process environment for `${VAR}` expressions,
    /// `env_vars`, `env_http_headers` and `bearer_token_env_var`.
    #[must_use]
    pub fn with_host_env(mut self, env: HostEnv) -> Self {
        self.host_env = Some(env);
        self
    }

    /// The sandbox of the stdio servers whose override says `sandbox: true`: the
    /// agent's `command.sandbox` policy and the workspace paths they must not change
    /// (default: the default policy, workspace-write and network off, with `.iris`
    /// and `.git` protected).
    #[must_use]
    pub fn with_sandbox(
        mut self,
        policy: crate::SandboxPolicy,
        protected: Vec<std::path::PathBuf>,
    ) -> Self {
        self.sandbox = crate::McpSandbox::new(policy, protected, self.workspace_root.clone());
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

    /// A counter that grows each time a server says its tools changed (or a
    /// restarted server lists different tools). When it differs from the
    /// snapshot's `generation`, [`MCPManager::refresh_catalog`] has news.
    pub fn catalog_generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// What each server's sessions reported since `prepare`: protocol complaints
    /// (non-JSON stdout lines, oversized messages, a refused elicitation;
    /// `MCP_PROTOCOL_WARNING`), restarts (`MCP_SERVER_RESTARTED`) and failed
    /// restarts (`MCP_STARTUP_FAILED`). The snapshot holds those seen during startup.
    pub async fn live_diagnostics(&self) -> Vec<McpDiagnostic> {
        let state = self.state.lock().await;
        let State::Prepared(prepared) = &*state else {
            return Vec::new();
        };
        prepared
            .servers
            .iter()
            .flat_map(|l| {
                l.server
                    .diagnostics
                    .snapshot_coded()
                    .into_iter()
                    .map(|(code, m)| McpDiagnostic {
                        server: l.server.name.clone(),
                        severity: DiagnosticSeverity::Warning,
                        code: code.into(),
                        message: m,
                    })
            })
            .collect()
    }

    /// The pids of the running stdio servers (their process group ids), for hosts
    /// that supervise processes. A restarted server shows its new pid.
    pub async fn server_pids(&self) -> Vec<(String, u32)> {
        let state = self.state.lock().await;
        let State::Prepared(prepared) = &*state else {
            return Vec::new();
        };
        prepared
            .servers
            .iter()
            .filter_map(|l| {
                let conn = l.server.current();
                let pid = conn.process.as_ref()?.pid()?;
                Some((l.server.name.clone(), pid))
            })
            .collect()
    }

    /// How many times each started server was restarted, by raw name.
    pub async fn restart_counts(&self) -> BTreeMap<String, u64> {
        let state = self.state.lock().await;
        let State::Prepared(prepared) = &*state else {
            return BTreeMap::new();
        };
        prepared
            .servers
            .iter()
            .map(|l| (l.server.name.clone(), l.server.restarts()))
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
        let host = self.host();
        let mut tasks = JoinSet::new();
        for server in self.config.enabled_servers() {
            let server = server.clone();
            let host = host.clone();
            let workspace = self.workspace_root.clone();
            let max = self.max_message_bytes;
            let events = ServerEvents::new(Arc::clone(&self.generation));
            let sandbox = server.sandbox.then(|| self.sandbox.clone());
            tasks.spawn(
                async move { start_one(server, &workspace, &host, max, events, sandbox).await },
            );
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
        let mut ready: Vec<(Live, Vec<Value>)> = Vec::new();
        let mut failure: Option<McpError> = None;
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
                Ok((server, tools)) => ready.push((
                    Live {
                        config: s.server,
                        server,
                    },
                    tools,
                )),
                Err(e) => {
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
            close_all(ready.iter().map(|(l, _)| Arc::clone(&l.server)).collect()).await;
            return Err(err);
        }

        let mut names = NameAllocator::new(self.registry.names());
        let mut catalog = Catalog::default();
        for (live, listed) in &ready {
            for raw in listed {
                if let Some(entry) =
                    self.describe(live, raw, &mut names, &catalog, &mut diagnostics)
                {
                    catalog.entries.push(entry);
                }
            }
        }
        let tools: Vec<Arc<dyn Tool>> = catalog
            .entries
            .iter()
            .map(|(_, t)| Arc::clone(t) as Arc<dyn Tool>)
            .collect();
        if let Err(e) = self.registry.register_many(tools) {
            close_all(ready.iter().map(|(l, _)| Arc::clone(&l.server)).collect()).await;
            return Err(McpError::Registry(e));
        }
        *self
            .credentialed
            .write()
            .unwrap_or_else(PoisonError::into_inner) = ready
            .iter()
            .filter(|(l, _)| !l.config.credential_vars().is_empty())
            .map(|(l, _)| (l.config.clone(), Arc::clone(&l.server)))
            .collect();
        let prepared = Prepared {
            servers: ready.into_iter().map(|(l, _)| l).collect(),
            catalog,
            base_diagnostics: diagnostics,
            refresh_notes: std::collections::VecDeque::new(),
        };
        let snapshot = self.publish_snapshot(&prepared, self.catalog_generation());
        *state = State::Prepared(prepared);
        Ok(snapshot)
    }

    /// The host variables servers read: the configured [`HostEnv`] (else the
    /// process's), with the values [`MCPManager::set_secret`] supplied on top.
    fn host(&self) -> HostEnv {
        let mut host = self.host_env.clone().unwrap_or_else(HostEnv::capture);
        for (name, value) in self
            .secrets
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            host.set(name.clone(), value.clone());
        }
        host
    }

    /// The host variables the started HTTP servers' credentials come from
    /// ([`ServerConfig::credential_vars`]), sorted: the names a tool's
    /// `MCP_AUTH_REQUIRED` error gives as `details.secret`.
    pub fn secret_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .credentialed
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .flat_map(|(config, _)| config.credential_vars())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Uses `value` for the host variable `name` from now on (credential auto-heal):
    /// every started server whose credentials read it gets its connection settings
    /// resolved again, and its next call ends the session on the old credentials and
    /// starts a new one. The value is redacted from everything the servers' errors
    /// and diagnostics say. Returns the servers it applies to.
    pub fn set_secret(&self, name: &str, value: &str) -> Vec<String> {
        self.secrets
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned(), value.to_owned());
        let host = self.host();
        let mut applied = Vec::new();
        for (config, server) in self
            .credentialed
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            if !config.credential_vars().iter().any(|n| n == name) {
                continue;
            }
            match config.resolve_with_secrets(&self.workspace_root, &host) {
                Ok((transport, mut secrets)) => {
                    secrets.push(value.to_owned());
                    server.replace_transport(transport, secrets);
                    applied.push(config.name.clone());
                }
                Err(e) => {
                    server.diagnostics.push_coded(
                        codes::MCP_INVALID_CONFIG,
                        &format!("the new value of `{name}` does not apply: {e}"),
                    );
                }
            }
        }
        applied
    }

    /// Re-reads the tool list of every server that reported a change since the last
    /// refresh (or `prepare`) and publishes the difference:
    ///
    /// - a tool seen before keeps its Iris name and its place in the catalog;
    /// - a new tool is registered (after every tool published before, in the
    ///   server's listing order) under a name that collides with nothing;
    /// - a tool the server no longer lists stays registered (the registry cannot
    ///   remove tools) but answers `MCP_TOOL_REMOVED` without calling the server,
    ///   and leaves the snapshot; if it comes back it works again under its name;
    /// - a tool whose description or schemas changed keeps its published
    ///   definition, with a warning diagnostic.
    ///
    /// Returns the new snapshot (the current one when nothing changed). Cheap when
    /// [`MCPManager::catalog_generation`] equals the snapshot's generation.
    pub async fn refresh_catalog(&self) -> Result<Arc<MCPCatalogSnapshot>> {
        let mut state = self.state.lock().await;
        let prepared = match &mut *state {
            State::Closed => return Err(McpError::Closed),
            State::Idle => return Err(McpError::NotPrepared),
            State::Prepared(p) => p,
        };
        // Read the counter first: a change that lands while listing bumps it again,
        // so it is never lost.
        let generation = self.catalog_generation();
        if let Some(s) = self.snapshot()
            && s.generation == generation
        {
            return Ok(s);
        }
        let mut diagnostics = Vec::new();
        let mut added: Vec<(McpToolDescriptor, Arc<McpTool>)> = Vec::new();
        let mut names = NameAllocator::new(self.registry.names());
        for live in &prepared.servers {
            if !live.server.events.is_dirty() {
                continue;
            }
            live.server.events.take_dirty();
            let listed = match live.server.connection().await {
                Ok(conn) => conn.list_tools().await.map_err(|e| e.message),
                Err(why) => Err(why),
            };
            let listed = match listed {
                Ok(listed) => {
                    live.server.set_listed(listed.clone());
                    listed
                }
                Err(why) => {
                    diagnostics.push(McpDiagnostic {
                        server: live.server.name.clone(),
                        severity: DiagnosticSeverity::Warning,
                        code: codes::MCP_REQUEST_FAILED.into(),
                        message: live
                            .server
                            .diagnostics
                            .redactor()
                            .redact(&format!("refreshing the tool list failed: {why}")),
                    });
                    // Still changed: the generation moves again, so the host tries
                    // once more before a later model request.
                    live.server.events.tools_changed();
                    continue;
                }
            };
            let mut present = BTreeSet::new();
            for raw in &listed {
                let Some(wire) = raw.get("name").and_then(Value::as_str) else {
                    continue;
                };
                if let Some((descriptor, tool)) = prepared.catalog.find(&live.server.name, wire) {
                    present.insert(wire.to_owned());
                    tool.set_removed(false);
                    if changed(descriptor, raw) {
                        diagnostics.push(McpDiagnostic {
                            server: live.server.name.clone(),
                            severity: DiagnosticSeverity::Warning,
                            code: codes::MCP_INVALID_SCHEMA.into(),
                            message: format!(
                                "tool `{wire}` changed its description or schema; the definition published first stays until the next prepare"
                            ),
                        });
                    }
                    continue;
                }
                let mut in_catalog = Catalog::default();
                std::mem::swap(&mut in_catalog.entries, &mut added);
                let entry = self.describe(live, raw, &mut names, &in_catalog, &mut diagnostics);
                std::mem::swap(&mut in_catalog.entries, &mut added);
                if let Some(entry) = entry {
                    present.insert(wire.to_owned());
                    added.push(entry);
                }
            }
            for (descriptor, tool) in &prepared.catalog.entries {
                if descriptor.server == live.server.name && !present.contains(&descriptor.wire_name)
                {
                    tool.set_removed(true);
                }
            }
        }
        if !added.is_empty() {
            let tools: Vec<Arc<dyn Tool>> = added
                .iter()
                .map(|(_, t)| Arc::clone(t) as Arc<dyn Tool>)
                .collect();
            self.registry.register_many(tools)?;
            prepared.catalog.entries.extend(added);
        }
        for d in diagnostics {
            if prepared.refresh_notes.contains(&d) {
                continue;
            }
            if prepared.refresh_notes.len() == MAX_REFRESH_NOTES {
                prepared.refresh_notes.pop_front();
            }
            prepared.refresh_notes.push_back(d);
        }
        Ok(self.publish_snapshot(prepared, generation))
    }

    /// Builds, stores and returns the snapshot of `prepared`.
    fn publish_snapshot(&self, prepared: &Prepared, generation: u64) -> Arc<MCPCatalogSnapshot> {
        let descriptors: Vec<McpToolDescriptor> = prepared
            .catalog
            .entries
            .iter()
            .filter(|(_, t)| !t.is_removed())
            .map(|(d, _)| d.clone())
            .collect();
        let servers = self
            .config
            .servers
            .values()
            .map(|cfg| {
                let live = prepared.servers.iter().find(|l| l.config.name == cfg.name);
                let conn = live.map(|l| l.server.current());
                McpServerSnapshot {
                    name: cfg.name.clone(),
                    transport: cfg.transport.kind().as_str(),
                    status: if !cfg.enabled {
                        ServerStatus::Disabled
                    } else if conn.is_none() {
                        ServerStatus::Failed
                    } else {
                        ServerStatus::Ready
                    },
                    required: cfg.required,
                    protocol_version: conn.as_ref().map(|c| c.protocol.clone()),
                    server_name: conn
                        .as_ref()
                        .and_then(|c| c.server_info.as_ref().map(|i| i.0.clone())),
                    server_version: conn
                        .as_ref()
                        .and_then(|c| c.server_info.as_ref().map(|i| i.1.clone())),
                    tool_count: descriptors.iter().filter(|d| d.server == cfg.name).count(),
                }
            })
            .collect();
        let snapshot = Arc::new(MCPCatalogSnapshot {
            generation,
            servers,
            tools: descriptors,
            diagnostics: prepared
                .base_diagnostics
                .iter()
                .chain(&prepared.refresh_notes)
                .cloned()
                .collect(),
        });
        *self
            .snapshot
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&snapshot));
        snapshot
    }

    /// The descriptor and tool for one listed tool, or `None` (with a diagnostic)
    /// when it is skipped: disabled, nameless, listed twice, or its input schema
    /// is unusable.
    fn describe(
        &self,
        live: &Live,
        raw: &Value,
        names: &mut NameAllocator,
        catalog: &Catalog,
        diagnostics: &mut Vec<McpDiagnostic>,
    ) -> Option<(McpToolDescriptor, Arc<McpTool>)> {
        let server = &live.config;
        let warn = |message: String| McpDiagnostic {
            server: server.name.clone(),
            severity: DiagnosticSeverity::Warning,
            code: codes::MCP_INVALID_SCHEMA.into(),
            message,
        };
        let Some(wire) = raw.get("name").and_then(Value::as_str) else {
            diagnostics.push(warn("a listed tool has no name; skipped".into()));
            return None;
        };
        if !server.tool_enabled(wire) {
            return None;
        }
        if catalog.find(&server.name, wire).is_some() {
            diagnostics.push(warn(format!(
                "tool `{wire}` is listed twice; the first is kept"
            )));
            return None;
        }
        let schema = match normalize_input_schema(raw.get("inputSchema").unwrap_or(&Value::Null)) {
            Ok(s) => s,
            Err(reason) => {
                diagnostics.push(warn(format!("tool `{wire}` skipped: {reason}")));
                return None;
            }
        };
        let output_schema = match raw.get("outputSchema") {
            None | Some(Value::Null) => None,
            Some(o) => match compile_output_schema(o) {
                Ok(v) => Some(Arc::new(v)),
                Err(reason) => {
                    diagnostics.push(warn(format!(
                        "tool `{wire}`: {reason}; its results are not checked"
                    )));
                    None
                }
            },
        };
        let mut name = names.allocate(&server.name, wire);
        while self.registry.contains(&name) {
            // Taken by an alias of a non-MCP tool.
            name = names.allocate(&server.name, wire);
        }
        let annotations = raw.get("annotations").cloned();
        let hint = |key: &str| {
            annotations
                .as_ref()
                .and_then(|a| a.get(key))
                .and_then(Value::as_bool)
                == Some(true)
        };
        let read_only = server.trust_annotations && hint("readOnlyHint");
        let replay_safe =
            server.trust_annotations && (hint("readOnlyHint") || hint("idempotentHint"));
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
        metadata.insert("transport".into(), json!(live.server.kind.as_str()));
        if let Some(title) = raw.get("title") {
            metadata.insert("title".into(), title.clone());
        }
        if let Some(a) = &annotations {
            metadata.insert("annotations".into(), a.clone());
        }
        if let Some(o) = raw.get("outputSchema") {
            metadata.insert("output_schema".into(), o.clone());
        }
        metadata.insert(
            "idle_timeout_seconds".into(),
            json!(server.tool_timeout.as_secs_f64()),
        );
        let definition = ToolDefinition::new(name.clone(), description.clone(), schema.clone())
            .with_capabilities([ToolCapability::Mcp])
            .with_group(MCP_GROUP)
            .with_deferred(self.defer_tools)
            .with_timeout(server.tool_max)
            .with_metadata("mcp", serde_json::Value::Object(metadata));
        let descriptor = McpToolDescriptor {
            name,
            server: server.name.clone(),
            wire_name: wire.to_owned(),
            description,
            input_schema: schema,
            annotations,
            read_only,
            replays_on_reconnect: replay_safe,
            checks_output: output_schema.is_some(),
            deferred: self.defer_tools,
        };
        let tool = Arc::new(McpTool::new(
            definition,
            McpToolSpec {
                wire_name: wire.to_owned(),
                read_only,
                replay_safe,
                idle_timeout: server.tool_timeout,
                max_duration: server.tool_max,
                output_schema,
            },
            Arc::clone(&live.server),
        ));
        Some((descriptor, tool))
    }

    /// The published tool `wire_name` of `server`, when the catalog has it (to
    /// follow one of its tasks again: [`McpTool::follow`]).
    pub async fn tool(&self, server: &str, wire_name: &str) -> Option<Arc<McpTool>> {
        match &*self.state.lock().await {
            State::Prepared(p) => p
                .catalog
                .find(server, wire_name)
                .map(|(_, t)| Arc::clone(t)),
            _ => None,
        }
    }

    /// Ends every connection and stdio process group (stdin closed, then SIGTERM,
    /// then SIGKILL; every process reaped), restarted ones included; no restart
    /// follows. Idempotent; `prepare` is refused after.
    pub async fn close(&self) {
        let mut state = self.state.lock().await;
        let previous = std::mem::replace(&mut *state, State::Closed);
        if let State::Prepared(prepared) = previous {
            close_all(prepared.servers.into_iter().map(|l| l.server).collect()).await;
        }
    }
}

/// Whether a listed tool differs from what was published for it.
fn changed(descriptor: &McpToolDescriptor, raw: &Value) -> bool {
    let description = raw.get("description").and_then(Value::as_str);
    let schema = raw
        .get("inputSchema")
        .map(normalize_input_schema)
        .and_then(std::result::Result::ok);
    description.is_some_and(|d| !d.trim().is_empty() && d != descriptor.description)
        || schema.is_some_and(|s| s != descriptor.input_schema)
        || raw.get("annotations") != descriptor.annotations.as_ref()
}

async fn close_all(servers: Vec<Arc<Server>>) {
    let mut tasks = JoinSet::new();
    for s in servers {
        tasks.spawn(async move { s.close().await });
    }
    while tasks.join_next().await.is_some() {}
}

async fn start_one(
    server: ServerConfig,
    workspace: &std::path::Path,
    host: &HostEnv,
    max_message_bytes: usize,
    events: ServerEvents,
    sandbox: Option<crate::McpSandbox>,
) -> Started {
    let (transport, secrets) = match server.resolve_with_secrets(workspace, host) {
        Ok((
            crate::ResolvedTransport::Stdio {
                command,
                args,
                cwd,
                env,
                ..
            },
            secrets,
        )) => (
            crate::ResolvedTransport::Stdio {
                command,
                args,
                cwd,
                env,
                sandbox,
            },
            secrets,
        ),
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
            transport.clone(),
            max_message_bytes,
            &attempt,
            &events,
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
    let outcome = outcome
        .map(|(conn, tools)| {
            let spec = ServerSpec {
                name: server.name.clone(),
                credential_vars: server.credential_vars(),
                transport,
                max_message_bytes,
                startup_timeout: timeout,
                events,
                diagnostics: attempt.diagnostics.clone(),
            };
            let live = Arc::new(Server::new(spec, conn, tools.clone()));
            (live, tools)
        })
        .map_err(|mut e| {
            e.message = attempt.redactor().redact(&e.message);
            e
        });
    Started {
        server,
        outcome,
        diagnostics: attempt.diagnostics.snapshot(),
    }
}
