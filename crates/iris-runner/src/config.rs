//! The agent YAML: [`AgentConfig`] and its sections, loaded with figment from the file
//! plus `IRIS_`-prefixed environment variables.
//!
//! ```yaml
//! workspace: .                     # relative to this file's folder (default: the folder)
//! tools:
//!   builtin: [exec.command, web.search]
//!   host: {functions: ["app.tools:read_config"], registrars: ["app.tools:register"]}
//!   subagent: agents.yaml          # relative to this file's folder
//! mcp: {path: mcp.json, overrides: {docs: {required: false}}}
//! command: {mode: native, timeout_seconds: 60}
//! skills: {enabled: true, root: .agents/skills}
//! hooks:
//!   - {name: audit, event: tool.after, handler: {type: command, command: ./hooks/audit.sh}}
//! middleware: {tools: [{factory: "app.mw:timing", options: {}}]}
//! context_policy: {enabled: true, deferred_tools: false}
//! decision: {path: decision.yaml}
//! permissions: {write_mode: confirm, execute_mode: confirm}
//! provider_api_keys: {tavily: tvly-...}   # usually from IRIS_PROVIDER_API_KEYS__TAVILY
//! model: {provider: openai, model: gpt-4.1-mini}   # the run loop's model (AgentRunner)
//! instructions: You are a careful coding agent.
//! max_turns: 50
//! ```
//!
//! Environment variables override the file: `IRIS_` is stripped, `__` nests, names are
//! lower-cased (`IRIS_PROVIDER_API_KEYS__TAVILY` → `provider_api_keys.tavily`,
//! `IRIS_PERMISSIONS__WRITE_MODE=allow` → `permissions.write_mode`). Only variables whose
//! first segment is a top-level key of [`AgentConfig`] are read, so unrelated `IRIS_*`
//! variables (such as iris-command's `IRIS_PYTHON`) never break loading.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Yaml};
use iris_command::CommandConfig;
use iris_executor::ApprovalMode;
use iris_fs::bounded_read::{MAX_CONFIG_BYTES, ReadError, read_regular_text};
use iris_fs::yaml::{MAX_YAML_FLOW_DEPTH, check_yaml_nesting, yaml_error_summary};
use iris_hooks::config::HookSpec;
use iris_skill::SkillsConfig;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::budget::Limits;
use crate::catalog::Make;
use crate::error::{Error, Result};
use crate::model::{ModelConfig, ScriptSource};
use crate::policy::AppliedPolicy;

/// The prefix of environment overrides.
pub const ENV_PREFIX: &str = "IRIS_";

/// The top-level keys of the agent YAML, in documentation order.
pub const TOP_LEVEL_KEYS: [&str; 20] = [
    "workspace",
    "tools",
    "mcp",
    "command",
    "skills",
    "hooks",
    "middleware",
    "context_policy",
    "decision",
    "permissions",
    "provider_api_keys",
    "model",
    "instructions",
    "max_turns",
    "limits",
    "run_store",
    "goal",
    "background_calls",
    "web",
    "heartbeat_seconds",
];

/// The default of `max_turns`: model requests one run may make.
pub const DEFAULT_MAX_TURNS: u32 = 50;

/// A whole agent configuration (the tool layer of one agent).
///
/// Load it with [`AgentConfig::load`], which also resolves relative paths; the
/// derived `Deserialize` alone leaves them as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// The agent workspace. Relative to the YAML file's folder; default: that folder.
    pub workspace: Option<PathBuf>,
    /// Which tools the agent has.
    pub tools: ToolsConfig,
    /// MCP servers (the Python reference's `AgentMCPConfig`).
    pub mcp: Option<McpSection>,
    /// The root command resource (`iris_command::CommandConfig`); default native.
    pub command: Option<CommandConfig>,
    /// Agent skills (`iris_skill::SkillsConfig`); off by default.
    pub skills: SkillsConfig,
    /// Ordered hooks (`iris_hooks::config::HookSpec`).
    pub hooks: Vec<HookSpec>,
    /// Tool middleware factories.
    pub middleware: MiddlewareConfig,
    /// Tool discovery policy.
    pub context_policy: ContextPolicyConfig,
    /// The decision model's configuration file.
    pub decision: Option<DecisionSection>,
    /// How side effects are approved.
    pub permissions: PermissionsConfig,
    /// Provider secrets by provider name (`tavily`, `typesafe`, …). Usually set through
    /// `IRIS_PROVIDER_API_KEYS__<NAME>`; never printed.
    pub provider_api_keys: BTreeMap<String, String>,
    /// The model the run loop drives ([`ModelConfig`]); needed by
    /// [`AgentRunner`](crate::AgentRunner), not by [`build_tool_registry`](crate::build_tool_registry).
    pub model: Option<ModelConfig>,
    /// The system prompt of every run.
    pub instructions: Option<String>,
    /// Model requests one run may make before it fails with `RUN_MAX_TURNS`
    /// (default [`DEFAULT_MAX_TURNS`]).
    pub max_turns: u32,
    /// The run's budget beyond `max_turns`: tokens, tool calls, time, cost
    /// ([`crate::budget`]).
    pub limits: Limits,
    /// Where runs are persisted ([`RunStoreConfig`]; default SQLite at
    /// `<workspace>/.iris/runs.db`).
    pub run_store: RunStoreConfig,
    /// The goal of every run; installs `get_goal` and `report_goal`
    /// ([`crate::goal`]). Without it a run's goal is its prompt.
    pub goal: Option<String>,
    /// What a final answer does while background calls are outstanding
    /// ([`BackgroundCalls`]; default `wait`).
    pub background_calls: BackgroundCalls,
    /// The web tools' server and deadline ([`WebConfig`]).
    pub web: WebConfig,
    /// How often a call still running reports a heartbeat (30 s by default; `0` turns
    /// heartbeats off). Runs show them as
    /// [`RunEvent::Heartbeat`](crate::RunEvent::Heartbeat), `iris run` on its status line.
    pub heartbeat_seconds: Option<f64>,
}

/// `web`: where `web_search` and `web_fetch` send their requests.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebConfig {
    /// Tavily's API or a server that speaks it (a proxy, a test server); default
    /// `https://api.tavily.com`. `http`/`https` with a host, no credentials, query or
    /// fragment.
    pub base_url: Option<String>,
    /// The total deadline of one request in seconds (default 30).
    pub timeout_seconds: Option<f64>,
}

/// `background_calls`: a run whose model answers while background calls are still
/// running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackgroundCalls {
    /// Wait for the next one to finish, give the model its result, ask again: the run
    /// completes only when none is outstanding.
    #[default]
    Wait,
    /// Cancel them and complete with the answer.
    Drop,
}

/// The `run_store` section: where [`AgentRunner`](crate::AgentRunner) persists runs so
/// a waiting run resumes in another process.
///
/// ```
/// use iris_runner::config::RunStoreConfig;
/// let pg: RunStoreConfig = serde_yaml::from_str("{kind: postgres, url_env: IRIS_DATABASE_URL}").unwrap();
/// assert_eq!(pg, RunStoreConfig::Postgres { url_env: "IRIS_DATABASE_URL".into() });
/// assert_eq!(RunStoreConfig::default(), RunStoreConfig::Sqlite { path: None });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RunStoreConfig {
    /// One SQLite file (WAL mode) shared by the processes of one machine.
    Sqlite {
        /// The file, relative to the workspace; default `.iris/runs.db`.
        #[serde(default)]
        path: Option<PathBuf>,
    },
    /// A PostgreSQL database shared across machines.
    Postgres {
        /// The environment variable holding the connection URL (never the YAML).
        url_env: String,
    },
    /// This process's memory: runs resume only within the process.
    Memory,
}

impl Default for RunStoreConfig {
    fn default() -> Self {
        RunStoreConfig::Sqlite { path: None }
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            workspace: None,
            tools: ToolsConfig::default(),
            mcp: None,
            command: None,
            skills: SkillsConfig::default(),
            hooks: Vec::new(),
            middleware: MiddlewareConfig::default(),
            context_policy: ContextPolicyConfig::default(),
            decision: None,
            permissions: PermissionsConfig::default(),
            provider_api_keys: BTreeMap::new(),
            model: None,
            instructions: None,
            max_turns: DEFAULT_MAX_TURNS,
            limits: Limits::default(),
            run_store: RunStoreConfig::default(),
            goal: None,
            background_calls: BackgroundCalls::Wait,
            web: WebConfig::default(),
            heartbeat_seconds: None,
        }
    }
}

/// The `tools` section.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    /// Built-in tools by YAML key.
    pub builtin: Vec<BuiltinKey>,
    /// Rust tools the host registered on a [`HostRegistry`](crate::HostRegistry), by
    /// key (`tools.host`; the Python reference's `module:function` tools).
    pub host: HostToolsConfig,
    /// `tools.python`, the older name of `tools.host`, still read: loading moves it
    /// into `host` and [`ToolsConfig::host_key`] reports the spelling (assembly errors
    /// name it, `iris check` notes it).
    #[serde(rename = "python", skip_serializing)]
    python_alias: Option<HostToolsConfig>,
    /// Whether the YAML spelled `tools.host` as `tools.python`.
    #[serde(skip)]
    spelled_python: bool,
    /// The subagent catalog file, relative to the YAML file's folder.
    pub subagent: Option<PathBuf>,
    /// Built-in or host-function tools (by tool name, e.g. `exec_command`) whose calls
    /// run in the background: the model gets a receipt at once and the
    /// result at a later turn (see `background_calls`).
    pub background: Vec<String>,
    /// `run_tool_script` settings (code mode).
    pub script: ScriptToolsConfig,
}

impl ToolsConfig {
    /// The YAML key the host tools were given under: `tools.host`, or the alias
    /// `tools.python` when the YAML spelled it so.
    pub fn host_key(&self) -> &'static str {
        if self.spelled_python {
            "tools.python"
        } else {
            "tools.host"
        }
    }

    /// `tools.python` moved into `host` (both lists kept, `host`'s first).
    fn fold_alias(&mut self) {
        if let Some(alias) = self.python_alias.take() {
            self.spelled_python = true;
            self.host.functions.extend(alias.functions);
            self.host.registrars.extend(alias.registrars);
        }
    }
}

/// `tools.script`: which tools a `run_tool_script` program may call besides the
/// read-only ones.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptToolsConfig {
    /// Canonical names of tools that are not read-only but that scripts may call
    /// (their calls are still checked like any call). A tool whose definition opts
    /// out (`script_callable: Some(false)`) stays out.
    pub callable: Vec<String>,
}

/// `tools.host` (alias `tools.python`): keys of functions and registrars the host
/// registered on a
/// [`HostRegistry`](crate::HostRegistry).
///
/// Rust cannot import `module:function` strings, so the host registers each tool or
/// registrar under such a key and the YAML refers to it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HostToolsConfig {
    /// Keys of single tools (`module:function`).
    pub functions: Vec<String>,
    /// Keys of registrars, each of which registers any number of tools.
    pub registrars: Vec<String>,
}

pub use crate::catalog::BuiltinKey;

/// The `mcp` section: one MCP file and per-server overrides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSection {
    /// A JSON, JSONC or TOML MCP file, relative to the YAML file's folder.
    pub path: PathBuf,
    /// Overrides by original server name.
    #[serde(default)]
    pub overrides: BTreeMap<String, McpOverride>,
}

/// Per-server overrides; an absent field keeps the server's own value or default.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpOverride {
    /// Whether a failing server blocks preparation.
    pub required: Option<bool>,
    /// Trust the server's `read_only_hint` annotations.
    pub trust_annotations: Option<bool>,
    /// Startup deadline in seconds.
    pub startup_timeout_sec: Option<f64>,
    /// Per-call idle deadline in seconds (each progress notification restarts it).
    pub tool_timeout_sec: Option<f64>,
    /// The absolute cap of one call in seconds, however much progress it reports.
    pub tool_max_sec: Option<f64>,
    /// Run this stdio server inside the commands' sandbox (`command.sandbox`).
    pub sandbox: Option<bool>,
}

/// One `middleware.tools` item: a factory key the host registered, and its options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactorySpec {
    /// The factory key (`module:factory`).
    pub factory: String,
    /// Options passed to the factory.
    #[serde(default)]
    pub options: Value,
}

/// The `middleware` section.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MiddlewareConfig {
    /// Tool middleware, first item outermost.
    pub tools: Vec<FactorySpec>,
}

/// The `context_policy` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContextPolicyConfig {
    /// The master switch of the context features (`deferred_tools`, `retention`):
    /// `false` with either of them set is `CONFIG_INVALID`, so no feature is on
    /// while the policy says off. Default `true`.
    pub enabled: bool,
    /// Publish MCP tools as deferred and install `tool_search`. Default `false`;
    /// requires `enabled`.
    pub deferred_tools: bool,
    /// Shorten old observation results to previews in a run's requests and install
    /// `context_read` / `context_search` ([`crate::context`]). Off by default;
    /// requires `enabled`.
    pub retention: Option<crate::context::RetentionConfig>,
    /// Which backend answers `tool_search` (`iris_discovery::DiscoveryConfig`:
    /// `backend: local | hybrid | decision`, `model_path` for `hybrid`, relative to
    /// the YAML file's folder). Default `local`; anything else requires
    /// `deferred_tools`.
    pub discovery: iris_discovery::DiscoveryConfig,
}

impl Default for ContextPolicyConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            deferred_tools: false,
            retention: None,
            discovery: iris_discovery::DiscoveryConfig::default(),
        }
    }
}

/// The `decision` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionSection {
    /// The decision YAML (`iris_decision::DecisionConfig`), relative to the YAML
    /// file's folder.
    pub path: PathBuf,
}

/// The `permissions` section (`DefaultPermissionPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionsConfig {
    /// Pure read/write tools: `allow`, `confirm` (default) or `deny`.
    pub write_mode: ApprovalMode,
    /// Execute tools: `allow`, `confirm` (default) or `deny`.
    pub execute_mode: ApprovalMode,
}

/// An [`AgentConfig`] together with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedConfig {
    /// The config with every relative path made absolute.
    pub config: AgentConfig,
    /// The YAML file.
    pub file: PathBuf,
    /// The absolute workspace (the `workspace` key, or the YAML file's folder).
    pub workspace: PathBuf,
    /// The admin policies `config` was tightened by, and what they changed; the
    /// assembly and the model check apply their allow-lists.
    pub policy: AppliedPolicy,
}

impl AgentConfig {
    /// Loads `file` plus `IRIS_` environment overrides, checks the cross-field rules and
    /// resolves every relative path against the file's folder.
    ///
    /// The file must be a regular file of at most 1 MiB whose YAML flow collections
    /// (`[`, `{`) nest at most 64 levels deep.
    ///
    /// # Errors
    /// [`Error::NotFound`] when the file cannot be read, [`Error::NotAFile`] for a FIFO,
    /// device or directory, [`Error::TooLarge`] past the size or nesting limit, and
    /// [`Error::Invalid`] naming the key path and expected shape otherwise.
    pub fn load(file: impl AsRef<Path>) -> Result<LoadedConfig> {
        Self::load_with_env(file, true)
    }

    /// Like [`AgentConfig::load`]; `env = false` ignores the environment (for tests
    /// and `--no-env` style hosts).
    ///
    /// # Errors
    /// As [`AgentConfig::load`].
    pub fn load_with_env(file: impl AsRef<Path>, env: bool) -> Result<LoadedConfig> {
        let file = file.as_ref().to_path_buf();
        let absolute = std::path::absolute(&file).map_err(|e| Error::NotFound {
            file: file.clone(),
            reason: e.to_string(),
        })?;
        let (text, _) = read_yaml_document(&file, &absolute)?;
        let mut figment = Figment::from(Yaml::string(&text));
        if env {
            check_env_nesting(&file)?;
            figment = figment.merge(env_provider());
        }
        let mut config: AgentConfig = figment.extract().map_err(|e| figment_error(&file, e))?;
        config.tools.fold_alias();
        let folder = absolute
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("/"));
        config.check(&file)?;
        let mut loaded = config.resolve(file, &folder);
        loaded.policy = AppliedPolicy::load_and_apply(&mut loaded.config, env)?;
        Ok(loaded)
    }

    /// Checks the rules serde cannot express.
    fn check(&self, file: &Path) -> Result<()> {
        let invalid = |key: &str, message: &str| Error::Invalid {
            file: file.to_path_buf(),
            key: key.into(),
            message: message.into(),
        };
        if self.context_policy.deferred_tools && !self.context_policy.enabled {
            return Err(invalid(
                "context_policy.deferred_tools",
                "requires context_policy.enabled = true",
            ));
        }
        if let Some(command) = &self.command {
            command
                .validate()
                .map_err(|e| invalid("command", &e.to_string()))?;
        }
        self.skills
            .validate()
            .map_err(|e| invalid("skills", &e.to_string()))?;
        let discovery = &self.context_policy.discovery;
        if *discovery != iris_discovery::DiscoveryConfig::default()
            && !self.context_policy.deferred_tools
        {
            return Err(invalid(
                "context_policy.discovery",
                "only `tool_search` reads it: requires context_policy.deferred_tools = true",
            ));
        }
        if self.web != WebConfig::default()
            && !self
                .tools
                .builtin
                .iter()
                .any(|k| matches!(k.make(), Make::Web(_)))
        {
            return Err(invalid(
                "web",
                "only the web tools read it: requires web.search or web.fetch in tools.builtin",
            ));
        }
        if !self.tools.script.callable.is_empty()
            && !self
                .tools
                .builtin
                .iter()
                .any(|k| matches!(k.make(), Make::Script(_)))
        {
            return Err(invalid(
                "tools.script.callable",
                "only `run_tool_script` reads it: requires exec.tool_script in tools.builtin",
            ));
        }
        if self.context_policy.retention.is_some() && !self.context_policy.enabled {
            return Err(invalid(
                "context_policy.retention",
                "requires context_policy.enabled = true",
            ));
        }
        if self.goal.as_deref().is_some_and(|g| g.trim().is_empty()) {
            return Err(invalid("goal", "must not be empty"));
        }
        if self.max_turns == 0 {
            return Err(invalid("max_turns", "must be at least 1"));
        }
        if let Some(model) = &self.model {
            model
                .check()
                .map_err(|(key, message)| invalid(&key, &message))?;
        }
        self.limits
            .check(self.model.as_ref().map(ModelConfig::model_name))
            .map_err(|(key, message)| invalid(&key, &message))?;
        for (i, item) in self.middleware.tools.iter().enumerate() {
            if item.factory.trim().is_empty() {
                return Err(invalid(
                    &format!("middleware.tools[{i}].factory"),
                    "must not be empty",
                ));
            }
        }
        Ok(())
    }

    fn resolve(mut self, file: PathBuf, folder: &Path) -> LoadedConfig {
        let join = |p: &Path| folder.join(p);
        let workspace = self.workspace.as_deref().map_or(folder.to_path_buf(), join);
        self.workspace = Some(workspace.clone());
        if let Some(sub) = self.tools.subagent.take() {
            self.tools.subagent = Some(join(&sub));
        }
        if let Some(mcp) = &mut self.mcp {
            mcp.path = join(&mcp.path);
        }
        if let Some(decision) = &mut self.decision {
            decision.path = join(&decision.path);
        }
        if let Some(ScriptSource::File(path)) = self.model.as_mut().and_then(|m| m.script.as_mut())
        {
            *path = join(path);
        }
        LoadedConfig {
            config: self,
            file,
            workspace,
            policy: AppliedPolicy::default(),
        }
    }
}

/// `["tools", "builtin", "1"]` → `tools.builtin[1]`; empty → `<root>`.
fn key_path(path: &[String]) -> String {
    let mut out = String::new();
    for segment in path {
        if segment.parse::<usize>().is_ok() {
            out.push_str(&format!("[{segment}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(segment);
        }
    }
    if out.is_empty() {
        "<root>".to_owned()
    } else {
        out
    }
}

/// The environment provider: `IRIS_` prefix, `__` nesting, top-level keys only.
fn env_provider() -> Env {
    Env::prefixed(ENV_PREFIX).filter(read_env_key).split("__")
}

/// Whether an environment key (prefix stripped) is read: its first `__` segment is a
/// top-level key of [`AgentConfig`].
fn read_env_key(key: &figment::value::UncasedStr) -> bool {
    let lower = key.as_str().to_ascii_lowercase();
    let first = lower.split("__").next().unwrap_or_default();
    TOP_LEVEL_KEYS.contains(&first)
}

/// The text of an agent YAML file and its YAML document, read the one bounded way:
/// a regular file of at most 1 MiB whose flow nesting (checked before any parser
/// sees it) is at most 64 deep, and valid YAML. `file` names it in errors;
/// `absolute` is read.
///
/// # Errors
/// As [`AgentConfig::load`], except [`Error::Invalid`] for a key.
pub(crate) fn read_yaml_document(
    file: &Path,
    absolute: &Path,
) -> Result<(String, serde_yaml::Value)> {
    // Figment treats a missing file as empty, which would silently load defaults.
    // The read is bounded and checked on the handle: a FIFO or `/dev/zero` named as
    // the config is refused instead of blocking or filling memory.
    let text = read_regular_text(absolute, MAX_CONFIG_BYTES).map_err(|e| match e {
        ReadError::TooLarge { .. } => Error::TooLarge {
            file: file.to_path_buf(),
            message: format!("{e} for an agent config"),
        },
        ReadError::NotRegular { .. } => Error::NotAFile {
            file: file.to_path_buf(),
            message: e.to_string(),
        },
        ReadError::Io(e) => Error::NotFound {
            file: file.to_path_buf(),
            reason: e.to_string(),
        },
        ReadError::NotUtf8 => Error::NotFound {
            file: file.to_path_buf(),
            reason: e.to_string(),
        },
    })?;
    // Deep flow nesting costs libyaml quadratic time: refuse it before parsing.
    if let Err(e) = check_yaml_nesting(&text, MAX_YAML_FLOW_DEPTH) {
        return Err(Error::TooLarge {
            file: file.to_path_buf(),
            message: e.to_string(),
        });
    }
    match serde_yaml::from_str::<serde_yaml::Value>(&text) {
        Ok(document) => Ok((text, document)),
        Err(e) => {
            let location = e.location().map(|l| (l.line(), l.column()));
            Err(Error::Invalid {
                file: file.to_path_buf(),
                key: "<root>".into(),
                message: format!(
                    "not valid YAML: {}",
                    yaml_error_summary(&e.to_string(), location)
                ),
            })
        }
    }
}

/// figment parses `[` and `{` in an environment value recursively, so a value with
/// thousands of them overflows the stack. A value that could nest deeper than the YAML
/// limit (it holds more openers than that) is refused, naming the variable only.
fn check_env_nesting(file: &Path) -> Result<()> {
    for (name, value) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        let prefixed = name
            .get(..ENV_PREFIX.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(ENV_PREFIX));
        if !prefixed || !read_env_key(name[ENV_PREFIX.len()..].into()) {
            continue;
        }
        let openers = value
            .as_encoded_bytes()
            .iter()
            .filter(|b| matches!(b, b'[' | b'{'))
            .count();
        if openers > MAX_YAML_FLOW_DEPTH {
            return Err(Error::TooLarge {
                file: file.to_path_buf(),
                message: format!(
                    "environment variable {name} holds more than {MAX_YAML_FLOW_DEPTH} \
                     `[`/`{{`; its value is not parsed"
                ),
            });
        }
    }
    Ok(())
}

/// Whether a value at this key path may be a credential: anything under
/// `provider_api_keys`, or under a key whose name holds `key`, `token`, `secret` or
/// `password`. Errors never quote such values.
fn is_secret_path(path: &[String]) -> bool {
    path.iter().any(|segment| {
        let segment = segment.to_ascii_lowercase();
        ["key", "token", "secret", "password"]
            .iter()
            .any(|word| segment.contains(word))
    })
}

/// What a value was, without the value: `a string`, `an integer`, `a map`.
fn actual_kind(actual: &figment::error::Actual) -> &'static str {
    use figment::error::Actual;
    match actual {
        Actual::Bool(_) => "a boolean",
        Actual::Unsigned(_) | Actual::Signed(_) => "an integer",
        Actual::Float(_) => "a float",
        Actual::Char(_) => "a character",
        Actual::Str(_) => "a string",
        Actual::Bytes(_) => "bytes",
        Actual::Unit => "null",
        Actual::Seq => "a sequence",
        Actual::Map => "a map",
        _ => "a value",
    }
}

/// The message of a figment error whose value must not be shown.
fn secret_message(kind: &figment::error::Kind) -> String {
    use figment::error::Kind;
    const HIDDEN: &str = "(the value is not shown)";
    match kind {
        Kind::InvalidType(actual, expected) => format!(
            "invalid type: found {}, expected {expected} {HIDDEN}",
            actual_kind(actual)
        ),
        Kind::InvalidValue(actual, expected) => format!(
            "invalid value: found {}, expected {expected} {HIDDEN}",
            actual_kind(actual)
        ),
        Kind::InvalidLength(len, expected) => {
            format!("invalid length {len}, expected {expected}")
        }
        Kind::UnknownField(..) | Kind::MissingField(_) | Kind::DuplicateField(_) => {
            kind.to_string()
        }
        Kind::UnsupportedKey(actual, expected) => format!(
            "unsupported key: found {}, expected {expected} {HIDDEN}",
            actual_kind(actual)
        ),
        _ => format!("invalid value {HIDDEN}"),
    }
}

/// Turns a figment error into one naming the file (or variable), key and expectation.
fn figment_error(file: &Path, err: figment::Error) -> Error {
    let from_env = err
        .metadata
        .as_ref()
        .is_some_and(|m| m.name.contains("environment"));
    let key = key_path(&err.path);
    let list = |names: &[&str]| {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut message = match &err.kind {
        kind if is_secret_path(&err.path) => secret_message(kind),
        figment::error::Kind::UnknownVariant(found, expected) => {
            format!(
                "unknown value `{found}`; expected one of {}",
                list(expected)
            )
        }
        figment::error::Kind::UnknownField(found, expected) => {
            format!("unknown key `{found}`; expected one of {}", list(expected))
        }
        figment::error::Kind::MissingField(field) => {
            format!("missing required key `{field}`")
        }
        other => other.to_string(),
    };
    if from_env {
        let var = format!("{ENV_PREFIX}{}", err.path.join("__").to_ascii_uppercase());
        message = format!("{message} (from environment variable {var})");
    }
    Error::Invalid {
        file: file.to_path_buf(),
        key,
        message,
    }
}
