//! Tests for the `permission` area: `DefaultPermissionPolicy` over every capability
//! combination and mode, auto-allowed built-ins (`ToolDefinition::auto_allow` /
//! `Tool::is_auto_allowed`), MCP trust, and path-escape denial; plus the serialized
//! shape of decisions.
// Tests report failures by panicking, so unwrap is the clearest assertion here.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use iris_executor::{
    ApprovalMode, DefaultPermissionPolicy, PermissionDecision, PermissionEffect, PermissionPolicy,
    WorkspacePolicy,
};
use iris_tools_core::{
    BoxFuture, Tool, ToolCapability as C, ToolDefinition, ToolExecutionContext, ToolInput,
    ToolOutput,
};
use serde_json::{Value, json};

/// The kind of a decision, without its reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    Allow,
    Deny,
    Human,
}

const MODES: [ApprovalMode; 3] = [
    ApprovalMode::Allow,
    ApprovalMode::Confirm,
    ApprovalMode::Deny,
];

fn effect_of(mode: ApprovalMode) -> Effect {
    match mode {
        ApprovalMode::Allow => Effect::Allow,
        ApprovalMode::Confirm => Effect::Human,
        ApprovalMode::Deny => Effect::Deny,
    }
}

/// The default policy's rule for an ordinary tool (not auto-allowed, capability-derived
/// read-only), written independently of the implementation:
/// "execute is decided first; plain read-only is allowed automatically; pure
/// read/write follows write_mode; everything else asks for confirmation".
fn seed_expectation(
    caps: &BTreeSet<C>,
    write_mode: ApprovalMode,
    execute_mode: ApprovalMode,
) -> Effect {
    let only = |allowed: &[C]| caps.iter().all(|c| allowed.contains(c));
    if caps.contains(&C::Execute) {
        effect_of(execute_mode)
    } else if only(&[C::Read]) {
        Effect::Allow
    } else if only(&[C::Read, C::Write]) {
        effect_of(write_mode)
    } else {
        Effect::Human
    }
}

/// How a tool under test claims to be an auto-allowed built-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Auto {
    /// Not at all.
    No,
    /// `ToolDefinition::with_auto_allow(true)` (web, discovery, memory, subagent).
    Definition,
    /// An override of `Tool::is_auto_allowed`, the definition flag left off.
    Override,
    /// Only the retired `metadata["iris.permission_class"]` marker, which no longer
    /// means anything.
    LegacyMarker,
}

/// One tool under test.
#[derive(Debug, Clone, Copy)]
struct Spec {
    caps: &'static [C],
    auto: Auto,
    /// An override of `Tool::is_read_only` (the MCP layer's trust decision).
    read_only: Option<bool>,
}

impl Spec {
    const fn caps(caps: &'static [C]) -> Self {
        Self {
            caps,
            auto: Auto::No,
            read_only: None,
        }
    }
    /// An auto-allowed built-in, through its definition.
    const fn auto(self) -> Self {
        self.auto_by(Auto::Definition)
    }
    const fn auto_by(mut self, auto: Auto) -> Self {
        self.auto = auto;
        self
    }
    const fn read_only(mut self, yes: bool) -> Self {
        self.read_only = Some(yes);
        self
    }
}

/// A tool whose flags the test sets.
struct Probe {
    def: ToolDefinition,
    read_only: Option<bool>,
    auto_allowed: Option<bool>,
}

impl Tool for Probe {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    fn run<'a>(&'a self, _: ToolInput, _: &'a ToolExecutionContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async { ToolOutput::text("") })
    }

    fn is_read_only(&self) -> bool {
        let def = &self.def;
        self.read_only.unwrap_or_else(|| {
            !(def.has(C::Write)
                || def.has(C::Execute)
                || def.has(C::Network)
                || def.has(C::Mcp)
                || def.has(C::Agent))
        })
    }

    fn is_auto_allowed(&self) -> bool {
        self.auto_allowed.unwrap_or(self.def.auto_allow)
    }
}

fn make_tool(
    name: &str,
    caps: impl IntoIterator<Item = C>,
    auto: Auto,
    read_only: Option<bool>,
) -> Box<dyn Tool> {
    let mut def = ToolDefinition::new(
        name,
        "A tool under a permission test.",
        json!({"type": "object"}),
    )
    .with_capabilities(caps);
    let mut auto_allowed = None;
    match auto {
        Auto::No => {}
        Auto::Definition => def = def.with_auto_allow(true),
        Auto::Override => auto_allowed = Some(true),
        Auto::LegacyMarker => def = def.with_metadata("iris.permission_class", "web"),
    }
    Box::new(Probe {
        def,
        read_only,
        auto_allowed,
    })
}

fn policy(write_mode: ApprovalMode, execute_mode: ApprovalMode) -> DefaultPermissionPolicy {
    DefaultPermissionPolicy::new()
        .write_mode(write_mode)
        .execute_mode(execute_mode)
}

/// Checks one decision: its effect, and that a deny or require-human reason is one line
/// naming the tool in backticks. Returns the mismatch as text.
fn check(
    label: &str,
    tool: &dyn Tool,
    decision: &PermissionDecision,
    expect: Effect,
) -> Result<(), String> {
    let got = match decision.effect {
        PermissionEffect::Allow => Effect::Allow,
        PermissionEffect::Deny { .. } => Effect::Deny,
        PermissionEffect::RequireHuman { .. } => Effect::Human,
    };
    if got != expect {
        return Err(format!("{label}: expected {expect:?}, got {decision:?}"));
    }
    let name = format!("`{}`", tool.definition().name);
    match decision.reason() {
        Some(reason) if !reason.contains(&name) => {
            Err(format!("{label}: reason {reason:?} does not name {name}"))
        }
        Some(reason) if reason.contains('\n') => {
            Err(format!("{label}: reason {reason:?} is not one line"))
        }
        _ => Ok(()),
    }
}

fn assert_no_failures(failures: &[String], total: usize) {
    assert!(
        failures.is_empty(),
        "{} of {total} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// All 64 subsets of the six capabilities, as sets.
fn all_capability_sets() -> Vec<BTreeSet<C>> {
    (0u32..64)
        .map(|mask| {
            C::ALL
                .into_iter()
                .enumerate()
                .filter(|(bit, _)| mask & (1 << bit) != 0)
                .map(|(_, c)| c)
                .collect()
        })
        .collect()
}

fn set_name(caps: &BTreeSet<C>) -> String {
    if caps.is_empty() {
        "none".to_owned()
    } else {
        caps.iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join("+")
    }
}

fn ctx() -> ToolExecutionContext {
    ToolExecutionContext::new(std::env::temp_dir())
}

#[test]
fn every_capability_set_times_every_mode() {
    let mut failures = Vec::new();
    let mut total = 0;
    for caps in all_capability_sets() {
        let tool = make_tool(
            &format!("t_{}", set_name(&caps).replace('+', "_")),
            caps.clone(),
            Auto::No,
            None,
        );
        for write_mode in MODES {
            for execute_mode in MODES {
                total += 1;
                let decision =
                    policy(write_mode, execute_mode).decide(tool.as_ref(), &json!({}), &ctx());
                let label = format!(
                    "{} write={write_mode} execute={execute_mode}",
                    set_name(&caps)
                );
                let expect = seed_expectation(&caps, write_mode, execute_mode);
                failures.extend(check(&label, tool.as_ref(), &decision, expect).err());
            }
        }
    }
    assert_eq!(total, 64 * 3 * 3);
    assert_no_failures(&failures, total);
}

#[test]
fn default_modes_matrix_reads_well() {
    // The 64 decisions under the defaults (confirm/confirm), reasons included, for a
    // reviewer to read in one place.
    let policy = DefaultPermissionPolicy::default();
    let lines: Vec<String> = all_capability_sets()
        .into_iter()
        .map(|caps| {
            let tool = make_tool("t", caps.clone(), Auto::No, None);
            let decision = policy.decide(tool.as_ref(), &json!({}), &ctx());
            let verdict = match &decision.effect {
                PermissionEffect::Allow => "allow".to_owned(),
                PermissionEffect::Deny { reason } => format!("deny: {reason}"),
                PermissionEffect::RequireHuman { reason } => format!("require_human: {reason}"),
            };
            format!("{:<38} {verdict}", set_name(&caps))
        })
        .collect();
    insta::assert_snapshot!("default_modes_matrix", lines.join("\n"));
}

/// A `(write_mode, execute_mode)` pair.
type Modes = (ApprovalMode, ApprovalMode);

/// Auto-allowed built-ins and MCP trust: (label, tool, modes, expected). Rows without
/// modes run under every mode pair with the same expectation.
const AUTO_AND_MCP: &[(&str, Spec, Option<Modes>, Effect)] = {
    use ApprovalMode::{Allow as A, Deny as D};
    &[
        // Auto-allowed built-ins run even with network/agent capabilities.
        (
            "web search",
            Spec::caps(&[C::Network]).auto(),
            None,
            Effect::Allow,
        ),
        (
            "web fetch",
            Spec::caps(&[C::Read, C::Network]).auto(),
            None,
            Effect::Allow,
        ),
        (
            "tool discovery",
            Spec::caps(&[]).auto(),
            None,
            Effect::Allow,
        ),
        (
            "memory search",
            Spec::caps(&[C::Read, C::Network]).auto(),
            None,
            Effect::Allow,
        ),
        (
            "subagent",
            Spec::caps(&[C::Agent]).auto(),
            None,
            Effect::Allow,
        ),
        (
            "subagent with network",
            Spec::caps(&[C::Agent, C::Network]).auto(),
            None,
            Effect::Allow,
        ),
        // Without auto_allow the same tools need a human.
        (
            "network without auto_allow",
            Spec::caps(&[C::Network]),
            None,
            Effect::Human,
        ),
        (
            "agent without auto_allow",
            Spec::caps(&[C::Agent]),
            None,
            Effect::Human,
        ),
        // The retired metadata marker grants nothing; a tool's own override does.
        (
            "legacy permission_class marker",
            Spec::caps(&[C::Network]).auto_by(Auto::LegacyMarker),
            None,
            Effect::Human,
        ),
        (
            "is_auto_allowed override",
            Spec::caps(&[C::Network]).auto_by(Auto::Override),
            None,
            Effect::Allow,
        ),
        (
            "is_auto_allowed override + write",
            Spec::caps(&[C::Network, C::Write]).auto_by(Auto::Override),
            None,
            Effect::Human,
        ),
        // auto_allow never covers writing, and execute is decided first.
        (
            "auto_allow + write",
            Spec::caps(&[C::Network, C::Write]).auto(),
            None,
            Effect::Human,
        ),
        (
            "auto_allow on pure write, write allow",
            Spec::caps(&[C::Write]).auto(),
            Some((A, D)),
            Effect::Allow,
        ),
        (
            "auto_allow on pure write, write deny",
            Spec::caps(&[C::Write]).auto(),
            Some((D, A)),
            Effect::Deny,
        ),
        (
            "auto_allow + execute, execute deny",
            Spec::caps(&[C::Network, C::Execute]).auto(),
            Some((A, D)),
            Effect::Deny,
        ),
        (
            "auto_allow + execute, execute allow",
            Spec::caps(&[C::Network, C::Execute]).auto(),
            Some((D, A)),
            Effect::Allow,
        ),
        // MCP: allowed only when effectively trusted read-only (the MCP layer makes
        // `is_read_only` true only under trust_annotations + readOnlyHint).
        ("mcp untrusted", Spec::caps(&[C::Mcp]), None, Effect::Human),
        (
            "mcp trusted read-only",
            Spec::caps(&[C::Mcp]).read_only(true),
            None,
            Effect::Allow,
        ),
        (
            "mcp+read trusted read-only",
            Spec::caps(&[C::Mcp, C::Read]).read_only(true),
            None,
            Effect::Allow,
        ),
        (
            "mcp+network trusted read-only",
            Spec::caps(&[C::Mcp, C::Network]).read_only(true),
            None,
            Effect::Allow,
        ),
        (
            "mcp explicitly not read-only",
            Spec::caps(&[C::Mcp]).read_only(false),
            None,
            Effect::Human,
        ),
        (
            "mcp+write claiming read-only",
            Spec::caps(&[C::Mcp, C::Write]).read_only(true),
            None,
            Effect::Human,
        ),
        (
            "mcp with auto_allow",
            Spec::caps(&[C::Mcp]).auto(),
            None,
            Effect::Human,
        ),
        (
            "mcp trusted with auto_allow",
            Spec::caps(&[C::Mcp]).auto().read_only(true),
            None,
            Effect::Allow,
        ),
        (
            "mcp+execute, execute allow",
            Spec::caps(&[C::Mcp, C::Execute]).read_only(true),
            Some((D, A)),
            Effect::Allow,
        ),
        (
            "mcp+execute, execute deny",
            Spec::caps(&[C::Mcp, C::Execute]).read_only(true),
            Some((A, D)),
            Effect::Deny,
        ),
        // `is_read_only` overrides on ordinary tools.
        (
            "network tool declared read-only",
            Spec::caps(&[C::Network]).read_only(true),
            None,
            Effect::Allow,
        ),
        (
            "read tool declared not read-only",
            Spec::caps(&[C::Read]).read_only(false),
            None,
            Effect::Human,
        ),
        (
            "no caps declared not read-only",
            Spec::caps(&[]).read_only(false),
            None,
            Effect::Human,
        ),
        (
            "write tool claiming read-only, write deny",
            Spec::caps(&[C::Write]).read_only(true),
            Some((D, A)),
            Effect::Deny,
        ),
        (
            "write tool claiming read-only, write allow",
            Spec::caps(&[C::Write]).read_only(true),
            Some((A, D)),
            Effect::Allow,
        ),
    ]
};

#[test]
fn auto_allow_mcp_trust_and_read_only_overrides() {
    let mut failures = Vec::new();
    let mut total = 0;
    for (i, (label, spec, modes, expect)) in AUTO_AND_MCP.iter().enumerate() {
        let tool = make_tool(
            &format!("tool_{i}"),
            spec.caps.iter().copied(),
            spec.auto,
            spec.read_only,
        );
        let pairs: Vec<Modes> = match modes {
            Some(pair) => vec![*pair],
            None => MODES
                .into_iter()
                .flat_map(|w| MODES.map(|e| (w, e)))
                .collect(),
        };
        for (write_mode, execute_mode) in pairs {
            total += 1;
            let decision =
                policy(write_mode, execute_mode).decide(tool.as_ref(), &json!({}), &ctx());
            let label = format!("{label} (write={write_mode} execute={execute_mode})");
            failures.extend(check(&label, tool.as_ref(), &decision, *expect).err());
        }
    }
    assert_no_failures(&failures, total);
}

/// `auto_allow` is set only in Rust: a definition that arrives as JSON (an MCP
/// server's catalog, a config file) cannot claim it, and it is never written out.
#[test]
fn auto_allow_is_never_read_from_json() {
    let raw = json!({
        "name": "web_search",
        "description": "Search the web.",
        "input_schema": {"type": "object"},
        "capabilities": ["network"],
        "auto_allow": true,
        "metadata": {"iris.permission_class": "web"},
    });
    let def: ToolDefinition = serde_json::from_value(raw).unwrap();
    assert!(!def.auto_allow, "auto_allow is not read from JSON");
    let tool = Probe {
        def: def.clone(),
        read_only: None,
        auto_allowed: None,
    };
    assert!(!tool.is_auto_allowed());
    let decision = DefaultPermissionPolicy::new().decide(&tool, &json!({}), &ctx());
    assert!(decision.requires_human(), "{decision:?}");

    // The same definition built in Rust is auto-allowed; serialized, it loses the flag.
    let built = def.with_auto_allow(true);
    let tool = Probe {
        def: built.clone(),
        read_only: None,
        auto_allowed: None,
    };
    assert!(tool.is_auto_allowed());
    assert!(
        DefaultPermissionPolicy::new()
            .decide(&tool, &json!({}), &ctx())
            .is_allowed()
    );
    let wire = serde_json::to_value(&built).unwrap();
    assert!(wire.get("auto_allow").is_none(), "{wire}");
    let back: ToolDefinition = serde_json::from_value(wire).unwrap();
    assert!(!back.auto_allow);
}

/// `PermissionPolicy::check` (async, path resolution on the blocking pool) decides
/// what `DefaultPermissionPolicy::decide` decides.
#[test]
fn check_agrees_with_decide() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut failures = Vec::new();
    let mut total = 0;
    for caps in all_capability_sets() {
        let tool = make_tool("t", caps.clone(), Auto::No, None);
        for params in [json!({}), json!({"path": "a.txt"}), json!({"cwd": "/"})] {
            for mode in MODES {
                total += 1;
                let policy = policy(mode, mode);
                let sync = policy.decide(tool.as_ref(), &params, &ctx());
                let ctx = ctx();
                let checked = runtime.block_on(policy.check(tool.as_ref(), &params, &ctx));
                if checked != sync {
                    failures.push(format!(
                        "{} {params} mode={mode}: check {checked:?}, decide {sync:?}",
                        set_name(&caps)
                    ));
                }
            }
        }
    }
    assert_no_failures(&failures, total);
}

#[test]
fn builder_and_defaults() {
    let default = DefaultPermissionPolicy::default();
    assert_eq!(default.write_mode, ApprovalMode::Confirm);
    assert_eq!(default.execute_mode, ApprovalMode::Confirm);
    assert_eq!(default.workspace_policy, WorkspacePolicy::new());
    let built = DefaultPermissionPolicy::new()
        .write_mode(ApprovalMode::Allow)
        .execute_mode(ApprovalMode::Deny)
        .workspace_policy(WorkspacePolicy::new());
    assert_eq!(built.write_mode, ApprovalMode::Allow);
    assert_eq!(built.execute_mode, ApprovalMode::Deny);
    for (mode, name) in [
        (ApprovalMode::Allow, "allow"),
        (ApprovalMode::Confirm, "confirm"),
        (ApprovalMode::Deny, "deny"),
    ] {
        assert_eq!(mode.as_str(), name);
        assert_eq!(serde_json::to_value(mode).ok(), Some(json!(name)));
        assert_eq!(
            serde_json::from_value::<ApprovalMode>(json!(name)).ok(),
            Some(mode)
        );
    }
}

#[test]
fn decision_effects_serialize_with_a_tag_and_reason() {
    let decisions = [
        PermissionDecision::allow(),
        PermissionDecision::deny("tool `rm_all` executes programs and execute_mode is `deny`"),
        PermissionDecision::require_human(
            "tool `write_file` writes local state and write_mode is `confirm`",
        ),
    ];
    let flags: Vec<(bool, bool, bool)> = decisions
        .iter()
        .map(|d| (d.is_allowed(), d.is_denied(), d.requires_human()))
        .collect();
    assert_eq!(
        flags,
        [
            (true, false, false),
            (false, true, false),
            (false, false, true)
        ]
    );
    for d in &decisions {
        let round: Option<PermissionDecision> = serde_json::to_value(d)
            .ok()
            .and_then(|v| serde_json::from_value(v).ok());
        assert_eq!(round.as_ref(), Some(d));
    }
    insta::assert_json_snapshot!("decision_effects", decisions);
}

/// Path-escape denial against the shared symlink fixture.
#[cfg(unix)]
mod paths {
    use super::*;
    use crate::support::workspace_fixture;

    /// (label, capabilities, params, write_mode = execute_mode, expected, reason must contain).
    type Row = (
        &'static str,
        &'static [C],
        Value,
        ApprovalMode,
        Effect,
        &'static str,
    );

    fn rows() -> Vec<Row> {
        use ApprovalMode::{Allow as A, Confirm as Q};
        vec![
            (
                "read inside",
                &[C::Read],
                json!({"file_path": "file.txt"}),
                Q,
                Effect::Allow,
                "",
            ),
            (
                "read outside by ..",
                &[C::Read],
                json!({"file_path": "../outside/secret.txt"}),
                A,
                Effect::Deny,
                "`file_path` = `../outside/secret.txt`",
            ),
            (
                "read /etc/passwd",
                &[C::Read],
                json!({"file_path": "/etc/passwd"}),
                A,
                Effect::Deny,
                "/etc/passwd",
            ),
            (
                "list through an escaping symlink",
                &[C::Read],
                json!({"path": "link_outside_dir"}),
                A,
                Effect::Deny,
                "`path` = `link_outside_dir`",
            ),
            (
                "read through a symlink inside",
                &[C::Read],
                json!({"path": "link_dir/nested.txt"}),
                Q,
                Effect::Allow,
                "",
            ),
            (
                "write a new nested file",
                &[C::Write],
                json!({"file_path": "new/deeper/x.txt"}),
                A,
                Effect::Allow,
                "",
            ),
            (
                "write a new file, confirm",
                &[C::Write],
                json!({"file_path": "new.txt"}),
                Q,
                Effect::Human,
                "writes local state",
            ),
            (
                "write via a dangling escaping link",
                &[C::Write],
                json!({"file_path": "dangling_out"}),
                A,
                Effect::Deny,
                "`dangling_out`",
            ),
            (
                "write under an escaping dir",
                &[C::Read, C::Write],
                json!({"file_path": "link_outside_dir/new.txt"}),
                A,
                Effect::Deny,
                "outside the workspace",
            ),
            (
                "exec with cwd outside",
                &[C::Execute],
                json!({"cwd": "/etc"}),
                A,
                Effect::Deny,
                "`cwd` = `/etc`",
            ),
            (
                "exec with cwd inside",
                &[C::Execute],
                json!({"cwd": "dir"}),
                A,
                Effect::Allow,
                "",
            ),
            (
                "second path parameter escapes",
                &[C::Read],
                json!({"file_path": "file.txt", "cwd": ".."}),
                A,
                Effect::Deny,
                "`cwd` = `..`",
            ),
            (
                "escaping path with a newline",
                &[C::Read],
                json!({"path": "../a\nb"}),
                A,
                Effect::Deny,
                "`../a\\nb`",
            ),
            // Not a path-bearing capability: the path is not the policy's business.
            (
                "network tool with an outside path",
                &[C::Network],
                json!({"path": "/etc"}),
                A,
                Effect::Human,
                "network",
            ),
            // Only the three named parameters, only strings.
            (
                "other parameter name",
                &[C::Read],
                json!({"target": "/etc/passwd"}),
                A,
                Effect::Allow,
                "",
            ),
            (
                "non-string path",
                &[C::Read],
                json!({"path": ["/etc"]}),
                A,
                Effect::Allow,
                "",
            ),
            (
                "nested path",
                &[C::Read],
                json!({"opts": {"path": "/etc"}}),
                A,
                Effect::Allow,
                "",
            ),
            // Unusable paths are the tool's INVALID_PATH, not a denial.
            (
                "empty path",
                &[C::Read],
                json!({"path": ""}),
                A,
                Effect::Allow,
                "",
            ),
            (
                "NUL in path",
                &[C::Read],
                json!({"path": "a\u{0}b"}),
                A,
                Effect::Allow,
                "",
            ),
        ]
    }

    #[test]
    fn path_parameters_escaping_the_workspace_are_denied() {
        let fx = workspace_fixture();
        let ctx = ToolExecutionContext::new(&fx.root);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut failures = Vec::new();
        let rows = rows();
        for (i, (label, caps, params, mode, expect, needle)) in rows.iter().enumerate() {
            let tool = make_tool(
                &format!("path_tool_{i}"),
                caps.iter().copied(),
                Auto::No,
                None,
            );
            let decision = policy(*mode, *mode).decide(tool.as_ref(), params, &ctx);
            failures.extend(check(label, tool.as_ref(), &decision, *expect).err());
            // The async form resolves the paths on the blocking pool: same answer.
            let checked = runtime.block_on(policy(*mode, *mode).check(tool.as_ref(), params, &ctx));
            if checked != decision {
                failures.push(format!("{label}: check {checked:?}, decide {decision:?}"));
            }
            if let Some(reason) = decision.reason()
                && !reason.contains(needle)
            {
                failures.push(format!("{label}: reason {reason:?} lacks {needle:?}"));
            }
        }
        assert_no_failures(&failures, rows.len());
    }
}

/// A command tool that asks for a wider sandbox when its input carries `sandbox`.
struct Escalating(ToolDefinition);

impl Tool for Escalating {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }

    fn run<'a>(&'a self, _: ToolInput, _: &'a ToolExecutionContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async { ToolOutput::text("") })
    }

    fn requested_escalation(&self, input: &Value) -> Option<String> {
        input
            .get("sandbox")
            .map(|_| "network: on (policy: off)".to_owned())
    }
}

/// A call that asks for more always waits for a human, whatever `execute_mode` allows,
/// with the widening in the reason; a call that asks for nothing follows the mode; a
/// denying mode or an escaping path still denies (sync and async forms agree).
#[test]
fn an_escalation_always_needs_a_human_unless_denied() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolExecutionContext::new(dir.path());
    let tool = Escalating(
        ToolDefinition::new("run_it", "Run a command.", json!({"type": "object"}))
            .with_capabilities([C::Execute]),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let wide = json!({"command": "true", "sandbox": {"network": "on"}});
    let plain = json!({"command": "true"});
    let escaping = json!({"command": "true", "cwd": "../..", "sandbox": {"network": "on"}});
    // (label, execute_mode, params, expected effect, reason fragment)
    let rows: [(&str, ApprovalMode, &Value, Effect, &str); 7] = [
        (
            "wide, allow",
            ApprovalMode::Allow,
            &wide,
            Effect::Human,
            "asks to widen its sandbox: network: on (policy: off)",
        ),
        (
            "wide, confirm",
            ApprovalMode::Confirm,
            &wide,
            Effect::Human,
            "asks to widen its sandbox: network: on",
        ),
        (
            "wide, deny",
            ApprovalMode::Deny,
            &wide,
            Effect::Deny,
            "execute_mode is `deny`",
        ),
        (
            "plain, allow",
            ApprovalMode::Allow,
            &plain,
            Effect::Allow,
            "",
        ),
        (
            "plain, confirm",
            ApprovalMode::Confirm,
            &plain,
            Effect::Human,
            "execute_mode is `confirm`",
        ),
        (
            "wide, escaping cwd",
            ApprovalMode::Allow,
            &escaping,
            Effect::Deny,
            "resolves outside the workspace",
        ),
        (
            "plain, deny",
            ApprovalMode::Deny,
            &plain,
            Effect::Deny,
            "execute_mode is `deny`",
        ),
    ];
    let mut failures = Vec::new();
    for (label, mode, params, expect, needle) in rows {
        let policy = DefaultPermissionPolicy::new().execute_mode(mode);
        let decision = policy.decide(&tool, params, &ctx);
        failures.extend(check(label, &tool, &decision, expect).err());
        let checked = runtime.block_on(policy.check(&tool, params, &ctx));
        if checked != decision {
            failures.push(format!("{label}: check {checked:?}, decide {decision:?}"));
        }
        if let Some(reason) = decision.reason()
            && !reason.contains(needle)
        {
            failures.push(format!("{label}: reason {reason:?} lacks {needle:?}"));
        }
    }
    assert_no_failures(&failures, rows.len());
}
