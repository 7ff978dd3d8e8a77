//! The helper's seccomp filters: which sockets a command may open, and the system calls
//! no sandboxed command needs (they would let it leave its namespaces, change mounts,
//! inspect other processes or reach kernel attack surface).
//!
//! | rule | `network: off` | `network: {allow}` | `network: on` |
//! |---|---|---|---|
//! | `socket()` | refused | IPv4/IPv6 stream sockets of protocol 0 or TCP only | any |
//! | `socketpair()` | allowed | allowed | allowed |
//! | `sendto`/`sendmsg`/`sendmmsg` with `MSG_FASTOPEN` | refused | refused | allowed |
//!
//! Always refused (`EPERM`): `ptrace`, `process_vm_readv/writev`, `unshare`, `setns`,
//! `clone` with a namespace flag, `mount`, `umount2`, `pivot_root`, `chroot`,
//! `open_tree`, `move_mount`, `fsopen`, `fsconfig`, `fsmount`, `fspick`,
//! `mount_setattr`, `bpf`, `perf_event_open`, `keyctl`, `add_key`, `request_key`,
//! `userfaultfd`, `io_uring_*`, `personality` other than the default or a query,
//! `kexec_*`, module loading, `reboot`, `swapon/off`, `acct`, `open_by_handle_at`,
//! `name_to_handle_at`, `iopl`, `ioperm`, `syslog`, and the terminal-injection ioctls
//! `TIOCSTI` and `TIOCLINUX`. `clone3` answers `ENOSYS` (its flags cannot be inspected),
//! so the C library falls back to `clone`, whose flags can.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::plan::{HelperPlan, PlanNetwork};

type Rules = BTreeMap<i64, Vec<SeccompRule>>;

/// `TIOCSTI`: pushes bytes into a terminal's input, as if typed.
const TIOCSTI: u64 = 0x5412;
/// `TIOCLINUX`: the Linux console's requests, among them pasting a selection.
const TIOCLINUX: u64 = 0x541C;

/// Installs the filters on the current thread (the helper has only one).
pub(crate) fn install(plan: &HelperPlan) -> Result<(), String> {
    install_for(plan.network)
}

/// Installs the `network: off` filters, the strictest: the kernel probe's check that
/// seccomp works here (the probing process exits right after).
pub(crate) fn install_probe() -> Result<(), String> {
    install_for(PlanNetwork::Off)
}

fn install_for(network: PlanNetwork) -> Result<(), String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| format!("seccomp filters are not available on this architecture: {e}"))?;
    let denied = program(rules(network)?, libc::EPERM, arch)?;
    let mut clone3 = Rules::new();
    clone3.insert(libc::SYS_clone3, Vec::new());
    let clone3 = program(clone3, libc::ENOSYS, arch)?;
    for filter in [&clone3, &denied] {
        seccompiler::apply_filter(filter)
            .map_err(|e| format!("cannot install the seccomp filter: {e}"))?;
    }
    Ok(())
}

fn program(rules: Rules, errno: i32, arch: TargetArch) -> Result<BpfProgram, String> {
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno.unsigned_abs()),
        arch,
    )
    .map_err(|e| format!("cannot build the seccomp filter: {e}"))?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| format!("cannot compile the seccomp filter: {e}"))
}

fn cond(
    arg: u8,
    len: SeccompCmpArgLen,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompCondition, String> {
    SeccompCondition::new(arg, len, op, value).map_err(|e| format!("bad seccomp condition: {e}"))
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(|e| format!("bad seccomp rule: {e}"))
}

/// Every rule of the `EPERM` filter: a syscall with no rule listed is refused whatever
/// its arguments; one with rules is refused when any rule matches.
fn rules(network: PlanNetwork) -> Result<Rules, String> {
    use SeccompCmpArgLen::{Dword, Qword};
    use SeccompCmpOp::{Eq, MaskedEq, Ne};
    let mut rules = Rules::new();
    for nr in [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_open_tree,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_userfaultfd,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_acct,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_syslog,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_iopl,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_ioperm,
    ] {
        rules.insert(nr, Vec::new());
    }
    // A new namespace of any kind through clone().
    let namespaces = [
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWNS,
        libc::CLONE_NEWNET,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWCGROUP,
    ];
    let mut clone = Vec::new();
    for flag in namespaces {
        let flag = u64::from(flag.unsigned_abs());
        clone.push(rule(vec![cond(0, Qword, MaskedEq(flag), flag)?])?);
    }
    rules.insert(libc::SYS_clone, clone);
    // personality(): only PER_LINUX and the query 0xffffffff.
    rules.insert(
        libc::SYS_personality,
        vec![rule(vec![
            cond(0, Dword, Ne, 0)?,
            cond(0, Dword, Ne, 0xffff_ffff)?,
        ])?],
    );
    rules.insert(
        libc::SYS_ioctl,
        vec![
            rule(vec![cond(1, Dword, Eq, TIOCSTI)?])?,
            rule(vec![cond(1, Dword, Eq, TIOCLINUX)?])?,
        ],
    );
    match network {
        PlanNetwork::Off => {
            rules.insert(libc::SYS_socket, Vec::new());
        }
        PlanNetwork::Proxy { .. } => {
            let inet = u64::from(libc::AF_INET.unsigned_abs());
            let inet6 = u64::from(libc::AF_INET6.unsigned_abs());
            let mut socket = vec![
                rule(vec![cond(0, Dword, Ne, inet)?, cond(0, Dword, Ne, inet6)?])?,
                // Only TCP: protocol 0 (the default for a stream socket) or IPPROTO_TCP.
                rule(vec![
                    cond(2, Dword, Ne, 0)?,
                    cond(2, Dword, Ne, u64::from(libc::IPPROTO_TCP.unsigned_abs()))?,
                ])?,
            ];
            // Any socket type but SOCK_STREAM (the low four bits; the rest are flags).
            let stream = u64::from(libc::SOCK_STREAM.unsigned_abs());
            for kind in (0..16u64).filter(|k| *k != stream) {
                socket.push(rule(vec![cond(1, Dword, MaskedEq(0xf), kind)?])?);
            }
            rules.insert(libc::SYS_socket, socket);
            let fastopen = u64::from(libc::MSG_FASTOPEN.unsigned_abs());
            for (nr, arg) in [
                (libc::SYS_sendto, 3),
                (libc::SYS_sendmsg, 2),
                (libc::SYS_sendmmsg, 3),
            ] {
                rules.insert(
                    nr,
                    vec![rule(vec![cond(arg, Dword, MaskedEq(fastopen), fastopen)?])?],
                );
            }
        }
        PlanNetwork::On => {}
    }
    Ok(rules)
}

#[cfg(test)]
// Test code: a failed expect is a failed test with its message.
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn every_network_rule_compiles() {
        let arch = TargetArch::try_from(std::env::consts::ARCH).expect("a supported arch");
        for network in [
            PlanNetwork::Off,
            PlanNetwork::Proxy { port: 1 },
            PlanNetwork::On,
        ] {
            let rules = rules(network).expect("rules");
            assert!(rules.contains_key(&libc::SYS_ptrace));
            assert_eq!(
                rules.contains_key(&libc::SYS_socket),
                network != PlanNetwork::On
            );
            program(rules, libc::EPERM, arch).expect("compiles");
        }
    }
}
