//! The stdio transport: a child process in its own process group, newline-delimited
//! JSON-RPC on stdin/stdout, stderr captured for diagnostics.
//!
//! rmcp's `TokioChildProcess` is not used because the MCP layer needs things it does
//! not give: a line that is not JSON-RPC must be *reported* (rmcp drops it with a
//! debug log), a result larger than 16 MiB must still arrive (rmcp's line cap), an
//! answer dropped for its size must fail its request at once, and the whole process
//! *group* must be ended on close, not only the direct child.
//!
//! **When iris dies.** `close()` (and `Drop`) end the group; a SIGKILLed iris runs
//! neither. As a backstop the server is started through util-linux's `setpriv
//! --pdeathsig KILL`, which sets the parent-death signal and then `exec`s the server
//! in place (same pid, same process group): the kernel kills the server when the
//! thread that forked it exits. Setting that signal needs code between `fork` and
//! `exec` (`pre_exec`, which is `unsafe` and forbidden here), hence the helper; and
//! because the signal follows the forking *thread*, every server is forked from one
//! dedicated thread that lives as long as the process (a tokio worker or blocking
//! thread may exit while iris runs on). Without `setpriv` (not Linux, or util-linux
//! older than 2.33) servers start as before, and only stdin EOF tells them to go.
//! The signal reaches the server itself, not processes it started; those see their
//! stdin or parent vanish like any orphan.

use std::collections::{BTreeMap, VecDeque};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, oneshot, watch};

use super::{Diagnostics, IdScanner, MessageSink, Pending};
use crate::redact::Redactor;

/// How long `close` waits for a server to exit after its stdin closed, and again after
/// SIGTERM, before escalating.
pub(crate) const EXIT_GRACE: Duration = Duration::from_secs(2);

/// Lines of stderr kept per server.
const STDERR_TAIL_LINES: usize = 50;
/// Characters kept per stderr line in the tail.
const STDERR_LINE_CHARS: usize = 500;
/// Bytes of one stderr line held while reading it; the rest of a longer line is
/// counted and dropped, so a server that never ends a line costs this much, not the
/// line.
pub(crate) const STDERR_LINE_BYTES: usize = 8 * 1024;

/// What spawning needs.
#[derive(Debug, Clone)]
pub(crate) struct StdioSpawn {
    pub(crate) server: String,
    pub(crate) command: String,
    pub(crate) args: Vec<String>,
    pub(crate) cwd: PathBuf,
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) max_message_bytes: usize,
    /// The sandbox to start it in (see [`crate::McpSandbox`]).
    pub(crate) sandbox: Option<crate::McpSandbox>,
}

/// A start of the server: its spec, and what its sandbox adds (the helper's argv
/// before the command, `TMPDIR` and the proxy variables).
#[derive(Debug, Clone)]
struct Start {
    spec: StdioSpawn,
    prefix: Vec<std::ffi::OsString>,
}

/// The last lines a server wrote to stderr.
#[derive(Debug, Default)]
pub(crate) struct StderrTail {
    lines: VecDeque<String>,
}

impl StderrTail {
    /// Keeps `line` (already decoded and redacted), cut to [`STDERR_LINE_CHARS`];
    /// `total_bytes` is the length of the line as the server wrote it.
    fn push(&mut self, line: &str, total_bytes: u64) {
        if self.lines.len() == STDERR_TAIL_LINES {
            self.lines.pop_front();
        }
        let mut kept: String = line.chars().take(STDERR_LINE_CHARS).collect();
        if kept.len() < line.len() || total_bytes > line.len() as u64 {
            kept.push_str(&format!("… [line truncated: {total_bytes} bytes]"));
        }
        self.lines.push_back(kept);
    }
}

/// Reads a server's stderr to its end, whatever it holds: bytes, not text (invalid
/// UTF-8 is decoded lossily), one bounded line at a time (see [`STDERR_LINE_BYTES`]).
/// Stopping early would leave the server blocked on a full pipe, or dead of EPIPE.
async fn drain_stderr<R: AsyncRead + Unpin>(
    stderr: R,
    server: String,
    tail: Arc<Mutex<StderrTail>>,
    redactor: Redactor,
) {
    let mut reader = BufReader::with_capacity(16 * 1024, stderr);
    let mut line: Vec<u8> = Vec::new();
    let mut total: u64 = 0;
    let finish = |line: &mut Vec<u8>, total: &mut u64| {
        let bytes = line.strip_suffix(b"\r").unwrap_or(line);
        let text = redactor.redact(&String::from_utf8_lossy(bytes));
        tracing::debug!(server = %server, "stderr: {text}");
        tail.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(&text, *total);
        line.clear();
        *total = 0;
    };
    loop {
        let (consumed, ended) = match reader.fill_buf().await {
            Ok([]) => break,
            Ok(available) => {
                let newline = available.iter().position(|b| *b == b'\n');
                let content = &available[..newline.unwrap_or(available.len())];
                let room = STDERR_LINE_BYTES.saturating_sub(line.len());
                line.extend_from_slice(&content[..content.len().min(room)]);
                total += content.len() as u64;
                (
                    newline.map_or(available.len(), |i| i + 1),
                    newline.is_some(),
                )
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // A pipe read fails only when the pipe is unusable; there is nothing left
            // to drain then.
            Err(e) => {
                tracing::debug!(server = %server, error = %e, "reading stderr");
                break;
            }
        };
        reader.consume(consumed);
        if ended {
            finish(&mut line, &mut total);
        }
    }
    if total > 0 {
        finish(&mut line, &mut total);
    }
}

/// The running child: its group, exit status and stderr tail. Dropping it kills the
/// group, so a forgotten `close` still leaves no process behind.
#[derive(Debug)]
pub(crate) struct StdioProcess {
    server: String,
    pid: Option<u32>,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    exit: watch::Receiver<Option<ExitStatus>>,
    stderr: Arc<Mutex<StderrTail>>,
    /// Set once the group was ended, so `Drop` does not signal a reused pid.
    finished: Mutex<bool>,
    /// A sandboxed server's temp folder and proxy, kept as long as the process.
    _sandbox: Option<crate::sandbox::LaunchGuard>,
}

impl StdioProcess {
    /// The child's pid (also its process group id).
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The exit status, once the child has exited (and been reaped).
    pub(crate) fn exit_status(&self) -> Option<ExitStatus> {
        *self.exit.borrow()
    }

    /// Waits up to `limit` for the child to exit.
    pub(crate) async fn wait_exit(&self, limit: Duration) -> Option<ExitStatus> {
        let mut rx = self.exit.clone();
        let waited = tokio::time::timeout(limit, rx.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(status)) => *status,
            _ => self.exit_status(),
        }
    }

    /// The captured stderr, joined with newlines.
    pub(crate) fn stderr_tail(&self) -> String {
        let tail = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        tail.lines.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// A one-line description of how the process ended (or that it runs), with the
    /// last stderr line: what a diagnostic or an error message shows.
    pub(crate) fn describe(&self) -> String {
        let state = match self.exit_status() {
            Some(status) => format!("the server process exited ({status})"),
            None => "the server process is still running".to_owned(),
        };
        let last = {
            let tail = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
            tail.lines.back().cloned()
        };
        match last {
            Some(line) => format!("{state}; last stderr line: {line}"),
            None => state,
        }
    }

    /// Ends the process group: close stdin, wait; SIGTERM the group, wait; SIGKILL the
    /// group. The leader is reaped by its monitor task, so no zombie remains; members
    /// of the group that outlive the leader are signalled too.
    pub(crate) async fn shutdown(&self) {
        drop(self.stdin.lock().await.take());
        if self.wait_exit(EXIT_GRACE).await.is_none() {
            self.signal(rustix::process::Signal::TERM);
            if self.wait_exit(EXIT_GRACE).await.is_none() {
                self.signal(rustix::process::Signal::KILL);
                self.wait_exit(EXIT_GRACE).await;
            }
        }
        // The leader is gone; stragglers in its group (a grandchild the server
        // started) get the same treatment.
        if self.group_alive() {
            self.signal(rustix::process::Signal::TERM);
            let deadline = tokio::time::Instant::now() + EXIT_GRACE;
            while self.group_alive() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            if self.group_alive() {
                self.signal(rustix::process::Signal::KILL);
            }
        }
        *self.finished.lock().unwrap_or_else(PoisonError::into_inner) = true;
    }

    fn group(&self) -> Option<rustix::process::Pid> {
        self.pid
            .and_then(|p| i32::try_from(p).ok())
            .and_then(rustix::process::Pid::from_raw)
    }

    fn signal(&self, signal: rustix::process::Signal) {
        if let Some(group) = self.group() {
            // ESRCH (the group is already empty) is the outcome we want anyway.
            if let Err(e) = rustix::process::kill_process_group(group, signal) {
                tracing::trace!(server = %self.server, error = %e, "signalling the server's process group");
            }
        }
    }

    fn group_alive(&self) -> bool {
        self.group()
            .is_some_and(|g| rustix::process::test_kill_process_group(g).is_ok())
    }
}

impl Drop for StdioProcess {
    fn drop(&mut self) {
        let finished = *self.finished.lock().unwrap_or_else(PoisonError::into_inner);
        if !finished {
            // Synchronous last resort when `close` was never awaited.
            self.signal(rustix::process::Signal::KILL);
        }
    }
}

/// rmcp's view of the child: messages in from stdout, messages out to stdin.
#[derive(Debug)]
pub(crate) struct StdioTransport {
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    rx: mpsc::Receiver<ServerJsonRpcMessage>,
    pending: Pending,
}

/// Where util-linux keeps `setpriv` (absolute paths only: the server's `PATH` comes
/// from the config, and this program runs before the server's own code).
const SETPRIV_PATHS: [&str; 2] = ["/usr/bin/setpriv", "/bin/setpriv"];

/// The `setpriv` that understands `--pdeathsig`, probed once.
fn setpriv() -> Option<&'static Path> {
    static SETPRIV: OnceLock<Option<PathBuf>> = OnceLock::new();
    SETPRIV
        .get_or_init(|| {
            SETPRIV_PATHS.iter().map(PathBuf::from).find(|path| {
                std::process::Command::new(path)
                    .arg("--help")
                    .stdin(Stdio::null())
                    .stderr(Stdio::null())
                    .output()
                    .is_ok_and(|out| {
                        out.status.success()
                            && String::from_utf8_lossy(&out.stdout).contains("--pdeathsig")
                    })
            })
        })
        .as_deref()
}

type SpawnJob = Box<dyn FnOnce() + Send>;

/// The thread every stdio server is forked from (see the module docs): it waits for
/// work for as long as the process lives and never exits before it.
fn spawner() -> Option<&'static std::sync::mpsc::Sender<SpawnJob>> {
    static SPAWNER: OnceLock<Option<std::sync::mpsc::Sender<SpawnJob>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel::<SpawnJob>();
            let started = std::thread::Builder::new()
                .name("iris-mcp-spawner".into())
                .spawn(move || {
                    // The sender lives in this static, so `recv` never fails.
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                });
            match started {
                Ok(_) => Some(tx),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot start the MCP spawner thread; servers will not die with iris");
                    None
                }
            }
        })
        .as_ref()
}

/// Checks that `command` names an executable the way `exec` would find it (through
/// `PATH` of the server's environment when it has no `/`), so a missing program stays
/// the spawn error it is without the `setpriv` wrapper.
fn check_program(command: &str, env: &BTreeMap<String, String>, cwd: &Path) -> std::io::Result<()> {
    use rustix::io::Errno;
    let check = |path: &Path| match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => Ok(()),
        Ok(_) => Err(Errno::ACCESS),
        Err(_) => Err(Errno::NOENT),
    };
    let outcome = if command.contains('/') {
        check(&cwd.join(command))
    } else {
        let path = env
            .get("PATH")
            .cloned()
            .or_else(|| std::env::var("PATH").ok())
            .unwrap_or_default();
        let mut outcome = Err(Errno::NOENT);
        for dir in std::env::split_paths(&path) {
            match check(&cwd.join(dir).join(command)) {
                Ok(()) => {
                    outcome = Ok(());
                    break;
                }
                Err(Errno::ACCESS) => outcome = Err(Errno::ACCESS),
                Err(_) => {}
            }
        }
        outcome
    };
    outcome.map_err(|e| std::io::Error::from_raw_os_error(e.raw_os_error()))
}

/// The command that starts the server, through `setpriv` when one is given and through
/// the sandbox helper when the start has a prefix.
fn command(start: &Start, setpriv: Option<&Path>) -> Command {
    let spec = &start.spec;
    let mut argv: Vec<std::ffi::OsString> = Vec::new();
    if let Some(setpriv) = setpriv {
        argv.extend([
            setpriv.as_os_str().to_owned(),
            "--pdeathsig".into(),
            "KILL".into(),
            "--".into(),
        ]);
    }
    argv.extend(start.prefix.iter().cloned());
    argv.push(spec.command.clone().into());
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(&spec.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so close can signal the server and everything it
        // started, and a terminal's Ctrl-C does not reach it behind our back.
        .process_group(0)
        .kill_on_drop(true);
    cmd
}

/// Forks the server from the spawner thread, wrapped in `setpriv --pdeathsig KILL`
/// when that is available (see the module docs); without a spawner, from here.
async fn spawn_child(start: &Start) -> std::io::Result<Child> {
    let (Some(spawner), Ok(handle)) = (spawner(), tokio::runtime::Handle::try_current()) else {
        return command(start, None).spawn();
    };
    let (tx, rx) = oneshot::channel();
    let job_start = start.clone();
    let job: SpawnJob = Box::new(move || {
        // The child registers with the caller's runtime, which reaps it.
        let _runtime = handle.enter();
        let start = job_start;
        let spec = &start.spec;
        // A wrapper (setpriv, the sandbox helper) would report a missing program
        // only on its stderr: check it first, so it stays a spawn error.
        let checked = if setpriv().is_some() || !start.prefix.is_empty() {
            check_program(&spec.command, &spec.env, &spec.cwd)
        } else {
            Ok(())
        };
        let result = checked.and_then(|()| command(&start, setpriv()).spawn());
        // A caller that gave up drops the child, and `kill_on_drop` ends it.
        let _ = tx.send(result);
    });
    if spawner.send(job).is_err() {
        return command(start, None).spawn();
    }
    rx.await
        .unwrap_or_else(|_| Err(std::io::Error::other("the MCP spawner thread is gone")))
}

/// Spawns the server and returns the transport plus the process handle.
pub(crate) async fn spawn(
    spec: &StdioSpawn,
    diagnostics: Diagnostics,
) -> std::io::Result<(StdioTransport, Arc<StdioProcess>)> {
    let mut start = Start {
        spec: spec.clone(),
        prefix: Vec::new(),
    };
    let guard = match &spec.sandbox {
        Some(sandbox) => {
            let launch = sandbox.launch().await?;
            start.prefix = launch.prefix;
            start.spec.env.extend(launch.env);
            Some(launch.guard)
        }
        None => None,
    };
    let mut child: Child = spawn_child(&start).await?;
    let pid = child.id();
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other("the child's stdio pipes are missing"));
    };

    let (exit_tx, exit_rx) = watch::channel(None);
    let server = spec.server.clone();
    tokio::spawn(async move {
        // Owning the child here reaps it as soon as it exits: no zombie, and the
        // exit status is known to diagnostics right away.
        match child.wait().await {
            Ok(status) => {
                tracing::debug!(server = %server, %status, "MCP server process exited");
                let _ = exit_tx.send(Some(status));
            }
            Err(e) => {
                tracing::warn!(server = %server, error = %e, "waiting for the MCP server process")
            }
        }
    });

    let tail = Arc::new(Mutex::new(StderrTail::default()));
    let tail_w = Arc::clone(&tail);
    let server = spec.server.clone();
    let redactor = diagnostics.redactor().clone();
    tokio::spawn(drain_stderr(stderr, server, tail_w, redactor));

    let (tx, rx) = mpsc::channel(64);
    let pending = Pending::default();
    let sink = MessageSink {
        server: spec.server.clone(),
        tx,
        diagnostics,
        pending: pending.clone(),
    };
    let max = spec.max_message_bytes;
    tokio::spawn(async move {
        let mut reader = BufReader::with_capacity(64 * 1024, stdout);
        let mut line = Vec::new();
        loop {
            let mut scanner = IdScanner::default();
            match read_bounded_line(&mut reader, &mut line, max, &mut scanner).await {
                LineRead::Line => {
                    if !sink.deliver_line(&line).await {
                        break;
                    }
                }
                LineRead::Oversized(bytes) => {
                    if !sink.deliver_oversized(bytes, max, scanner.finish()).await {
                        break;
                    }
                }
                LineRead::Eof => break,
                LineRead::Io(e) => {
                    sink.report(&format!("reading stdout failed: {e}"));
                    break;
                }
            }
        }
    });

    let stdin = Arc::new(tokio::sync::Mutex::new(Some(stdin)));
    let process = Arc::new(StdioProcess {
        server: spec.server.clone(),
        pid,
        stdin: Arc::clone(&stdin),
        exit: exit_rx,
        stderr: tail,
        finished: Mutex::new(false),
        _sandbox: guard,
    });
    Ok((StdioTransport { stdin, rx, pending }, process))
}

enum LineRead {
    Line,
    /// A line over the cap, of this many bytes, consumed and dropped.
    Oversized(usize),
    Eof,
    Io(std::io::Error),
}

/// Reads one `\n`-terminated line into `buf` (cleared first) without letting it grow
/// past `max` bytes; an oversized line is consumed and dropped, its bytes fed to
/// `scanner` on the way so the request it answers can still be failed.
async fn read_bounded_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
    scanner: &mut IdScanner,
) -> LineRead {
    buf.clear();
    let mut oversized = false;
    let mut total = 0usize;
    loop {
        let (consumed, done) = {
            let available = match reader.fill_buf().await {
                Ok(a) => a,
                Err(e) => return LineRead::Io(e),
            };
            if available.is_empty() {
                // A last line without a newline is still a message.
                return if oversized {
                    LineRead::Oversized(total)
                } else if !buf.is_empty() {
                    LineRead::Line
                } else {
                    LineRead::Eof
                };
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            total += take;
            if oversized {
                scanner.feed(&available[..take]);
            } else if buf.len() + take > max {
                oversized = true;
                scanner.feed(buf);
                scanner.feed(&available[..take]);
                buf.clear();
                buf.shrink_to(64 * 1024);
            } else {
                buf.extend_from_slice(&available[..take]);
            }
            (take, newline.is_some())
        };
        reader.consume(consumed);
        if done {
            return if oversized {
                LineRead::Oversized(total)
            } else {
                LineRead::Line
            };
        }
    }
}

impl Transport<RoleClient> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let stdin = Arc::clone(&self.stdin);
        let pending = self.pending.clone();
        async move {
            let mut bytes = serde_json::to_vec(&item)?;
            bytes.push(b'\n');
            // Before the write: the answer may arrive before this task runs again.
            pending.on_send(&item);
            let mut guard = stdin.lock().await;
            let written = match guard.as_mut() {
                None => Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the server's stdin is closed",
                )),
                Some(w) => match w.write_all(&bytes).await {
                    Ok(()) => w.flush().await,
                    Err(e) => Err(e),
                },
            };
            if written.is_err() {
                pending.on_send_failed(&item);
            }
            written
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.rx.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.stdin.lock().await.take());
        Ok(())
    }
}
