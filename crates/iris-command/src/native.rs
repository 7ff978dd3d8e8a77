//! The native backend: `/bin/sh -c` (or the host's Python) in its own process group.
//!
//! Each call is one process started with `process_group(0)`, so it leads a new process
//! group that its children and grandchildren inherit. Killing means `SIGKILL` to the
//! whole group, repeated until no live (non-zombie) member is left; a process that
//! leaves the group on purpose (`setsid`, `setpgid`) is outside what a group kill
//! reaches. When the leader exits by itself, the rest of its group is killed too: a
//! call owns its processes, and background jobs do not outlive it.
//!
//! The backend needs a Unix host; on other hosts `prepare` reports
//! `COMMAND_UNAVAILABLE` (the seed's `cmd.exe` variant is not written yet).

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use tokio::time::Instant;

use crate::capture::Captures;
use crate::error::CommandError;
use crate::request::CommandPayload;
use crate::run::{Job, Process, WaitOutcome};

/// The host shell.
const SHELL: &str = "/bin/sh";
/// Environment variable naming the Python interpreter for `run_python`.
pub const PYTHON_ENV: &str = "IRIS_PYTHON";
/// The interpreter looked up on `PATH` when [`PYTHON_ENV`] is not set.
const DEFAULT_PYTHON: &str = "python3";
/// Read buffer size per stream.
const CHUNK: usize = 64 * 1024;
/// After the leader exits, how long to keep reading from pipes held open by processes
/// that escaped the group.
const AFTER_EXIT_DRAIN: Duration = Duration::from_secs(2);
/// How long a kill may take to be confirmed before it is reported as failed.
const KILL_CONFIRM: Duration = Duration::from_secs(10);
/// Pause between two confirmation checks of a kill.
const KILL_POLL: Duration = Duration::from_millis(5);

/// The native backend (stateless: each call is its own process).
#[derive(Debug, Default)]
pub(crate) struct NativeBackend {
    /// The interpreter for `run_python`; `None` means [`PYTHON_ENV`] or `python3`.
    pub(crate) python: std::sync::Mutex<Option<std::path::PathBuf>>,
}

impl NativeBackend {
    /// Checks the shell exists.
    pub(crate) fn prepare(&self) -> Result<(), CommandError> {
        if !cfg!(unix) {
            // Killing a whole process tree is implemented with Unix process groups;
            // a Windows (cmd.exe, job object) variant is not written yet.
            return Err(CommandError::unavailable(
                "native commands need a Unix host in this version; use docker mode",
            ));
        }
        if Path::new(SHELL).exists() {
            Ok(())
        } else {
            Err(CommandError::unavailable(format!(
                "the host shell {SHELL} does not exist"
            )))
        }
    }

    /// Starts the job's process.
    pub(crate) fn spawn(&self, job: &Job) -> Result<NativeProcess, CommandError> {
        let (program, mut command) = match &job.payload {
            CommandPayload::Shell(line) => {
                let mut c = Command::new(SHELL);
                c.arg("-c").arg(line);
                (SHELL.to_owned(), c)
            }
            CommandPayload::Python(code) => {
                let chosen = self.python.lock().ok().and_then(|p| p.clone());
                let python = match chosen {
                    Some(path) => path,
                    None => std::env::var_os(PYTHON_ENV)
                        .map_or_else(|| DEFAULT_PYTHON.into(), Into::into),
                };
                let mut c = Command::new(&python);
                c.arg("-c").arg(code);
                (python.to_string_lossy().into_owned(), c)
            }
        };
        #[cfg(unix)]
        command.process_group(0);
        command
            .current_dir(&job.cwd)
            .stdin(if job.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().map_err(|e| match &job.payload {
            CommandPayload::Python(_) if e.kind() == std::io::ErrorKind::NotFound => {
                CommandError::unavailable(format!(
                    "the Python interpreter `{program}` was not found; install python3 or set {PYTHON_ENV}"
                ))
            }
            _ => CommandError::unavailable(format!("cannot start `{program}`: {e}")),
        })?;
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .ok_or_else(|| CommandError::unavailable("the started process has no pid"))?;
        if let (Some(bytes), Some(mut stdin)) = (job.stdin.clone(), child.stdin.take()) {
            // A writer task, so a process that never reads cannot block the driver; a
            // process that exits without reading makes the write fail, which is fine.
            tokio::spawn(async move {
                let _ = stdin.write_all(&bytes).await;
            });
        }
        Ok(NativeProcess {
            stdout: child.stdout.take(),
            stderr: child.stderr.take(),
            child,
            pgid,
            status: None,
            drain_until: None,
            out_buf: vec![0; CHUNK].into_boxed_slice(),
            err_buf: vec![0; CHUNK].into_boxed_slice(),
        })
    }
}

/// A running native process and its pipes.
#[derive(Debug)]
pub(crate) struct NativeProcess {
    child: Child,
    pgid: i32,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    status: Option<ExitStatus>,
    drain_until: Option<Instant>,
    out_buf: Box<[u8]>,
    err_buf: Box<[u8]>,
}

impl Drop for NativeProcess {
    fn drop(&mut self) {
        // If the driver is dropped mid-run (runtime shutdown), the tree must not survive.
        if self.status.is_none() {
            signal_group(self.pgid);
        }
    }
}

impl Process for NativeProcess {
    async fn wait(&mut self, out: &mut Captures) -> WaitOutcome {
        let NativeProcess {
            child,
            pgid,
            stdout,
            stderr,
            status,
            drain_until,
            out_buf,
            err_buf,
        } = self;
        loop {
            if stdout.is_none() && stderr.is_none() {
                let exit = match status {
                    Some(s) => *s,
                    None => match child.wait().await {
                        Ok(s) => {
                            *status = Some(s);
                            signal_group(*pgid);
                            s
                        }
                        Err(e) => {
                            return WaitOutcome::Lost(format!(
                                "waiting for the process failed: {e}"
                            ));
                        }
                    },
                };
                return WaitOutcome::Exited(exit.code());
            }
            let drain_deadline = *drain_until;
            tokio::select! {
                read = read_some(stdout, out_buf) => match read {
                    Some(n) => out.stdout.push(&out_buf[..n]),
                    None => *stdout = None,
                },
                read = read_some(stderr, err_buf) => match read {
                    Some(n) => out.stderr.push(&err_buf[..n]),
                    None => *stderr = None,
                },
                exited = child.wait(), if status.is_none() => match exited {
                    Ok(s) => {
                        *status = Some(s);
                        // Background jobs of the call die with it (see the module docs).
                        signal_group(*pgid);
                        *drain_until = Some(Instant::now() + AFTER_EXIT_DRAIN);
                    }
                    Err(e) => return WaitOutcome::Lost(format!("waiting for the process failed: {e}")),
                },
                () = sleep_until_opt(drain_deadline) => {
                    // Only an escaped process still holds the pipes; stop reading.
                    *stdout = None;
                    *stderr = None;
                }
            }
        }
    }

    async fn kill(&mut self, _out: &mut Captures) -> Result<(), String> {
        let give_up = Instant::now() + KILL_CONFIRM;
        loop {
            signal_group(self.pgid);
            if !group_alive(self.pgid) {
                return Ok(());
            }
            if Instant::now() >= give_up {
                return Err(format!(
                    "process group {} still has live members after {}s of SIGKILL",
                    self.pgid,
                    KILL_CONFIRM.as_secs()
                ));
            }
            tokio::time::sleep(KILL_POLL).await;
        }
    }
}

/// Reads one chunk; `None` at end of stream, on error, or when the pipe is gone.
/// Never completes for an absent pipe, so `select!` simply ignores it.
async fn read_some<R: AsyncReadExt + Unpin>(pipe: &mut Option<R>, buf: &mut [u8]) -> Option<usize> {
    match pipe {
        Some(p) => match p.read(buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => std::future::pending().await,
    }
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Sends `SIGKILL` to a process group; a group that is already gone is fine.
pub(crate) fn signal_group(pgid: i32) {
    #[cfg(unix)]
    if let Some(pid) = rustix::process::Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    #[cfg(not(unix))]
    let _ = pgid;
}

/// Whether any non-zombie process is in the group.
///
/// On Linux this reads `/proc`, because `kill(-pgid, 0)` also counts zombies, which
/// stay around for as long as nobody reaps them (an orphan's new parent may never do
/// so). Elsewhere it falls back to `kill(-pgid, 0)`.
pub(crate) fn group_alive(pgid: i32) -> bool {
    #[cfg(target_os = "linux")]
    {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return probe_group(pgid);
        };
        entries.flatten().any(|entry| {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
            else {
                return false;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            parse_stat(&stat)
                .is_some_and(|(state, group)| group == pgid && !matches!(state, 'Z' | 'X' | 'x'))
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        probe_group(pgid)
    }
}

fn probe_group(pgid: i32) -> bool {
    #[cfg(unix)]
    return rustix::process::Pid::from_raw(pgid)
        .is_some_and(|pid| rustix::process::test_kill_process_group(pid).is_ok());
    #[cfg(not(unix))]
    return {
        let _ = pgid;
        false
    };
}

/// `(state, pgrp)` from a `/proc/<pid>/stat` line. The command name (field 2) may hold
/// spaces and parentheses, so fields are counted from the last `)`.
pub(crate) fn parse_stat(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}
