//! The admin policy: ceilings an agent YAML cannot loosen.
//!
//! The agent YAML ships inside a repository, so whoever writes it could allow every
//! command, start any MCP server or send the conversation to any endpoint. An
//! administrator sets a floor in `/etc/iris/policy.yaml` ([`SYSTEM_POLICY_FILE`]);
//! `IRIS_POLICY_FILE` ([`POLICY_FILE_ENV`]) names one more policy file, merged with
//! the system one — so it can only tighten further, never lift the system file. Each
//! file must be a regular file owned by root and writable by nobody else (no group or
//! world write bit), or it is refused with `POLICY_FILE_UNSAFE` and nothing runs.
//!
//! Every key is optional and reads as a *ceiling* on the agent YAML key of the same
//! name. Where both say something, the strictest wins, never the last:
//!
//! | key | effect on the agent YAML |
//! |---|---|
//! | `permissions.write_mode`, `permissions.execute_mode` | the YAML's mode is raised to at least this one (`allow` < `confirm` < `deny`): a project's `allow` under a policy's `confirm` becomes `confirm` |
//! | `max_turns` | the YAML's `max_turns` is lowered to at most this |
//! | `command.sandbox.filesystem` | at least this strict (`off` < `workspace-write` < `read-only`) |
//! | `command.sandbox.network` | at most this (`on` > `{allow: [...]}` > `off`); a YAML's allow-list keeps only the domains the policy's admits |
//! | `command.sandbox.escalation` | `never`: no call may ask for a wider sandbox, whatever the YAML says |
//! | `command.sandbox.deny_read`, `command.sandbox.protected` | added to the YAML's |
//! | `mcp.allow` | `[{name, command, url}]` patterns (`*` matches any text; every field a rule gives must match): an MCP server that matches no rule is refused at assembly with `POLICY_DENIED` |
//! | `model.providers` | the providers a run may use; another is refused with `POLICY_DENIED` (also for `iris run --model` and `iris resume --switch-model`) |
//! | `model.base_urls` | patterns the model's endpoint (its `base_url`, or the provider's public API) must match |
//! | `hooks` | hooks (same shape as the YAML's `hooks:`) that run before the YAML's own and cannot be removed; a YAML hook of the same name is refused |
//!
//! Tightening is silent to the run but never hidden: [`AppliedPolicy::tightened`] lists
//! each key a policy changed and the file whose rule did it (`iris check` prints them),
//! and every refusal names the policy file and rule.

use std::fmt::Write as _;
use std::io::Read as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use iris_command::{FilesystemAccess, NetworkAccess, SandboxPolicy};
use iris_executor::ApprovalMode;
use iris_fs::bounded_read::MAX_CONFIG_BYTES;
use iris_fs::yaml::{MAX_YAML_FLOW_DEPTH, check_yaml_nesting};
use iris_hooks::config::HookSpec;
use iris_mcp::{MCPConfig, ServerTransport};
use serde::Deserialize;

use crate::budget::Limits;
use crate::config::AgentConfig;
use crate::error::{Error, Result, codes};
use crate::model::{ModelConfig, ProviderKind};

/// The system policy file, read when it exists.
pub const SYSTEM_POLICY_FILE: &str = "/etc/iris/policy.yaml";

/// The environment variable naming one more policy file (merged with the system one).
pub const POLICY_FILE_ENV: &str = "IRIS_POLICY_FILE";

/// One policy file's ceilings (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ManagedPolicy {
    /// Ceilings on the permission modes.
    pub permissions: PermissionCeiling,
    /// The most model requests a run may make.
    pub max_turns: Option<u32>,
    /// The largest budget a run may have (each limit at most the policy's; prices
    /// at least the policy's).
    pub limits: Limits,
    /// Ceilings on the command sandbox.
    pub command: CommandCeiling,
    /// The MCP servers a project may start; `None` allows every server.
    pub mcp: Option<McpAllowList>,
    /// The model providers and endpoints a run may use.
    pub model: ModelAllowList,
    /// Hooks that run first, before the agent YAML's.
    pub hooks: Vec<HookSpec>,
}

/// `permissions:` in a policy: the loosest mode each kind of tool may have.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionCeiling {
    /// The loosest `permissions.write_mode`.
    pub write_mode: Option<ApprovalMode>,
    /// The loosest `permissions.execute_mode`.
    pub execute_mode: Option<ApprovalMode>,
}

/// `command:` in a policy.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CommandCeiling {
    /// The loosest sandbox.
    pub sandbox: SandboxCeiling,
}

/// `command.sandbox:` in a policy.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxCeiling {
    /// The loosest file-system access.
    pub filesystem: Option<FilesystemAccess>,
    /// The widest network access.
    pub network: Option<NetworkAccess>,
    /// `never`: no call may widen the sandbox.
    pub escalation: Option<EscalationCeiling>,
    /// Paths no command may read, added to the YAML's.
    pub deny_read: Vec<PathBuf>,
    /// Workspace paths commands may not change, added to the YAML's.
    pub protected: Vec<PathBuf>,
}

/// The one escalation ceiling there is: none (`ask` is the loosest value already).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EscalationCeiling {
    /// No call may ask for a wider sandbox.
    Never,
}

/// `mcp:` in a policy.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpAllowList {
    /// A server must match one of these.
    pub allow: Vec<McpRule>,
}

/// One `mcp.allow` rule; every field it gives must match (`*` matches any text).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpRule {
    /// The server's name in the MCP config.
    pub name: Option<String>,
    /// A stdio server's program (as written).
    pub command: Option<String>,
    /// An HTTP server's URL.
    pub url: Option<String>,
}

/// `model:` in a policy.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelAllowList {
    /// The providers a run may use; `None` allows all.
    pub providers: Option<Vec<ProviderKind>>,
    /// Patterns the endpoint must match; `None` allows all.
    pub base_urls: Option<Vec<String>>,
}

/// A policy file and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyFile {
    /// Where it was read.
    pub path: PathBuf,
    /// Its ceilings.
    pub policy: ManagedPolicy,
}

impl PolicyFile {
    /// Its rules in one line (`permissions.execute_mode at least confirm; max_turns at
    /// most 20`), or `no rules`.
    pub fn rules(&self) -> String {
        describe(&self.policy)
    }
}

/// One agent YAML key a policy changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tightening {
    /// The key (`permissions.execute_mode`); the policy's rule has the same name.
    pub key: String,
    /// The YAML's value.
    pub from: String,
    /// The value in effect.
    pub to: String,
    /// The policy file whose rule it is.
    pub file: PathBuf,
}

impl std::fmt::Display for Tightening {
    /// `` `key` from -> to (rule `key` of FILE) ``.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` {} -> {} (rule `{}` of {})",
            self.key,
            self.from,
            self.to,
            self.key,
            self.file.display()
        )
    }
}

/// The policies a loaded agent YAML runs under, and what they changed in it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AppliedPolicy {
    /// The policy files read, system file first; empty when there is none.
    pub files: Vec<PolicyFile>,
    /// Each key a policy tightened.
    pub tightened: Vec<Tightening>,
}

impl AppliedPolicy {
    /// Reads the system policy file (when it exists) and, when `env` is true, the one
    /// `IRIS_POLICY_FILE` names, and applies both to `config`.
    ///
    /// # Errors
    /// [`Error::Policy`]: `POLICY_FILE_UNSAFE` for a file not owned by root or writable
    /// by others, `POLICY_INVALID` for one that cannot be read or parsed (a missing
    /// `IRIS_POLICY_FILE` included), `POLICY_DENIED` for a YAML hook that takes a
    /// policy hook's name.
    pub(crate) fn load_and_apply(config: &mut AgentConfig, env: bool) -> Result<Self> {
        let mut paths = Vec::new();
        let system = Path::new(SYSTEM_POLICY_FILE);
        if std::fs::symlink_metadata(system).is_ok() {
            paths.push(system.to_path_buf());
        }
        if env && let Some(path) = std::env::var_os(POLICY_FILE_ENV).filter(|p| !p.is_empty()) {
            paths.push(PathBuf::from(path));
        }
        let files = paths
            .into_iter()
            .map(|path| read_policy(&path).map(|policy| PolicyFile { path, policy }))
            .collect::<Result<Vec<_>>>()?;
        Self::apply(files, config)
    }

    /// Applies `files` to `config`, strictest first-to-last.
    ///
    /// # Errors
    /// `POLICY_DENIED` for a YAML hook that takes a policy hook's name.
    pub fn apply(files: Vec<PolicyFile>, config: &mut AgentConfig) -> Result<Self> {
        let mut tightened = Vec::new();
        let mut required: Vec<HookSpec> = Vec::new();
        for file in &files {
            let mut note = |key: &str, from: String, to: String| {
                tightened.push(Tightening {
                    key: key.to_owned(),
                    from,
                    to,
                    file: file.path.clone(),
                });
            };
            let p = &file.policy;
            for (key, ceiling, mode) in [
                (
                    "permissions.write_mode",
                    p.permissions.write_mode,
                    &mut config.permissions.write_mode,
                ),
                (
                    "permissions.execute_mode",
                    p.permissions.execute_mode,
                    &mut config.permissions.execute_mode,
                ),
            ] {
                if let Some(ceiling) = ceiling
                    && mode_rank(ceiling) > mode_rank(*mode)
                {
                    note(key, mode.as_str().into(), ceiling.as_str().into());
                    *mode = ceiling;
                }
            }
            if let Some(max) = p.max_turns
                && config.max_turns > max
            {
                note("max_turns", config.max_turns.to_string(), max.to_string());
                config.max_turns = max;
            }
            tighten_limits(&mut config.limits, &p.limits, &mut note);
            let mut command = config.command.clone().unwrap_or_default();
            if tighten_sandbox(&mut command.sandbox, &p.command.sandbox, &mut note) {
                config.command = Some(command);
            }
            for hook in &p.hooks {
                if config.hooks.iter().any(|h| h.name == hook.name) {
                    return Err(denied(
                        &file.path,
                        "hooks",
                        format!(
                            "the agent YAML declares a hook named `{}`, the name of a hook the \
                             policy requires; rename the YAML's hook",
                            hook.name
                        ),
                    ));
                }
                required.push(hook.clone());
            }
        }
        if !required.is_empty() {
            required.append(&mut config.hooks);
            config.hooks = required;
        }
        Ok(Self { files, tightened })
    }

    /// Refuses an MCP server that some policy's `mcp.allow` does not admit.
    ///
    /// # Errors
    /// `POLICY_DENIED` naming the server, the policy file and the rule.
    pub fn check_mcp(&self, config: &MCPConfig) -> Result<()> {
        for file in &self.files {
            let Some(list) = &file.policy.mcp else {
                continue;
            };
            for server in config.servers.values().filter(|s| s.enabled) {
                let (command, url) = match &server.transport {
                    ServerTransport::Stdio(stdio) => (Some(stdio.command.as_str()), None),
                    ServerTransport::StreamableHttp(http) | ServerTransport::Sse(http) => {
                        (None, Some(http.url.as_str()))
                    }
                };
                let admitted = list.allow.iter().any(|rule| {
                    let fits = |pattern: &Option<String>, value: Option<&str>| match pattern {
                        None => true,
                        Some(pattern) => value.is_some_and(|v| glob_match(pattern, v)),
                    };
                    fits(&rule.name, Some(&server.name))
                        && fits(&rule.command, command)
                        && fits(&rule.url, url)
                });
                if !admitted {
                    let what = match (command, url) {
                        (Some(c), _) => format!("command `{c}`"),
                        (_, Some(u)) => format!("URL `{u}`"),
                        _ => String::new(),
                    };
                    return Err(denied(
                        &file.path,
                        "mcp.allow",
                        format!(
                            "MCP server `{}` ({what}) matches no allowed server",
                            server.name
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Refuses a model whose provider or endpoint some policy does not allow.
    ///
    /// # Errors
    /// `POLICY_DENIED` naming the policy file and the rule.
    pub fn check_model(&self, model: &ModelConfig) -> Result<()> {
        for file in &self.files {
            let allowed = &file.policy.model;
            if let Some(providers) = &allowed.providers
                && !providers.contains(&model.provider)
            {
                let names: Vec<&str> = providers.iter().map(|p| p.as_str()).collect();
                return Err(denied(
                    &file.path,
                    "model.providers",
                    format!(
                        "provider `{}` is not allowed (allowed: {})",
                        model.provider,
                        names.join(", ")
                    ),
                ));
            }
            let endpoint = model
                .base_url
                .as_deref()
                .or_else(|| model.provider.default_base_url());
            if let (Some(patterns), Some(endpoint)) = (&allowed.base_urls, endpoint)
                && !patterns.iter().any(|p| glob_match(p, endpoint))
            {
                return Err(denied(
                    &file.path,
                    "model.base_urls",
                    format!("the model endpoint `{endpoint}` matches no allowed base URL"),
                ));
            }
        }
        Ok(())
    }

    /// Tightens `limits` (set after loading: `iris run --max-…`, `iris resume
    /// --raise-limit`) to every policy's; returns what changed.
    pub fn cap_limits(&self, limits: &mut Limits) -> Vec<Tightening> {
        let mut changed = Vec::new();
        for file in &self.files {
            tighten_limits(limits, &file.policy.limits, &mut |key, from, to| {
                changed.push(Tightening {
                    key: key.to_owned(),
                    from,
                    to,
                    file: file.path.clone(),
                });
            });
        }
        changed
    }

    /// What `iris check` prints: each policy file with its rules, then each key it
    /// tightened. Empty without a policy.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for file in &self.files {
            lines.push(format!("policy: {}: {}", file.path.display(), file.rules()));
        }
        lines.extend(self.tightened.iter().map(|t| format!("policy: {t}")));
        lines
    }
}

/// Reads one policy file: a root-owned regular file nobody else may write, at most
/// 1 MiB, checked on the open handle.
fn read_policy(path: &Path) -> Result<ManagedPolicy> {
    let invalid = |message: String| Error::Policy {
        file: path.to_path_buf(),
        code: codes::POLICY_INVALID,
        rule: "<file>".into(),
        message,
    };
    let mut handle = std::fs::File::open(path).map_err(|e| invalid(format!("cannot read: {e}")))?;
    let meta = handle
        .metadata()
        .map_err(|e| invalid(format!("cannot read: {e}")))?;
    if !meta.is_file() {
        return Err(invalid("not a regular file".into()));
    }
    if meta.uid() != 0 || meta.mode() & 0o022 != 0 {
        return Err(Error::Policy {
            file: path.to_path_buf(),
            code: codes::POLICY_FILE_UNSAFE,
            rule: "<file>".into(),
            message: format!(
                "a policy file must be owned by root and writable by no one else \
                 (owner uid {}, mode {:o}); anyone who can change it could lift the policy",
                meta.uid(),
                meta.mode() & 0o7777
            ),
        });
    }
    let mut text = String::new();
    (&mut handle)
        .take(MAX_CONFIG_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| invalid(format!("cannot read: {e}")))?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return Err(invalid(format!("larger than {MAX_CONFIG_BYTES} bytes")));
    }
    check_yaml_nesting(&text, MAX_YAML_FLOW_DEPTH).map_err(|e| invalid(e.to_string()))?;
    if text.trim().is_empty() {
        return Ok(ManagedPolicy::default());
    }
    serde_yaml::from_str(&text).map_err(|e| invalid(e.to_string()))
}

/// Tightens `sandbox` to `ceiling`, noting each change; whether anything changed.
fn tighten_sandbox(
    sandbox: &mut SandboxPolicy,
    ceiling: &SandboxCeiling,
    note: &mut impl FnMut(&str, String, String),
) -> bool {
    let before = sandbox.clone();
    if let Some(fs) = ceiling.filesystem
        && fs_rank(fs) > fs_rank(sandbox.filesystem)
    {
        note(
            "command.sandbox.filesystem",
            sandbox.filesystem.as_str().into(),
            fs.as_str().into(),
        );
        sandbox.filesystem = fs;
    }
    if let Some(network) = &ceiling.network {
        let narrowed = narrow_network(&sandbox.network, network);
        if narrowed != sandbox.network {
            note(
                "command.sandbox.network",
                network_text(&sandbox.network),
                network_text(&narrowed),
            );
            sandbox.network = narrowed;
        }
    }
    if ceiling.escalation.is_some() {
        let never = SandboxPolicy::default().escalation;
        if sandbox.escalation != never {
            note("command.sandbox.escalation", "ask".into(), "never".into());
            sandbox.escalation = never;
        }
    }
    for (key, extra, list) in [
        (
            "command.sandbox.deny_read",
            &ceiling.deny_read,
            &mut sandbox.deny_read,
        ),
        (
            "command.sandbox.protected",
            &ceiling.protected,
            &mut sandbox.protected,
        ),
    ] {
        let added: Vec<PathBuf> = extra
            .iter()
            .filter(|p| !list.contains(p))
            .cloned()
            .collect();
        if !added.is_empty() {
            let shown: Vec<String> = added.iter().map(|p| p.display().to_string()).collect();
            note(
                key,
                "(the YAML's)".into(),
                format!("+ {}", shown.join(", ")),
            );
            list.extend(added);
        }
    }
    *sandbox != before
}

/// Each limit at most the ceiling's (a limit the YAML does not set takes the
/// ceiling's), each price at least the ceiling's.
fn tighten_limits(
    limits: &mut Limits,
    ceiling: &Limits,
    note: &mut impl FnMut(&str, String, String),
) {
    fn cap<T: PartialOrd + Copy + ToString>(
        key: &str,
        value: &mut Option<T>,
        ceiling: Option<T>,
        note: &mut impl FnMut(&str, String, String),
    ) {
        if let Some(max) = ceiling
            && value.is_none_or(|v| v > max)
        {
            let from = value.map_or_else(|| "none".to_owned(), |v| v.to_string());
            note(key, from, max.to_string());
            *value = Some(max);
        }
    }
    cap(
        "limits.max_input_tokens",
        &mut limits.max_input_tokens,
        ceiling.max_input_tokens,
        note,
    );
    cap(
        "limits.max_output_tokens",
        &mut limits.max_output_tokens,
        ceiling.max_output_tokens,
        note,
    );
    cap(
        "limits.max_tool_calls",
        &mut limits.max_tool_calls,
        ceiling.max_tool_calls,
        note,
    );
    cap(
        "limits.max_wall_seconds",
        &mut limits.max_wall_seconds,
        ceiling.max_wall_seconds,
        note,
    );
    cap(
        "limits.max_cost_usd",
        &mut limits.max_cost_usd,
        ceiling.max_cost_usd,
        note,
    );
    for (tool, max) in &ceiling.max_tool_calls_per_tool {
        let mut value = limits.max_tool_calls_per_tool.get(tool).copied();
        cap(
            &format!("limits.max_tool_calls_per_tool.{tool}"),
            &mut value,
            Some(*max),
            note,
        );
        if let Some(value) = value {
            limits.max_tool_calls_per_tool.insert(tool.clone(), value);
        }
    }
    for (model, floor) in &ceiling.prices {
        let price = limits.prices.entry(model.clone()).or_default();
        let before = *price;
        price.input_per_mtok = price.input_per_mtok.max(floor.input_per_mtok);
        price.output_per_mtok = price.output_per_mtok.max(floor.output_per_mtok);
        if *price != before {
            note(
                &format!("limits.prices.{model}"),
                format!("{}/{}", before.input_per_mtok, before.output_per_mtok),
                format!("{}/{}", price.input_per_mtok, price.output_per_mtok),
            );
        }
    }
}

/// `allow` < `confirm` < `deny`.
fn mode_rank(mode: ApprovalMode) -> u8 {
    match mode {
        ApprovalMode::Allow => 0,
        ApprovalMode::Confirm => 1,
        ApprovalMode::Deny => 2,
    }
}

/// `off` < `workspace-write` < `read-only`.
fn fs_rank(fs: FilesystemAccess) -> u8 {
    match fs {
        FilesystemAccess::Off => 0,
        FilesystemAccess::WorkspaceWrite => 1,
        FilesystemAccess::ReadOnly => 2,
    }
}

/// The widest network both allow: an allow-list keeps the domains the ceiling admits
/// (an empty list is `off`).
fn narrow_network(project: &NetworkAccess, ceiling: &NetworkAccess) -> NetworkAccess {
    match (project, ceiling) {
        (_, NetworkAccess::On) => project.clone(),
        (NetworkAccess::Off, _) | (_, NetworkAccess::Off) => NetworkAccess::Off,
        (NetworkAccess::On, allow) => allow.clone(),
        (NetworkAccess::Allow(domains), NetworkAccess::Allow(allowed)) => {
            let kept: Vec<String> = domains
                .iter()
                .filter(|d| domain_within(d, allowed, ceiling))
                .cloned()
                .collect();
            if kept.is_empty() {
                NetworkAccess::Off
            } else {
                NetworkAccess::Allow(kept)
            }
        }
    }
}

/// Whether an allow-list entry admits nothing the ceiling does not: a plain domain the
/// ceiling admits, or a `*.suffix` the ceiling lists or covers with a wider `*.`.
fn domain_within(entry: &str, allowed: &[String], ceiling: &NetworkAccess) -> bool {
    match entry.strip_prefix("*.") {
        None => ceiling.admits(entry),
        Some(suffix) => allowed.iter().any(|a| match a.strip_prefix("*.") {
            Some(wider) => suffix == wider || suffix.ends_with(&format!(".{wider}")),
            None => false,
        }),
    }
}

fn network_text(network: &NetworkAccess) -> String {
    match network {
        NetworkAccess::Allow(domains) => format!("allow [{}]", domains.join(", ")),
        other => other.kind().to_owned(),
    }
}

/// One line of a policy's rules.
fn describe(policy: &ManagedPolicy) -> String {
    let mut parts: Vec<String> = Vec::new();
    let p = &policy.permissions;
    for (key, mode) in [
        ("permissions.write_mode", p.write_mode),
        ("permissions.execute_mode", p.execute_mode),
    ] {
        if let Some(mode) = mode {
            parts.push(format!("{key} at least {}", mode.as_str()));
        }
    }
    if let Some(max) = policy.max_turns {
        parts.push(format!("max_turns at most {max}"));
    }
    if let Ok(serde_json::Value::Object(limits)) = serde_json::to_value(&policy.limits) {
        for (key, value) in limits {
            let empty = value.is_null() || value.as_object().is_some_and(serde_json::Map::is_empty);
            if !empty {
                let word = if key == "prices" {
                    "at least"
                } else {
                    "at most"
                };
                parts.push(format!("limits.{key} {word} {value}"));
            }
        }
    }
    let s = &policy.command.sandbox;
    if let Some(fs) = s.filesystem {
        parts.push(format!(
            "command.sandbox.filesystem at least {}",
            fs.as_str()
        ));
    }
    if let Some(network) = &s.network {
        parts.push(format!(
            "command.sandbox.network at most {}",
            network_text(network)
        ));
    }
    if s.escalation.is_some() {
        parts.push("command.sandbox.escalation never".into());
    }
    for (key, list) in [("deny_read", &s.deny_read), ("protected", &s.protected)] {
        if !list.is_empty() {
            let shown: Vec<String> = list.iter().map(|p| p.display().to_string()).collect();
            parts.push(format!("command.sandbox.{key} + {}", shown.join(", ")));
        }
    }
    if let Some(mcp) = &policy.mcp {
        let mut rules = String::new();
        for (i, rule) in mcp.allow.iter().enumerate() {
            let fields: Vec<String> = [
                ("name", &rule.name),
                ("command", &rule.command),
                ("url", &rule.url),
            ]
            .into_iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}: {v}")))
            .collect();
            let _ = write!(
                rules,
                "{}{{{}}}",
                if i > 0 { ", " } else { "" },
                fields.join(", ")
            );
        }
        parts.push(format!("mcp.allow [{rules}]"));
    }
    if let Some(providers) = &policy.model.providers {
        let names: Vec<&str> = providers.iter().map(|p| p.as_str()).collect();
        parts.push(format!("model.providers [{}]", names.join(", ")));
    }
    if let Some(urls) = &policy.model.base_urls {
        parts.push(format!("model.base_urls [{}]", urls.join(", ")));
    }
    if !policy.hooks.is_empty() {
        let names: Vec<&str> = policy.hooks.iter().map(|h| h.name.as_str()).collect();
        parts.push(format!("hooks first: {}", names.join(", ")));
    }
    if parts.is_empty() {
        "no rules".into()
    } else {
        parts.join("; ")
    }
}

fn denied(file: &Path, rule: &str, message: String) -> Error {
    Error::Policy {
        file: file.to_path_buf(),
        code: codes::POLICY_DENIED,
        rule: rule.into(),
        message,
    }
}

/// Whether `text` matches `pattern`, where `*` matches any text (empty included) and
/// every other character itself.
fn glob_match(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let pieces: Vec<&str> = parts.collect();
    let Some((last, middle)) = pieces.split_last() else {
        return rest.is_empty();
    };
    for piece in middle {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// docs/configuration.md's example policy parses, and says what the doc says.
    #[test]
    fn the_documented_example_parses() {
        let doc = include_str!("../../../docs/configuration.md");
        let start = doc.find("# /etc/iris/policy.yaml").unwrap();
        let text = &doc[start..start + doc[start..].find("```").unwrap()];
        let policy: ManagedPolicy = serde_yaml::from_str(text).unwrap();
        assert_eq!(policy.permissions.execute_mode, Some(ApprovalMode::Confirm));
        assert_eq!(policy.max_turns, Some(40));
        assert_eq!(policy.mcp.unwrap().allow.len(), 2);
        assert_eq!(policy.hooks[0].name, "audit");
        assert!(glob_match(
            &policy.model.base_urls.unwrap()[2],
            "http://127.0.0.1:11434/v1"
        ));
    }

    #[test]
    fn glob_matches_stars_anywhere() {
        assert!(glob_match("npx *", "npx @scope/server"));
        assert!(glob_match(
            "http://127.0.0.1:*/mcp",
            "http://127.0.0.1:8080/mcp"
        ));
        assert!(!glob_match(
            "http://127.0.0.1:*/mcp",
            "http://127.0.0.1:8080/other"
        ));
        assert!(glob_match("*", ""));
        assert!(glob_match("gh", "gh"));
        assert!(!glob_match("gh", "ghx"));
        assert!(!glob_match("a*b*c", "acb"));
        assert!(glob_match("a*b*c", "a-b-c"));
        // The last piece may not reuse text a middle piece matched.
        assert!(!glob_match("*ab*ab", "ab"));
    }

    #[test]
    fn networks_narrow_to_what_both_allow() {
        let allow = |d: &[&str]| NetworkAccess::Allow(d.iter().map(|s| (*s).to_owned()).collect());
        assert_eq!(
            narrow_network(&NetworkAccess::On, &allow(&["pypi.org"])),
            allow(&["pypi.org"])
        );
        assert_eq!(
            narrow_network(&allow(&["pypi.org", "evil.example"]), &allow(&["pypi.org"])),
            allow(&["pypi.org"])
        );
        assert_eq!(
            narrow_network(&allow(&["*.evil.example"]), &allow(&["pypi.org"])),
            NetworkAccess::Off
        );
        assert_eq!(
            narrow_network(
                &allow(&["a.corp.example", "*.b.corp.example"]),
                &allow(&["*.corp.example"])
            ),
            allow(&["a.corp.example", "*.b.corp.example"])
        );
        assert_eq!(
            narrow_network(&NetworkAccess::Off, &NetworkAccess::On),
            NetworkAccess::Off
        );
    }
}
