//! Loading MCP config files: JSON, JSONC and TOML, every field of the MCP server table (docs/configuration.md).
//!
//! The file's root holds exactly one server mapping under `mcpServers` (Claude, Cursor),
//! `servers` (VS Code) or `mcp_servers` (codex TOML). Other root keys (VS Code's
//! `inputs`, codex's `model`, …) belong to other tools and are kept as warnings, as are
//! unknown server fields: a user's existing file loads unchanged. Every error names the
//! file, the server and the field.
//!
//! Environment expressions (`${VAR}`, `${env:VAR}`, `${VAR:-default}`) are *not*
//! expanded here: the file keeps its raw strings and [`ServerConfig::resolve`] expands
//! them once, from the host environment at prepare time (see [`crate::env`]).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

use iris_fs::bounded_read::{MAX_CONFIG_BYTES, read_regular_text};

use crate::env::{self, HostEnv};
use crate::error::{McpError, Result};
use crate::redact;

/// Default `startup_timeout_sec`.
pub const DEFAULT_STARTUP_TIMEOUT_SEC: f64 = 30.0;
/// Default `tool_timeout_sec`.
pub const DEFAULT_TOOL_TIMEOUT_SEC: f64 = 30.0;
/// Default `tool_max_sec` (never below the server's `tool_timeout_sec`).
pub const DEFAULT_TOOL_MAX_SEC: f64 = 600.0;
/// The root keys that may hold the server mapping; a file has exactly one.
pub const ROOT_KEYS: [&str; 3] = ["mcpServers", "servers", "mcp_servers"];

const STDIO_FIELDS: [&str; 6] = ["command", "args", "cwd", "env", "env_vars", "envFile"];
const HTTP_FIELDS: [&str; 6] = [
    "url",
    "serverUrl",
    "headers",
    "http_headers",
    "env_http_headers",
    "bearer_token_env_var",
];
/// Headers the transports set themselves (content negotiation, session and resumption).
const RESERVED_HEADERS: [&str; 5] = [
    "accept",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];
const COMMON_FIELDS: [&str; 10] = [
    "type",
    "enabled",
    "disabled",
    "required",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    "tool_max_sec",
    "enabled_tools",
    "disabled_tools",
];

/// How Iris talks to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TransportKind {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio,
    /// Streamable HTTP (`type` `streamable-http`, `http` or `streamable_http`).
    StreamableHttp,
    /// Legacy HTTP+SSE: a GET event stream plus POSTs to the announced endpoint.
    Sse,
}

impl TransportKind {
    /// The normalized name: `stdio`, `streamable-http` or `sse`.
    pub fn as_str(self) -> &'static str {
        match self {
            TransportKind::Stdio => "stdio",
            TransportKind::StreamableHttp => "streamable-http",
            TransportKind::Sse => "sse",
        }
    }
}

/// Fields of a stdio server, as written in the file (expressions unexpanded).
///
/// Its `Debug` output shows the `env` *names* (values `<redacted>`) and how many
/// arguments there are: literal values in the file may be credentials.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct StdioConfig {
    /// The program to run.
    pub command: String,
    /// Its arguments (default `[]`).
    pub args: Vec<String>,
    /// Working directory as written; `None` means the workspace. A relative path is
    /// relative to the config file's directory.
    pub cwd: Option<String>,
    /// Explicit environment; wins over `envFile` and `env_vars`.
    pub env: BTreeMap<String, String>,
    /// Names of host variables passed through.
    pub env_vars: Vec<String>,
    /// A dotenv file, relative to the config file's directory.
    pub env_file: Option<String>,
}

/// Fields of a streamable-HTTP or SSE server, as written in the file.
///
/// Its `Debug` output shows header *names* (values `<redacted>`) and the URL with its
/// userinfo and query values redacted: a literal `Authorization: Bearer …` is a secret.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct HttpConfig {
    /// The endpoint (`url`, or its alias `serverUrl`).
    pub url: String,
    /// Static headers, names lower-cased (`headers` and `http_headers` merged).
    pub headers: BTreeMap<String, String>,
    /// Header name (lower-cased) → host variable holding its value.
    pub env_http_headers: BTreeMap<String, String>,
    /// Host variable holding a bearer token for `authorization`.
    pub bearer_token_env_var: Option<String>,
}

/// `map` with every value replaced by `<redacted>`: what `Debug` shows of headers and
/// environments.
fn hidden_values(map: &BTreeMap<String, String>) -> BTreeMap<&str, &'static str> {
    map.keys().map(|k| (k.as_str(), redact::REDACTED)).collect()
}

impl std::fmt::Debug for StdioConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioConfig")
            .field("command", &self.command)
            .field("args", &format_args!("[{} arguments]", self.args.len()))
            .field("cwd", &self.cwd)
            .field("env", &hidden_values(&self.env))
            .field("env_vars", &self.env_vars)
            .field("env_file", &self.env_file)
            .finish()
    }
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("url", &redact::redact_urls(&self.url))
            .field("headers", &hidden_values(&self.headers))
            .field("env_http_headers", &self.env_http_headers)
            .field("bearer_token_env_var", &self.bearer_token_env_var)
            .finish()
    }
}

/// The transport part of a server entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerTransport {
    /// A child process.
    Stdio(StdioConfig),
    /// Streamable HTTP.
    StreamableHttp(HttpConfig),
    /// Legacy HTTP+SSE.
    Sse(HttpConfig),
}

impl ServerTransport {
    /// The kind of transport.
    pub fn kind(&self) -> TransportKind {
        match self {
            ServerTransport::Stdio(_) => TransportKind::Stdio,
            ServerTransport::StreamableHttp(_) => TransportKind::StreamableHttp,
            ServerTransport::Sse(_) => TransportKind::Sse,
        }
    }
}

/// One server entry, with defaults applied and overrides merged.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The raw server name (the key in the file).
    pub name: String,
    /// How to reach it.
    pub transport: ServerTransport,
    /// `enabled` / `disabled`; default enabled. Disabled servers are not started.
    pub enabled: bool,
    /// Whether a startup failure fails `prepare` (default true).
    pub required: bool,
    /// Iris policy from the agent's overrides (default false): only with it does a
    /// tool's `readOnlyHint: true` give it read-only execution.
    pub trust_annotations: bool,
    /// Iris policy from the agent's overrides (default false, stdio servers only): the
    /// server runs inside the native command sandbox ([`crate::McpSandbox`]).
    pub sandbox: bool,
    /// Startup deadline: connect, handshake and the full tool listing.
    pub startup_timeout: Duration,
    /// Idle deadline of one tool call (`tool_timeout_sec`): how long a call may go
    /// without an answer or a progress notification. Each progress notification
    /// restarts it, up to [`ServerConfig::tool_max`].
    pub tool_timeout: Duration,
    /// Absolute cap of one tool call (`tool_max_sec`, default
    /// [`DEFAULT_TOOL_MAX_SEC`] or `tool_timeout_sec` when that is longer): progress
    /// never extends a call past it.
    pub tool_max: Duration,
    /// Wire names to publish; `None` publishes all.
    pub enabled_tools: Option<Vec<String>>,
    /// Wire names never published; wins over `enabled_tools`.
    pub disabled_tools: Vec<String>,
    /// The config file this entry came from (relative paths resolve against its
    /// directory).
    pub source: PathBuf,
}

impl ServerConfig {
    /// Whether a tool with this wire name is published: not in `disabled_tools`, and in
    /// `enabled_tools` when that list is given.
    pub fn tool_enabled(&self, wire_name: &str) -> bool {
        if self.disabled_tools.iter().any(|t| t == wire_name) {
            return false;
        }
        self.enabled_tools
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == wire_name))
    }

    /// Expands environment expressions once from `host` and resolves paths: what a
    /// transport needs to connect. `workspace_root` is the default stdio `cwd`.
    ///
    /// Errors name the file, the server and the field (an unset `${VAR}`, a missing
    /// `envFile`, a header set twice with different values, an unset
    /// `bearer_token_env_var`).
    pub fn resolve(&self, workspace_root: &Path, host: &HostEnv) -> Result<ResolvedTransport> {
        self.resolve_with_secrets(workspace_root, host)
            .map(|(transport, _)| transport)
    }

    /// The host variables an HTTP server's credentials come from: its
    /// `bearer_token_env_var`, the variables of `env_http_headers`, and those the
    /// `headers` values and the URL read (`${VAR}`). Empty for a stdio server. A
    /// host that gets a new value for one of them ([`MCPManager::set_secret`](crate::MCPManager::set_secret))
    /// reconnects the server with it.
    pub fn credential_vars(&self) -> Vec<String> {
        let http = match &self.transport {
            ServerTransport::StreamableHttp(http) | ServerTransport::Sse(http) => http,
            ServerTransport::Stdio(_) => return Vec::new(),
        };
        let mut names: Vec<String> = Vec::new();
        names.extend(http.bearer_token_env_var.iter().cloned());
        names.extend(http.env_http_headers.values().cloned());
        for value in http.headers.values() {
            names.extend(env::referenced_vars(value));
        }
        names.extend(env::referenced_vars(&http.url));
        let mut seen = std::collections::BTreeSet::new();
        names.retain(|n| seen.insert(n.clone()));
        names
    }

    /// [`ServerConfig::resolve`], plus the values that must never be printed: what
    /// expressions took from the host, passed-through variables, `envFile` values,
    /// literal `env` values under secret-looking names, header values and the URL's
    /// userinfo and query values (see `crate::redact`).
    pub(crate) fn resolve_with_secrets(
        &self,
        workspace_root: &Path,
        host: &HostEnv,
    ) -> Result<(ResolvedTransport, Vec<String>)> {
        let secrets = RefCell::new(Vec::new());
        let transport = self.resolve_inner(workspace_root, host, &secrets)?;
        let mut secrets = secrets.into_inner();
        match (&transport, &self.transport) {
            (ResolvedTransport::Stdio { env, .. }, ServerTransport::Stdio(stdio)) => {
                for (key, value) in env {
                    let literal_secret = stdio.env.contains_key(key) && secret_name(key);
                    if literal_secret {
                        secrets.push(value.clone());
                    }
                }
            }
            (ResolvedTransport::Http { url, headers, .. }, _) => {
                secrets.extend(headers.values().flat_map(|v| redact::header_secrets(v)));
                secrets.extend(redact::url_secrets(url));
            }
            _ => {}
        }
        Ok((transport, secrets))
    }

    fn resolve_inner(
        &self,
        workspace_root: &Path,
        host: &HostEnv,
        secrets: &RefCell<Vec<String>>,
    ) -> Result<ResolvedTransport> {
        let err = |field: &str, message: String| {
            McpError::config(&self.source, Some(&self.name), Some(field), message)
        };
        // Arguments, environment values, the URL and headers may carry credentials;
        // the program and the paths (`command`, `cwd`, `envFile`) do not, and stay
        // readable in messages.
        let expand = |field: &str, raw: &str| {
            env::expand_recording(raw, host, &mut secrets.borrow_mut()).map_err(|m| err(field, m))
        };
        let expand_path =
            |field: &str, raw: &str| env::expand(raw, host).map_err(|m| err(field, m));
        let base = self.source.parent().unwrap_or(Path::new("."));
        match &self.transport {
            ServerTransport::Stdio(stdio) => {
                let command = expand_path("command", &stdio.command)?;
                let args = stdio
                    .args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| expand(&format!("args[{i}]"), a))
                    .collect::<Result<Vec<_>>>()?;
                let cwd = match &stdio.cwd {
                    None => workspace_root.to_path_buf(),
                    Some(raw) => base.join(expand_path("cwd", raw)?),
                };
                // Precedence: defaults < env_vars < envFile < env (later wins).
                let mut vars: BTreeMap<String, String> = env::DEFAULT_INHERITED_ENV_VARS
                    .iter()
                    .filter_map(|k| host.get(k).map(|v| ((*k).to_owned(), v.to_owned())))
                    .collect();
                for name in &stdio.env_vars {
                    if let Some(value) = host.get(name) {
                        if !env::DEFAULT_INHERITED_ENV_VARS.contains(&name.as_str()) {
                            secrets.borrow_mut().push(value.to_owned());
                        }
                        vars.insert(name.clone(), value.to_owned());
                    }
                }
                if let Some(raw) = &stdio.env_file {
                    let path = base.join(expand_path("envFile", raw)?);
                    // Repository content: a bounded read of a regular file only, so a FIFO
                    // or /dev/zero named as envFile cannot hang or exhaust the process.
                    let text = read_regular_text(&path, MAX_CONFIG_BYTES)
                        .map_err(|e| err("envFile", format!("{} {e}", path.display())))?;
                    let parsed = env::parse_dotenv(&text)
                        .map_err(|m| err("envFile", format!("{}: {m}", path.display())))?;
                    secrets.borrow_mut().extend(parsed.values().cloned());
                    vars.extend(parsed);
                }
                for (key, raw) in &stdio.env {
                    vars.insert(key.clone(), expand(&format!("env.{key}"), raw)?);
                }
                Ok(ResolvedTransport::Stdio {
                    command,
                    args,
                    cwd,
                    env: vars,
                    sandbox: None,
                })
            }
            ServerTransport::StreamableHttp(http) | ServerTransport::Sse(http) => {
                let url = expand("url", &http.url)?;
                let mut headers: BTreeMap<String, String> = BTreeMap::new();
                let mut put = |field: String, name: &str, value: String| -> Result<()> {
                    match headers.get(name) {
                        Some(old) if old != &value => Err(err(
                            &field,
                            format!("header `{name}` is set twice with different values"),
                        )),
                        _ => {
                            headers.insert(name.to_owned(), value);
                            Ok(())
                        }
                    }
                };
                for (name, raw) in &http.headers {
                    let field = format!("headers.{name}");
                    let value = expand(&field, raw)?;
                    put(field, name, value)?;
                }
                for (name, var) in &http.env_http_headers {
                    // An unset variable leaves the header out, as codex does: the
                    // header is optional configuration, unlike a bearer token.
                    if let Some(value) = host.get(var) {
                        put(format!("env_http_headers.{name}"), name, value.to_owned())?;
                    }
                }
                if let Some(var) = &http.bearer_token_env_var {
                    let token = host.get(var).filter(|v| !v.is_empty()).ok_or_else(|| {
                        err(
                            "bearer_token_env_var",
                            format!("environment variable `{var}` is not set"),
                        )
                    })?;
                    put(
                        "bearer_token_env_var".into(),
                        "authorization",
                        format!("Bearer {token}"),
                    )?;
                }
                if !headers.is_empty() && !sends_secrets_safely(&url) {
                    // Every header may hold a credential (they are redacted as such), and
                    // plain http would carry them across a network unencrypted.
                    return Err(err(
                        "url",
                        "uses plain http to a non-loopback host, which would send the \
                         configured headers unencrypted; use https"
                            .into(),
                    ));
                }
                let kind = self.transport.kind();
                Ok(ResolvedTransport::Http { kind, url, headers })
            }
        }
    }
}

/// Whether an environment variable's name says it holds a credential.
fn secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "AUTH",
        "CREDENTIAL",
        "COOKIE",
    ]
    .iter()
    .any(|word| upper.contains(word))
}

/// A transport ready to connect: expressions expanded, paths absolute.
///
/// Its `Debug` output shows header and environment *names* and the URL with its
/// userinfo and query values redacted: the values are the host's secrets.
#[derive(Clone, PartialEq, Eq)]
pub enum ResolvedTransport {
    /// A child process.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its working directory.
        cwd: PathBuf,
        /// Its whole environment (the host's is not inherited beyond this).
        env: BTreeMap<String, String>,
        /// The sandbox it runs in, when it opted in (`sandbox: true`); the manager
        /// sets it from its [`crate::McpSandbox`].
        sandbox: Option<crate::McpSandbox>,
    },
    /// Streamable HTTP or SSE.
    Http {
        /// [`TransportKind::StreamableHttp`] or [`TransportKind::Sse`].
        kind: TransportKind,
        /// The endpoint.
        url: String,
        /// Every header, names lower-cased.
        headers: BTreeMap<String, String>,
    },
}

impl std::fmt::Debug for ResolvedTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResolvedTransport::Stdio {
                command,
                args,
                cwd,
                env,
                sandbox,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", &format!("[{} arguments]", args.len()))
                .field("cwd", cwd)
                .field("env", &hidden_values(env))
                .field("sandbox", sandbox)
                .finish(),
            ResolvedTransport::Http { kind, url, headers } => f
                .debug_struct("Http")
                .field("kind", kind)
                .field("url", &redact::redact_urls(url))
                .field("headers", &hidden_values(headers))
                .finish(),
        }
    }
}

/// Per-server overrides from the agent YAML's `mcp.overrides`, keyed by raw server
/// name. Unset fields keep the file's value or the default.
///
/// ```
/// use iris_mcp::ServerOverride;
/// let o: ServerOverride = serde_json::from_str(r#"{"required": false, "trust_annotations": true}"#).unwrap();
/// assert_eq!(o.required, Some(false));
/// assert!(serde_json::from_str::<ServerOverride>(r#"{"requred": false}"#).is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerOverride {
    /// Overrides `required`.
    #[serde(default)]
    pub required: Option<bool>,
    /// Sets `trust_annotations` (only settable here).
    #[serde(default)]
    pub trust_annotations: Option<bool>,
    /// Runs this stdio server inside the native command sandbox (only settable here;
    /// see [`crate::McpSandbox`]).
    #[serde(default)]
    pub sandbox: Option<bool>,
    /// Overrides `startup_timeout_sec`.
    #[serde(default)]
    pub startup_timeout_sec: Option<f64>,
    /// Overrides `tool_timeout_sec`.
    #[serde(default)]
    pub tool_timeout_sec: Option<f64>,
    /// Overrides `tool_max_sec`.
    #[serde(default)]
    pub tool_max_sec: Option<f64>,
}

/// Overrides for several servers, by raw server name.
pub type McpOverrides = BTreeMap<String, ServerOverride>;

/// A loaded MCP config file.
#[derive(Debug, Clone, PartialEq)]
pub struct MCPConfig {
    /// The file it came from.
    pub path: PathBuf,
    /// Which root key held the servers.
    pub root_key: String,
    /// Servers by raw name (sorted, so startup and naming are deterministic).
    pub servers: BTreeMap<String, ServerConfig>,
    /// Keys that were ignored (other tools' settings, unknown fields), one line each.
    pub warnings: Vec<String>,
}

impl MCPConfig {
    /// Parses config text in `format` as if it were read from `path` (tests and hosts
    /// that hold the text already).
    pub fn from_str(
        text: &str,
        format: ConfigFormat,
        path: impl Into<PathBuf>,
        overrides: &McpOverrides,
    ) -> Result<Self> {
        let path = path.into();
        let parsed = parse_text(text, format, &path)?;
        let mut warnings = Vec::new();
        check_duplicates(&path, &parsed.duplicates, &mut warnings)?;
        let mut config = build(parsed.value, path, overrides)?;
        config.warnings.extend(warnings);
        Ok(config)
    }

    /// The enabled servers.
    pub fn enabled_servers(&self) -> impl Iterator<Item = &ServerConfig> {
        self.servers.values().filter(|s| s.enabled)
    }

    /// The enabled servers (raw names, sorted) that could publish a tool named
    /// `tool_name`: those whose `mcp__<server>__` prefix (sanitized, or cut by the
    /// 64-character limit) begins it. Usually one; several when two server names
    /// sanitize alike; none for a name that is not an MCP tool's. A host that calls
    /// one tool starts only these (with [`MCPConfig::retain_servers`]) instead of
    /// every server.
    ///
    /// ```
    /// use iris_mcp::{ConfigFormat, MCPConfig, McpOverrides};
    /// let text = r#"{"mcpServers": {"time": {"command": "t"}, "my.docs": {"command": "d"}, "my_docs": {"command": "e"}}}"#;
    /// let config = MCPConfig::from_str(text, ConfigFormat::Json, "mcp.json", &McpOverrides::new()).unwrap();
    /// assert_eq!(config.servers_for_tool("mcp__time__get_current_time"), ["time"]);
    /// assert_eq!(config.servers_for_tool("mcp__my_docs__search"), ["my.docs", "my_docs"]);
    /// assert!(config.servers_for_tool("read_file").is_empty());
    /// ```
    pub fn servers_for_tool(&self, tool_name: &str) -> Vec<String> {
        use iris_tools_core::definition::MAX_TOOL_NAME_LEN;
        // A suffixed name keeps at most this much of `mcp__<server>__<tool>`.
        let head = MAX_TOOL_NAME_LEN - 9;
        self.enabled_servers()
            .filter(|server| {
                let prefix = crate::naming::sanitize(&format!(
                    "{}{}__",
                    crate::naming::MCP_TOOL_PREFIX,
                    server.name
                ));
                tool_name.starts_with(&prefix)
                    || (prefix.len() > head
                        && tool_name.len() == MAX_TOOL_NAME_LEN
                        && tool_name.get(..head).is_some_and(|h| prefix.starts_with(h)))
            })
            .map(|server| server.name.clone())
            .collect()
    }

    /// Keeps only the servers named in `keep` (raw names); the others are dropped
    /// from the config, so a manager over it neither starts nor lists them.
    pub fn retain_servers(&mut self, keep: &[String]) {
        self.servers.retain(|name, _| keep.contains(name));
    }
}

/// The syntax of a config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigFormat {
    /// JSON, also accepting JSONC's comments and trailing commas (VS Code writes JSONC
    /// into files named `.json`).
    Json,
    /// TOML (codex's `config.toml`).
    Toml,
}

impl ConfigFormat {
    /// `Toml` for a `.toml` extension, `Json` otherwise (`.json`, `.jsonc`, none).
    pub fn from_path(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("toml") => ConfigFormat::Toml,
            _ => ConfigFormat::Json,
        }
    }
}

/// Loads an MCP config file (JSON, JSONC or TOML by extension) and merges the agent's
/// per-server overrides.
///
/// ```
/// use iris_mcp::{load_mcp_config, McpOverrides, ServerOverride, TransportKind};
/// # let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join(".mcp.json");
/// std::fs::write(&path, r#"{
///   // JSONC: comments and trailing commas are fine
///   "mcpServers": {
///     "time": {"command": "uvx", "args": ["mcp-server-time"]},
///     "docs": {"url": "https://example.com/mcp", "headers": {"X-Team": "iris"}},
///   }
/// }"#).unwrap();
/// let overrides = McpOverrides::from([("docs".into(), ServerOverride { required: Some(false), ..Default::default() })]);
/// let config = load_mcp_config(&path, &overrides).unwrap();
/// assert_eq!(config.servers["time"].transport.kind(), TransportKind::Stdio);
/// assert_eq!(config.servers["docs"].transport.kind(), TransportKind::StreamableHttp);
/// assert!(!config.servers["docs"].required);
/// assert_eq!(config.servers["time"].tool_timeout.as_secs(), 30);
/// ```
pub fn load_mcp_config(path: impl AsRef<Path>, overrides: &McpOverrides) -> Result<MCPConfig> {
    let path = path.as_ref();
    let text = read_regular_text(path, MAX_CONFIG_BYTES)
        .map_err(|e| McpError::config(path, None, None, format!("the file {e}")))?;
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    MCPConfig::from_str(&text, ConfigFormat::from_path(&path), path, overrides)
}

/// A parsed file: its value and the keys that appeared twice in one object (TOML
/// refuses those itself).
struct Parsed {
    value: Value,
    /// Paths (`[root key, server, field…]`) of repeated keys.
    duplicates: Vec<Vec<String>>,
}

/// A JSON value read by a visitor that notes repeated keys instead of silently
/// keeping the last one, as `serde_json::Value` does.
struct CheckedJson {
    value: Value,
    duplicates: Vec<Vec<String>>,
}

impl<'de> Deserialize<'de> for CheckedJson {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let mut path = Vec::new();
        let mut duplicates = Vec::new();
        let value = serde::de::DeserializeSeed::deserialize(
            CheckedNode {
                path: &mut path,
                duplicates: &mut duplicates,
            },
            d,
        )?;
        Ok(Self { value, duplicates })
    }
}

/// One value at `path`; the parser bounds the nesting depth (512), so the recursion is
/// bounded too.
struct CheckedNode<'a> {
    path: &'a mut Vec<String>,
    duplicates: &'a mut Vec<Vec<String>>,
}

impl<'de> serde::de::DeserializeSeed<'de> for CheckedNode<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for CheckedNode<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> std::result::Result<Value, E> {
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format!("{v} is not a finite number")))
    }

    fn visit_str<E>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> std::result::Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<Value, D::Error> {
        serde::de::DeserializeSeed::deserialize(self, d)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Value, A::Error> {
        let mut out = Vec::new();
        loop {
            self.path.push(format!("[{}]", out.len()));
            let next = seq.next_element_seed(CheckedNode {
                path: &mut *self.path,
                duplicates: &mut *self.duplicates,
            });
            self.path.pop();
            match next? {
                Some(v) => out.push(v),
                None => return Ok(Value::Array(out)),
            }
        }
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.path.push(key.clone());
            let value = map.next_value_seed(CheckedNode {
                path: &mut *self.path,
                duplicates: &mut *self.duplicates,
            });
            if out.contains_key(&key) {
                self.duplicates.push(self.path.clone());
            }
            self.path.pop();
            out.insert(key, value?);
        }
        Ok(Value::Object(out))
    }
}

/// `[a, b, [0], c]` as `a.b[0].c`.
fn join_path(parts: &[String]) -> String {
    let mut out = String::new();
    for part in parts {
        if !out.is_empty() && !part.starts_with('[') {
            out.push('.');
        }
        out.push_str(part);
    }
    out
}

/// Turns repeated keys into errors where Iris reads the file (the root and the server
/// mapping) and into warnings inside another tool's root keys.
fn check_duplicates(
    path: &Path,
    duplicates: &[Vec<String>],
    warnings: &mut Vec<String>,
) -> Result<()> {
    for dup in duplicates {
        let Some(root) = dup.first() else { continue };
        let key = dup.last().map_or("", String::as_str);
        let ours = ROOT_KEYS.contains(&root.as_str());
        if dup.len() == 1 && !ours {
            warnings.push(format!(
                "{}: root key `{root}` appears twice",
                path.display()
            ));
            continue;
        }
        if !ours {
            warnings.push(format!(
                "{}: field `{}`: key `{key}` appears twice",
                path.display(),
                join_path(dup)
            ));
            continue;
        }
        return Err(match dup.as_slice() {
            [_] => McpError::config(
                path,
                None,
                Some(root),
                format!("key `{root}` appears twice; keep one (Iris never picks one silently)"),
            ),
            [_, server] => McpError::config(
                path,
                Some(server),
                None,
                format!(
                    "server `{server}` is declared twice; keep one (Iris never picks one silently)"
                ),
            ),
            [_, server, field @ ..] => McpError::config(
                path,
                Some(server),
                Some(&join_path(field)),
                format!("key `{key}` appears twice; keep one (Iris never picks one silently)"),
            ),
            [] => continue,
        });
    }
    Ok(())
}

fn parse_text(text: &str, format: ConfigFormat, path: &Path) -> Result<Parsed> {
    match format {
        ConfigFormat::Json => {
            let options = jsonc_parser::ParseOptions {
                allow_comments: true,
                allow_trailing_commas: true,
                allow_loose_object_property_names: false,
                allow_missing_commas: false,
                allow_single_quoted_strings: false,
                allow_hexadecimal_numbers: false,
                allow_unary_plus_numbers: false,
                allow_bare_decimal_point_numbers: false,
                allow_non_finite_numbers: false,
                allow_extended_string_escapes: false,
            };
            let checked = jsonc_parser::parse_to_serde_value::<Option<CheckedJson>>(text, &options)
                .map_err(|e| McpError::config(path, None, None, format!("invalid JSON: {e}")))?
                .ok_or_else(|| McpError::config(path, None, None, "the file is empty"))?;
            Ok(Parsed {
                value: checked.value,
                duplicates: checked.duplicates,
            })
        }
        ConfigFormat::Toml => toml::from_str::<toml::Value>(text)
            .map_err(|e| {
                let message = e.message().trim().to_owned();
                let at = e
                    .span()
                    .map(|s| {
                        let before = text.get(..s.start).unwrap_or(text);
                        let line = before.matches('\n').count() + 1;
                        format!(" on line {line}")
                    })
                    .unwrap_or_default();
                McpError::config(path, None, None, format!("invalid TOML{at}: {message}"))
            })
            .and_then(|v| {
                toml_to_json(v, &mut Vec::new()).map_err(|(at, message)| {
                    // `at` is [root key, server, field…]: name the server and field.
                    let server = at.get(1).map(String::as_str);
                    let field = (at.len() > 2).then(|| at[2..].join("."));
                    McpError::config(path, server, field.as_deref(), message)
                })
            })
            .map(|value| Parsed {
                value,
                duplicates: Vec::new(),
            }),
    }
}

/// TOML to JSON, refusing what JSON cannot hold (`inf`, `nan`) with its location
/// rather than turning it into `null`. Dates become their TOML text.
fn toml_to_json(
    v: toml::Value,
    at: &mut Vec<String>,
) -> std::result::Result<Value, (Vec<String>, String)> {
    Ok(match v {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => match serde_json::Number::from_f64(f) {
            Some(n) => Value::Number(n),
            None => return Err((at.clone(), format!("must be a finite number, found {f}"))),
        },
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                if let Some(last) = at.last_mut() {
                    last.push_str(&format!("[{i}]"));
                }
                let converted = toml_to_json(item, at);
                if let Some(last) = at.last_mut()
                    && let Some(open) = last.rfind('[')
                {
                    last.truncate(open);
                }
                out.push(converted?);
            }
            Value::Array(out)
        }
        toml::Value::Table(table) => {
            let mut out = Map::new();
            for (k, item) in table {
                at.push(k.clone());
                let converted = toml_to_json(item, at);
                at.pop();
                out.insert(k, converted?);
            }
            Value::Object(out)
        }
    })
}

fn build(root: Value, path: PathBuf, overrides: &McpOverrides) -> Result<MCPConfig> {
    let file_err = |message: String| McpError::config(&path, None, None, message);
    let Value::Object(root) = root else {
        return Err(file_err(format!(
            "the root must be an object with one of {}",
            ROOT_KEYS.map(|k| format!("`{k}`")).join(", ")
        )));
    };
    let present: Vec<&str> = ROOT_KEYS
        .iter()
        .copied()
        .filter(|k| root.contains_key(*k))
        .collect();
    let root_key = match present.as_slice() {
        [one] => (*one).to_owned(),
        [] => {
            return Err(file_err(format!(
                "no server mapping: expected exactly one of {}",
                ROOT_KEYS.map(|k| format!("`{k}`")).join(", ")
            )));
        }
        many => {
            return Err(file_err(format!(
                "expected exactly one server mapping, found {}",
                many.iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            )));
        }
    };
    let mut warnings: Vec<String> = root
        .keys()
        .filter(|k| !ROOT_KEYS.contains(&k.as_str()))
        .map(|k| format!("{}: root key `{k}` ignored", path.display()))
        .collect();
    let Some(Value::Object(entries)) = root.get(&root_key) else {
        return Err(McpError::config(
            &path,
            None,
            Some(&root_key),
            "must be a mapping of server name to server settings",
        ));
    };
    let mut servers = BTreeMap::new();
    for (name, entry) in entries {
        let server = parse_server(&path, name, entry, overrides.get(name), &mut warnings)?;
        servers.insert(name.clone(), server);
    }
    if let Some(unknown) = overrides.keys().find(|k| !servers.contains_key(*k)) {
        return Err(McpError::config(
            &path,
            Some(unknown),
            Some("mcp.overrides"),
            format!(
                "override names a server the file does not declare (servers: {})",
                servers.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    Ok(MCPConfig {
        path,
        root_key,
        servers,
        warnings,
    })
}

/// Reads one server entry's fields with errors that name file, server and field.
struct Fields<'a> {
    path: &'a Path,
    server: &'a str,
    map: &'a Map<String, Value>,
}

impl<'a> Fields<'a> {
    fn err(&self, field: &str, message: impl Into<String>) -> McpError {
        McpError::config(self.path, Some(self.server), Some(field), message)
    }

    fn get(&self, field: &str) -> Option<&'a Value> {
        self.map.get(field)
    }

    fn string(&self, field: &str) -> Result<Option<String>> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.err(field, format!("must be a string, found {}", kind(other)))),
        }
    }

    fn non_empty_string(&self, field: &str) -> Result<Option<String>> {
        match self.string(field)? {
            Some(s) if s.trim().is_empty() => Err(self.err(field, "must not be empty")),
            other => Ok(other),
        }
    }

    fn bool(&self, field: &str) -> Result<Option<bool>> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.err(
                field,
                format!("must be true or false, found {}", kind(other)),
            )),
        }
    }

    fn strings(&self, field: &str) -> Result<Option<Vec<String>>> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(self.err(
                        &format!("{field}[{i}]"),
                        format!("must be a string, found {}", kind(other)),
                    )),
                })
                .collect::<Result<Vec<_>>>()
                .map(Some),
            Some(other) => Err(self.err(
                field,
                format!("must be a list of strings, found {}", kind(other)),
            )),
        }
    }

    /// A string mapping; numbers and booleans are accepted as their text (`PORT: 8080`).
    fn string_map(&self, field: &str) -> Result<Option<BTreeMap<String, String>>> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| {
                    let value = match v {
                        Value::String(s) => s.clone(),
                        Value::Number(n) => n.to_string(),
                        Value::Bool(b) => b.to_string(),
                        other => {
                            return Err(self.err(
                                &format!("{field}.{k}"),
                                format!("must be a string, found {}", kind(other)),
                            ));
                        }
                    };
                    Ok((k.clone(), value))
                })
                .collect::<Result<BTreeMap<_, _>>>()
                .map(Some),
            Some(other) => Err(self.err(
                field,
                format!("must be a mapping of strings, found {}", kind(other)),
            )),
        }
    }

    fn positive_seconds(&self, field: &str, scale: f64) -> Result<Option<f64>> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Number(n)) => {
                let raw = n.as_f64().unwrap_or(f64::NAN);
                let secs = check_positive(raw).map_err(|m| self.err(field, m))? / scale;
                // A value so small it rounds to a zero deadline would time every call
                // out before it starts.
                if seconds(secs).is_zero() {
                    return Err(self.err(
                        field,
                        format!("must be at least one nanosecond, found {raw}"),
                    ));
                }
                Ok(Some(secs))
            }
            Some(other) => Err(self.err(
                field,
                format!("must be a positive number, found {}", kind(other)),
            )),
        }
    }
}

fn check_positive(raw: f64) -> std::result::Result<f64, String> {
    if raw.is_finite() && raw > 0.0 {
        Ok(raw)
    } else {
        Err(format!("must be a positive finite number, found {raw}"))
    }
}

fn seconds(secs: f64) -> Duration {
    // `check_positive` guarantees a finite positive number; clamp absurd values so
    // `Duration` never overflows (about 31 years is plenty for a deadline).
    Duration::from_secs_f64(secs.min(1e9))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

fn parse_server(
    path: &Path,
    name: &str,
    entry: &Value,
    over: Option<&ServerOverride>,
    warnings: &mut Vec<String>,
) -> Result<ServerConfig> {
    let Value::Object(map) = entry else {
        return Err(McpError::config(
            path,
            Some(name),
            None,
            format!("server settings must be a mapping, found {}", kind(entry)),
        ));
    };
    if name.trim().is_empty() {
        return Err(McpError::config(
            path,
            Some(name),
            None,
            "server name must not be empty",
        ));
    }
    let f = Fields {
        path,
        server: name,
        map,
    };
    if map.contains_key("trust_annotations") {
        return Err(f.err(
            "trust_annotations",
            "trust_annotations is an Iris policy: set it in the agent's mcp.overrides, not in the MCP file",
        ));
    }
    if map.contains_key("sandbox") {
        return Err(f.err(
            "sandbox",
            "sandbox is an Iris policy: set it in the agent's mcp.overrides, not in the MCP file",
        ));
    }

    // Type: explicit (normalized) or inferred from `command`.
    let explicit = f.non_empty_string("type")?;
    let kind_ = match explicit.as_deref() {
        Some("stdio") => TransportKind::Stdio,
        Some("streamable-http" | "http" | "streamable_http") => TransportKind::StreamableHttp,
        Some("sse") => TransportKind::Sse,
        Some(other) => {
            return Err(f.err(
                "type",
                format!(
                    "unknown transport `{other}`; use stdio, streamable-http (http, streamable_http) or sse"
                ),
            ));
        }
        None if map.contains_key("command") => TransportKind::Stdio,
        None => TransportKind::StreamableHttp,
    };

    // Stdio and HTTP fields never mix.
    let foreign: &[&str] = match kind_ {
        TransportKind::Stdio => &HTTP_FIELDS,
        TransportKind::StreamableHttp | TransportKind::Sse => &STDIO_FIELDS,
    };
    if let Some(field) = foreign.iter().find(|k| map.contains_key(**k)) {
        return Err(f.err(
            field,
            format!(
                "`{field}` does not apply to a {} server (stdio and HTTP fields cannot be mixed)",
                kind_.as_str()
            ),
        ));
    }

    for key in map.keys() {
        let known = STDIO_FIELDS.contains(&key.as_str())
            || HTTP_FIELDS.contains(&key.as_str())
            || COMMON_FIELDS.contains(&key.as_str());
        if !known {
            warnings.push(format!(
                "{}: server `{name}`: field `{key}` ignored",
                path.display()
            ));
        }
    }

    let transport = match kind_ {
        TransportKind::Stdio => {
            let command = f
                .non_empty_string("command")?
                .ok_or_else(|| f.err("command", "a stdio server needs a command"))?;
            let env_vars = f.strings("env_vars")?.unwrap_or_default();
            if let Some((i, bad)) = env_vars
                .iter()
                .enumerate()
                .find(|(_, v)| !env::is_var_name(v))
            {
                return Err(f.err(
                    &format!("env_vars[{i}]"),
                    format!("`{bad}` is not an environment variable name"),
                ));
            }
            ServerTransport::Stdio(StdioConfig {
                command,
                args: f.strings("args")?.unwrap_or_default(),
                cwd: f.non_empty_string("cwd")?,
                env: f.string_map("env")?.unwrap_or_default(),
                env_vars,
                env_file: f.non_empty_string("envFile")?,
            })
        }
        TransportKind::StreamableHttp | TransportKind::Sse => {
            let url = match (f.non_empty_string("url")?, f.non_empty_string("serverUrl")?) {
                (Some(_), Some(_)) => {
                    return Err(f.err("serverUrl", "give either `url` or `serverUrl`, not both"));
                }
                (Some(u), None) | (None, Some(u)) => u,
                (None, None) => {
                    return Err(f.err("url", format!("a {} server needs a url", kind_.as_str())));
                }
            };
            // Expressions are expanded later, so only a literal URL's scheme is checked
            // here; the rest is the HTTP client's to judge.
            let literal_http = url.starts_with("http://") || url.starts_with("https://");
            if !(url.contains("${") || literal_http) {
                return Err(f.err("url", format!("`{url}` is not an http(s) URL")));
            }
            let mut headers = BTreeMap::new();
            for field in ["headers", "http_headers"] {
                for (raw, value) in f.string_map(field)?.unwrap_or_default() {
                    let lower = raw.to_ascii_lowercase();
                    check_header_name(&f, &format!("{field}.{raw}"), &lower)?;
                    match headers.get(&lower) {
                        Some(old) if old != &value => {
                            return Err(f.err(
                                &format!("{field}.{raw}"),
                                format!("header `{lower}` is set twice with different values"),
                            ));
                        }
                        _ => {
                            headers.insert(lower, value);
                        }
                    }
                }
            }
            let mut env_http_headers = BTreeMap::new();
            for (raw, var) in f.string_map("env_http_headers")?.unwrap_or_default() {
                let lower = raw.to_ascii_lowercase();
                let field = format!("env_http_headers.{raw}");
                check_header_name(&f, &field, &lower)?;
                if !env::is_var_name(&var) {
                    return Err(f.err(
                        &field,
                        format!("`{var}` is not an environment variable name"),
                    ));
                }
                if headers.contains_key(&lower) || env_http_headers.contains_key(&lower) {
                    return Err(f.err(
                        &field,
                        format!("header `{lower}` is already set; a header has one source"),
                    ));
                }
                env_http_headers.insert(lower, var);
            }
            let bearer_token_env_var = f.non_empty_string("bearer_token_env_var")?;
            if let Some(var) = &bearer_token_env_var {
                if !env::is_var_name(var) {
                    return Err(f.err(
                        "bearer_token_env_var",
                        format!("`{var}` is not an environment variable name"),
                    ));
                }
                if headers.contains_key("authorization")
                    || env_http_headers.contains_key("authorization")
                {
                    return Err(f.err(
                        "bearer_token_env_var",
                        "header `authorization` is already set; a header has one source",
                    ));
                }
            }
            let http = HttpConfig {
                url,
                headers,
                env_http_headers,
                bearer_token_env_var,
            };
            if kind_ == TransportKind::Sse {
                ServerTransport::Sse(http)
            } else {
                ServerTransport::StreamableHttp(http)
            }
        }
    };

    let enabled = match (f.bool("enabled")?, f.bool("disabled")?) {
        (Some(e), Some(d)) if e == d => {
            return Err(f.err(
                "disabled",
                format!("`enabled: {e}` and `disabled: {d}` contradict each other"),
            ));
        }
        (Some(e), _) => e,
        (None, Some(d)) => !d,
        (None, None) => true,
    };

    let startup_sec = match (
        f.positive_seconds("startup_timeout_sec", 1.0)?,
        f.positive_seconds("startup_timeout_ms", 1000.0)?,
    ) {
        (Some(_), Some(_)) => {
            return Err(f.err(
                "startup_timeout_ms",
                "give either `startup_timeout_sec` or `startup_timeout_ms`, not both",
            ));
        }
        (Some(s), None) | (None, Some(s)) => s,
        (None, None) => DEFAULT_STARTUP_TIMEOUT_SEC,
    };
    let tool_sec = f
        .positive_seconds("tool_timeout_sec", 1.0)?
        .unwrap_or(DEFAULT_TOOL_TIMEOUT_SEC);
    let tool_max_sec = f.positive_seconds("tool_max_sec", 1.0)?;

    let mut server = ServerConfig {
        name: name.to_owned(),
        transport,
        enabled,
        required: f.bool("required")?.unwrap_or(true),
        trust_annotations: false,
        sandbox: false,
        startup_timeout: seconds(startup_sec),
        tool_timeout: seconds(tool_sec),
        tool_max: Duration::ZERO,
        enabled_tools: f.strings("enabled_tools")?,
        disabled_tools: f.strings("disabled_tools")?.unwrap_or_default(),
        source: path.to_path_buf(),
    };

    if let Some(over) = over {
        let over_err = |field: &str, m: String| {
            McpError::config(path, Some(name), Some(&format!("mcp.overrides.{field}")), m)
        };
        if let Some(required) = over.required {
            server.required = required;
        }
        if let Some(trust) = over.trust_annotations {
            server.trust_annotations = trust;
        }
        if let Some(sandbox) = over.sandbox {
            if sandbox && !matches!(server.transport, ServerTransport::Stdio(_)) {
                return Err(over_err(
                    "sandbox",
                    "only a stdio server (a process Iris starts) can run in the sandbox".to_owned(),
                ));
            }
            server.sandbox = sandbox;
        }
        if let Some(s) = over.startup_timeout_sec {
            server.startup_timeout =
                seconds(check_positive(s).map_err(|m| over_err("startup_timeout_sec", m))?);
        }
        if let Some(s) = over.tool_timeout_sec {
            server.tool_timeout =
                seconds(check_positive(s).map_err(|m| over_err("tool_timeout_sec", m))?);
        }
    }
    // The cap: the override's, else the file's, else the default (raised to the idle
    // timeout, so a long `tool_timeout_sec` alone keeps working).
    let (max_sec, max_field) = match over.and_then(|o| o.tool_max_sec) {
        Some(s) => (
            Some(check_positive(s).map_err(|m| {
                McpError::config(path, Some(name), Some("mcp.overrides.tool_max_sec"), m)
            })?),
            "mcp.overrides.tool_max_sec",
        ),
        None => (tool_max_sec, "tool_max_sec"),
    };
    server.tool_max = match max_sec {
        Some(s) => {
            let max = seconds(s);
            if max < server.tool_timeout {
                return Err(McpError::config(
                    path,
                    Some(name),
                    Some(max_field),
                    format!(
                        "the cap ({s}s) is shorter than tool_timeout_sec ({}s); progress can only extend a call up to the cap",
                        server.tool_timeout.as_secs_f64()
                    ),
                ));
            }
            max
        }
        None => seconds(DEFAULT_TOOL_MAX_SEC).max(server.tool_timeout),
    };
    Ok(server)
}

fn check_header_name(f: &Fields<'_>, field: &str, lower: &str) -> Result<()> {
    let valid = !lower.is_empty()
        && lower
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if !valid {
        return Err(f.err(field, format!("`{lower}` is not a valid HTTP header name")));
    }
    if RESERVED_HEADERS.contains(&lower) {
        return Err(f.err(
            field,
            format!("header `{lower}` is managed by the MCP transport and cannot be set"),
        ));
    }
    Ok(())
}

/// Whether a URL may carry credentials: `https`, or plain `http` to a loopback host
/// (`localhost`, `127.0.0.0/8`, `::1`). A URL that does not parse is left to the HTTP
/// client, which refuses it before anything is sent.
fn sends_secrets_safely(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return true;
    };
    if parsed.scheme() != "http" {
        return true;
    }
    parsed
        .host_str()
        .is_some_and(iris_tools_core::endpoint::is_loopback_host)
}
