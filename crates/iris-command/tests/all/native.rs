//! The shared suite on the native backend, plus what only the host can show.

use iris_command::{CommandConfig, CommandRequest, CommandScope, CommandService, CommandStatus};

use crate::support::Backend;

whole_suite!(Backend::Native);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_interpreter_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let service = CommandService::new(CommandConfig::native(), dir.path())
        .unwrap()
        .with_native_python("/nonexistent/python3");
    service.prepare().await.unwrap();
    let err = service
        .execute(
            &CommandScope::default(),
            CommandRequest::python("p", "print(1)", "."),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "COMMAND_UNAVAILABLE");
    assert!(
        err.to_string()
            .contains("`/nonexistent/python3` was not found"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_death_has_no_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let service = CommandService::new(CommandConfig::native(), dir.path()).unwrap();
    service.prepare().await.unwrap();
    let outcome = service
        .execute(
            &CommandScope::default(),
            CommandRequest::shell("k", "kill -9 $$", "."),
        )
        .await
        .unwrap();
    assert_eq!(
        (outcome.status, outcome.exit_code),
        (CommandStatus::Exited, None)
    );
    assert_eq!(outcome.error_info().unwrap().code, "COMMAND_FAILED");
}

/// Whether a host pid is alive (a zombie has died already).
fn alive_on_host(pid: i64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next());
        !matches!(state, Some("Z" | "X"))
    })
}

/// Waits (bounded) until none of the host pids is alive.
async fn assert_dead_on_host(pids: &[i64], what: &str) {
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let alive: Vec<i64> = pids.iter().copied().filter(|p| alive_on_host(*p)).collect();
        if alive.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < give_up,
            "{what}: processes {alive:?} survived"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

fn read_pids(dir: &std::path::Path, name: &str) -> Vec<i64> {
    std::fs::read_to_string(dir.join(name))
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

/// The cgroup v2 mount point, from this process's mountinfo.
fn cgroup2_mount() -> std::path::PathBuf {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let line = info
        .lines()
        .find(|l| {
            l.split_once(" - ")
                .is_some_and(|(_, a)| a.starts_with("cgroup2 "))
        })
        .expect("a cgroup2 mount");
    line.split(' ').nth(4).unwrap().into()
}

/// A Python program that leaves the call's process group with `setpgid` only (same
/// session) through a double fork, and prints the sleeper's pid.
const SETPGID_DOUBLE_FORK: &str = r#"import os, time
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    if os.fork() == 0:
        os.close(r)
        os.write(w, b"%d\n" % os.getpid())
        os.close(w)
        time.sleep(300)
    os._exit(0)
os.close(w)
print(os.read(r, 64).decode().strip(), flush=True)
os.waitpid(pid, 0)
"#;

/// With a cgroup per call (forced, so a host without a writable cgroup v2 fails here
/// rather than silently testing the fallback): each call has its own cgroup, removed
/// after it; escapes that stay in the session (`set -m` jobs, `setpgid` double forks)
/// die with the call; and a short call's detached process dies when the short call
/// returns even while a longer call runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_call_runs_in_a_cgroup_that_holds_every_escape() {
    use iris_command::ProcessContainment;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    // The sandbox is off: the commands below create cgroups under /sys/fs/cgroup, which
    // a sandboxed command may not write.
    let config = CommandConfig::native().with_sandbox(iris_command::SandboxPolicy::off());
    let service = CommandService::new(config, &root)
        .unwrap()
        .with_process_containment(ProcessContainment::Cgroup);
    service.prepare().await.unwrap_or_else(|e| {
        panic!("{e}: this test needs a writable cgroup v2 hierarchy (run the suite as root, or in a delegated cgroup)")
    });
    assert_eq!(
        service.process_containment(),
        Some(ProcessContainment::Cgroup)
    );
    let scope = CommandScope::new("run-cg", "s-cg");
    let run = |name: &'static str, command: &'static str| {
        let service = service.clone();
        let scope = scope.clone();
        async move {
            service
                .execute(
                    &scope,
                    CommandRequest::shell(name, command, ".").timeout_seconds(60.0),
                )
                .await
                .unwrap()
        }
    };

    // Own cgroups, removed after the call.
    let first = run("cg1", "cat /proc/self/cgroup").await;
    let second = run("cg2", "cat /proc/self/cgroup").await;
    let path = |o: &iris_command::CommandOutcome| {
        o.stdout
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .unwrap_or_else(|| panic!("no cgroup v2 line in {o:?}"))
            .to_owned()
    };
    let (a, b) = (path(&first), path(&second));
    assert!(
        a.contains("/iris-command.") && b.contains("/iris-command."),
        "{a} {b}"
    );
    assert_ne!(a, b);
    let mount = cgroup2_mount();
    for cg in [&a, &b] {
        assert!(
            !mount.join(cg.trim_start_matches('/')).exists(),
            "{cg} was not removed"
        );
    }

    // A child cgroup made inside the call's (as an Iris run as a command makes) goes
    // with it.
    let nested = service
        .execute(
            &scope,
            CommandRequest::shell(
                "nested",
                format!(
                    "d=$(sed -n 's/^0:://p' /proc/self/cgroup); mkdir '{}'\"$d\"/inner && echo \"$d\"",
                    mount.display()
                ),
                ".",
            ),
        )
        .await
        .unwrap();
    assert!(nested.success(), "{nested:?}");
    let nested_dir = mount.join(nested.stdout.trim().trim_start_matches('/'));
    assert!(
        !nested_dir.exists(),
        "{} was not removed",
        nested_dir.display()
    );

    // Escapes that stay in the session.
    let jobs = run(
        "jobs",
        "sh -c 'set -m; sleep 300 & echo $! > job-escape'; echo ok",
    )
    .await;
    assert!(jobs.success(), "{jobs:?}");
    assert_dead_on_host(&read_pids(&root, "job-escape"), "a `set -m` job").await;
    let py = service
        .execute(
            &scope,
            CommandRequest::python("pgid", SETPGID_DOUBLE_FORK, "."),
        )
        .await
        .unwrap();
    assert!(py.success(), "{py:?}");
    assert_dead_on_host(
        &[py.stdout.trim().parse().unwrap()],
        "a setpgid double fork",
    )
    .await;

    // Exact under concurrency: the short call's detached process dies at its end.
    let long = tokio::spawn(run(
        "long",
        "setsid sleep 300 & echo $! > long-detached; touch long-ready; sleep 300",
    ));
    while !root.join("long-ready").exists() {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let short = run(
        "short",
        "setsid sleep 300 & echo $! > short-detached; echo done",
    )
    .await;
    assert!(short.success(), "{short:?}");
    assert_dead_on_host(&read_pids(&root, "short-detached"), "the short call's").await;
    let long_pids = read_pids(&root, "long-detached");
    assert!(
        alive_on_host(long_pids[0]),
        "the long call's detached process was killed"
    );
    service.close().await.unwrap();
    let outcome = long.await.unwrap();
    assert_eq!(outcome.status, CommandStatus::EnvironmentInterrupted);
    assert_dead_on_host(&long_pids, "the long call's").await;
}

/// The parent-death backstop: when the host process is killed outright (SIGKILL, so no
/// handler and no `close` runs), the running call's leader dies with it. The host is
/// this test re-run as a child process, which the parent kills.
#[test]
fn a_call_leader_dies_with_the_host_process() {
    const TEST: &str = "native::a_call_leader_dies_with_the_host_process";
    if crate::support::in_child() {
        let dir = std::env::var_os("COMMAND_TEST_WORKSPACE").unwrap();
        crate::support::child_runtime().block_on(async {
            let service = CommandService::new(CommandConfig::native(), &dir).unwrap();
            service.prepare().await.unwrap();
            let _ = service
                .execute(
                    &CommandScope::default(),
                    CommandRequest::shell(
                        "leader",
                        "echo $$ > leader.tmp && mv leader.tmp leader.pid && exec sleep 300",
                        ".",
                    ),
                )
                .await;
        });
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut host = crate::support::child_command(
        TEST,
        &[("COMMAND_TEST_WORKSPACE", dir.path().to_str().unwrap())],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let pid_file = dir.path().join("leader.pid");
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !pid_file.exists() {
        assert!(
            host.try_wait().unwrap().is_none(),
            "the host process ended before the call started"
        );
        assert!(
            std::time::Instant::now() < give_up,
            "the call never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let leader: i64 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive_on_host(leader));
    host.kill().unwrap();
    host.wait().unwrap();
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while alive_on_host(leader) {
        assert!(
            std::time::Instant::now() < give_up,
            "the call's leader {leader} survived the host process"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
