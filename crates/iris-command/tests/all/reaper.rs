//! The shared suite on the native backend with the subreaper fallback forced
//! (`ProcessContainment::Reaper`), each test in a child process of its own: becoming a
//! child subreaper is a property of the whole process.

use crate::support::Backend;

whole_suite!(child_suite; Backend::NativeReaper);

/// CI's container starts the tests without a session of their own, so inside its PID
/// namespace the session (and group) leader is outside and the kernel reports id 0.
/// The reaper read its own session through rustix's `getsid`, which asserts a positive
/// id, and every reaper call panicked when its ticket dropped. This re-runs a reaper
/// test in a fresh PID namespace without `setsid` (`unshare --pid --fork`), where the
/// test binary sees session 0 — exactly CI's situation.
#[test]
fn the_reaper_runs_where_the_session_leader_is_outside_the_pid_namespace() {
    if crate::support::in_child() {
        return;
    }
    let exe = std::env::current_exe().expect("test binary");
    let test = "reaper::detached_processes_do_not_outlive_a_call";
    let out = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc"])
        .arg(&exe)
        .args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env(crate::support::CHILD_ENV, test)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("unshare (util-linux) runs; these tests run as root, as in CI");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("1 passed"),
        "the reaper test in a PID namespace with session 0 failed:\n{text}"
    );
}
