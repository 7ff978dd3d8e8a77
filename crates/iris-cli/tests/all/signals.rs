//! SIGINT, SIGTERM and SIGHUP sent to a real `iris` while it runs a command, a command
//! hook, an MCP call, MCP startup, or waits for stdin: it exits with 128 + the signal
//! and nothing it started is left running. Also: a timed-out call whose blocking work
//! never checks back does not keep `iris` alive.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};

use super::{command, examples};

/// The bound on every wait below; far above what a passing run needs.
const DEADLINE: Duration = Duration::from_secs(60);

/// `iris` started in the background with stdin, stdout and stderr piped; stderr lines
/// arrive on `stderr`.
pub(crate) struct Spawned {
    pub(crate) child: Child,
    pub(crate) stderr: mpsc::Receiver<String>,
}

impl Drop for Spawned {
    fn drop(&mut self) {
        // A failed assertion must not leave `iris` behind.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn spawn(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Spawned {
    let mut child = command(cwd, args, env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Spawned { child, stderr: rx }
}

impl Spawned {
    fn pid(&self) -> Pid {
        Pid::from_raw(i32::try_from(self.child.id()).unwrap()).unwrap()
    }

    pub(crate) fn signal(&self, signal: Signal) {
        kill_process(self.pid(), signal).unwrap();
    }

    /// Waits until `iris` exits by itself, at most [`DEADLINE`].
    pub(crate) fn exit(&mut self) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "iris did not exit within {DEADLINE:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for a stderr line containing `fragment`, at most [`DEADLINE`]; returns
    /// every line read so far.
    pub(crate) fn stderr_until(&self, fragment: &str) -> Vec<String> {
        let start = Instant::now();
        let mut lines = Vec::new();
        while start.elapsed() < DEADLINE {
            match self.stderr.recv_timeout(Duration::from_millis(100)) {
                Ok(line) => {
                    let found = line.contains(fragment);
                    lines.push(line);
                    if found {
                        return lines;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        panic!("no stderr line with `{fragment}`: {lines:?}");
    }

    /// The rest of stderr (after exit).
    pub(crate) fn stderr_rest(&self) -> String {
        self.stderr.try_iter().collect::<Vec<_>>().join("\n")
    }

    /// The processes `iris` started directly (each thread's children).
    pub(crate) fn children(&self) -> Vec<i32> {
        let mut pids = Vec::new();
        let tasks = format!("/proc/{}/task", self.child.id());
        for task in std::fs::read_dir(tasks).into_iter().flatten().flatten() {
            let text = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            pids.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
        pids
    }
}

/// Waits until `path` holds a pid, at most [`DEADLINE`].
fn pid_in(path: &Path) -> i32 {
    let start = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{} never held a pid",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is gone: no such process, or a zombie nobody reaped yet (it runs
/// nothing; the container's init may not reap orphans).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Waits until every pid is gone, at most [`DEADLINE`]; fails naming the survivors.
pub(crate) fn assert_gone(pids: &[i32]) {
    let start = Instant::now();
    while start.elapsed() < DEADLINE {
        if pids.iter().all(|&p| gone(p)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let alive: Vec<_> = pids.iter().filter(|&&p| !gone(p)).collect();
    for pid in &alive {
        let _ = kill_process(Pid::from_raw(**pid).unwrap(), Signal::KILL);
    }
    panic!("still running after iris exited: {alive:?}");
}

const SIGNALS: [(Signal, i32, &str); 3] = [
    (Signal::TERM, 143, "SIGTERM"),
    (Signal::INT, 130, "SIGINT"),
    (Signal::HUP, 129, "SIGHUP"),
];

/// A folder with `iris.yaml` holding `yaml`; returns it and the config path.
fn agent(yaml: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("iris.yaml");
    std::fs::write(&config, yaml).unwrap();
    let config = config.to_str().unwrap().to_owned();
    (dir, config)
}

/// A signal during `exec_command` kills the shell and its background child (each call
/// leads its own process group, which the terminal's signal never reaches).
#[test]
fn a_signal_during_exec_command_stops_its_processes() {
    let (dir, config) = agent("tools:\n  builtin: [exec.command]\n");
    for (signal, code, name) in SIGNALS {
        let pidfile = dir.path().join(format!("{name}.pid"));
        let input = format!(
            "{{\"command\": \"sleep 300 & echo $! > {}; wait\"}}",
            pidfile.display()
        );
        let mut iris = spawn(
            dir.path(),
            &["--config", &config, "call", "exec_command", &input, "--yes"],
            &[],
        );
        let sleep = pid_in(&pidfile);
        let shells = iris.children();
        iris.signal(signal);
        let status = iris.exit();
        assert_gone(&[sleep]);
        assert_gone(&shells);
        assert_eq!(status.code(), Some(code), "{name}: {}", iris.stderr_rest());
        assert!(
            iris.stderr_rest()
                .contains(&format!("error[INTERRUPTED]: interrupted by {name}")),
            "{name}"
        );
    }
}

/// A signal while a command hook runs kills the hook's processes.
#[test]
fn a_signal_during_a_command_hook_stops_its_processes() {
    let (dir, config) = agent(
        "tools:\n  builtin: [exec.command]\nhooks:\n  - name: slow\n    event: tool.before\n    \
         timeout_seconds: 600\n    handler: {type: command, command: 'cat >/dev/null; sleep 300 & echo $! > hook.pid; wait'}\n",
    );
    let mut iris = spawn(
        dir.path(),
        &[
            "--config",
            &config,
            "call",
            "exec_command",
            "{\"command\": \"echo never\"}",
            "--yes",
        ],
        &[],
    );
    let sleep = pid_in(&dir.path().join("hook.pid"));
    iris.signal(Signal::TERM);
    let status = iris.exit();
    assert_gone(&[sleep]);
    assert_eq!(status.code(), Some(143), "{}", iris.stderr_rest());
}

/// A signal during an MCP call (the fixture's `hang` tool) stops the server process.
#[test]
fn a_signal_during_an_mcp_call_stops_the_server() {
    let dir = super::mcp::agent("");
    let started = dir.path().join("started");
    let input = serde_json::json!({
        "marker": dir.path().join("cancelled").display().to_string(),
        "started": started.display().to_string(),
    })
    .to_string();
    let config = dir.path().join("iris.yaml");
    let config = config.to_str().unwrap();
    let mut iris = spawn(
        dir.path(),
        &[
            "--config",
            config,
            "call",
            "mcp__fixture__hang",
            &input,
            "--yes",
        ],
        &[],
    );
    let start = Instant::now();
    while !started.exists() {
        assert!(start.elapsed() < DEADLINE, "the hang tool never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let servers = iris.children();
    assert!(!servers.is_empty());
    iris.signal(Signal::INT);
    let status = iris.exit();
    assert_gone(&servers);
    assert_eq!(status.code(), Some(130), "{}", iris.stderr_rest());
}

/// `examples/iris-mcp.yaml`: mcp-server-time is running and `iris call … -` waits for
/// its input on stdin, which never comes; SIGHUP ends iris (the abandoned stdin read
/// does not hold it) and the server.
#[test]
fn a_signal_while_waiting_for_stdin_stops_the_mcp_example() {
    super::mcp::python(); // makes the venv holding mcp-server-time
    let config = examples().join("iris-mcp.yaml");
    let ws = tempfile::tempdir().unwrap();
    let ws_arg = ws.path().to_str().unwrap();
    let mut iris = spawn(
        ws.path(),
        &[
            "--config",
            config.to_str().unwrap(),
            "--workspace",
            ws_arg,
            "call",
            "tool_search",
            "-",
        ],
        &[],
    );
    iris.stderr_until("iris: MCP ready");
    let servers = iris.children();
    assert!(!servers.is_empty());
    iris.signal(Signal::HUP);
    let status = iris.exit();
    assert_gone(&servers);
    assert_eq!(status.code(), Some(129), "{}", iris.stderr_rest());
}

/// `iris resume RUN --secret-stdin` waits for its line before anything starts; a
/// signal ends that wait at once (it used to take effect only after Enter), with
/// 128 + the signal and nothing run.
#[test]
fn a_signal_while_reading_a_secret_ends_the_wait() {
    let (dir, config) = agent("model:\n  provider: scripted\n  script:\n    - text: done\n");
    for (signal, code, name) in SIGNALS {
        let mut iris = spawn(
            dir.path(),
            &[
                "--config",
                &config,
                "resume",
                "run_waiting",
                "--secret-stdin",
            ],
            &[],
        );
        iris.stderr_until("reading the secret from stdin");
        iris.signal(signal);
        let status = iris.exit();
        let stderr = iris.stderr_rest();
        assert_eq!(status.code(), Some(code), "{name}: {stderr}");
        assert!(
            !stderr.contains("RUN_"),
            "{name}: nothing was resumed: {stderr}"
        );
    }
}

/// A signal while an MCP server is still starting (it never answers `initialize`)
/// stops it: the assembly is dropped and the server's process group killed.
#[test]
fn a_signal_during_mcp_startup_stops_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("server.pid");
    let mcp = serde_json::json!({"mcpServers": {"slow": {
        "command": "sh",
        "args": ["-c", format!("sleep 300 & echo $! > {}; wait", pidfile.display())],
        "startup_timeout_sec": 600,
    }}});
    std::fs::write(dir.path().join("mcp.json"), mcp.to_string()).unwrap();
    std::fs::write(dir.path().join("iris.yaml"), "mcp:\n  path: mcp.json\n").unwrap();
    let config = dir.path().join("iris.yaml");
    let mut iris = spawn(
        dir.path(),
        &["--config", config.to_str().unwrap(), "tools"],
        &[],
    );
    let sleep = pid_in(&pidfile);
    let shells = iris.children();
    iris.signal(Signal::TERM);
    let status = iris.exit();
    assert_gone(&[sleep]);
    assert_gone(&shells);
    assert_eq!(status.code(), Some(143), "{}", iris.stderr_rest());
}

/// A `grep_search` whose regex takes minutes over one long line times out after 1 s;
/// the search runs on in its abandoned blocking task (nothing can stop a regex engine
/// in the middle of a line), and `iris` must still exit.
#[test]
fn a_timed_out_call_does_not_keep_iris_alive() {
    let (dir, config) = agent("tools:\n  builtin: [file.grep]\n");
    // A pseudo-random `a`/`b` line just under grep_search's 1 MiB line cap: the
    // pattern's automaton explodes on it (minutes of work for that one line).
    let mut state: u32 = 1;
    let line: String = (0..1_000_000)
        .map(|_| {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            if state & 0x1_0000 == 0 { 'a' } else { 'b' }
        })
        .collect();
    std::fs::write(dir.path().join("big.txt"), line + "\n").unwrap();
    let mut iris = spawn(
        dir.path(),
        &[
            "--config",
            &config,
            "call",
            "grep_search",
            "{\"pattern\": \"a[ab]{2000}[^ab]\", \"path\": \"big.txt\"}",
            "--timeout",
            "1",
        ],
        &[],
    );
    let status = iris.exit();
    let mut stdout = String::new();
    std::io::Read::read_to_string(iris.child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
    assert_eq!(status.code(), Some(1), "{stdout} {}", iris.stderr_rest());
    assert!(stdout.contains("TOOL_TIMEOUT"), "{stdout}");
}

/// `iris run`: a signal during a long tool call cancels the run through its
/// cancellation signal — the call's processes are killed — and exits 128 + n; with
/// `--json` the events end with a `cancelled` finish, then the error as a JSON line.
#[test]
fn a_signal_during_a_run_cancels_its_tool_call() {
    let cases = SIGNALS
        .iter()
        .map(|&signal| (signal, false))
        .chain([(SIGNALS[1], true)]);
    for ((signal, code, name), json) in cases {
        let (dir, config) = agent(
            "tools:\n  builtin: [exec.command]\npermissions:\n  execute_mode: allow\nmodel:\n  \
             provider: scripted\n  script:\n    - tool_calls: [{name: exec_command, arguments: \
             {command: 'sleep 300 & echo $! > sleep.pid; wait'}}]\n    - {expect_tool_results: \
             1, text: never}\n",
        );
        let pidfile = dir.path().join("sleep.pid");
        let mut args = vec!["--config", config.as_str()];
        if json {
            args.push("--json");
        }
        args.extend(["run", "Sleep"]);
        let mut iris = spawn(dir.path(), &args, &[]);
        let sleep = pid_in(&pidfile);
        let shells = iris.children();
        iris.signal(signal);
        let status = iris.exit();
        assert_gone(&[sleep]);
        assert_gone(&shells);
        let stderr = iris.stderr_rest();
        assert_eq!(status.code(), Some(code), "{name}: {stderr}");
        let mut stdout = String::new();
        std::io::Read::read_to_string(iris.child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
        if json {
            let lines: Vec<serde_json::Value> = stdout
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            let finished = &lines[lines.len() - 2];
            assert_eq!(finished["type"], "finished", "{stdout}");
            assert_eq!(finished["outcome"]["status"], "cancelled", "{stdout}");
            assert_eq!(
                lines.last().unwrap()["error"]["code"],
                "INTERRUPTED",
                "{stdout}"
            );
        } else {
            assert!(
                stderr.contains("tool exec_command (call_1_1) ... error[CANCELLED]"),
                "{stderr}"
            );
            assert!(
                stderr.contains(&format!("error[INTERRUPTED]: interrupted by {name}")),
                "{stderr}"
            );
        }
    }
}

/// `iris resume`: a signal while the approved call runs cancels the resumed run through
/// its own cancellation signal (the call's processes are killed), which ends
/// `cancelled` in the store; `iris` exits 128 + n.
#[test]
fn a_signal_during_a_resumed_run_cancels_its_tool_call() {
    let (dir, config) = agent(
        "tools:\n  builtin: [exec.command]\nmodel:\n  provider: scripted\n  script:\n    - \
         tool_calls: [{name: exec_command, arguments: {command: 'sleep 300 & echo $! > \
         sleep.pid; wait'}}]\n    - {expect_tool_results: 1, text: never}\n",
    );
    let waiting = super::iris(dir.path(), &["--config", &config, "run", "Sleep"], &[], "");
    assert_eq!(waiting.code, 4, "{waiting:?}");
    let line = waiting
        .stderr
        .lines()
        .find(|l| l.ends_with(" --approve"))
        .unwrap();
    let run_id = line
        .split(" resume ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let mut iris = spawn(
        dir.path(),
        &["--config", &config, "resume", run_id, "--approve"],
        &[],
    );
    let sleep = pid_in(&dir.path().join("sleep.pid"));
    let shells = iris.children();
    iris.signal(Signal::TERM);
    let status = iris.exit();
    assert_gone(&[sleep]);
    assert_gone(&shells);
    let stderr = iris.stderr_rest();
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(
        stderr.contains("tool exec_command (call_1_1) ... error[CANCELLED]"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error[INTERRUPTED]: interrupted by SIGTERM"),
        "{stderr}"
    );
    let list = super::iris(
        dir.path(),
        &["--config", &config, "--json", "runs"],
        &[],
        "",
    );
    let list: serde_json::Value = serde_json::from_str(&list.stdout).unwrap();
    assert_eq!(list["runs"][0]["status"], "cancelled", "{list}");
}
