//! The stdio transport: a child process in its own process group, newline-delimited
//! JSON-RPC on stdin/stdout, stderr captured for diagnostics.
//!
//! rmcp's `TokioChildProcess` is not used because the MCP layer needs three things it
//! does not give: a line that is not JSON-RPC must be *reported* (rmcp drops it with a
//! debug log), a result larger than 16 MiB must still arrive (rmcp's line cap), and the
//! whole process *group* must be ended on close, not only the direct child.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, watch};

use super::{Diagnostics, MessageSink};

/// How long `close` waits for a server to exit after its stdin closed, and again after
/// SIGTERM, before escalating.
pub(crate) const EXIT_GRACE: Duration = Duration::from_secs(2);

/// Lines of stderr kept per server.
const STDERR_TAIL_LINES: usize = 50;
/// Characters kept per stderr line.
const STDERR_LINE_CHARS: usize = 500;

/// What spawning needs.
#[derive(Debug, Clone)]
pub(crate) struct StdioSpawn {
    pub(crate) server: String,
    pub(crate) command: String,
    pub(crate) args: Vec<String>,
    pub(crate) cwd: PathBuf,
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) max_message_bytes: usize,
}

/// The last lines a server wrote to stderr.
#[derive(Debug, Default)]
pub(crate) struct StderrTail {
    lines: VecDeque<String>,
}

impl StderrTail {
    fn push(&mut self, line: &str) {
        if self.lines.len() == STDERR_TAIL_LINES {
            self.lines.pop_front();
        }
        self.lines
            .push_back(line.chars().take(STDERR_LINE_CHARS).collect());
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
}

/// Spawns the server and returns the transport plus the process handle.
pub(crate) fn spawn(
    spec: &StdioSpawn,
    diagnostics: Diagnostics,
) -> std::io::Result<(StdioTransport, Arc<StdioProcess>)> {
    let mut cmd = Command::new(&spec.command);
    cmd.args(&spec.args)
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
    let mut child: Child = cmd.spawn()?;
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
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        loop {
            match lines.next_line().await {
                Ok(Some(line)) => {
                    tracing::debug!(server = %server, "stderr: {line}");
                    tail_w
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(&line);
                }
                Ok(None) => break,
                // Invalid UTF-8 on stderr: skip the rest of it rather than fail.
                Err(e) => {
                    tracing::debug!(server = %server, error = %e, "reading stderr");
                    break;
                }
            }
        }
    });

    let (tx, rx) = mpsc::channel(64);
    let sink = MessageSink {
        server: spec.server.clone(),
        tx,
        diagnostics,
    };
    let max = spec.max_message_bytes;
    tokio::spawn(async move {
        let mut reader = BufReader::with_capacity(64 * 1024, stdout);
        let mut line = Vec::new();
        loop {
            match read_bounded_line(&mut reader, &mut line, max).await {
                LineRead::Line => {
                    if !sink.deliver_line(&line).await {
                        break;
                    }
                }
                LineRead::Oversized => sink.report(format!(
                    "a stdout message larger than {max} bytes was dropped"
                )),
                LineRead::Eof => break,
                LineRead::Io(e) => {
                    sink.report(format!("reading stdout failed: {e}"));
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
    });
    Ok((StdioTransport { stdin, rx }, process))
}

enum LineRead {
    Line,
    Oversized,
    Eof,
    Io(std::io::Error),
}

/// Reads one `\n`-terminated line into `buf` (cleared first) without letting it grow
/// past `max` bytes; an oversized line is consumed and dropped.
async fn read_bounded_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> LineRead {
    buf.clear();
    let mut oversized = false;
    loop {
        let (consumed, done) = {
            let available = match reader.fill_buf().await {
                Ok(a) => a,
                Err(e) => return LineRead::Io(e),
            };
            if available.is_empty() {
                // A last line without a newline is still a message.
                return if !buf.is_empty() && !oversized {
                    LineRead::Line
                } else {
                    LineRead::Eof
                };
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            if !oversized {
                if buf.len() + take > max {
                    oversized = true;
                    buf.clear();
                } else {
                    buf.extend_from_slice(&available[..take]);
                }
            }
            (take, newline.is_some())
        };
        reader.consume(consumed);
        if done {
            return if oversized {
                LineRead::Oversized
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
        async move {
            let mut bytes = serde_json::to_vec(&item)?;
            bytes.push(b'\n');
            let mut guard = stdin.lock().await;
            let Some(w) = guard.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the server's stdin is closed",
                ));
            };
            w.write_all(&bytes).await?;
            w.flush().await
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
