//! Shared fixtures: a temporary folder holding an agent YAML and the files it names.

use std::path::{Path, PathBuf};

/// A temporary folder with `iris.yaml` and extra files.
pub(crate) struct Fixture {
    pub(crate) dir: tempfile::TempDir,
}

impl Fixture {
    /// A folder holding `iris.yaml` with `yaml` and each `(relative path, text)` file.
    pub(crate) fn new(yaml: &str, files: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("iris.yaml"), yaml).unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Self { dir }
    }

    pub(crate) fn file(&self) -> PathBuf {
        self.dir.path().join("iris.yaml")
    }

    pub(crate) fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Replaces the temporary folder with `<dir>` so messages are stable in snapshots.
    pub(crate) fn redact(&self, text: &str) -> String {
        let root = std::fs::canonicalize(self.root()).unwrap();
        text.replace(&root.display().to_string(), "<dir>")
            .replace(&self.root().display().to_string(), "<dir>")
    }
}

/// iris-mcp's Python fixture folder (the test servers and `setup.sh`).
pub(crate) fn mcp_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../iris-mcp/tests/fixtures/mcp")
}

/// The venv's python, made by iris-mcp's `setup.sh` on first use (idempotent, fast
/// when the venv exists), as iris-mcp's own tests find it.
pub(crate) fn python() -> &'static str {
    static PYTHON: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PYTHON.get_or_init(|| {
        let out = std::process::Command::new("bash")
            .arg(mcp_fixtures().join("setup.sh"))
            .stderr(std::process::Stdio::inherit())
            .output()
            .expect("run iris-mcp/tests/fixtures/mcp/setup.sh");
        assert!(out.status.success(), "setup.sh failed");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    })
}

/// An `.mcp.json` text with one stdio server `name` running the SDK fixture server.
pub(crate) fn mcp_json(name: &str) -> String {
    let server = mcp_fixtures().join("sdk_server.py");
    serde_json::json!({"mcpServers": {name: {
        "command": python(),
        "args": [server.display().to_string(), "--name", name],
    }}})
    .to_string()
}

/// Whether a process runs (exists in /proc and is not a zombie).
pub(crate) fn running(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the parenthesized command name, which may contain spaces.
    stat.rfind(')')
        .and_then(|i| stat[i + 2..].chars().next())
        .is_some_and(|s| s != 'Z')
}

/// Waits (at most `tries` × 25 ms) until `file` holds a whole line, such as the pid a
/// command wrote.
pub(crate) async fn wait_for_line(file: &std::path::Path, tries: u32) {
    for _ in 0..tries {
        if std::fs::read_to_string(file).is_ok_and(|t| t.ends_with('\n')) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}

/// The pid a command wrote into `file`.
pub(crate) fn pid_in(file: &std::path::Path) -> u32 {
    std::fs::read_to_string(file)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Whether process `pid` is gone within two seconds.
pub(crate) fn ends_soon(pid: u32) -> bool {
    (0..100).any(|_| {
        let alive = running(pid);
        if alive {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        !alive
    })
}

/// A multi-thread runtime with two workers, for tests that are not `#[tokio::test]`.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Every event of a streamed run, in order (the last is `Finished`).
pub(crate) async fn events(
    runner: &iris_runner::AgentRunner,
    input: impl Into<iris_runner::RunInput>,
) -> Vec<iris_runner::RunEvent> {
    let mut stream = runner.run_streamed(input);
    let mut all = Vec::new();
    while let Some(event) = stream.next().await {
        all.push(event);
    }
    all
}

/// Every event of a streamed run that is cancelled as soon as an event satisfies
/// `when` and `pid_file` holds the pid of the command that event started.
pub(crate) async fn events_cancelled_when(
    runner: &iris_runner::AgentRunner,
    input: impl Into<iris_runner::RunInput>,
    pid_file: &std::path::Path,
    when: impl Fn(&iris_runner::RunEvent) -> bool,
) -> Vec<iris_runner::RunEvent> {
    let mut stream = runner.run_streamed(input);
    let mut all = Vec::new();
    while let Some(event) = stream.next().await {
        if when(&event) {
            wait_for_line(pid_file, 200).await;
            stream.cancellation().cancel();
        }
        all.push(event);
    }
    all
}

/// The outcome a stream of events ended with.
pub(crate) fn outcome(events: &[iris_runner::RunEvent]) -> &iris_runner::RunOutcome {
    match events.last() {
        Some(iris_runner::RunEvent::Finished { outcome }) => outcome,
        other => panic!("the last event is not Finished: {other:?}"),
    }
}

/// The results of the finished calls, in order.
pub(crate) fn finished(events: &[iris_runner::RunEvent]) -> Vec<&iris_tools_core::ToolResult> {
    events
        .iter()
        .filter_map(|e| match e {
            iris_runner::RunEvent::ToolCallFinished { result, .. } => Some(result),
            _ => None,
        })
        .collect()
}
