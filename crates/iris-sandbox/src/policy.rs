//! [`SandboxPolicy`]: what a sandboxed command may read, write and reach (the agent
//! YAML's `command.sandbox`).
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `filesystem` | `workspace-write` | `workspace-write`: read everywhere but `deny_read`, write only the workspace (less its protected paths), the call's temp folder and `/dev/null`-like devices; `read-only`: the same without the workspace; `off`: no file-system rule at all (`deny_read` and protected paths included) |
//! | `deny_read` | [`DEFAULT_DENY_READ`] | more paths no command may read (absolute, or `~/…`), added to the defaults |
//! | `protected` | `.iris`, `.git` | more paths inside the workspace that commands (and the file tools) may read but not change, relative to the workspace or absolute; the host adds the agent YAML and every file it references |
//! | `network` | `off` | `off`: no socket at all but `socketpair` (no TCP, no UDP, no Unix socket); `on`: unrestricted; `{allow: [domains]}`: only TCP through the host's egress proxy, which admits the listed domains (exact, or `*.suffix` for strict subdomains) |
//! | `escalation` | `never` | `never`: a call cannot ask for more; `ask`: `exec_command` may ask for a [`SandboxWidening`] (`network: on`, `filesystem: off`), and such a call always waits for a human |
//!
//! ```
//! use iris_sandbox::{FilesystemAccess, NetworkAccess, SandboxPolicy};
//!
//! let policy: SandboxPolicy = serde_json::from_str("{}")?;
//! assert_eq!(policy.filesystem, FilesystemAccess::WorkspaceWrite);
//! assert_eq!(policy.network, NetworkAccess::Off);
//!
//! let open: SandboxPolicy = serde_json::from_str(
//!     r#"{"network": {"allow": ["pypi.org", "*.pythonhosted.org"]}}"#,
//! )?;
//! assert!(open.validate().is_ok());
//! assert!(open.network.admits("files.pythonhosted.org"));
//! assert!(!open.network.admits("example.com"));
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::SandboxError;

/// The credential stores no sandboxed command may read, relative to the user's home:
/// SSH keys, cloud and container credentials, `.netrc`, git's stored credentials and
/// Iris's own configuration (its trusted-folders file). `$XDG_CONFIG_HOME/iris` is
/// added when that variable is set.
pub const DEFAULT_DENY_READ: [&str; 8] = [
    "~/.ssh",
    "~/.aws",
    "~/.config/gcloud",
    "~/.docker",
    "~/.kube",
    "~/.netrc",
    "~/.git-credentials",
    "~/.config/iris",
];

/// The workspace paths always protected (read-only to commands and file tools): Iris's
/// own state (runs, artifacts, script sockets) and the repository's metadata (hooks,
/// config).
pub const DEFAULT_PROTECTED: [&str; 2] = [".iris", ".git"];

/// What a sandboxed command may do with the file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FilesystemAccess {
    /// Read everywhere but `deny_read`; write the workspace (less its protected paths),
    /// the call's temp folder and `/dev/null`-like devices.
    #[default]
    WorkspaceWrite,
    /// Read everywhere but `deny_read`; write only the call's temp folder and devices.
    ReadOnly,
    /// No file-system rule.
    Off,
}

impl FilesystemAccess {
    /// `workspace-write`, `read-only` or `off`, as in the YAML.
    pub fn as_str(self) -> &'static str {
        match self {
            FilesystemAccess::WorkspaceWrite => "workspace-write",
            FilesystemAccess::ReadOnly => "read-only",
            FilesystemAccess::Off => "off",
        }
    }
}

/// What a sandboxed command may reach over the network: `off`, `on` or
/// `{allow: [domains]}` (a plain map, not a YAML tag).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(from = "RawNetwork", into = "RawNetwork")]
pub enum NetworkAccess {
    /// No socket but `socketpair`: no TCP, no UDP (so no DNS), no Unix socket.
    #[default]
    Off,
    /// Unrestricted.
    On,
    /// TCP only to the host's egress proxy, which admits these domains.
    Allow(Vec<String>),
}

/// The wire form of [`NetworkAccess`].
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum RawNetwork {
    Word(NetworkWord),
    Allow { allow: Vec<String> },
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum NetworkWord {
    Off,
    On,
}

impl From<RawNetwork> for NetworkAccess {
    fn from(raw: RawNetwork) -> Self {
        match raw {
            RawNetwork::Word(NetworkWord::Off) => NetworkAccess::Off,
            RawNetwork::Word(NetworkWord::On) => NetworkAccess::On,
            RawNetwork::Allow { allow } => NetworkAccess::Allow(allow),
        }
    }
}

impl From<NetworkAccess> for RawNetwork {
    fn from(network: NetworkAccess) -> Self {
        match network {
            NetworkAccess::Off => RawNetwork::Word(NetworkWord::Off),
            NetworkAccess::On => RawNetwork::Word(NetworkWord::On),
            NetworkAccess::Allow(allow) => RawNetwork::Allow { allow },
        }
    }
}

impl NetworkAccess {
    /// Whether the proxy admits `host` (case-insensitive): an exact entry, or a
    /// `*.suffix` entry for a strict subdomain of the suffix. `Off` admits nothing, `On`
    /// everything.
    pub fn admits(&self, host: &str) -> bool {
        match self {
            NetworkAccess::Off => false,
            NetworkAccess::On => true,
            NetworkAccess::Allow(domains) => {
                let host = host.trim_end_matches('.').to_ascii_lowercase();
                domains.iter().any(|d| match d.strip_prefix("*.") {
                    Some(suffix) => host
                        .strip_suffix(suffix)
                        .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
                    None => host == *d,
                })
            }
        }
    }

    /// `off`, `on` or `allow`.
    pub fn kind(&self) -> &'static str {
        match self {
            NetworkAccess::Off => "off",
            NetworkAccess::On => "on",
            NetworkAccess::Allow(_) => "allow",
        }
    }
}

/// Whether a call may ask for a wider sandbox than the policy's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Escalation {
    /// No call can widen the sandbox; `exec_command` has no `sandbox` parameter.
    #[default]
    Never,
    /// `exec_command` has a `sandbox` parameter; a call that uses it to widen the
    /// sandbox always needs a human's approval, whatever the permission modes say.
    Ask,
}

/// `network: on`, the only network widening a call may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkOn {
    /// Unrestricted network.
    On,
}

/// `filesystem: off`, the only file-system widening a call may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FilesystemOff {
    /// No file-system rule.
    Off,
}

/// What one call asks for beyond the policy (`exec_command`'s `sandbox` parameter under
/// `escalation: ask`): `{network: on}`, `{filesystem: off}` or both.
///
/// ```
/// use iris_sandbox::{NetworkAccess, SandboxPolicy, SandboxWidening};
///
/// let widening: SandboxWidening = serde_json::from_str(r#"{"network": "on"}"#)?;
/// let policy = SandboxPolicy::default();
/// assert_eq!(widening.describe(&policy).as_deref(), Some("network: on (policy: off)"));
/// assert_eq!(policy.widened(&widening).network, NetworkAccess::On);
/// // Asking for what the policy already grants widens nothing.
/// assert_eq!(widening.describe(&SandboxPolicy::off()), None);
/// assert!(serde_json::from_str::<SandboxWidening>(r#"{"network": "off"}"#).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxWidening {
    /// Unrestricted network for this call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkOn>,
    /// No file-system rule for this call (`deny_read` and protected paths included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filesystem: Option<FilesystemOff>,
}

impl SandboxWidening {
    /// What this widening adds to `policy`, in one line (`network: on (policy: off),
    /// filesystem: off (policy: workspace-write)`); `None` when it adds nothing.
    pub fn describe(&self, policy: &SandboxPolicy) -> Option<String> {
        let mut parts = Vec::new();
        if self.network.is_some() && policy.network != NetworkAccess::On {
            parts.push(format!("network: on (policy: {})", policy.network.kind()));
        }
        if self.filesystem.is_some() && policy.filesystem != FilesystemAccess::Off {
            parts.push(format!(
                "filesystem: off (policy: {})",
                policy.filesystem.as_str()
            ));
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

/// The sandbox of the commands a model causes to run (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxPolicy {
    /// File-system access.
    pub filesystem: FilesystemAccess,
    /// Paths no command may read, added to [`DEFAULT_DENY_READ`].
    pub deny_read: Vec<PathBuf>,
    /// Workspace paths commands may not change, added to [`DEFAULT_PROTECTED`] and to
    /// what the host adds.
    pub protected: Vec<PathBuf>,
    /// Network access.
    pub network: NetworkAccess,
    /// Whether a call may ask for more ([`SandboxWidening`]).
    pub escalation: Escalation,
}

impl SandboxPolicy {
    /// No sandbox at all: `filesystem: off`, `network: on`.
    pub fn off() -> Self {
        Self {
            filesystem: FilesystemAccess::Off,
            network: NetworkAccess::On,
            ..Self::default()
        }
    }

    /// The policy of one call that asked for `widening` (and was approved).
    #[must_use]
    pub fn widened(&self, widening: &SandboxWidening) -> Self {
        let mut policy = self.clone();
        if widening.network.is_some() {
            policy.network = NetworkAccess::On;
        }
        if widening.filesystem.is_some() {
            policy.filesystem = FilesystemAccess::Off;
        }
        policy
    }

    /// Whether the policy restricts nothing, so commands run without the helper.
    pub fn is_off(&self) -> bool {
        self.filesystem == FilesystemAccess::Off && self.network == NetworkAccess::On
    }

    /// Checks the paths and domains; the error names the key (`deny_read`,
    /// `protected`, `network.allow`).
    pub fn validate(&self) -> Result<(), SandboxError> {
        for path in &self.deny_read {
            let text = path.to_string_lossy();
            if !(path.is_absolute() || text.starts_with("~/")) {
                return Err(SandboxError::config(
                    "deny_read",
                    format!(
                        "`{}` must be absolute or start with `~/`",
                        text.escape_debug()
                    ),
                ));
            }
        }
        for path in &self.protected {
            if path.as_os_str().is_empty()
                || path
                    .components()
                    .any(|c| c == std::path::Component::ParentDir)
            {
                return Err(SandboxError::config(
                    "protected",
                    format!(
                        "`{}` must be a non-empty path without `..`",
                        path.to_string_lossy().escape_debug()
                    ),
                ));
            }
        }
        if let NetworkAccess::Allow(domains) = &self.network {
            if domains.is_empty() {
                return Err(SandboxError::config(
                    "network.allow",
                    "lists no domain; use `network: off` to allow none",
                ));
            }
            for domain in domains {
                check_domain(domain)?;
            }
        }
        Ok(())
    }

    /// The `deny_read` paths in force: the defaults and the policy's own, `~`
    /// expanded with `home` (entries under `~` are skipped without a home).
    pub fn deny_read_paths(&self, home: Option<&Path>) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let defaults = DEFAULT_DENY_READ.iter().map(PathBuf::from);
        for path in defaults.chain(self.deny_read.iter().cloned()) {
            match path.strip_prefix("~") {
                Ok(rest) => {
                    if let Some(home) = home {
                        out.push(home.join(rest));
                    }
                }
                Err(_) => out.push(path),
            }
        }
        if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
            out.push(PathBuf::from(xdg).join("iris"));
        }
        out
    }
}

/// A domain entry: lowercase letters, digits, `-` and `.`, optionally after `*.`; no
/// scheme, port or path.
fn check_domain(domain: &str) -> Result<(), SandboxError> {
    let name = domain.strip_prefix("*.").unwrap_or(domain);
    let valid = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        });
    if valid {
        Ok(())
    } else {
        Err(SandboxError::config(
            "network.allow",
            format!(
                "`{}` is not a lowercase domain name or `*.suffix` (no scheme, port or path)",
                domain.escape_debug()
            ),
        ))
    }
}
