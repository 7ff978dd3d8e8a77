//! The helper: a process that restricts itself and then becomes the command.
//!
//! Invoked as `<binary> --iris-sandbox-helper <plan JSON> <program> [args…]`, it
//!
//! 0. when it is the call's first process (the plan names the host as `parent`): asks
//!    for `SIGKILL` when the host dies, and with a [`crate::Gate`] waits for the host's
//!    line on stdin (sent once the helper is in the call's cgroup) — the work of
//!    `setpriv --pdeathsig KILL` and a gate shell, without two more `exec`s;
//! 1. connects the plan's channel (a Unix socket of the host) and keeps those
//!    descriptors open across `exec`, named in the channel's variable;
//! 2. when the plan protects or masks paths: enters new user and mount namespaces and
//!    mounts them ([`crate::mounts`]);
//! 3. sets `PR_SET_NO_NEW_PRIVS`;
//! 4. applies the Landlock ruleset ([`crate::ruleset`]);
//! 5. installs the seccomp filters ([`crate::syscalls`]);
//! 6. `exec`s the program, which inherits every restriction, as does everything it
//!    starts.
//!
//! Without a program it stops after step 5 and exits 0: the host's check that the
//! kernel enforces the plan. Invoked as `<binary> --iris-sandbox-probe`, it tries each
//! mechanism instead and prints a [`crate::KernelSupport`] as JSON. Any failure prints one line starting with
//! [`HELPER_ERROR_PREFIX`] and exits with [`HELPER_FAILED_EXIT`]; nothing of the
//! command runs.

use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::plan::{HELPER_ERROR_PREFIX, HELPER_FAILED_EXIT, HELPER_MARKER, HelperPlan};

/// Set once this process's `main` called [`run_helper_if_invoked`]: its own binary can
/// then serve as the helper.
static SELF_HELPER: AtomicBool = AtomicBool::new(false);

/// Whether this binary declared itself a helper (see [`run_helper_if_invoked`]).
pub(crate) fn binary_is_helper() -> bool {
    SELF_HELPER.load(Ordering::Relaxed)
}

/// Call first thing in `main` (before any thread starts): when the process was
/// invoked as the sandbox helper, it restricts itself and becomes the command (this
/// function does not return); otherwise it returns at once, and the binary now
/// serves as its own helper, so hosts need no separate `iris-sandbox` binary.
///
/// ```no_run
/// // The first statement of `main`:
/// iris_sandbox::run_helper_if_invoked();
/// ```
pub fn run_helper_if_invoked() {
    SELF_HELPER.store(true, Ordering::Relaxed);
    let mut args = std::env::args_os().skip(1);
    let first = args.next();
    if first.as_deref() == Some(std::ffi::OsStr::new(crate::support::PROBE_MARKER)) {
        let support = crate::support::probe_here();
        println!("{}", serde_json::to_string(&support).unwrap_or_default());
        std::process::exit(0);
    }
    if first.as_deref() != Some(std::ffi::OsStr::new(HELPER_MARKER)) {
        return;
    }
    let error = match run(args.collect()) {
        Ok(()) => std::process::exit(0),
        Err(e) => e,
    };
    eprintln!("{HELPER_ERROR_PREFIX}{error}");
    std::process::exit(HELPER_FAILED_EXIT);
}

/// Applies the plan in `args[0]` and execs `args[1..]`; returns `Ok` only for a check
/// without a program.
fn run(args: Vec<OsString>) -> Result<(), String> {
    let (plan, command) = args
        .split_first()
        .ok_or_else(|| "no plan was given".to_owned())?;
    let plan: HelperPlan = serde_json::from_str(&plan.to_string_lossy())
        .map_err(|e| format!("the plan is not valid: {e}"))?;
    apply_and_exec(&plan, command)
}

#[cfg(target_os = "linux")]
fn apply_and_exec(plan: &HelperPlan, command: &[OsString]) -> Result<(), String> {
    use std::os::unix::process::CommandExt as _;

    if let Some(parent) = plan.parent {
        nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
            .map_err(|e| format!("PR_SET_PDEATHSIG failed: {e}"))?;
        if u32::try_from(nix::unistd::getppid().as_raw()).ok() != Some(parent) {
            // The host died before the signal was asked for: nobody is waiting.
            std::process::exit(crate::plan::GATE_CLOSED_EXIT);
        }
    }
    // Opened before the restrictions, for a gate whose command gets no stdin.
    let null_stdin = match plan.gate {
        Some(crate::plan::Gate::NullStdin) => Some(
            std::fs::File::open("/dev/null").map_err(|e| format!("cannot open /dev/null: {e}"))?,
        ),
        _ => None,
    };
    let channel = match &plan.channel {
        Some(channel) => Some((channel.env.clone(), connect_channel(channel)?)),
        None => None,
    };
    if plan.needs_namespaces() {
        crate::mounts::isolate(plan)?;
    }
    nix::sys::prctl::set_no_new_privs().map_err(|e| format!("PR_SET_NO_NEW_PRIVS failed: {e}"))?;
    crate::ruleset::restrict(plan)?;
    crate::syscalls::install(plan)?;
    let Some((program, rest)) = command.split_first() else {
        return Ok(());
    };
    if plan.gate.is_some() && !gate_opened() {
        std::process::exit(crate::plan::GATE_CLOSED_EXIT);
    }
    let mut exec = std::process::Command::new(program);
    exec.args(rest);
    if let Some(null) = null_stdin {
        exec.stdin(null);
    }
    if let Some((name, fds)) = channel {
        exec.env(name, fds);
    }
    let error = exec.exec();
    Err(format!(
        "cannot run `{}`: {error}",
        program.to_string_lossy()
    ))
}

#[cfg(not(target_os = "linux"))]
fn apply_and_exec(_plan: &HelperPlan, _command: &[OsString]) -> Result<(), String> {
    Err("the command sandbox is implemented for Linux only".to_owned())
}

/// Waits for one line on stdin, read from the descriptor a byte at a time (never
/// through `std::io::Stdin`'s buffer), so nothing after it — the command's own stdin —
/// is consumed; `false` when stdin ends first.
#[cfg(target_os = "linux")]
fn gate_opened() -> bool {
    use std::os::fd::AsFd as _;
    let stdin = std::io::stdin();
    let mut byte = [0u8; 1];
    loop {
        match nix::unistd::read(stdin.as_fd(), &mut byte) {
            Ok(1) if byte[0] == b'\n' => return true,
            Ok(1) => {}
            Err(nix::errno::Errno::EINTR) => {}
            _ => return false,
        }
    }
}

/// Opens the channel's connections, each kept open across `exec`; returns their
/// descriptors, comma-separated.
#[cfg(target_os = "linux")]
fn connect_channel(channel: &crate::plan::ChannelPlan) -> Result<String, String> {
    use nix::fcntl::{FcntlArg, FdFlag, fcntl};
    use std::os::fd::IntoRawFd as _;

    let mut fds = Vec::with_capacity(channel.count);
    for _ in 0..channel.count {
        let stream = std::os::unix::net::UnixStream::connect(&channel.path).map_err(|e| {
            format!(
                "cannot connect the channel `{}`: {e}",
                channel.path.display()
            )
        })?;
        fcntl(&stream, FcntlArg::F_SETFD(FdFlag::empty()))
            .map_err(|e| format!("cannot keep the channel open: {e}"))?;
        // The descriptor now belongs to the command this process becomes.
        fds.push(stream.into_raw_fd().to_string());
    }
    Ok(fds.join(","))
}
