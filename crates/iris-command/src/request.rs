//! What goes into a [`crate::CommandService`] ([`CommandScope`], [`CommandRequest`]) and
//! what comes out ([`CommandOutcome`]).

use std::path::PathBuf;

use iris_tools_core::{CancellationSignal, ToolErrorInfo};
use serde::{Deserialize, Serialize};

use crate::config::CommandMode;
use crate::error::codes;

/// Who an execution belongs to: the run and the session. [`crate::CommandService::stop`]
/// stops every running execution of one scope.
///
/// ```
/// use iris_command::CommandScope;
/// let scope = CommandScope::new("run-1", "session-1");
/// assert_eq!(scope.run_id, "run-1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct CommandScope {
    /// The run id.
    pub run_id: String,
    /// The session id.
    pub session_id: String,
}

impl CommandScope {
    /// A scope.
    pub fn new(run_id: impl Into<String>, session_id: impl Into<String>) -> Self {
        Self {
            run_id: run_id.into(),
            session_id: session_id.into(),
        }
    }
}

/// What to run: a shell command line or a complete Python program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "source", rename_all = "snake_case")]
pub enum CommandPayload {
    /// A command line for `/bin/sh -c` (the Python reference's `ShellCommand`).
    Shell(String),
    /// Python source for `python3 -c` (the Python reference's `PythonCode`): the host's
    /// interpreter natively, the image's in Docker.
    Python(String),
}

impl CommandPayload {
    /// The command line or the source code.
    pub fn source(&self) -> &str {
        match self {
            CommandPayload::Shell(s) | CommandPayload::Python(s) => s,
        }
    }
}

/// Who caused an execution, which decides whether the sandbox applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandOrigin {
    /// The model (a tool call, code mode, a subagent): runs under the service's
    /// `sandbox` policy.
    #[default]
    Model,
    /// The owner's own configuration (a command hook): runs outside the sandbox, like
    /// the rest of the owner's configuration.
    Owner,
}

/// A Unix socket of the host that a sandboxed program keeps a channel to although it
/// may open no socket: the sandbox helper connects `count` times before it restricts
/// itself and names the descriptors (comma-separated) in the variable `env`. Outside
/// the sandbox nothing is pre-connected and the program connects to `path` itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandChannel {
    /// The socket's path.
    pub path: PathBuf,
    /// How many connections to pre-connect.
    pub count: usize,
    /// The variable that names their descriptors.
    pub env: String,
}

/// One execution request.
///
/// `cwd` may be absolute or relative to the service's workspace; either way it must be
/// an existing directory inside it. `timeout_seconds` is the call's own cap; the
/// deadline is the minimum of it and the root `CommandConfig::timeout_seconds`.
/// `stdin` bytes are written to the process and then closed; without them stdin is
/// `/dev/null` (model tools never pass any: there is no interactive input). A
/// `cancellation` signal, when given, kills the process tree and ends the call as
/// `cancelled` (a field the Python reference's request lacks, added so a tool can hand
/// its context's signal down).
///
/// ```
/// use iris_command::{CommandPayload, CommandRequest};
/// let request = CommandRequest::shell("call-1", "echo hi", ".").timeout_seconds(5.0);
/// assert_eq!(request.payload, CommandPayload::Shell("echo hi".into()));
/// assert_eq!(request.timeout_seconds, Some(5.0));
/// assert!(request.stdin.is_none());
/// ```
#[derive(Debug, Clone)]
pub struct CommandRequest {
    /// The tool call this execution serves (for receipts and logs).
    pub call_id: String,
    /// What to run.
    pub payload: CommandPayload,
    /// The working directory.
    pub cwd: PathBuf,
    /// The call's own deadline cap, in seconds.
    pub timeout_seconds: Option<f64>,
    /// Bytes for stdin (hooks); `None` means `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// Cancellation of the calling run.
    pub cancellation: Option<CancellationSignal>,
    /// Who caused it (default: the model, so the sandbox applies).
    pub origin: CommandOrigin,
    /// A host socket to keep a channel to from inside the sandbox.
    pub channel: Option<CommandChannel>,
    /// A wider sandbox for this call (`exec_command`'s `sandbox` parameter, approved by
    /// a human); the service refuses it unless the policy's `escalation` is `ask`.
    pub widening: Option<iris_sandbox::SandboxWidening>,
}

impl CommandRequest {
    /// A request with any payload.
    pub fn new(
        call_id: impl Into<String>,
        payload: CommandPayload,
        cwd: impl Into<PathBuf>,
    ) -> Self {
        Self {
            call_id: call_id.into(),
            payload,
            cwd: cwd.into(),
            timeout_seconds: None,
            stdin: None,
            cancellation: None,
            origin: CommandOrigin::Model,
            channel: None,
            widening: None,
        }
    }

    /// A shell command request.
    pub fn shell(
        call_id: impl Into<String>,
        command: impl Into<String>,
        cwd: impl Into<PathBuf>,
    ) -> Self {
        Self::new(call_id, CommandPayload::Shell(command.into()), cwd)
    }

    /// A Python program request.
    pub fn python(
        call_id: impl Into<String>,
        code: impl Into<String>,
        cwd: impl Into<PathBuf>,
    ) -> Self {
        Self::new(call_id, CommandPayload::Python(code.into()), cwd)
    }

    /// Sets the call's deadline cap.
    #[must_use]
    pub fn timeout_seconds(mut self, seconds: f64) -> Self {
        self.timeout_seconds = Some(seconds);
        self
    }

    /// Sets the stdin bytes.
    #[must_use]
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Marks the request as the owner's configuration (a command hook), which runs
    /// outside the sandbox.
    #[must_use]
    pub fn owner(mut self) -> Self {
        self.origin = CommandOrigin::Owner;
        self
    }

    /// Keeps a channel to a host socket open inside the sandbox.
    #[must_use]
    pub fn channel(mut self, channel: CommandChannel) -> Self {
        self.channel = Some(channel);
        self
    }

    /// Runs this call in a wider sandbox (see [`CommandRequest::widening`]).
    #[must_use]
    pub fn widened(mut self, widening: iris_sandbox::SandboxWidening) -> Self {
        self.widening = Some(widening);
        self
    }

    /// Attaches a cancellation signal.
    #[must_use]
    pub fn cancellation(mut self, signal: CancellationSignal) -> Self {
        self.cancellation = Some(signal);
        self
    }
}

/// How an execution ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandStatus {
    /// The process exited by itself (any exit code).
    Exited,
    /// The deadline passed; the process tree was killed.
    TimedOut,
    /// The call was cancelled (its signal fired or its future was dropped); the process
    /// tree was killed.
    Cancelled,
    /// The scope was stopped, the service closed, or the environment (container,
    /// engine) was lost; the process tree was killed or is gone.
    EnvironmentInterrupted,
}

impl CommandStatus {
    /// `exited`, `timed_out`, `cancelled` or `environment_interrupted`.
    pub fn as_str(self) -> &'static str {
        match self {
            CommandStatus::Exited => "exited",
            CommandStatus::TimedOut => "timed_out",
            CommandStatus::Cancelled => "cancelled",
            CommandStatus::EnvironmentInterrupted => "environment_interrupted",
        }
    }
}

/// Byte counts of one output stream. `bytes_seen = bytes_kept + bytes_dropped`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StreamStats {
    /// Every byte the process wrote.
    pub bytes_seen: u64,
    /// Bytes kept in the outcome (the head and the tail).
    pub bytes_kept: u64,
    /// Bytes dropped from the middle; they are not saved anywhere.
    pub bytes_dropped: u64,
}

/// Byte counts of stdout and stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OutputStats {
    /// Standard output.
    pub stdout: StreamStats,
    /// Standard error.
    pub stderr: StreamStats,
}

/// The result of one execution.
///
/// `exit_code` is never invented: it is `None` when the process was killed (by the
/// service or by a signal) or the real exit could not be confirmed. Output beyond the
/// service's per-stream byte limit keeps its head and tail with a marker line between
/// them; `output_truncated` and `output_stats` say how much was dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandOutcome {
    /// The request's call id.
    pub call_id: String,
    /// Native or Docker.
    pub mode: CommandMode,
    /// How it ended.
    pub status: CommandStatus,
    /// The real exit code, when there is one.
    pub exit_code: Option<i32>,
    /// The resolved working directory.
    pub cwd: PathBuf,
    /// Wall time from start to the end of output collection.
    pub duration_seconds: f64,
    /// The deadline that applied, in seconds.
    pub deadline_seconds: f64,
    /// Standard output (lossy UTF-8; head and tail when truncated).
    pub stdout: String,
    /// Standard error (lossy UTF-8; head and tail when truncated).
    pub stderr: String,
    /// Whether any byte was dropped.
    pub output_truncated: bool,
    /// Byte counts per stream.
    pub output_stats: OutputStats,
    /// Why the environment was interrupted, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The sandbox the process ran under; `None` outside the sandbox (a native hook,
    /// `sandbox` off). In Docker mode every call runs in the container and reports what
    /// its mounts and its egress proxy enforced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxReport>,
}

/// What a result says about the sandbox a command ran under: the policy in force and
/// the hosts the egress proxy refused. (Landlock and seccomp refusals reach the command
/// as `EACCES`/`EPERM`/`EROFS` errors in its own output; the host cannot count them.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxReport {
    /// `workspace-write`, `read-only` or `off`.
    pub filesystem: iris_sandbox::FilesystemAccess,
    /// `off`, `on` or `{allow: [...]}`.
    pub network: iris_sandbox::NetworkAccess,
    /// The workspace paths mounted read-only.
    pub protected: Vec<PathBuf>,
    /// The paths masked from reading (those that exist).
    pub deny_read: Vec<PathBuf>,
    /// Host names the egress proxy refused during the call.
    pub proxy_refusals: Vec<String>,
    /// The widening this call asked for (and a human approved), when it asked for one;
    /// `filesystem` and `network` above already include it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub widening: Option<iris_sandbox::SandboxWidening>,
}

impl CommandOutcome {
    /// Whether the process exited by itself with code 0.
    pub fn success(&self) -> bool {
        self.status == CommandStatus::Exited && self.exit_code == Some(0)
    }

    /// The model-facing text: stdout, then stderr under a `[stderr]` label;
    /// `(no output)` when both are empty.
    ///
    /// ```
    /// # use iris_command::*;
    /// # let mut outcome = CommandOutcome {
    /// #     call_id: "c".into(), mode: CommandMode::Native, status: CommandStatus::Exited,
    /// #     exit_code: Some(0), cwd: "/".into(), duration_seconds: 0.0, deadline_seconds: 1.0,
    /// #     stdout: String::new(), stderr: String::new(), output_truncated: false,
    /// #     output_stats: OutputStats::default(), detail: None, sandbox: None };
    /// outcome.stdout = "built\n".into();
    /// outcome.stderr = "warning: unused\n".into();
    /// assert_eq!(outcome.combined_output(), "built\n[stderr]\nwarning: unused\n");
    /// ```
    pub fn combined_output(&self) -> String {
        let mut text = String::with_capacity(self.stdout.len() + self.stderr.len() + 10);
        text.push_str(&self.stdout);
        if !self.stderr.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str("[stderr]\n");
            text.push_str(&self.stderr);
        }
        if text.is_empty() {
            text.push_str("(no output)");
        }
        text
    }

    /// The tool error this outcome maps to, `None` for a clean exit (code 0).
    ///
    /// | status | code |
    /// |---|---|
    /// | exited, code 0 | none |
    /// | exited, non-zero or killed by a signal | `COMMAND_FAILED` |
    /// | timed_out | `COMMAND_TIMEOUT` |
    /// | cancelled | `COMMAND_CANCELLED` |
    /// | environment_interrupted | `COMMAND_ENVIRONMENT_INTERRUPTED` (retryable) |
    pub fn error_info(&self) -> Option<ToolErrorInfo> {
        let info = match self.status {
            CommandStatus::Exited => match self.exit_code {
                Some(0) => return None,
                Some(code) => ToolErrorInfo::new(
                    codes::COMMAND_FAILED,
                    format!("the command exited with code {code}"),
                ),
                None => ToolErrorInfo::new(
                    codes::COMMAND_FAILED,
                    "the command was killed by a signal (no exit code)",
                ),
            },
            CommandStatus::TimedOut => ToolErrorInfo::new(
                codes::COMMAND_TIMEOUT,
                format!(
                    "the command exceeded its {}s deadline; its process tree was killed",
                    self.deadline_seconds
                ),
            ),
            CommandStatus::Cancelled => ToolErrorInfo::new(
                codes::COMMAND_CANCELLED,
                "the call was cancelled; its process tree was killed",
            ),
            CommandStatus::EnvironmentInterrupted => ToolErrorInfo::new(
                codes::COMMAND_ENVIRONMENT_INTERRUPTED,
                format!(
                    "the command environment was interrupted: {}",
                    self.detail.as_deref().unwrap_or("unknown reason")
                ),
            )
            .retryable(true),
        };
        Some(
            info.with_detail("status", self.status.as_str())
                .with_detail("exit_code", self.exit_code),
        )
    }
}
