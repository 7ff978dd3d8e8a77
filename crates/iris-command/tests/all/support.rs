//! The test harness shared by every module: a workspace, a prepared service of either
//! backend, readiness files and the "which of these pids is still alive" check.
#![allow(dead_code)] // Each module uses a different subset of the helpers.

use std::path::{Path, PathBuf};
use std::time::Duration;

use iris_command::{
    CommandConfig, CommandMode, CommandOutcome, CommandRequest, CommandScope, CommandService,
    DockerConfig, ProcessContainment,
};

/// How to start a Docker engine and build the image, for failure messages.
pub(crate) const DOCKER_HELP: &str = "the Docker tests need a running engine and the \
    iris-command:local image: start the engine with `dockerd > /tmp/dockerd.log 2>&1 &` \
    and build the image with `bash crates/iris-command/docker/build-image.sh --offline`";

/// Bound of every "wait until" loop: generous, since it only matters when a test fails.
const WAIT_LIMIT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(10);

/// Which backend a suite runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    /// Native with the default containment (a cgroup per call where cgroup v2 is
    /// writable, as on the CI machine).
    Native,
    /// Native with the subreaper fallback forced. It makes the whole test process a
    /// child subreaper, so these tests run in a child process of their own
    /// (`child_suite!`).
    NativeReaper,
    Docker,
}

impl Backend {
    /// A config of this backend with every default.
    pub(crate) fn config(self) -> CommandConfig {
        match self {
            Backend::Native | Backend::NativeReaper => CommandConfig::native(),
            Backend::Docker => CommandConfig::docker(DockerConfig::default()),
        }
    }

    pub(crate) fn mode(self) -> CommandMode {
        match self {
            Backend::Native | Backend::NativeReaper => CommandMode::Native,
            Backend::Docker => CommandMode::Docker,
        }
    }

    /// The containment a service of this backend must report once prepared.
    fn containment(self) -> Option<ProcessContainment> {
        match self {
            Backend::NativeReaper => Some(ProcessContainment::Reaper),
            Backend::Native | Backend::Docker => None,
        }
    }
}

/// Set (to the test's name) in the environment of a test re-run as a child process.
pub(crate) const CHILD_ENV: &str = "IRIS_COMMAND_TEST_CHILD";

/// Whether this process is a child started by [`run_in_child`].
pub(crate) fn in_child() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

/// The runtime a child-process test body runs on.
pub(crate) fn child_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The command that re-runs exactly one test of this binary as a child process (with
/// [`CHILD_ENV`] set and the extra variables), for what a test must not do to its own
/// process: set environment variables (unsafe in Rust 2024, and the workspace forbids
/// unsafe code), become a subreaper, or be killed.
pub(crate) fn child_command(test: &str, envs: &[(&str, &str)]) -> std::process::Command {
    let mut command = std::process::Command::new(std::env::current_exe().expect("test binary"));
    command
        .args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, test)
        .envs(envs.iter().copied())
        .stdin(std::process::Stdio::null());
    command
}

/// Runs one test in a child process (see [`child_command`]); fails unless it passed.
/// Returns its output.
pub(crate) fn run_in_child(test: &str, envs: &[(&str, &str)]) -> String {
    let out = child_command(test, envs)
        .output()
        .expect("the child test runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("1 passed"),
        "child test {test} failed:\n{text}"
    );
    text
}

/// A temporary workspace and a prepared service on it.
#[derive(Debug)]
pub(crate) struct Harness {
    pub(crate) backend: Backend,
    /// The canonical workspace root.
    pub(crate) root: PathBuf,
    pub(crate) service: CommandService,
    _dir: tempfile::TempDir,
}

impl Harness {
    /// A prepared service with the backend's default config.
    pub(crate) async fn new(backend: Backend) -> Self {
        Self::with_config(backend, backend.config()).await
    }

    /// A prepared service with the given config. A Docker engine that cannot be
    /// reached fails the test with instructions, never skips it.
    pub(crate) async fn with_config(backend: Backend, config: CommandConfig) -> Self {
        let dir = tempfile::tempdir().expect("temporary workspace");
        let root = dir.path().canonicalize().expect("canonical workspace");
        let mut service = CommandService::new(config, &root).expect("valid config");
        if backend == Backend::NativeReaper {
            assert!(in_child(), "reaper tests run in a child process");
            service = service.with_process_containment(ProcessContainment::Reaper);
        }
        if let Err(e) = service.prepare().await {
            panic!("preparing the {backend:?} command service failed: {e}\n{DOCKER_HELP}");
        }
        if let Some(expected) = backend.containment() {
            assert_eq!(service.process_containment(), Some(expected));
        }
        Self {
            backend,
            root,
            service,
            _dir: dir,
        }
    }

    /// A scope of its own for each call site that needs one.
    pub(crate) fn scope(name: &str) -> CommandScope {
        CommandScope::new(format!("run-{name}"), format!("session-{name}"))
    }

    /// Runs a shell command in the workspace root and returns the outcome.
    pub(crate) async fn sh(&self, command: &str) -> CommandOutcome {
        self.service
            .execute(
                &Self::scope("sh"),
                CommandRequest::shell("call-sh", command, "."),
            )
            .await
            .unwrap_or_else(|e| panic!("`{command}` did not run: {e}"))
    }

    /// Waits (bounded) until a workspace file exists, then returns its content.
    pub(crate) async fn wait_for_file(&self, name: &str) -> String {
        let path = self.root.join(name);
        let give_up = tokio::time::Instant::now() + WAIT_LIMIT;
        loop {
            if let Ok(text) = std::fs::read_to_string(&path) {
                return text;
            }
            assert!(
                tokio::time::Instant::now() < give_up,
                "`{name}` never appeared in the workspace"
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// The pids listed (one per line) in a workspace file.
    pub(crate) fn pids(&self, name: &str) -> Vec<i64> {
        let text = std::fs::read_to_string(self.root.join(name)).expect("pid file");
        text.lines()
            .map(|l| l.trim().parse().expect("a pid per line"))
            .collect()
    }

    /// Which of the pids (in the backend's pid namespace) are alive and not zombies.
    /// Asked outside the service — the host's `/proc`, or `docker exec` for the
    /// container — because a call's own end would sweep detached processes and hide
    /// whether the call under test did.
    pub(crate) async fn alive(&self, pids: &[i64]) -> Vec<i64> {
        let list = pids
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" ");
        let script = format!(
            "for p in {list}; do \
               if read -r line 2>/dev/null < /proc/$p/stat; then \
                 st=${{line##*) }}; st=${{st%% *}}; \
                 [ \"$st\" = Z ] || [ \"$st\" = X ] || echo \"$p\"; \
               fi; \
             done"
        );
        let mut command = match self.service.docker_container_id() {
            Some(id) => {
                let mut c = tokio::process::Command::new("docker");
                c.args(["exec", &id, "/bin/sh", "-c", &script]);
                c
            }
            None => {
                let mut c = tokio::process::Command::new("/bin/sh");
                c.args(["-c", &script]);
                c
            }
        };
        let out = command.output().await.expect("the pid check runs");
        assert!(
            out.status.success(),
            "pid check failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim().parse().expect("a pid per line"))
            .collect()
    }

    /// Waits (bounded) until none of the pids is alive.
    pub(crate) async fn assert_dead_eventually(&self, pids: &[i64]) {
        let give_up = tokio::time::Instant::now() + WAIT_LIMIT;
        loop {
            let alive = self.alive(pids).await;
            if alive.is_empty() {
                return;
            }
            assert!(
                tokio::time::Instant::now() < give_up,
                "processes {alive:?} survived"
            );
            tokio::time::sleep(POLL).await;
        }
    }

    pub(crate) fn write(&self, name: &str, content: &str) {
        let path = self.root.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("parent dir");
        }
        std::fs::write(path, content).expect("write fixture");
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Closes the service.
    pub(crate) async fn close(self) {
        self.service.close().await.expect("close");
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        // A test that panicked never reached `close`: remove its container so failed
        // runs leave nothing behind on the engine.
        if let Some(id) = self.service.docker_container_id() {
            let _ = std::process::Command::new("docker")
                .args(["rm", "-f", &id])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

/// A shell script that builds a process tree — background children, a grandchild
/// under `sh -c`, a subshell with its own child — writes every pid to `<p>pids`, then
/// touches `<p>ready` and waits forever (300 s).
pub(crate) fn tree_script(prefix: &str) -> String {
    format!(
        r#"sleep 300 & echo $! >> {p}pids
sh -c 'sleep 300 & echo $! >> {p}pids; touch {p}r1; sleep 300' & echo $! >> {p}pids
( sleep 300 & echo $! >> {p}pids; touch {p}r2; wait ) & echo $! >> {p}pids
echo $$ >> {p}pids
while [ ! -e {p}r1 ] || [ ! -e {p}r2 ]; do sleep 0.01; done
touch {p}ready
wait"#,
        p = prefix
    )
}

/// Whether `path` is inside `root`.
pub(crate) fn inside(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
}
