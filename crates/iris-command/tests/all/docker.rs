//! The shared suite on the Docker backend (real engine), plus the container's limits and
//! the engine-level failures.

use std::collections::BTreeMap;

use iris_command::{
    CommandConfig, CommandMode, CommandRequest, CommandScope, CommandService, CommandStatus,
    DockerConfig, DockerNetwork,
};

use crate::support::{Backend, Harness};

whole_suite!(Backend::Docker);

fn docker(config: DockerConfig) -> CommandConfig {
    CommandConfig::docker(config)
}

/// Runs `docker <args>` and returns stdout.
fn docker_cli(args: &[&str]) -> String {
    let out = std::process::Command::new("docker")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_are_applied_to_the_container() {
    let config = docker(DockerConfig {
        memory_mb: 256,
        pids_limit: 64,
        cpus: 1.5,
        environment: BTreeMap::from([("DOCKER_TEST_VAR".to_owned(), "from config".to_owned())]),
        ..DockerConfig::default()
    });
    let h = Harness::with_config(Backend::Docker, config).await;
    // (command, expected stdout): the cgroup files say what the kernel enforces
    // (cgroup v2 path first, then v1).
    let table: &[(&str, &str)] = &[
        (
            "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes",
            "268435456\n",
        ),
        (
            "cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max",
            "64\n",
        ),
        (
            "cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo \"$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)\"",
            "150000 100000\n",
        ),
        // network none: nothing but loopback.
        ("ls /sys/class/net", "lo\n"),
        ("echo \"$DOCKER_TEST_VAR\"", "from config\n"),
        // Docker's init is PID 1, so orphans are reaped.
        ("cat /proc/1/comm", "docker-init\n"),
    ];
    for (command, expect) in table {
        let outcome = h.sh(command).await;
        assert_eq!(outcome.exit_code, Some(0), "{command}: {outcome:?}");
        assert_eq!(outcome.stdout, *expect, "{command}");
    }

    // The limits bite: 400 MiB cannot be allocated under 256 MiB without swap ...
    let oom = h
        .service
        .execute(
            &CommandScope::default(),
            CommandRequest::python(
                "oom",
                "b = bytearray(400 * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('survived')",
                ".",
            ),
        )
        .await
        .unwrap();
    assert_eq!(oom.status, CommandStatus::Exited);
    assert_ne!(oom.exit_code, Some(0), "{oom:?}");
    assert!(!oom.stdout.contains("survived"));
    // ... and forking stops below the pids limit.
    let forks = h
        .service
        .execute(
            &CommandScope::default(),
            CommandRequest::python(
                "forks",
                "import os, time\nn = 0\ntry:\n    for _ in range(200):\n        if os.fork() == 0:\n            time.sleep(300)\n            os._exit(0)\n        n += 1\nexcept OSError:\n    pass\nprint(n)",
                ".",
            ),
        )
        .await
        .unwrap();
    let started: u32 = forks
        .stdout
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{forks:?}"));
    assert!(
        started < 64,
        "{started} processes started under pids_limit 64"
    );

    // One long-lived container serves every call, labelled so leftovers can be found.
    let id = h.service.docker_container_id().unwrap();
    let hostname = h.sh("hostname").await.stdout;
    assert!(id.starts_with(hostname.trim()), "{id} vs {hostname}");
    assert_eq!(h.sh("hostname").await.stdout, hostname);
    let labels = docker_cli(&["inspect", "-f", "{{json .Config.Labels}}", &id]);
    let labels: serde_json::Value = serde_json::from_str(&labels).unwrap();
    assert_eq!(labels["io.iris.command"], "1");
    assert_eq!(
        labels["io.iris.command.workspace"],
        h.root.to_string_lossy().as_ref()
    );
    assert_eq!(
        labels["io.iris.command.owner-pid"],
        std::process::id().to_string()
    );
    let network = docker_cli(&[
        "inspect",
        "-f",
        "{{.HostConfig.NetworkMode}} {{.HostConfig.Init}} {{.HostConfig.MemorySwap}}",
        &id,
    ]);
    assert_eq!(network.trim(), "none true 268435456");
    h.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bridge_network_has_an_interface() {
    let config = docker(DockerConfig {
        network: DockerNetwork::Bridge,
        ..DockerConfig::default()
    });
    let h = Harness::with_config(Backend::Docker, config).await;
    let outcome = h.sh("ls /sys/class/net").await;
    assert!(
        outcome.stdout.lines().any(|l| l.starts_with("eth")),
        "{outcome:?}"
    );
    h.close().await;
}

/// (config, words the COMMAND_UNAVAILABLE message must contain)
async fn check_unavailable(config: CommandConfig, words: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let service = CommandService::new(config, dir.path()).unwrap();
    let err = service.prepare().await.unwrap_err();
    assert_eq!(err.code(), "COMMAND_UNAVAILABLE");
    let message = err.to_string();
    for word in words {
        assert!(message.contains(word), "`{word}` missing from: {message}");
    }
    assert!(!message.contains('\n'), "one line: {message}");
    // No container, no fallback: the service stays Docker and refuses to run.
    assert_eq!(service.docker_container_id(), None);
    assert_eq!(service.mode(), CommandMode::Docker);
    let run = service
        .execute(
            &CommandScope::default(),
            CommandRequest::shell("x", "true", "."),
        )
        .await
        .unwrap_err();
    assert_eq!(run.code(), "COMMAND_UNAVAILABLE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_or_image_missing_is_unavailable() {
    check_unavailable(
        docker(DockerConfig {
            endpoint: Some("unix:///nonexistent/docker.sock".into()),
            ..DockerConfig::default()
        }),
        &[
            "Docker engine at unix:///nonexistent/docker.sock",
            "start the engine",
            "dockerd",
        ],
    )
    .await;
    check_unavailable(
        docker(DockerConfig {
            image: "iris-command-missing:never".into(),
            ..DockerConfig::default()
        }),
        &[
            "`iris-command-missing:never` does not exist",
            "never pulls or builds",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_container_interrupts_the_call() {
    let h = Harness::new(Backend::Docker).await;
    let service = h.service.clone();
    let running = tokio::spawn(async move {
        service
            .execute(
                &CommandScope::default(),
                CommandRequest::shell("lost", crate::support::tree_script("x"), "."),
            )
            .await
    });
    h.wait_for_file("xready").await;
    let id = h.service.docker_container_id().unwrap();
    docker_cli(&["kill", &id]);
    let outcome = running.await.unwrap().unwrap();
    assert_eq!(
        outcome.status,
        CommandStatus::EnvironmentInterrupted,
        "{outcome:?}"
    );
    assert_eq!(outcome.exit_code, None);
    assert!(
        outcome
            .detail
            .as_deref()
            .is_some_and(|d| d.contains("container")),
        "{outcome:?}"
    );
    // Nothing falls back: later calls report the environment unavailable.
    let err = h
        .service
        .execute(
            &CommandScope::default(),
            CommandRequest::shell("next", "true", "."),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "COMMAND_UNAVAILABLE");
    h.close().await;
}

/// A payload that kills its own wrapper (so the wrapper can neither kill its group nor
/// sweep) still dies with the call: the backend sweeps from a separate exec.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payload_that_kills_its_wrapper_still_dies() {
    let h = Harness::new(Backend::Docker).await;
    let outcome = h
        .sh("sleep 300 </dev/null >/dev/null 2>&1 & echo $! > survivor; kill -9 $PPID")
        .await;
    assert_eq!(outcome.exit_code, Some(137), "{outcome:?}");
    // Checked with the docker CLI, not with another call (whose own wrapper would sweep
    // the orphan).
    let id = h.service.docker_container_id().unwrap();
    let pid = h.pids("survivor")[0];
    let alive = || {
        let out = std::process::Command::new("docker")
            .args(["exec", &id, "cat", &format!("/proc/{pid}/stat")])
            .output()
            .unwrap();
        let stat = String::from_utf8_lossy(&out.stdout).into_owned();
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next());
        out.status.success() && !matches!(state, Some("Z" | "X"))
    };
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while alive() {
        assert!(
            std::time::Instant::now() < give_up,
            "pid {pid} survived its call"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    h.close().await;
}
