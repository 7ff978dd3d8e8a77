//! Shared helpers: the Python environment, fixture paths, free ports, HTTP servers the
//! test owns, process checks.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use iris_mcp::{ConfigFormat, HostEnv, MCPConfig, MCPManager, McpOverrides};
use iris_tools_core::{ToolExecutionContext, ToolOutput, ToolRegistry};
use serde_json::Value;

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp")
}

/// The venv's python, creating the venv on first use (idempotent, fast when present).
pub(crate) fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let out = Command::new("bash")
            .arg(fixtures().join("setup.sh"))
            .stderr(Stdio::inherit())
            .output()
            .expect("run tests/fixtures/mcp/setup.sh");
        assert!(out.status.success(), "setup.sh failed");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    })
}

/// The directory holding the venv's executables (`mcp-server-time`).
pub(crate) fn venv_bin() -> PathBuf {
    Path::new(python()).parent().unwrap().to_path_buf()
}

pub(crate) fn sdk_server() -> String {
    fixtures().join("sdk_server.py").display().to_string()
}

pub(crate) fn legacy_server() -> String {
    fixtures().join("legacy_server.py").display().to_string()
}

/// A JSON string literal.
pub(crate) fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// A stdio server entry running the SDK fixture with extra arguments.
pub(crate) fn sdk_stdio(extra: &[&str]) -> String {
    let mut args = vec![q(&sdk_server())];
    args.extend(extra.iter().map(|a| q(a)));
    format!(
        r#"{{"command": {}, "args": [{}]}}"#,
        q(python()),
        args.join(", ")
    )
}

/// Parses a JSON config whose servers are given as `"name": {entry}` fragments.
pub(crate) fn config(servers: &[(&str, String)], overrides: &McpOverrides) -> MCPConfig {
    let body = servers
        .iter()
        .map(|(n, e)| format!("{}: {e}", q(n)))
        .collect::<Vec<_>>()
        .join(",\n");
    let text = format!("{{\"mcpServers\": {{\n{body}\n}}}}");
    MCPConfig::from_str(
        &text,
        ConfigFormat::Json,
        fixtures().join("test.json"),
        overrides,
    )
    .unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// A manager over `config` with a fresh registry and a temporary workspace.
pub(crate) struct Harness {
    pub(crate) manager: MCPManager,
    pub(crate) registry: ToolRegistry,
    pub(crate) workspace: tempfile::TempDir,
}

impl Harness {
    pub(crate) fn new(config: MCPConfig) -> Self {
        Self::with(config, false, HostEnv::capture())
    }

    pub(crate) fn with(config: MCPConfig, defer: bool, host: HostEnv) -> Self {
        let workspace = tempfile::tempdir().unwrap();
        let registry = ToolRegistry::new();
        let manager =
            MCPManager::new(config, registry.clone(), workspace.path(), defer).with_host_env(host);
        Self {
            manager,
            registry,
            workspace,
        }
    }

    pub(crate) fn ctx(&self, call_id: &str) -> ToolExecutionContext {
        let mut ctx = ToolExecutionContext::new(self.workspace.path()).session_id("s-1");
        ctx.call_id = call_id.to_owned();
        ctx
    }

    /// Calls a published tool through the `Tool` trait (validated first, as the
    /// executor would).
    pub(crate) async fn call(&self, name: &str, input: Value) -> ToolOutput {
        let tool = self.registry.get(name).unwrap();
        let input = match tool.validate_input(input) {
            Ok(input) => input,
            Err(info) => return ToolOutput::error(info),
        };
        tool.run(input, &self.ctx("call_1")).await
    }
}

/// A port nobody listens on right now.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An HTTP server process the test owns; killed and reaped on drop.
pub(crate) struct HttpServer {
    child: Child,
    pub(crate) port: u16,
}

impl HttpServer {
    /// Starts the SDK fixture with `--transport transport` and waits until it accepts
    /// connections.
    pub(crate) fn start(transport: &str) -> Self {
        Self::start_on(transport, free_port())
    }

    /// Like [`HttpServer::start`] on a given port (to restart a server in place).
    pub(crate) fn start_on(transport: &str, port: u16) -> Self {
        Self::start_with(transport, port, &[])
    }

    /// Like [`HttpServer::start_on`] with extra fixture arguments.
    pub(crate) fn start_with(transport: &str, port: u16, extra: &[&str]) -> Self {
        let child = Command::new(python())
            .arg(sdk_server())
            .args(["--transport", transport, "--port", &port.to_string()])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = Self { child, port };
        let ready = wait_until(Duration::from_secs(30), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(ready, "the {transport} fixture did not listen on {port}");
        server
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `cond` until it holds or `limit` passes. For waiting on *events* (a port
/// opens, a file appears, a process ends), never for timing assertions.
pub(crate) fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if cond() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The state letter of a process from /proc (`R`, `S`, `Z`, …), or `None` when the
/// process does not exist.
pub(crate) fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The state follows the parenthesized command name, which may contain spaces.
    let after = &stat[stat.rfind(')')? + 2..];
    after.chars().next()
}

/// Whether a process runs (exists and is not a zombie).
pub(crate) fn running(pid: u32) -> bool {
    matches!(process_state(pid), Some(s) if s != 'Z')
}

/// Pids whose parent is `ppid`.
pub(crate) fn children_of(ppid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        if fields.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(ppid) {
            out.push(pid);
        }
    }
    out
}

/// Set in a child that [`run_isolated`] started: the test body runs there.
pub(crate) const ISOLATED_ENV: &str = "IRIS_MCP_TEST_ISOLATED";

/// Whether this process is the isolated child of a test.
pub(crate) fn is_isolated_child() -> bool {
    std::env::var_os(ISOLATED_ENV).is_some()
}

/// Runs one test of this binary (`module::name`) alone in a child process, with `env`
/// added, for tests that must measure or kill "the iris process" without the other
/// tests of this binary in it. The child is returned running; the caller waits.
pub(crate) fn spawn_isolated(test: &str, env: &[(&str, &std::ffi::OsStr)]) -> Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(ISOLATED_ENV, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

/// Waits for `child` up to `limit`; on the deadline it is killed. Returns whether it
/// exited successfully, with its output.
pub(crate) fn wait_isolated(mut child: Child, limit: Duration) -> (bool, String) {
    let finished = wait_until(limit, || child.try_wait().unwrap().is_some());
    if !finished {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "status: {}{}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        if finished {
            ""
        } else {
            " (killed at the deadline)"
        },
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (finished && out.status.success(), text)
}

/// A `kB` field of `/proc/self/status` (`VmHWM`, `VmRSS`) in bytes.
pub(crate) fn self_status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(&format!("{field}:")))
        .unwrap_or_else(|| panic!("{field} missing from /proc/self/status"));
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("bad line {line}"));
    kb * 1024
}

/// Processes that keep every core busy for as long as the guard lives (killed and
/// reaped on drop, also when the test fails).
pub(crate) struct CpuLoad(Vec<Child>);

impl CpuLoad {
    /// One busy loop per core.
    pub(crate) fn start() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let loops = (0..cores)
            .map(|_| {
                Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        Self(loops)
    }

    /// The pids of the busy loops.
    pub(crate) fn pids(&self) -> Vec<u32> {
        self.0.iter().map(Child::id).collect()
    }
}

impl Drop for CpuLoad {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Children of this test process whose command line mentions `needle`.
pub(crate) fn my_children_with(needle: &str) -> Vec<u32> {
    children_of(std::process::id())
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .collect()
}
