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
    probe: Probe,
}

/// What the kernel probe gave.
#[derive(Debug)]
enum Probe {
    /// The policy restricts nothing: nothing to probe.
    Off,
    /// The helper answered.
    Answered(KernelSupport),
    /// The helper could not be run (the message names why, with the opt-outs).
    Failed(String),
}

impl SandboxCheck {
    /// Probes the kernel for the policy of `loaded`'s native commands; `None` in Docker
    /// mode or when the agent runs no command (`commands` says whether the assembly
    /// started a command service).
    pub(super) async fn probe(loaded: &LoadedConfig, commands: bool) -> Option<Self> {
        // The exec tools count even when the assembly failed (on the sandbox itself).
        let commands = commands
            || loaded
                .config
                .tools
                .builtin
                .iter()
                .any(|key| key.needs_command_service());
        let config = match &loaded.config.command {
            Some(config) => config.clone(),
            None if commands => Default::default(),
            None => return None,
        };
        if config.docker_config().is_some() {
            return None;
        }
        let policy = config.sandbox;
        let probe = if policy.is_off() {
            Probe::Off
        } else {
            let answer = tokio::task::spawn_blocking(|| {
                iris_sandbox::locate_helper(None)
                    .and_then(|helper| iris_sandbox::probe_kernel(&helper))
                    .map_err(|e| e.to_string())
            })
            .await
            .unwrap_or_else(|e| Err(format!("the probe failed: {e}")));
            match answer {
                Ok(support) => Probe::Answered(support),
                Err(why) => Probe::Failed(why),
            }
        };
        Some(Self { policy, probe })
    }

    fn rules(&self) -> Vec<RuleSupport> {
        match &self.probe {
            Probe::Answered(support) => support.rules(&self.policy),
            Probe::Off | Probe::Failed(_) => Vec::new(),
        }
    }

    /// The `COMMAND_SANDBOX_UNAVAILABLE` hint when something is missing.
    fn missing(&self) -> Option<String> {
        match &self.probe {
            Probe::Off => None,
            Probe::Answered(support) => support.missing(&self.policy),
            Probe::Failed(why) => Some(why.clone()),
        }
    }

    /// The human lines.
    pub(super) fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        match &self.probe {
            Probe::Off => {
                return vec![
                    "sandbox: off (command.sandbox is filesystem: off, network: on): native commands run unrestricted".to_owned(),
                ];
            }
            Probe::Answered(support) => lines.push(format!(
                "sandbox: Landlock ABI {} (needs {}), seccomp {}, user namespaces {}",
                support
                    .landlock_abi
                    .map_or_else(|| "missing".to_owned(), |abi| abi.to_string()),
                iris_sandbox::REQUIRED_LANDLOCK_ABI,
                yes_no(support.seccomp.available),
                yes_no(support.user_namespaces.available),
            )),
            Probe::Failed(_) => lines.push("sandbox: the kernel could not be probed".to_owned()),
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
        let kernel = match &self.probe {
            Probe::Answered(s) => Some(s),
            Probe::Off | Probe::Failed(_) => None,
        }
        .map(|s| {
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
            "off": matches!(self.probe, Probe::Off),
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
