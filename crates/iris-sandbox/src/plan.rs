//! [`HelperPlan`]: one call's policy resolved to absolute paths and a proxy port, as
//! the host hands it to the helper (one JSON argument).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::policy::{DEFAULT_PROTECTED, FilesystemAccess, NetworkAccess, SandboxPolicy};

/// The argument that tells a binary it is invoked as the sandbox helper.
pub const HELPER_MARKER: &str = "--iris-sandbox-helper";

/// The exit code of a helper that could not restrict itself (nothing of the command
/// ran); its last stderr line starts with [`HELPER_ERROR_PREFIX`].
pub const HELPER_FAILED_EXIT: i32 = 121;

/// The exit code of a helper whose [`Gate`] closed before its line came (the host gave
/// up on the call): nothing of the command ran, and there is nothing to report.
pub const GATE_CLOSED_EXIT: i32 = 125;

/// How the helper's error line on stderr starts.
pub const HELPER_ERROR_PREFIX: &str = "iris-sandbox: ";

/// The network rule of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanNetwork {
    /// No socket but `socketpair`.
    Off,
    /// TCP (IPv4/IPv6 stream sockets) only to this loopback port: the egress proxy.
    Proxy {
        /// The proxy's port on 127.0.0.1.
        port: u16,
    },
    /// Unrestricted.
    On,
}

/// A Unix socket the helper connects before it restricts itself, so the command keeps
/// a channel to the host while `socket()` is refused: `count` connections, whose file
/// descriptors (comma-separated) the command finds in the variable `env`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelPlan {
    /// The socket's path.
    pub path: PathBuf,
    /// How many connections to open.
    pub count: usize,
    /// The variable naming their descriptors.
    pub env: String,
}

/// What the helper does with its stdin before it runs the command, when it leads a
/// contained call: the host moves it into the call's cgroup, then writes one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// Wait for the line; the command reads the rest of stdin.
    Stdin,
    /// Wait for the line; the command's stdin is `/dev/null`.
    NullStdin,
}

/// One call's sandbox, resolved: every path absolute and canonical.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelperPlan {
    /// File-system access.
    pub filesystem: FilesystemAccess,
    /// The workspace root.
    pub workspace: PathBuf,
    /// Directories the command may write (the workspace when `workspace-write`, the
    /// call's temp folder).
    pub writable: Vec<PathBuf>,
    /// Existing paths inside the workspace mounted read-only.
    pub protected: Vec<PathBuf>,
    /// Existing paths masked (an empty directory or an empty file).
    pub deny_read: Vec<PathBuf>,
    /// The network rule.
    pub network: PlanNetwork,
    /// A channel to pre-connect, if any.
    pub channel: Option<ChannelPlan>,
    /// The host's pid, when the helper is the call's first process: it asks for
    /// `SIGKILL` when its parent dies (what `setpriv --pdeathsig KILL` would do) and
    /// gives up at once if its parent is already another process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<u32>,
    /// Wait on stdin before anything of the command runs (what a gate shell would do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Gate>,
}

/// What a host knows when it plans one call.
#[derive(Debug, Clone)]
pub struct PlanInputs<'a> {
    /// The canonical workspace root.
    pub workspace: &'a Path,
    /// The call's own temp folder (the host created it and sets `TMPDIR` to it).
    pub temp_dir: Option<&'a Path>,
    /// Protected paths the host adds (the agent YAML and the files it references).
    pub protected: &'a [PathBuf],
    /// The egress proxy's port when the policy is `network: {allow: …}`.
    pub proxy_port: Option<u16>,
    /// The user's home, for `~/` entries of `deny_read`.
    pub home: Option<&'a Path>,
    /// A channel to pre-connect.
    pub channel: Option<ChannelPlan>,
}

impl<'a> PlanInputs<'a> {
    /// Inputs with only the workspace.
    pub fn new(workspace: &'a Path) -> Self {
        Self {
            workspace,
            temp_dir: None,
            protected: &[],
            proxy_port: None,
            home: None,
            channel: None,
        }
    }
}

impl HelperPlan {
    /// Resolves `policy` for one call. Paths that do not exist are left out (there is
    /// nothing to protect or mask); protected paths outside the workspace are left out
    /// (commands cannot write there anyway).
    pub fn new(policy: &SandboxPolicy, inputs: PlanInputs<'_>) -> Self {
        let workspace = inputs.workspace.to_path_buf();
        let mut writable = Vec::new();
        if policy.filesystem == FilesystemAccess::WorkspaceWrite {
            writable.push(workspace.clone());
        }
        writable.extend(inputs.temp_dir.map(Path::to_path_buf));
        let (protected, deny_read) = if policy.filesystem == FilesystemAccess::Off {
            (Vec::new(), Vec::new())
        } else {
            let mut protected: Vec<PathBuf> = DEFAULT_PROTECTED
                .iter()
                .map(PathBuf::from)
                .chain(policy.protected.iter().cloned())
                .chain(inputs.protected.iter().cloned())
                .filter_map(|p| std::fs::canonicalize(workspace.join(p)).ok())
                .filter(|p| p.starts_with(&workspace) && *p != workspace)
                .collect();
            protected.sort();
            protected.dedup();
            let mut deny: Vec<PathBuf> = policy
                .deny_read_paths(inputs.home)
                .into_iter()
                .filter_map(|p| std::fs::canonicalize(p).ok())
                .collect();
            deny.sort();
            deny.dedup();
            (protected, deny)
        };
        let network = match (&policy.network, inputs.proxy_port) {
            (NetworkAccess::Off, _) | (NetworkAccess::Allow(_), None) => PlanNetwork::Off,
            (NetworkAccess::Allow(_), Some(port)) => PlanNetwork::Proxy { port },
            (NetworkAccess::On, _) => PlanNetwork::On,
        };
        Self {
            filesystem: policy.filesystem,
            workspace,
            writable,
            protected,
            deny_read,
            network,
            channel: inputs.channel,
            parent: None,
            gate: None,
        }
    }

    /// Whether the helper needs its own user and mount namespaces (to mount protected
    /// paths read-only and mask `deny_read` paths).
    pub fn needs_namespaces(&self) -> bool {
        self.filesystem != FilesystemAccess::Off
            && !(self.protected.is_empty() && self.deny_read.is_empty())
    }

    /// The argv that runs `command` (program and arguments) under this plan through
    /// `helper`; an empty `command` only checks that the plan can be enforced.
    pub fn argv(&self, helper: &Path, command: &[OsString]) -> Vec<OsString> {
        let plan = serde_json::to_string(self).unwrap_or_default();
        let mut argv: Vec<OsString> = vec![
            helper.as_os_str().to_owned(),
            HELPER_MARKER.into(),
            plan.into(),
        ];
        argv.extend(command.iter().cloned());
        argv
    }
}
