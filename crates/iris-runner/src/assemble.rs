//! [`build_tool_registry`]: from a loaded agent YAML to a registry and an executor.
//!
//! Order (each step reads only what the earlier ones produced):
//! 1. the command binding, when `exec.*` built-ins, command hooks or subagents (which
//!    borrow it) need it;
//! 2. built-ins by key, host functions, host registrars;
//! 3. skills (`load_skill`), the subagent catalog (`subagent`), the decision file;
//! 4. hooks (command hooks through the native command service) and middleware;
//! 5. the executor with `permissions`;
//! 6. `tool_search` when `context_policy.deferred_tools` is on;
//! 7. MCP servers last: starting them is the slow step, and nothing after it can
//!    fail, so a later error never has to stop servers that already started.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use iris_command::{CommandBinding, CommandConfig, CommandMode, CommandService, SandboxPolicy};
use iris_decision::{DecisionConfig, EvaluatorHandle, JevClient, decision_tool_search};
use iris_discovery::{BackendKind, BuiltBackend, DisclosureLayer, ToolSearchTool};
use iris_executor::{DefaultPermissionPolicy, ToolExecutor, ToolMiddleware};
use iris_fs::bounded_read::{MAX_CONFIG_BYTES, ReadError, read_regular_text};
use iris_fs::yaml::{MAX_YAML_FLOW_DEPTH, check_yaml_nesting, yaml_error_summary};
use iris_hooks::HookDispatcher;
use iris_hooks::command::command_hooks;
use iris_hooks::config::HandlerSpec;
use iris_mcp::{
    ConfigFormat, MCPCatalogSnapshot, MCPConfig, MCPManager, McpOverrides, ServerOverride,
};
use iris_script::ScriptCallable;
use iris_skill::{LoadSkillTool, SkillRegistry, SubagentCatalog};
use iris_tools_core::{
    BoxFuture, Tool, ToolDefinition, ToolErrorInfo, ToolExecutionContext, ToolInput, ToolOutput,
    ToolRegistry, ToolTimeoutOwner, ViewFilter,
};
use iris_web::TavilyClient;

use crate::loop_tool::{RunLoopTool, loop_tool_of};
use crate::secret::SecretTarget;

use crate::catalog::Make;
use crate::config::{AgentConfig, LoadedConfig};
use crate::error::{Error, Result, codes};
use crate::host::HostRegistry;

/// Everything [`build_tool_registry`] assembled. Call [`ToolEnvironment::close`] once
/// when done: it closes every resource the assembly started.
#[derive(Debug)]
pub struct ToolEnvironment {
    /// Every tool the agent has.
    pub registry: ToolRegistry,
    /// The executor: permissions, hooks and middleware wired.
    pub executor: ToolExecutor,
    /// The absolute workspace.
    pub workspace: PathBuf,
    /// Discovered skills, when `skills.enabled`.
    pub skills: Option<Arc<SkillRegistry>>,
    /// The subagent catalog, when `tools.subagent` is set.
    pub subagents: Option<SubagentCatalog>,
    /// The decision configuration, when `decision.path` is set.
    pub decision: Option<DecisionConfig>,
    /// The evaluator behind `tool_search` when `decision.tools.discovery` is on: owned
    /// when built from `provider_api_keys.typesafe` (`close` closes it), borrowed when
    /// the host injected it with [`HostRegistry::decision_evaluator`] (never closed here).
    pub decision_evaluator: Option<Arc<EvaluatorHandle>>,
    /// The root command binding, when something needed it (owned: `close` closes it).
    pub command: Option<CommandBinding>,
    /// The hooks of the YAML's `hooks` section, when there are any: the executor runs
    /// the tool hooks; [`AgentRunner`](crate::AgentRunner) fires `run.started` and
    /// `run.finished` from them.
    pub hooks: Option<HookDispatcher>,
    /// The MCP manager, when `mcp` is set (owned: `close` stops its servers). Its
    /// [`MCPManager::snapshot`] lists servers, protocols, tools and diagnostics.
    /// Shared with the runners built over this environment, which refresh its
    /// catalog between model requests.
    pub mcp: Option<Arc<MCPManager>>,
    /// Things that were accepted but not installed or may not do what the YAML hoped,
    /// one sentence each (for `iris check` and logs): `tools.subagent` in a child, the
    /// MCP config's warnings and servers' diagnostics, unknown `tools.script.callable`
    /// names, a discovery backend whose preparation failed, a decision config that
    /// enables no junction.
    pub notes: Vec<String>,
    /// What uses secrets and takes new values at run time (the web tools' Tavily
    /// client, an owned decision client): [`AgentRunner::builder_from_loaded`](crate::AgentRunner::builder_from_loaded) hands
    /// them to the runner for `store_secret` ([`crate::secret`]).
    pub secret_targets: Vec<Arc<dyn SecretTarget>>,
    /// The host keys the assembly used: a subagent's child is assembled with them.
    pub(crate) host: HostRegistry,
    /// The command service command hooks run through: native always (in Docker mode
    /// a service of its own, owned; natively `command`, borrowed).
    pub(crate) hook_command: Option<CommandBinding>,
}

impl ToolEnvironment {
    /// The MCP catalog (servers, tools, diagnostics) once the servers started.
    pub fn mcp_snapshot(&self) -> Option<Arc<MCPCatalogSnapshot>> {
        self.mcp.as_deref().and_then(MCPManager::snapshot)
    }

    /// Closes everything the assembly started: the MCP servers, an owned decision
    /// client, then the command services (the hooks' own, in Docker mode, and the
    /// tools'). Safe to call twice.
    ///
    /// # Errors
    /// [`Error::Assembly`] when the command service fails to close.
    pub async fn close(&self) -> Result<()> {
        if let Some(manager) = &self.mcp {
            manager.close().await;
        }
        if let Some(evaluator) = &self.decision_evaluator {
            evaluator.close().await;
        }
        for (key, binding) in [("hooks", &self.hook_command), ("command", &self.command)] {
            if let Some(binding) = binding {
                binding.close().await.map_err(|e| Error::Assembly {
                    key: key.into(),
                    message: format!("{}: {e}", e.code()),
                })?;
            }
        }
        Ok(())
    }
}

/// Assembles the tool layer a loaded agent YAML describes (the Python reference's
/// `build_tool_registry(config, …)`).
///
/// ```
/// use iris_runner::{AgentConfig, HostRegistry, build_tool_registry};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let dir = tempfile::tempdir()?;
/// // No `iris-sandbox` helper binary in a doctest: the command sandbox is off here.
/// std::fs::write(
///     dir.path().join("iris.yaml"),
///     "tools:\n  builtin: [exec.command]\ncommand:\n  sandbox: {filesystem: off, network: on}\n",
/// )?;
/// let loaded = AgentConfig::load_with_env(dir.path().join("iris.yaml"), false)?;
/// let env = build_tool_registry(&loaded, &HostRegistry::new()).await?;
/// assert_eq!(env.registry.names(), vec!["exec_command"]);
/// env.close().await?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// The first problem found, naming its YAML key; [`check_config`] lists them all
/// without starting anything.
pub async fn build_tool_registry(
    loaded: &LoadedConfig,
    host: &HostRegistry,
) -> Result<ToolEnvironment> {
    build(loaded, host, None, Role::Root).await
}

/// [`build_tool_registry`] for a host that calls one tool (`iris call`): of the MCP
/// servers, only those that can publish `tool_name` start (every server for
/// `tool_search`, which searches them all; none for a tool that is not an MCP tool's),
/// so one call neither waits for nor fails on the others.
///
/// # Errors
/// As [`build_tool_registry`].
pub async fn build_tool_registry_for_call(
    loaded: &LoadedConfig,
    host: &HostRegistry,
    tool_name: &str,
) -> Result<ToolEnvironment> {
    build(loaded, host, Some(tool_name), Role::Root).await
}

/// Whose tool layer is assembled.
#[derive(Debug, Clone, Copy)]
enum Role<'a> {
    /// An agent of its own: it owns its command service.
    Root,
    /// A subagent's child ([`crate::subagent`]): it borrows the root's command
    /// binding and gets no `subagent` tool.
    Child(Option<&'a CommandBinding>),
}

/// The tool layer of a subagent's child: like [`build_tool_registry`], but the command
/// service is a borrowed handle on the root's `root` (never closed by the child) and
/// `tools.subagent` is not installed (children get no subagents).
///
/// # Errors
/// As [`build_tool_registry`]; [`Error::Assembly`] on `command` when the child needs a
/// command service and the root has none.
pub(crate) async fn build_child_environment(
    loaded: &LoadedConfig,
    host: &HostRegistry,
    root: Option<&CommandBinding>,
) -> Result<ToolEnvironment> {
    build(loaded, host, None, Role::Child(root)).await
}

async fn build(
    loaded: &LoadedConfig,
    host: &HostRegistry,
    only_for: Option<&str>,
    role: Role<'_>,
) -> Result<ToolEnvironment> {
    let config = &loaded.config;
    let workspace = loaded.workspace.clone();

    let command = match role {
        Role::Root if needs_command(config) => Some(start_command(loaded, &workspace).await?),
        Role::Child(root) if needs_command(config) => Some(
            root.map(CommandBinding::borrowed)
                .ok_or_else(|| Error::Assembly {
                    key: "command".into(),
                    message: "the child needs a command service and its root has none".into(),
                })?,
        ),
        _ => None,
    };
    let child = matches!(role, Role::Child(_));
    // Everything after this point must close the command services on failure.
    let hook_command = match hook_command(loaded, &workspace, command.as_ref()).await {
        Ok(binding) => binding,
        Err(err) => {
            close_quietly([&command]).await;
            return Err(err);
        }
    };
    let commands = Commands {
        tools: command,
        hooks: hook_command,
    };
    match assemble(loaded, host, &commands, only_for, child).await {
        Ok(env) => Ok(env),
        Err(err) => {
            close_quietly([&commands.tools, &commands.hooks]).await;
            Err(err)
        }
    }
}

/// Closes what assembly started before it failed. The assembly error is the one
/// worth reporting; a close failure on top of it would only hide it.
async fn close_quietly<const N: usize>(bindings: [&Option<CommandBinding>; N]) {
    for binding in bindings.into_iter().flatten() {
        let _ = binding.close().await;
    }
}

/// The command services of one assembly.
struct Commands {
    /// The one the model's command tools run through (native or Docker).
    tools: Option<CommandBinding>,
    /// The one command hooks run through: always on the host ([`hook_command`]).
    hooks: Option<CommandBinding>,
}

/// The command service command hooks run through, when the YAML has command hooks:
/// always a native one, on the host. A hook is the owner's policy; in Docker mode the
/// tools' service runs its calls in the agent's long-lived container, which the
/// model's own `exec_command` calls can change, so a `tool.before` hook there would
/// run where the model can tamper with it. Natively the tools' service is reused
/// (borrowed); in Docker mode a native service of the same timeout and environment
/// settings is started, outside the command sandbox like every hook.
async fn hook_command(
    loaded: &LoadedConfig,
    workspace: &Path,
    tools: Option<&CommandBinding>,
) -> Result<Option<CommandBinding>> {
    let config = &loaded.config;
    let has_command_hooks = config
        .hooks
        .iter()
        .any(|h| matches!(h.handler, HandlerSpec::Command { .. }));
    let Some(tools) = tools.filter(|_| has_command_hooks) else {
        return Ok(None);
    };
    if tools.mode() == CommandMode::Native {
        return Ok(Some(CommandBinding::borrowed(tools)));
    }
    let failed = |e: iris_command::CommandError| Error::Assembly {
        key: "hooks".into(),
        message: format!("{}: the hooks' native command service: {e}", e.code()),
    };
    let own = config.command.clone().unwrap_or_default();
    let mut native = CommandConfig::native();
    native.timeout_seconds = own.timeout_seconds;
    native.env = own.env;
    native.env_passthrough = own.env_passthrough;
    // Hooks run outside the sandbox (`CommandRequest::owner`); with it off, the
    // service needs no sandbox helper either.
    native.sandbox = SandboxPolicy::off();
    let service = CommandService::new(native, workspace).map_err(failed)?;
    service.prepare().await.map_err(failed)?;
    Ok(Some(CommandBinding::owned(service)))
}

async fn assemble(
    loaded: &LoadedConfig,
    host: &HostRegistry,
    commands: &Commands,
    only_for: Option<&str>,
    child: bool,
) -> Result<ToolEnvironment> {
    let command = commands.tools.clone();
    let config = &loaded.config;
    let workspace = loaded.workspace.clone();
    let registry = ToolRegistry::new();
    let mut notes = Vec::new();

    let background: BTreeSet<&str> = config.tools.background.iter().map(String::as_str).collect();
    let register = |key: String, tool: Arc<dyn Tool>| {
        let tool = if background.contains(tool.definition().name.as_str()) {
            Arc::new(BackgroundTool::new(tool)) as Arc<dyn Tool>
        } else {
            tool
        };
        registry.register_arc(tool).map_err(|e| Error::Assembly {
            key,
            message: format!("{}: {e}", e.code()),
        })
    };

    // Built-ins, in YAML order, each made on its layer's service.
    let web_client = web_client(config)?;
    let files = iris_files::FileToolsConfig::default().with_workspace_policy(
        iris_executor::WorkspacePolicy::new().with_protected_paths(protected_paths(loaded)),
    );
    let file_service =
        Arc::new(
            iris_files::FileService::new(files).map_err(|e| Error::Assembly {
                key: "tools.builtin".into(),
                message: e.to_string(),
            })?,
        );
    for (i, key) in config.tools.builtin.iter().enumerate() {
        let tool = match key.make() {
            Make::Files(make) => Some(make(&file_service)),
            Make::Command(make) => command.as_ref().map(make),
            Make::Script(make) => command.as_ref().map(|binding| {
                make(
                    binding,
                    ScriptCallable::listing(config.tools.script.callable.clone()),
                )
            }),
            Make::Web(make) => web_client.as_ref().map(make),
            Make::Loop(make) => Some(Arc::new(make()) as Arc<dyn Tool>),
        };
        if let Some(tool) = tool {
            register(format!("tools.builtin[{i}]"), tool)?;
        }
    }

    let host_key = config.tools.host_key();
    if host_key == "tools.python" {
        notes.push(
            "tools.python: the older name of tools.host (Rust tools the host registered); \
             still read, rename it to tools.host"
                .into(),
        );
    }
    for (i, name) in config.tools.host.functions.iter().enumerate() {
        let at = format!("{host_key}.functions[{i}]");
        let make = host
            .get_function(name)
            .ok_or_else(|| Error::HostKeyUnknown {
                key: at.clone(),
                kind: "function",
                name: name.clone(),
                known: owned(host.function_keys()),
            })?;
        register(at, make())?;
    }
    for (i, name) in config.tools.host.registrars.iter().enumerate() {
        let at = format!("{host_key}.registrars[{i}]");
        let run = host
            .get_registrar(name)
            .ok_or_else(|| Error::HostKeyUnknown {
                key: at.clone(),
                kind: "registrar",
                name: name.clone(),
                known: owned(host.registrar_keys()),
            })?;
        run(&registry).map_err(|message| Error::HostFailed { key: at, message })?;
    }

    let skills = load_skills(config, &workspace)?.map(Arc::new);
    if let Some(skills) = &skills {
        register(
            "skills".into(),
            Arc::new(LoadSkillTool::new(Arc::clone(skills))),
        )?;
    }
    if config.context_policy.retention.is_some() {
        let key = || "context_policy.retention".to_owned();
        register(key(), Arc::new(RunLoopTool::context_read()))?;
        register(key(), Arc::new(RunLoopTool::context_search()))?;
    }
    if config.goal.is_some() {
        register("goal".into(), Arc::new(RunLoopTool::get_goal()))?;
        register("goal".into(), Arc::new(RunLoopTool::report_goal()))?;
    }
    for (i, name) in config.tools.background.iter().enumerate() {
        let wrapped = registry
            .get(name)
            .is_ok_and(|t| t.definition().background && loop_tool_of(t.as_ref()).is_none());
        if !wrapped {
            return Err(Error::Assembly {
                key: format!("tools.background[{i}]"),
                message: format!(
                    "`{name}` is not a built-in or host-function tool of this agent (loop \
                     tools such as ask_question never run in the background)"
                ),
            });
        }
    }
    // A child gets no `subagent` tool: a call to it is refused by the loop.
    let subagents = if child {
        if config.tools.subagent.is_some() {
            notes.push(
                "tools.subagent: not installed in a subagent's child run (children get no \
                 subagents)"
                    .into(),
            );
        }
        None
    } else {
        load_subagents(loaded)?
    };
    if let Some(catalog) = &subagents {
        register(
            "tools.subagent".into(),
            Arc::new(RunLoopTool::subagent(catalog)),
        )?;
    }
    let decision = load_decision(loaded)?;
    if decision.as_ref().is_some_and(|d| !d.tools.discovery) {
        notes.push(
            "decision.path: the decision config enables no junction (tools.discovery is \
             false), so nothing asks the decision model"
                .into(),
        );
    }

    let hooks = build_hooks(config, host, commands.hooks.as_ref())?;
    let mut executor = ToolExecutor::new(registry.clone()).with_permission_policy(
        DefaultPermissionPolicy::new()
            .write_mode(config.permissions.write_mode)
            .execute_mode(config.permissions.execute_mode),
    );
    if let Some(hooks) = &hooks {
        executor = executor.with_hook_dispatcher(hooks.clone());
    }
    if let Some(interval) = heartbeat_interval(config)? {
        executor = executor.with_heartbeat_interval(interval);
    }
    for middleware in build_middleware(config, host)? {
        executor = executor.with_middleware(middleware);
    }
    // Deferred tools are callable only once a request loaded them, and only a real
    // `tool_search` reveals them: the discovery layer enforces both.
    if config.context_policy.deferred_tools {
        executor = executor.with_layer(DisclosureLayer);
    }

    let mut decision_evaluator = None;
    let mut search_tool = None;
    if config.context_policy.deferred_tools {
        let (search, evaluator) = tool_search(loaded, host, decision.as_ref(), &registry)?;
        decision_evaluator = evaluator;
        let search = Arc::new(search);
        register("context_policy.deferred_tools".into(), search.clone())?;
        search_tool = Some(search);
    }

    let mcp = match load_mcp(loaded)? {
        Some(mut mcp_config) => {
            // tool_search and run_tool_script reach other tools: every server stays.
            if let Some(tool) = only_for.filter(|t| {
                *t != iris_discovery::TOOL_SEARCH_NAME && *t != iris_script::RUN_TOOL_SCRIPT
            }) {
                let keep = mcp_config.servers_for_tool(tool);
                mcp_config.retain_servers(&keep);
            }
            // A server whose override says `sandbox: true` runs in the commands'
            // sandbox, with the agent's own files protected like for commands.
            let sandbox = config.command.clone().unwrap_or_default().sandbox;
            let manager = MCPManager::new(
                mcp_config,
                registry.clone(),
                &workspace,
                config.context_policy.deferred_tools,
            )
            .with_sandbox(sandbox, protected_paths(loaded));
            let snapshot = manager.prepare().await.map_err(|e| Error::Assembly {
                key: "mcp".into(),
                message: format!("{}: {e}", e.code()),
            })?;
            notes.extend(
                manager
                    .config()
                    .warnings
                    .iter()
                    .map(|w| format!("mcp: {w}")),
            );
            notes.extend(
                snapshot
                    .diagnostics
                    .iter()
                    .map(|d| format!("mcp: server `{}`: {}: {}", d.server, d.code, d.message)),
            );
            Some(Arc::new(manager))
        }
        None => None,
    };

    // A name `tools.script.callable` lists that no tool has (checked once every
    // server published its tools) is said, not silently ignored.
    if only_for.is_none() {
        for (i, name) in config.tools.script.callable.iter().enumerate() {
            if registry.get(name).is_err() {
                notes.push(format!(
                    "tools.script.callable[{i}]: no tool is named `{name}`; scripts cannot \
                     call it"
                ));
            }
        }
    }
    // Clients that take a new key at run time (the web tools', the decision model's,
    // MCP servers'):
    // `store_secret` (system use, answered by the run loop) lets a run heal them.
    let mut secret_targets: Vec<Arc<dyn SecretTarget>> = Vec::new();
    if let Some(client) = web_client {
        secret_targets.push(client);
    }
    if let Some(handle) = &decision_evaluator
        && let EvaluatorHandle::Owned(client) = &**handle
    {
        secret_targets.push(Arc::clone(client) as Arc<dyn SecretTarget>);
    }
    // MCP servers whose HTTP credentials come from host variables: a new value
    // reconnects them.
    if let Some(manager) = &mcp
        && !manager.secret_names().is_empty()
    {
        secret_targets.push(Arc::clone(manager) as Arc<dyn SecretTarget>);
    }
    if !secret_targets.is_empty() && registry.get(crate::secret::STORE_SECRET).is_err() {
        register(
            "tools.builtin".into(),
            Arc::new(RunLoopTool::store_secret()),
        )?;
    }
    // The backend's per-catalog work, once every deferred tool is registered (the
    // hybrid backend embeds each tool and caches the vectors by catalog identity), so
    // the first search pays only for its query. A failure is not fatal: searches
    // retry it and report the backend's error themselves.
    let searching = only_for.is_none_or(|t| t == iris_discovery::TOOL_SEARCH_NAME);
    if let Some(search) = search_tool.filter(|_| searching) {
        let prepared = tokio::task::spawn_blocking(move || search.prepare()).await;
        match prepared {
            Ok(Ok(())) => {}
            Ok(Err(e)) => notes.push(format!(
                "context_policy.discovery: {}: {}; tool_search retries on its first search",
                e.code, e.message
            )),
            Err(e) => notes.push(format!("context_policy.discovery: preparing failed: {e}")),
        }
    }

    Ok(ToolEnvironment {
        registry,
        executor,
        workspace,
        skills,
        subagents,
        decision,
        decision_evaluator,
        command,
        hook_command: commands.hooks.clone(),
        hooks,
        mcp,
        notes,
        secret_targets,
        host: host.clone(),
    })
}

/// `tool_search` over the registry's static view: decision-backed when
/// `decision.tools.discovery` is on (the host's evaluator, else a `JevClient` keyed by
/// `provider_api_keys.typesafe`), else ranked locally. The view is live, so MCP tools
/// published later are searchable.
fn tool_search(
    loaded: &LoadedConfig,
    host: &HostRegistry,
    decision: Option<&DecisionConfig>,
    registry: &ToolRegistry,
) -> Result<(ToolSearchTool, Option<Arc<EvaluatorHandle>>)> {
    let config = &loaded.config;
    let view = registry.view(ViewFilter::default());
    let discovery = &config.context_policy.discovery;
    let decision_on = decision.is_some_and(|d| d.tools.discovery);
    let conflict = |message: &str| Error::Assembly {
        key: "context_policy.discovery.backend".into(),
        message: message.to_owned(),
    };
    match discovery.backend {
        BackendKind::Decision if !decision_on => {
            return Err(conflict(
                "`decision` is answered by the decision model: set decision.tools.discovery: \
                 true in the decision file (decision.path)",
            ));
        }
        BackendKind::Hybrid if decision_on => {
            return Err(conflict(
                "`hybrid` and decision.tools.discovery both choose tool_search's backend; keep one",
            ));
        }
        _ => {}
    }
    let Some(decision) = decision.filter(|d| d.tools.discovery) else {
        let built = discovery
            .build(&yaml_folder(loaded))
            .map_err(|e| Error::Assembly {
                key: "context_policy.discovery".into(),
                message: format!("{}: {e}", e.code()),
            })?;
        return Ok(match built {
            BuiltBackend::Ready(backend) => (ToolSearchTool::with_backend(view, backend), None),
            // Excluded above: `decision` without the decision model is an error.
            BuiltBackend::Decision => (ToolSearchTool::new(view), None),
        });
    };
    let handle = match host.get_decision_evaluator() {
        Some(evaluator) => EvaluatorHandle::Borrowed(Arc::clone(evaluator)),
        None => {
            let key = config
                .provider_api_keys
                .get("typesafe")
                .cloned()
                .unwrap_or_default();
            let client = JevClient::from_config(decision, key).map_err(|e| Error::Assembly {
                key: "decision.tools.discovery".into(),
                message: format!(
                    "{}: {e} (set provider_api_keys.typesafe or \
                     IRIS_PROVIDER_API_KEYS__TYPESAFE)",
                    e.code()
                ),
            })?;
            EvaluatorHandle::Owned(Arc::new(client))
        }
    };
    let handle = Arc::new(handle);
    let search = decision_tool_search(
        view,
        Arc::clone(&handle) as Arc<dyn iris_decision::DecisionEvaluator>,
    );
    Ok((search, Some(handle)))
}

/// Loads the `mcp` file (its path already resolved against the YAML's folder) with the
/// YAML's overrides, without starting any server.
fn load_mcp(loaded: &LoadedConfig) -> Result<Option<MCPConfig>> {
    let Some(section) = &loaded.config.mcp else {
        return Ok(None);
    };
    let overrides: McpOverrides = section
        .overrides
        .iter()
        .map(|(name, o)| {
            let o = ServerOverride {
                required: o.required,
                trust_annotations: o.trust_annotations,
                startup_timeout_sec: o.startup_timeout_sec,
                tool_timeout_sec: o.tool_timeout_sec,
                tool_max_sec: o.tool_max_sec,
                sandbox: o.sandbox,
            };
            (name.clone(), o)
        })
        .collect();
    let reference = |message: String| Error::Reference {
        file: loaded.file.clone(),
        key: "mcp.path".into(),
        target: section.path.clone(),
        message,
    };
    let text = read_reference(&section.path, "an MCP config").map_err(reference)?;
    let path = std::path::absolute(&section.path).unwrap_or_else(|_| section.path.clone());
    let config = MCPConfig::from_str(&text, ConfigFormat::from_path(&path), path, &overrides)
        .map_err(|e| reference(format!("{}: {e}", e.code())))?;
    loaded.policy.check_mcp(&config)?;
    Ok(Some(config))
}

/// Reads a file the agent YAML points to, bounded and checked on the handle, so a FIFO
/// or `/dev/zero` is refused at once; `what` names the kind of file for the size error.
/// The error is the message of an [`Error::Reference`], with its own code in front.
fn read_reference(path: &Path, what: &str) -> std::result::Result<String, String> {
    read_regular_text(path, MAX_CONFIG_BYTES).map_err(|e| match e {
        ReadError::TooLarge { .. } => format!("{}: {e} for {what}", codes::CONFIG_TOO_LARGE),
        ReadError::NotRegular { .. } => format!("{}: {e}", codes::CONFIG_NOT_A_FILE),
        e => e.to_string(),
    })
}

/// Lists every problem of a loaded config without starting any resource: unknown host
/// keys, an unreadable or invalid MCP file, missing or invalid referenced files, invalid hooks and
/// missing required skills. An empty list means [`build_tool_registry`] should succeed
/// (it may still fail on the environment, e.g. a missing Docker engine).
pub fn check_config(loaded: &LoadedConfig, host: &HostRegistry) -> Vec<Error> {
    check_config_as(loaded, host, false)
}

/// [`check_config`]; `child`: checked as a subagent's child, whose `tools.subagent` is
/// not installed (so not followed).
pub(crate) fn check_config_as(
    loaded: &LoadedConfig,
    host: &HostRegistry,
    child: bool,
) -> Vec<Error> {
    let config = &loaded.config;
    let mut problems = Vec::new();
    if let Err(e) = load_mcp(loaded) {
        problems.push(e);
    }
    if let Some(Err(e)) = config.model.as_ref().map(|m| loaded.policy.check_model(m)) {
        problems.push(e);
    }
    let unknown =
        |key: String, kind: &'static str, name: &str, known: Vec<&str>| Error::HostKeyUnknown {
            key,
            kind,
            name: name.to_owned(),
            known: owned(known),
        };
    let host_key = config.tools.host_key();
    for (i, name) in config.tools.host.functions.iter().enumerate() {
        if host.get_function(name).is_none() {
            let key = format!("{host_key}.functions[{i}]");
            problems.push(unknown(key, "function", name, host.function_keys()));
        }
    }
    for (i, name) in config.tools.host.registrars.iter().enumerate() {
        if host.get_registrar(name).is_none() {
            let key = format!("{host_key}.registrars[{i}]");
            problems.push(unknown(key, "registrar", name, host.registrar_keys()));
        }
    }
    for (i, item) in config.middleware.tools.iter().enumerate() {
        if host.get_middleware(&item.factory).is_none() {
            let key = format!("middleware.tools[{i}].factory");
            problems.push(unknown(
                key,
                "middleware factory",
                &item.factory,
                host.middleware_keys(),
            ));
        }
    }
    if let Err(e) = load_skills(config, &loaded.workspace) {
        problems.push(e);
    }
    if let Err(e) = config.context_policy.discovery.check(&yaml_folder(loaded)) {
        problems.push(Error::Assembly {
            key: "context_policy.discovery".into(),
            message: format!("{}: {e}", e.code()),
        });
    }
    if !child {
        match load_subagents(loaded) {
            Ok(Some(catalog)) => {
                problems.extend(crate::subagent::check_children(loaded, &catalog, host));
            }
            Ok(None) => {}
            Err(e) => problems.push(e),
        }
    }
    if let Err(e) = load_decision(loaded) {
        problems.push(e);
    }
    // Builds the client only (no request): a bad `web` section shows here.
    if let Err(e) = web_client(config) {
        problems.push(e);
    }
    if let Err(e) = heartbeat_interval(config) {
        problems.push(e);
    }
    // Hooks are checked with a command factory that builds nothing, so no service
    // starts; factories are real, so their option errors show.
    let factories = host.hook_factories();
    let dry: &iris_hooks::config::CommandHandlerFactory<'_> = &|_command: &str| {
        Ok(
            Arc::new(|_e: iris_hooks::HookEvent| async { Ok(iris_hooks::HookResult::None) })
                as Arc<dyn iris_hooks::HookHandler>,
        )
    };
    if let Some(e) = unknown_hook_factory(config, &factories) {
        problems.push(e);
    } else if let Err(e) = factories.build(&config.hooks, Some(dry)) {
        problems.push(hook_error(e));
    }
    problems
}

/// The agent YAML's folder, which relative paths in it are resolved against.
fn yaml_folder(loaded: &LoadedConfig) -> PathBuf {
    std::path::absolute(&loaded.file)
        .ok()
        .and_then(|f| f.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."))
}

fn owned(keys: Vec<&str>) -> Vec<String> {
    keys.into_iter().map(str::to_owned).collect()
}

fn needs_command(config: &AgentConfig) -> bool {
    let exec = config
        .tools
        .builtin
        .iter()
        .any(|k| k.needs_command_service());
    let hooks = config
        .hooks
        .iter()
        .any(|h| matches!(h.handler, HandlerSpec::Command { .. }));
    // A subagent's child borrows the root's command service, so a root with
    // subagents holds one.
    exec || hooks || config.tools.subagent.is_some()
}

async fn start_command(loaded: &LoadedConfig, workspace: &Path) -> Result<CommandBinding> {
    let failed = |e: iris_command::CommandError| Error::Assembly {
        key: "command".into(),
        message: format!("{}: {e}", e.code()),
    };
    let config = &loaded.config;
    let service = CommandService::new(config.command.clone().unwrap_or_default(), workspace)
        .map_err(failed)?
        .with_protected_paths(protected_paths(loaded));
    service.prepare().await.map_err(failed)?;
    Ok(CommandBinding::owned(service))
}

/// The agent's own files, which sandboxed commands and the file tools may read but not
/// change (a model must not rewrite its own policy): the YAML, the subagent catalog,
/// each child YAML the catalog names, `mcp.path`, `decision.path`, the skills root, and
/// every word of a command hook's command line that names a path (contains `/` or `.`
/// and is not an option), taken relative to the workspace. Paths inside the workspace are given relative to it.
fn protected_paths(loaded: &LoadedConfig) -> Vec<PathBuf> {
    let config = &loaded.config;
    let mut paths = vec![std::path::absolute(&loaded.file).unwrap_or_else(|_| loaded.file.clone())];
    paths.extend(config.tools.subagent.clone());
    // Each child's YAML the catalog names: a model must not rewrite a child's policy.
    let catalog = config.tools.subagent.as_ref().map(SubagentCatalog::load);
    paths.extend(
        catalog
            .into_iter()
            .flatten()
            .flat_map(|c| c.entries().to_vec())
            .map(|e| e.path),
    );
    paths.extend(config.mcp.as_ref().map(|m| m.path.clone()));
    paths.extend(config.decision.as_ref().map(|d| d.path.clone()));
    if config.skills.enabled {
        paths.push(loaded.workspace.join(&config.skills.root));
    }
    for hook in &config.hooks {
        if let HandlerSpec::Command { command } = &hook.handler {
            paths.extend(
                command
                    .split_whitespace()
                    .map(|w| w.trim_matches(|c| c == '"' || c == '\''))
                    .filter(|w| !w.starts_with('-') && (w.contains('/') || w.contains('.')))
                    .map(|w| loaded.workspace.join(w)),
            );
        }
    }
    paths
        .into_iter()
        .map(|p| match p.strip_prefix(&loaded.workspace) {
            Ok(rel) => rel.to_path_buf(),
            Err(_) => p,
        })
        .filter(|p| !p.as_os_str().is_empty())
        .collect()
}

/// `heartbeat_seconds` as an interval (`None`: the executor's 30 s default).
fn heartbeat_interval(config: &AgentConfig) -> Result<Option<std::time::Duration>> {
    config
        .heartbeat_seconds
        .map(|seconds| {
            std::time::Duration::try_from_secs_f64(seconds).map_err(|_| Error::Assembly {
                key: "heartbeat_seconds".into(),
                message: format!("must be a number of seconds ≥ 0, not {seconds}"),
            })
        })
        .transpose()
}

/// The Tavily client the web tools share, when the YAML names one: the key from
/// `provider_api_keys.tavily` when given, else read from the environment at each call
/// (a missing key is then a `WEB_AUTH_REQUIRED` tool error, not an assembly error);
/// the server and deadline from the `web` section. It is a secret target too.
fn web_client(config: &AgentConfig) -> Result<Option<Arc<TavilyClient>>> {
    let wants = config
        .tools
        .builtin
        .iter()
        .any(|k| matches!(k.make(), Make::Web(_)));
    if !wants {
        return Ok(None);
    }
    let mut client = match config.provider_api_keys.get("tavily") {
        Some(key) => TavilyClient::new(key.clone()),
        None => TavilyClient::from_env(),
    };
    let invalid = |key: &str, e: iris_web::Error| Error::Assembly {
        key: key.into(),
        message: format!("{}: {e}", e.code()),
    };
    if let Some(url) = &config.web.base_url {
        client = client
            .with_base_url(url)
            .map_err(|e| invalid("web.base_url", e))?;
    }
    if let Some(seconds) = config.web.timeout_seconds {
        let timeout =
            std::time::Duration::try_from_secs_f64(seconds).map_err(|_| Error::Assembly {
                key: "web.timeout_seconds".into(),
                message: format!("must be a positive number of seconds, not {seconds}"),
            })?;
        client = client
            .with_timeout(timeout)
            .map_err(|e| invalid("web.timeout_seconds", e))?;
    }
    Ok(Some(Arc::new(client)))
}

fn load_skills(config: &AgentConfig, workspace: &Path) -> Result<Option<SkillRegistry>> {
    config
        .skills
        .assemble(workspace)
        .map_err(|e| Error::Assembly {
            key: "skills".into(),
            message: format!("{}: {e}", e.code()),
        })
}

fn load_subagents(loaded: &LoadedConfig) -> Result<Option<SubagentCatalog>> {
    let Some(path) = &loaded.config.tools.subagent else {
        return Ok(None);
    };
    SubagentCatalog::load(path)
        .map(Some)
        .map_err(|e| Error::Reference {
            file: loaded.file.clone(),
            key: "tools.subagent".into(),
            target: path.clone(),
            message: format!("{}: {e}", e.code()),
        })
}

fn load_decision(loaded: &LoadedConfig) -> Result<Option<DecisionConfig>> {
    let Some(section) = &loaded.config.decision else {
        return Ok(None);
    };
    let reference = |message: String| Error::Reference {
        file: loaded.file.clone(),
        key: "decision.path".into(),
        target: section.path.clone(),
        message,
    };
    let text = read_reference(&section.path, "a decision config").map_err(reference)?;
    // Deep flow nesting costs libyaml quadratic time: refuse it before parsing. Parse
    // errors keep their position, key and expected type but never quote the file.
    check_yaml_nesting(&text, MAX_YAML_FLOW_DEPTH)
        .map_err(|e| reference(format!("{}: {e}", codes::CONFIG_TOO_LARGE)))?;
    let decision: DecisionConfig = serde_yaml::from_str(&text).map_err(|e| {
        let location = e.location().map(|l| (l.line(), l.column()));
        reference(format!(
            "not a decision config: {}",
            yaml_error_summary(&e.to_string(), location)
        ))
    })?;
    decision
        .validate(loaded.config.context_policy.deferred_tools)
        .map_err(|e| match &e {
            // The `memory.recall` decision junction: accepted, but no memory tools serve it yet.
            iris_decision::Error::InvalidConfig { field, .. } if field == "memory.recall" => {
                Error::FeatureUnavailable {
                    key: "decision.memory.recall".into(),
                    message: format!("{}: {e}", section.path.display()),
                }
            }
            _ => reference(e.to_string()),
        })?;
    Ok(Some(decision))
}

/// A hook handler naming a factory the host did not register is `HOST_KEY_UNKNOWN`, as
/// for every YAML key naming host code.
fn unknown_hook_factory(
    config: &AgentConfig,
    factories: &iris_hooks::config::HookFactoryRegistry,
) -> Option<Error> {
    let (i, name) = factories.unknown_factory(&config.hooks)?;
    Some(Error::HostKeyUnknown {
        key: format!("hooks[{i}].handler.factory"),
        kind: "hook factory",
        name: name.to_owned(),
        known: owned(factories.names()),
    })
}

fn hook_error(e: iris_hooks::HookError) -> Error {
    Error::Assembly {
        key: "hooks".into(),
        message: format!("{}: {e}", e.code()),
    }
}

fn build_hooks(
    config: &AgentConfig,
    host: &HostRegistry,
    command: Option<&CommandBinding>,
) -> Result<Option<HookDispatcher>> {
    if config.hooks.is_empty() {
        return Ok(None);
    }
    let factories = host.hook_factories();
    if let Some(e) = unknown_hook_factory(config, &factories) {
        return Err(e);
    }
    let commands = command.map(command_hooks);
    let registrations = factories
        .build(&config.hooks, commands.as_deref())
        .map_err(hook_error)?;
    Ok(Some(HookDispatcher::new(registrations)))
}

fn build_middleware(
    config: &AgentConfig,
    host: &HostRegistry,
) -> Result<Vec<Arc<dyn ToolMiddleware>>> {
    config
        .middleware
        .tools
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let key = format!("middleware.tools[{i}].factory");
            let make = host
                .get_middleware(&item.factory)
                .ok_or_else(|| Error::HostKeyUnknown {
                    key: key.clone(),
                    kind: "middleware factory",
                    name: item.factory.clone(),
                    known: owned(host.middleware_keys()),
                })?;
            make(&item.options).map_err(|message| Error::HostFailed { key, message })
        })
        .collect()
}

/// A tool `tools.background` names: the same tool, with `background` set in its
/// definition, so the run loop answers its calls with a receipt and delivers the
/// result at a later turn.
struct BackgroundTool {
    inner: Arc<dyn Tool>,
    definition: ToolDefinition,
}

impl BackgroundTool {
    fn new(inner: Arc<dyn Tool>) -> Self {
        let definition = inner.definition().clone().with_background(true);
        Self { inner, definition }
    }
}

impl Tool for BackgroundTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn run<'a>(
        &'a self,
        input: ToolInput,
        ctx: &'a ToolExecutionContext,
    ) -> BoxFuture<'a, ToolOutput> {
        self.inner.run(input, ctx)
    }

    fn validate_input(
        &self,
        raw: serde_json::Value,
    ) -> std::result::Result<ToolInput, ToolErrorInfo> {
        self.inner.validate_input(raw)
    }

    fn is_auto_allowed(&self) -> bool {
        self.inner.is_auto_allowed()
    }

    fn is_idempotent(&self) -> bool {
        self.inner.is_idempotent()
    }

    fn is_read_only(&self) -> bool {
        self.inner.is_read_only()
    }

    fn is_destructive(&self) -> bool {
        self.inner.is_destructive()
    }

    fn is_concurrency_safe(&self) -> bool {
        self.inner.is_concurrency_safe()
    }

    fn timeout_owner(&self) -> ToolTimeoutOwner {
        self.inner.timeout_owner()
    }

    fn requested_escalation(&self, input: &serde_json::Value) -> Option<String> {
        self.inner.requested_escalation(input)
    }
}
