//! [`KernelSupport`]: which of the sandbox's mechanisms this kernel provides, and
//! [`KernelSupport::rules`]: which rules of a policy it can therefore enforce (what
//! `iris check` prints).
//!
//! The probe runs in a helper process of its own ([`probe_kernel`]), because finding
//! the Landlock ABI, entering a user namespace and installing a seccomp filter all
//! change the process that tries them: the helper tries each, prints the answer as
//! JSON and exits.
//!
//! ```
//! use iris_sandbox::{KernelSupport, Mechanism, SandboxPolicy};
//!
//! let old_kernel = KernelSupport {
//!     landlock_abi: Some(5),
//!     seccomp: Mechanism::available(),
//!     user_namespaces: Mechanism::available(),
//!     loopback_listener: Mechanism::available(),
//! };
//! let rules = old_kernel.rules(&SandboxPolicy::default());
//! assert!(rules.iter().any(|r| !r.enforced && r.mechanism.contains("Landlock ABI 6")));
//! assert!(old_kernel.missing(&SandboxPolicy::default()).is_some());
//! assert!(old_kernel.missing(&SandboxPolicy::off()).is_none());
//! ```

use std::path::Path;
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use crate::error::SandboxError;
use crate::policy::{FilesystemAccess, NetworkAccess, SandboxPolicy};

/// The argument that makes a helper binary probe the kernel instead of running a
/// command.
pub const PROBE_MARKER: &str = "--iris-sandbox-probe";

/// The Landlock ABI every sandbox rule set needs: file truncation (3), TCP ports (4),
/// device ioctls (5) and scopes for signals and abstract Unix sockets (6).
pub const REQUIRED_LANDLOCK_ABI: i32 = 6;

/// Whether one kernel mechanism works here, and why not when it does not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mechanism {
    /// Whether the mechanism works.
    pub available: bool,
    /// Why it does not (the error the kernel gave).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Mechanism {
    /// A mechanism that works.
    pub fn available() -> Self {
        Self {
            available: true,
            error: None,
        }
    }

    /// A mechanism that does not work, with why.
    pub fn missing(error: impl Into<String>) -> Self {
        Self {
            available: false,
            error: Some(error.into()),
        }
    }
}

/// What this kernel provides to the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelSupport {
    /// The Landlock ABI the kernel reports; `None` when Landlock is not built in or not
    /// enabled (the `lsm=` boot parameter).
    pub landlock_abi: Option<i32>,
    /// Seccomp filters (installed after `PR_SET_NO_NEW_PRIVS`).
    pub seccomp: Mechanism,
    /// Unprivileged user and mount namespaces (they mount protected paths read-only
    /// and mask `deny_read` paths).
    pub user_namespaces: Mechanism,
    /// A TCP listener on 127.0.0.1, where `network: {allow: …}` runs its egress proxy.
    pub loopback_listener: Mechanism,
}

/// One rule of a policy, the mechanism that enforces it, and whether this kernel has
/// that mechanism.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleSupport {
    /// The rule, as the policy states it (`file system: workspace-write`).
    pub rule: String,
    /// The mechanism (`Landlock ABI 6 (found 7)`).
    pub mechanism: String,
    /// Whether this kernel enforces it.
    pub enforced: bool,
}

impl KernelSupport {
    /// Whether the kernel's Landlock ABI is at least [`REQUIRED_LANDLOCK_ABI`].
    pub fn landlock_ok(&self) -> bool {
        self.landlock_abi
            .is_some_and(|abi| abi >= REQUIRED_LANDLOCK_ABI)
    }

    fn landlock(&self) -> String {
        match self.landlock_abi {
            Some(abi) => format!("Landlock ABI {REQUIRED_LANDLOCK_ABI} (found {abi})"),
            None => format!("Landlock ABI {REQUIRED_LANDLOCK_ABI} (Landlock is not enabled)"),
        }
    }

    /// The rules of `policy` and whether this kernel enforces each; empty for a policy
    /// that is off. Every restricting policy needs the whole Landlock rule set (its
    /// scopes keep the host's signals and abstract sockets out of reach) and seccomp.
    pub fn rules(&self, policy: &SandboxPolicy) -> Vec<RuleSupport> {
        if policy.is_off() {
            return Vec::new();
        }
        let landlock = (self.landlock(), self.landlock_ok());
        let seccomp = ("seccomp".to_owned(), self.seccomp.available);
        let mut rules = Vec::new();
        let mut push = |rule: String, (mechanism, enforced): (String, bool)| {
            rules.push(RuleSupport {
                rule,
                mechanism,
                enforced,
            });
        };
        if policy.filesystem != FilesystemAccess::Off {
            push(
                format!("file system: {}", policy.filesystem.as_str()),
                landlock.clone(),
            );
            push(
                "deny_read paths masked, protected paths read-only".to_owned(),
                (
                    "user and mount namespaces".to_owned(),
                    self.user_namespaces.available,
                ),
            );
        }
        match &policy.network {
            NetworkAccess::On => {}
            NetworkAccess::Off => {
                push(
                    "network off: no TCP connect or bind".to_owned(),
                    landlock.clone(),
                );
                push(
                    "network off: no UDP, Unix, raw or packet socket".to_owned(),
                    seccomp.clone(),
                );
            }
            NetworkAccess::Allow(domains) => {
                push(
                    "network allow: TCP only to the egress proxy's port".to_owned(),
                    landlock.clone(),
                );
                push(
                    "network allow: no UDP, Unix, raw or packet socket".to_owned(),
                    seccomp.clone(),
                );
                push(
                    format!(
                        "network allow: the proxy admits only {}",
                        domains.join(", ")
                    ),
                    (
                        "egress proxy on 127.0.0.1".to_owned(),
                        self.loopback_listener.available,
                    ),
                );
            }
        }
        push(
            "no signal to or abstract socket of the host".to_owned(),
            landlock,
        );
        push(
            "no ptrace, namespaces, mounts, bpf, keyrings or io_uring".to_owned(),
            seccomp,
        );
        rules
    }

    /// What this kernel lacks for `policy`, as the `COMMAND_SANDBOX_UNAVAILABLE`
    /// message names it; `None` when every rule is enforced.
    pub fn missing(&self, policy: &SandboxPolicy) -> Option<String> {
        let missing: Vec<String> = self
            .rules(policy)
            .into_iter()
            .filter(|r| !r.enforced)
            .map(|r| r.mechanism)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        (!missing.is_empty()).then(|| {
            SandboxError::unavailable(format!("this kernel lacks {}", missing.join(", ")))
                .to_string()
        })
    }
}

/// Runs `helper` with [`PROBE_MARKER`] and reads what it found. Blocking (one short
/// process).
pub fn probe_kernel(helper: &Path) -> Result<KernelSupport, SandboxError> {
    let output = Command::new(helper)
        .arg(PROBE_MARKER)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| {
            SandboxError::unavailable(format!(
                "cannot start the helper `{}`: {e}",
                helper.display()
            ))
        })?;
    serde_json::from_slice(&output.stdout).map_err(|e| {
        SandboxError::unavailable(format!(
            "the helper `{}` did not answer the probe ({}; {e}): {}",
            helper.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    })
}

/// The probe, in the helper process (which exits right after).
#[cfg(target_os = "linux")]
pub(crate) fn probe_here() -> KernelSupport {
    use landlock::{ABI, AccessFs, CompatLevel, Compatible, LandlockStatus, Ruleset, RulesetAttr};

    // First, while the process may still open sockets.
    let loopback_listener = match std::net::TcpListener::bind("127.0.0.1:0") {
        Ok(_) => Mechanism::available(),
        Err(e) => Mechanism::missing(format!("cannot listen on 127.0.0.1: {e}")),
    };
    let user_namespaces = match nix::sched::unshare(
        nix::sched::CloneFlags::CLONE_NEWUSER | nix::sched::CloneFlags::CLONE_NEWNS,
    ) {
        Ok(()) => Mechanism::available(),
        Err(e) => Mechanism::missing(format!("unshare: {e}")),
    };
    let seccomp = nix::sys::prctl::set_no_new_privs()
        .map_err(|e| format!("PR_SET_NO_NEW_PRIVS: {e}"))
        .and_then(|()| crate::syscalls::install_probe())
        .map_or_else(Mechanism::missing, |()| Mechanism::available());
    // Best effort on purpose: the status then says which ABI the kernel has.
    let landlock_abi = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::Execute)
        .and_then(|r| r.create())
        .and_then(|r| r.restrict_self())
        .ok()
        .and_then(|status| match status.landlock {
            LandlockStatus::Available {
                effective_abi,
                kernel_abi,
            } => Some(kernel_abi.unwrap_or(effective_abi as i32)),
            LandlockStatus::NotEnabled | LandlockStatus::NotImplemented => None,
        })
        .filter(|abi| *abi > ABI::Unsupported as i32);
    KernelSupport {
        landlock_abi,
        seccomp,
        user_namespaces,
        loopback_listener,
    }
}

/// The probe, on a host without the Linux mechanisms.
#[cfg(not(target_os = "linux"))]
pub(crate) fn probe_here() -> KernelSupport {
    let none = || Mechanism::missing("the command sandbox is implemented for Linux only");
    KernelSupport {
        landlock_abi: None,
        seccomp: none(),
        user_namespaces: none(),
        loopback_listener: none(),
    }
}
