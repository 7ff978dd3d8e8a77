//! `iris check`'s sandbox block: which rules of the agent's `command.sandbox` this
//! kernel enforces, and with which mechanism (Landlock ABI found against the ABI
//! needed, seccomp, user namespaces, the egress proxy for `network: {allow: …}`).
//!
//! Shown when the agent runs native commands (a `command` section, an exec tool, or
//! a command service the assembly started). Docker mode has no block: the container is the
//! boundary there.

use iris_runner::LoadedConfig;
use iris_sandbox::{KernelSupport, RuleSupport, SandboxPolicy};
use serde_json::{Value, json};

/// What the block says.
#[derive(Debug)]
pub(super) struct SandboxCheck {
    policy: SandboxPolicy,
    /// The probe's answer, or why the helper could not be run.
    support: Result<KernelSupport, String>,
}

impl SandboxCheck {
    /// Probes the kernel for the policy of `loaded`'s native commands; `None` in Docker
    /// mode or when the agent runs no command (`commands` says whether the assembly
    /// started a command service).
    pub(super) async fn probe(loaded: &LoadedConfig, commands: bool) -> Option<Self> {
        use iris_runner::config::BuiltinKey as K;
        // The exec tools count even when the assembly failed (on the sandbox itself).
        let commands = commands
            || loaded
                .config
                .tools
                .builtin
                .iter()
                .any(|key| matches!(key, K::ExecCommand | K::ExecPython | K::ExecToolScript));
        let config = match &loaded.config.command {
            Some(config) => config.clone(),
            None if commands => Default::default(),
            None => return None,
        };
        if config.docker_config().is_some() {
            return None;
        }
        let policy = config.sandbox;
        let support = if policy.is_off() {
            Err(String::new())
        } else {
            tokio::task::spawn_blocking(|| {
                iris_sandbox::locate_helper(None)
                    .and_then(|helper| iris_sandbox::probe_kernel(&helper))
                    .map_err(|e| e.to_string())
            })
            .await
            .unwrap_or_else(|e| Err(format!("the probe failed: {e}")))
        };
        Some(Self { policy, support })
    }

    fn rules(&self) -> Vec<RuleSupport> {
        self.support
            .as_ref()
            .map(|s| s.rules(&self.policy))
            .unwrap_or_default()
    }

    /// The `COMMAND_SANDBOX_UNAVAILABLE` hint when something is missing.
    fn missing(&self) -> Option<String> {
        if self.policy.is_off() {
            return None;
        }
        match &self.support {
            Ok(support) => support.missing(&self.policy),
            Err(e) => Some(e.clone()),
        }
    }

    /// The human lines.
    pub(super) fn lines(&self) -> Vec<String> {
        if self.policy.is_off() {
            return vec![
                "sandbox: off (command.sandbox is filesystem: off, network: on): native commands run unrestricted".to_owned(),
            ];
        }
        let mut lines = Vec::new();
        match &self.support {
            Ok(support) => lines.push(format!(
                "sandbox: Landlock ABI {} (needs {}), seccomp {}, user namespaces {}",
                support
                    .landlock_abi
                    .map_or_else(|| "missing".to_owned(), |abi| abi.to_string()),
                iris_sandbox::REQUIRED_LANDLOCK_ABI,
                yes_no(support.seccomp.available),
                yes_no(support.user_namespaces.available),
            )),
            Err(_) => lines.push("sandbox: the kernel could not be probed".to_owned()),
        }
        for rule in self.rules() {
            lines.push(format!(
                "  {}  {} [{}]",
                if rule.enforced {
                    "enforced"
                } else {
                    "missing "
                },
                rule.rule,
                rule.mechanism
            ));
        }
        if let Some(missing) = self.missing() {
            lines.push(format!("  error[COMMAND_SANDBOX_UNAVAILABLE]: {missing}"));
        }
        lines
    }

    /// The `sandbox` object of `iris --json check`.
    pub(super) fn json(&self) -> Value {
        let rules: Vec<Value> = self
            .rules()
            .into_iter()
            .map(|r| json!({"rule": r.rule, "mechanism": r.mechanism, "enforced": r.enforced}))
            .collect();
        let kernel = self.support.as_ref().ok().map(|s| {
            json!({
                "landlock_abi": s.landlock_abi,
                "landlock_abi_needed": iris_sandbox::REQUIRED_LANDLOCK_ABI,
                "seccomp": s.seccomp,
                "user_namespaces": s.user_namespaces,
                "loopback_listener": s.loopback_listener,
            })
        });
        json!({
            "policy": self.policy,
            "off": self.policy.is_off(),
            "kernel": kernel,
            "rules": rules,
            "enforced": self.missing().is_none(),
            "missing": self.missing().map(|m| json!({"code": "COMMAND_SANDBOX_UNAVAILABLE", "message": m})),
        })
    }
}

fn yes_no(yes: bool) -> &'static str {
    if yes { "yes" } else { "missing" }
}
