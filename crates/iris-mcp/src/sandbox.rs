//! [`McpSandbox`]: the native command sandbox around a stdio server that opted in
//! (`sandbox: true` in the agent's `mcp.overrides`).
//!
//! MCP servers are the owner's configuration and run outside the sandbox by default;
//! an untrusted packaged server can be put inside it. Such a server is started through
//! the sandbox helper ([`iris_sandbox`]) exactly like a model's command: it may read
//! everything but the `deny_read` paths, write only the workspace (less its protected
//! paths: `.iris`, `.git`, the agent's own files) and a temp folder of its own
//! (`TMPDIR`), and reach the network only as the policy allows: nothing under
//! `network: off`, the listed domains through an egress proxy of its own under
//! `{allow: …}` (`HTTP_PROXY` and its kin), anything under `on`. Its stdio pipes to
//! Iris stay open (they are inherited, not opened).
//!
//! The temp folder and the proxy live as long as the server process.

use std::path::PathBuf;

use iris_sandbox::{EgressProxy, HelperPlan, LoopbackOverrides, NetworkAccess, PlanInputs};

pub use iris_sandbox::SandboxPolicy;

/// The sandbox a stdio server runs in when it opted in: the agent's policy, the
/// workspace it may write and the workspace paths it must not change.
/// [`crate::MCPManager::with_sandbox`] sets the policy and the protected paths; the
/// workspace is the manager's root.
///
/// ```
/// use iris_mcp::{McpSandbox, SandboxPolicy};
/// let sandbox = McpSandbox::new(SandboxPolicy::default(), vec!["agent.yaml".into()], "/work");
/// assert_eq!(sandbox.workspace, std::path::Path::new("/work"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSandbox {
    /// The policy (the agent's `command.sandbox`; default workspace-write, network
    /// off).
    pub policy: SandboxPolicy,
    /// Workspace paths the server may read but not change, besides `.iris` and `.git`
    /// (the host adds the agent YAML and the files it references); relative to the
    /// workspace or absolute.
    pub protected: Vec<PathBuf>,
    /// The workspace root: the one folder (with the server's temp folder) it may
    /// write under `workspace-write`.
    pub workspace: PathBuf,
}

impl McpSandbox {
    /// A sandbox for servers of `workspace`.
    pub fn new(
        policy: SandboxPolicy,
        protected: Vec<PathBuf>,
        workspace: impl Into<PathBuf>,
    ) -> Self {
        Self {
            policy,
            protected,
            workspace: workspace.into(),
        }
    }
}

/// What one sandboxed start needs beyond the server's own command: the argv prefix,
/// the variables to add, and what must live as long as the process.
#[derive(Debug)]
pub(crate) struct Launch {
    /// `helper --iris-sandbox-helper <plan>`, to put before the server's command.
    pub(crate) prefix: Vec<std::ffi::OsString>,
    /// `TMPDIR`, and the proxy variables under `allow`.
    pub(crate) env: Vec<(String, String)>,
    /// The temp folder and the proxy.
    pub(crate) guard: LaunchGuard,
}

/// Keeps a sandboxed server's temp folder and proxy; dropping it removes the folder
/// and stops the proxy.
#[derive(Debug)]
pub(crate) struct LaunchGuard {
    temp: Option<PathBuf>,
    _proxy: Option<EgressProxy>,
}

impl Drop for LaunchGuard {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = std::fs::remove_dir_all(temp);
        }
    }
}

impl McpSandbox {
    /// Prepares one start of a server: finds the helper, creates the temp folder,
    /// starts the proxy under `allow`, and resolves the plan. Errors say what is
    /// missing, with the opt-outs.
    pub(crate) async fn launch(&self) -> std::io::Result<Launch> {
        let proxy = match &self.policy.network {
            NetworkAccess::Allow(_) => Some(
                EgressProxy::start(self.policy.network.clone(), LoopbackOverrides::default())
                    .await?,
            ),
            _ => None,
        };
        let port = proxy.as_ref().map(EgressProxy::port);
        let this = self.clone();
        let (prefix, temp) = tokio::task::spawn_blocking(move || this.plan(port))
            .await
            .map_err(std::io::Error::other)??;
        let mut env = vec![("TMPDIR".to_owned(), temp.display().to_string())];
        if let Some(proxy) = &proxy {
            for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
                env.push((name.to_owned(), proxy.url()));
                env.push((name.to_ascii_lowercase(), proxy.url()));
            }
            env.push(("NO_PROXY".to_owned(), String::new()));
            env.push(("no_proxy".to_owned(), String::new()));
        }
        Ok(Launch {
            prefix,
            env,
            guard: LaunchGuard {
                temp: Some(temp),
                _proxy: proxy,
            },
        })
    }

    /// The blocking part: the helper, the temp folder and the plan.
    fn plan(&self, port: Option<u16>) -> std::io::Result<(Vec<std::ffi::OsString>, PathBuf)> {
        let unavailable = |e: iris_sandbox::SandboxError| {
            std::io::Error::other(format!(
                "{e}; or drop `sandbox: true` from this server's mcp.overrides entry"
            ))
        };
        let helper = iris_sandbox::locate_helper(None).map_err(unavailable)?;
        let workspace = std::fs::canonicalize(&self.workspace)?;
        let temp = temp_dir()?;
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let plan = HelperPlan::new(
            &self.policy,
            PlanInputs {
                temp_dir: Some(&temp),
                protected: &self.protected,
                proxy_port: port,
                home: home.as_deref(),
                ..PlanInputs::new(&workspace)
            },
        );
        // The helper's own check of this kernel, so a missing mechanism is a clear
        // startup error rather than a server that dies before its handshake.
        if let Err(e) = iris_sandbox::check_plan(&helper, &plan) {
            let _ = std::fs::remove_dir_all(&temp);
            return Err(unavailable(e));
        }
        Ok((plan.argv(&helper, &[]), temp))
    }
}

/// A fresh temp folder (mode 0700) for one server process.
fn temp_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt as _;
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("iris-mcp-{}-{n}", std::process::id()));
    std::fs::DirBuilder::new().mode(0o700).create(&path)?;
    std::fs::canonicalize(&path)
}
