//! The helper's Landlock ruleset: read and execute everywhere, write only the plan's
//! writable directories and `/dev/null`-like devices, TCP bind never and TCP connect
//! only to the proxy's port, and scoping of abstract Unix sockets and signals (the
//! host can be neither signalled nor reached over an abstract socket; ptrace and
//! `/proc/<pid>/mem` of processes outside the domain are refused by Landlock itself).
//!
//! Every right is a hard requirement: a kernel without it fails the call, never a
//! weaker sandbox.

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};

use crate::plan::{HelperPlan, PlanNetwork};
use crate::policy::FilesystemAccess;

/// The ABI whose rights the ruleset uses: file truncation (3), TCP ports (4), device
/// ioctls (5) and scopes (6).
pub(crate) const REQUIRED_ABI: ABI = ABI::V6;

/// Devices every command may write.
const DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];

/// Restricts the current process (and everything it execs) under the plan.
pub(crate) fn restrict(plan: &HelperPlan) -> Result<(), String> {
    let fail = |e: landlock::RulesetError| {
        format!(
            "Landlock ABI {} (Linux 6.12+) is required and this kernel lacks it: {e}",
            REQUIRED_ABI as i32
        )
    };
    let abi = REQUIRED_ABI;
    let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::HardRequirement);
    let fs = plan.filesystem != FilesystemAccess::Off;
    if fs {
        ruleset = ruleset
            .handle_access(AccessFs::from_all(abi))
            .map_err(fail)?;
    }
    if plan.network != PlanNetwork::On {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(fail)?;
    }
    ruleset = ruleset
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(fail)?;
    let mut created = ruleset.create().map_err(fail)?;
    if fs {
        created = created
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
            .map_err(fail)?
            .add_rules(path_beneath_rules(
                DEVICES,
                AccessFs::ReadFile | AccessFs::WriteFile,
            ))
            .map_err(fail)?
            .add_rules(path_beneath_rules(&plan.writable, AccessFs::from_all(abi)))
            .map_err(fail)?;
    }
    if let PlanNetwork::Proxy { port } = plan.network {
        created = created
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(fail)?;
    }
    let status = created.restrict_self().map_err(fail)?;
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err(format!(
            "Landlock did not fully enforce the ruleset ({:?})",
            status.ruleset
        ));
    }
    Ok(())
}

// What `iris check` reports as needed is what the ruleset asks for.
const _: () = assert!(REQUIRED_ABI as i32 == crate::support::REQUIRED_LANDLOCK_ABI);
