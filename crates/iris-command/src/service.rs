//! [`CommandService`]: the backend-facing command environment.
//!
//! | method | contract |
//! |---|---|
//! | [`CommandService::prepare`] | prepares owned resources (Docker: engine, image, container) |
//! | [`CommandService::execute`] | runs one request in a scope, returns a [`CommandOutcome`] |
//! | [`CommandService::stop`] | registers synchronously a stop of every running execution of the scope; returns a [`StopOperation`] |
//! | [`StopOperation::wait_stopped`] | physical stop confirmed (process trees gone); returns a [`CommandStopReceipt`] |
//! | [`StopOperation::wait_drained`] / [`CommandService::wait_drained`] | waits for the stopped executions to wrap up, without stopping anything started later |
//! | [`CommandService::close`] | stops everything, waits for it, releases resources (Docker: removes the container) |
//!
//! Every execution runs in its own task, so a stop takes effect even when nobody polls
//! the `execute` future, and dropping that future (the executor gave up on the call)
//! kills the process tree as a cancellation. Executions started after a `stop` are not
//! affected by it: the scope starts fresh.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use iris_fs::workspace::WorkspacePolicy;
use tokio::sync::{Notify, oneshot, watch};

use crate::capture::DEFAULT_OUTPUT_LIMIT_BYTES;
use crate::config::{CommandConfig, CommandMode};
use crate::contain::ProcessContainment;
use crate::docker::DockerBackend;
use crate::error::CommandError;
use crate::native::NativeBackend;
use crate::request::{
    CommandOutcome, CommandPayload, CommandRequest, CommandScope, CommandStatus, OutputStats,
};
use crate::run::{Job, drive};

/// The largest command line or program accepted, in bytes. Payloads travel as one
/// `argv` string, which Linux caps at 128 KiB (`MAX_ARG_STRLEN`); this leaves room.
pub const MAX_PAYLOAD_BYTES: usize = 100 * 1024;

/// Why a running execution is asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    /// [`CommandService::stop`] for its scope.
    ScopeStopped,
    /// [`CommandService::close`].
    Closed,
    /// The `execute` future was dropped.
    Abandoned,
}

/// One running execution, shared by its task, the service and stop operations.
#[derive(Debug)]
pub(crate) struct ExecEntry {
    scope: CommandScope,
    call_id: String,
    reason: OnceLock<StopReason>,
    notify: Notify,
    /// `Some(confirmed)` once the process tree is gone (or the kill gave up).
    stopped: watch::Sender<Option<bool>>,
    drained: watch::Sender<bool>,
}

impl ExecEntry {
    fn new(scope: CommandScope, call_id: String) -> Self {
        Self {
            scope,
            call_id,
            reason: OnceLock::new(),
            notify: Notify::new(),
            stopped: watch::Sender::new(None),
            drained: watch::Sender::new(false),
        }
    }

    /// Asks the execution to stop; the first reason wins.
    fn request_stop(&self, reason: StopReason) {
        let _ = self.reason.set(reason);
        self.notify.notify_waiters();
    }

    /// Completes with the reason once a stop is requested.
    pub(crate) async fn stop_requested(&self) -> StopReason {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Register before reading the flag, so a request in between is not missed.
            notified.as_mut().enable();
            if let Some(reason) = self.reason.get() {
                return *reason;
            }
            notified.await;
        }
    }

    /// Records that no process of this execution is left (`confirmed = false` when a
    /// kill could not be confirmed). Only the first report counts.
    pub(crate) fn mark_stopped(&self, confirmed: bool) {
        self.stopped.send_if_modified(|s| {
            if s.is_none() {
                *s = Some(confirmed);
                true
            } else {
                false
            }
        });
    }

    fn mark_drained(&self) {
        self.mark_stopped(true);
        self.drained.send_replace(true);
    }

    async fn wait_stopped(&self) -> bool {
        let mut rx = self.stopped.subscribe();
        match rx.wait_for(Option::is_some).await {
            Ok(v) => v.unwrap_or(true),
            // The sender lives in `self`; it cannot be gone while we borrow it.
            Err(_) => true,
        }
    }

    async fn wait_drained(&self) {
        let mut rx = self.drained.subscribe();
        let _ = rx.wait_for(|d| *d).await;
    }
}

#[derive(Debug)]
enum Backend {
    Native(NativeBackend),
    Docker(DockerBackend),
}

#[derive(Debug, Default)]
struct State {
    prepared: bool,
    closed: bool,
    next_id: u64,
    running: HashMap<u64, Arc<ExecEntry>>,
}

#[derive(Debug)]
struct Inner {
    id: u64,
    config: CommandConfig,
    workspace: PathBuf,
    output_limit: AtomicUsize,
    backend: Backend,
    state: Mutex<State>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Backend::Docker(docker) = &self.backend {
            // Executions hold the inner, so none is running: only the container is left.
            docker.close_in_background();
        }
    }
}

/// The command environment of one root agent: native processes or one Docker
/// container, shared by its child agents through [`crate::CommandBinding`].
///
/// Cloning is cheap and shares the service.
///
/// ```
/// use iris_command::{CommandConfig, CommandRequest, CommandScope, CommandService, CommandStatus};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let workspace = tempfile::tempdir()?;
/// // A doctest has no `iris-sandbox` helper binary: the sandbox is off here.
/// let unsandboxed = CommandConfig::native().with_sandbox(iris_command::SandboxPolicy::off());
/// let service = CommandService::new(unsandboxed, workspace.path())?;
/// service.prepare().await?;
/// let scope = CommandScope::new("run-1", "session-1");
/// let outcome = service.execute(&scope, CommandRequest::shell("call-1", "echo hello", ".")).await?;
/// assert_eq!((outcome.status, outcome.exit_code), (CommandStatus::Exited, Some(0)));
/// assert_eq!(outcome.stdout, "hello\n");
/// service.close().await?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct CommandService {
    inner: Arc<Inner>,
}

impl CommandService {
    /// A service for a workspace. Validates the config; the workspace must be an
    /// existing directory (it is canonicalized: Docker mounts it at that same path).
    pub fn new(
        config: CommandConfig,
        workspace_root: impl AsRef<Path>,
    ) -> Result<Self, CommandError> {
        config.validate()?;
        let root = workspace_root.as_ref();
        let workspace = std::fs::canonicalize(root)
            .ok()
            .filter(|p| p.is_dir())
            .ok_or_else(|| {
                CommandError::config(
                    "workspace_root",
                    format!("`{}` is not an existing directory", root.display()),
                )
            })?;
        // The host environment is read once; a call only gets what crate::env allows.
        let backend = match config.docker_config() {
            None => Backend::Native(NativeBackend::new(
                crate::env::native_env(&config, std::env::vars_os()),
                config.sandbox.clone(),
                workspace.clone(),
            )),
            Some(docker) => {
                let env = crate::env::docker_env(&config, &docker, std::env::vars_os());
                Backend::Docker(DockerBackend::new(
                    docker,
                    env,
                    workspace.clone(),
                    config.sandbox.clone(),
                ))
            }
        };
        static IDS: AtomicU64 = AtomicU64::new(1);
        Ok(Self {
            inner: Arc::new(Inner {
                id: IDS.fetch_add(1, Ordering::Relaxed),
                config,
                workspace,
                output_limit: AtomicUsize::new(DEFAULT_OUTPUT_LIMIT_BYTES),
                backend,
                state: Mutex::new(State::default()),
            }),
        })
    }

    /// Sets the per-stream output byte limit (default 1 MiB: half head, half tail).
    #[must_use]
    pub fn with_output_limit(self, bytes: usize) -> Self {
        self.inner.output_limit.store(bytes, Ordering::Relaxed);
        self
    }

    /// Sets the Python interpreter of native `run_python` calls (default: the
    /// `IRIS_PYTHON` environment variable, else `python3` on `PATH`). No effect in
    /// Docker mode, which uses the image's `python3`.
    #[must_use]
    pub fn with_native_python(self, interpreter: impl Into<PathBuf>) -> Self {
        if let Backend::Native(native) = &self.inner.backend
            && let Ok(mut python) = native.python.lock()
        {
            *python = Some(interpreter.into());
        }
        self
    }

    /// Names the sandbox helper binary (default: found by
    /// [`iris_sandbox::locate_helper`]); takes effect at [`CommandService::prepare`].
    #[must_use]
    pub fn with_sandbox_helper(self, helper: impl Into<PathBuf>) -> Self {
        if let Backend::Native(native) = &self.inner.backend
            && let Ok(mut settings) = native.sandbox.lock()
        {
            settings.helper = Some(helper.into());
        }
        self
    }

    /// Adds workspace paths sandboxed commands may read but not change (the runner adds
    /// the agent YAML and every file it references), beside `.iris`, `.git` and the
    /// policy's `protected`. Relative paths are relative to the workspace. In Docker
    /// mode they are mounted read-only into the container, so set them before
    /// [`CommandService::prepare`].
    #[must_use]
    pub fn with_protected_paths<I, P>(self, paths: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        let paths = paths.into_iter().map(Into::into);
        match &self.inner.backend {
            Backend::Native(native) => {
                if let Ok(mut settings) = native.sandbox.lock() {
                    settings.protected.extend(paths);
                }
            }
            Backend::Docker(docker) => {
                if let Ok(mut protected) = docker.protected.lock() {
                    protected.extend(paths);
                }
            }
        }
        self
    }

    /// A test hook: the egress proxy of `network: {allow: …}` resolves `host` to the
    /// loopback address `ip` instead of asking DNS (a non-loopback `ip` is ignored), so
    /// a test can serve an allowed domain on 127.0.0.1.
    #[must_use]
    pub fn with_egress_loopback_override(self, host: &str, ip: std::net::IpAddr) -> Self {
        match &self.inner.backend {
            Backend::Native(native) => {
                if let Ok(mut settings) = native.sandbox.lock() {
                    settings.overrides.insert(host, ip);
                }
            }
            Backend::Docker(docker) => {
                if let Ok(mut overrides) = docker.overrides.lock() {
                    overrides.insert(host, ip);
                }
            }
        }
        self
    }

    /// Sets how native calls contain the processes they start (default
    /// [`ProcessContainment::Auto`]); takes effect at [`CommandService::prepare`], so set
    /// it before. No effect in Docker mode, where the container holds every call.
    #[must_use]
    pub fn with_process_containment(self, containment: ProcessContainment) -> Self {
        if let Backend::Native(native) = &self.inner.backend
            && let Ok(mut requested) = native.containment.lock()
        {
            *requested = containment;
        }
        self
    }

    /// The containment native calls use, once prepared: [`ProcessContainment::Cgroup`]
    /// or [`ProcessContainment::Reaper`]. `None` before `prepare` and in Docker mode.
    pub fn process_containment(&self) -> Option<ProcessContainment> {
        match &self.inner.backend {
            Backend::Native(native) => native.effective_containment(),
            Backend::Docker(_) => None,
        }
    }

    /// The per-stream output byte limit.
    pub fn output_limit(&self) -> usize {
        self.inner.output_limit.load(Ordering::Relaxed)
    }

    /// Native or Docker.
    pub fn mode(&self) -> CommandMode {
        self.inner.config.mode
    }

    /// The validated config.
    pub fn config(&self) -> &CommandConfig {
        &self.inner.config
    }

    /// The canonical workspace root.
    pub fn workspace_root(&self) -> &Path {
        &self.inner.workspace
    }

    /// The Docker container's id, once prepared (Docker mode only).
    pub fn docker_container_id(&self) -> Option<String> {
        match &self.inner.backend {
            Backend::Docker(d) => d.container_id(),
            Backend::Native(_) => None,
        }
    }

    /// How many executions are running (stopped ones count until they drained).
    pub fn running_count(&self) -> usize {
        self.lock_state().map(|s| s.running.len()).unwrap_or(0)
    }

    fn lock_state(&self) -> Result<std::sync::MutexGuard<'_, State>, CommandError> {
        self.inner
            .state
            .lock()
            .map_err(|_| CommandError::unavailable("the command service state is poisoned"))
    }

    /// Prepares owned resources: natively checks the shell, finds the sandbox helper and
    /// has it check the policy on this kernel (`COMMAND_SANDBOX_UNAVAILABLE` when it
    /// cannot be enforced); in Docker connects to the
    /// engine, checks the image exists and starts the container. Idempotent. Every
    /// failure is `COMMAND_UNAVAILABLE`; Docker never falls back to native.
    pub async fn prepare(&self) -> Result<(), CommandError> {
        if self.lock_state()?.closed {
            return Err(CommandError::unavailable("the command service is closed"));
        }
        match &self.inner.backend {
            Backend::Native(native) => native.prepare().await?,
            Backend::Docker(docker) => docker.prepare().await?,
        }
        let closed = {
            let mut state = self.lock_state()?;
            if !state.closed {
                state.prepared = true;
            }
            state.closed
        };
        if closed {
            // close() ran while we prepared; do not leave a container behind.
            if let Backend::Docker(docker) = &self.inner.backend {
                docker.close().await;
            }
            return Err(CommandError::unavailable("the command service is closed"));
        }
        Ok(())
    }

    /// Checks a request and turns it into a job.
    fn job(&self, request: CommandRequest) -> Result<Job, CommandError> {
        let what = match request.payload {
            CommandPayload::Shell(_) => "command",
            CommandPayload::Python(_) => "code",
        };
        let source = request.payload.source();
        if source.trim().is_empty() {
            return Err(CommandError::InvalidRequest(format!("the {what} is empty")));
        }
        if source.contains('\0') {
            return Err(CommandError::InvalidRequest(format!(
                "the {what} contains a NUL byte"
            )));
        }
        if source.len() > MAX_PAYLOAD_BYTES {
            return Err(CommandError::InvalidRequest(format!(
                "the {what} is {} bytes; at most {MAX_PAYLOAD_BYTES} are accepted (write longer programs to a file)",
                source.len()
            )));
        }
        let root = self.inner.config.timeout_seconds;
        let deadline_seconds = match request.timeout_seconds {
            Some(t) if t.is_finite() && t > 0.0 => t.min(root),
            Some(t) => {
                return Err(CommandError::InvalidRequest(format!(
                    "timeout_seconds must be a positive finite number, got {t}"
                )));
            }
            None => root,
        };
        if request.widening.is_some()
            && self.inner.config.sandbox.escalation != iris_sandbox::Escalation::Ask
        {
            return Err(CommandError::InvalidRequest(
                "a wider sandbox was requested but the policy's escalation is `never`".to_owned(),
            ));
        }
        let cwd = self.resolve_cwd(&request.cwd)?;
        Ok(Job {
            call_id: request.call_id,
            payload: request.payload,
            cwd,
            deadline_seconds,
            stdin: request.stdin,
            cancellation: request.cancellation,
            origin: request.origin,
            channel: request.channel,
            widening: request.widening,
        })
    }

    /// Resolves a cwd inside the workspace; it must be an existing directory.
    pub fn resolve_cwd(&self, cwd: &Path) -> Result<PathBuf, CommandError> {
        let shown = cwd.to_string_lossy().escape_debug().to_string();
        let resolved = WorkspacePolicy::new()
            .resolve_path(cwd, &self.inner.workspace)
            .map_err(|e| CommandError::InvalidCwd {
                cwd: shown.clone(),
                reason: e.to_string(),
                code: e.code(),
            })?;
        if !resolved.is_dir() {
            return Err(CommandError::InvalidCwd {
                cwd: shown,
                reason: "it is not an existing directory".to_owned(),
                code: iris_tools_core::codes::INVALID_PATH,
            });
        }
        Ok(resolved)
    }

    /// Runs one request in a scope.
    ///
    /// `Err` means nothing ran: an invalid request (`INVALID_INPUT`), an unusable cwd
    /// (`INVALID_PATH`, `PATH_OUTSIDE_WORKSPACE`) or an unavailable environment
    /// (`COMMAND_UNAVAILABLE`: not prepared, closed, the process could not start). Once
    /// the process started the answer is `Ok` with the [`CommandStatus`], whatever
    /// happened: deadline = min(root timeout, request timeout); a timeout, stop,
    /// close or cancellation kills the whole process tree before the outcome returns.
    /// Dropping the returned future cancels the execution the same way.
    pub async fn execute(
        &self,
        scope: &CommandScope,
        request: CommandRequest,
    ) -> Result<CommandOutcome, CommandError> {
        // Checking the request resolves its cwd on the file system: on the blocking
        // pool, never on an async worker.
        let service = self.clone();
        let job = iris_fs::blocking::run_blocking_io(move || service.job(request))
            .await
            .map_err(|e| CommandError::unavailable(e.message))??;
        let (id, entry) = {
            let mut state = self.lock_state()?;
            if state.closed {
                return Err(CommandError::unavailable("the command service is closed"));
            }
            if !state.prepared {
                return Err(CommandError::unavailable(
                    "the command service is not prepared; call prepare() first",
                ));
            }
            state.next_id += 1;
            let id = state.next_id;
            let entry = Arc::new(ExecEntry::new(scope.clone(), job.call_id.clone()));
            state.running.insert(id, entry.clone());
            (id, entry)
        };
        let (tx, rx) = oneshot::channel();
        let inner = self.inner.clone();
        let task_entry = entry.clone();
        tokio::spawn(async move {
            let result = inner.run(job, &task_entry).await;
            if let Ok(mut state) = inner.state.lock() {
                state.running.remove(&id);
            }
            let _ = tx.send(result);
            task_entry.mark_drained();
        });
        let guard = AbandonGuard(Some(entry));
        let result = rx.await;
        guard.disarm();
        result.unwrap_or_else(|_| {
            Err(CommandError::unavailable(
                "the execution task ended without an outcome",
            ))
        })
    }

    /// Stops every running execution of `scope`. The stop is registered before this
    /// returns (the operation lists the affected calls at once); the kills proceed in
    /// the executions' own tasks. Executions started later are not affected. Calling it
    /// again while a stop is in progress joins it: an execution is killed once.
    pub fn stop(&self, scope: &CommandScope) -> StopOperation {
        let entries: Vec<Arc<ExecEntry>> = self
            .lock_state()
            .map(|state| {
                state
                    .running
                    .values()
                    .filter(|e| &e.scope == scope)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        for entry in &entries {
            entry.request_stop(StopReason::ScopeStopped);
        }
        StopOperation {
            service_id: self.inner.id,
            mode: self.mode(),
            scope: scope.clone(),
            entries,
        }
    }

    /// Waits until the executions a receipt covers have wrapped up. It stops nothing:
    /// executions started after the stop keep running.
    pub async fn wait_drained(&self, receipt: &CommandStopReceipt) -> Result<(), CommandError> {
        if receipt.service_id != self.inner.id {
            return Err(CommandError::ForeignReceipt);
        }
        for entry in &receipt.entries {
            entry.wait_drained().await;
        }
        Ok(())
    }

    /// Closes the service: refuses new executions, stops every running one
    /// (`environment_interrupted`), waits until they drained, then releases resources
    /// (Docker: removes the container). Idempotent.
    pub async fn close(&self) -> Result<(), CommandError> {
        let entries: Vec<Arc<ExecEntry>> = {
            let mut state = self.lock_state()?;
            if state.closed {
                return Ok(());
            }
            state.closed = true;
            state.running.values().cloned().collect()
        };
        for entry in &entries {
            entry.request_stop(StopReason::Closed);
        }
        for entry in &entries {
            entry.wait_drained().await;
        }
        if let Backend::Docker(docker) = &self.inner.backend {
            docker.close().await;
        }
        Ok(())
    }

    /// Whether [`CommandService::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.lock_state().map(|s| s.closed).unwrap_or(true)
    }
}

impl Inner {
    async fn run(&self, job: Job, entry: &ExecEntry) -> Result<CommandOutcome, CommandError> {
        let started = Instant::now();
        let mode = self.config.mode;
        let limit = self.output_limit.load(Ordering::Relaxed);
        if let Some(reason) = entry.reason.get() {
            // Stopped before it started: nothing runs.
            return Ok(not_started(&job, mode, *reason, started));
        }
        let outcome = match &self.backend {
            Backend::Native(native) => {
                let process = native.spawn(&job).await?;
                let report = process.report_source();
                let mut outcome = drive(process, &job, entry, mode, limit, started).await;
                if report.is_some()
                    && outcome.exit_code == Some(iris_sandbox::HELPER_FAILED_EXIT)
                    && let Some(error) = iris_sandbox::helper_error(&outcome.stderr)
                {
                    // The helper could not restrict itself: nothing of the command ran.
                    return Err(CommandError::SandboxUnavailable(format!(
                        "the command sandbox cannot be enforced: {error}"
                    )));
                }
                outcome.sandbox = report.map(crate::native::ReportSource::finish);
                outcome
            }
            Backend::Docker(docker) => {
                let mut process = docker.spawn(&job).await?;
                let report = process.take_report();
                let mut outcome = drive(process, &job, entry, mode, limit, started).await;
                outcome.sandbox = report.map(crate::native::ReportSource::finish);
                outcome
            }
        };
        Ok(outcome)
    }
}

fn not_started(
    job: &Job,
    mode: CommandMode,
    reason: StopReason,
    started: Instant,
) -> CommandOutcome {
    let (status, detail) = match reason {
        StopReason::Abandoned => (CommandStatus::Cancelled, None),
        StopReason::ScopeStopped => (
            CommandStatus::EnvironmentInterrupted,
            Some("the scope was stopped before the command started".to_owned()),
        ),
        StopReason::Closed => (
            CommandStatus::EnvironmentInterrupted,
            Some("the command service was closed before the command started".to_owned()),
        ),
    };
    CommandOutcome {
        call_id: job.call_id.clone(),
        mode,
        status,
        exit_code: None,
        cwd: job.cwd.clone(),
        duration_seconds: started.elapsed().as_secs_f64(),
        deadline_seconds: job.deadline_seconds,
        stdout: String::new(),
        stderr: String::new(),
        output_truncated: false,
        output_stats: OutputStats::default(),
        detail,
        sandbox: None,
    }
}

/// Cancels the execution when the `execute` future is dropped before its outcome.
struct AbandonGuard(Option<Arc<ExecEntry>>);

impl AbandonGuard {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for AbandonGuard {
    fn drop(&mut self) {
        if let Some(entry) = self.0.take() {
            entry.request_stop(StopReason::Abandoned);
        }
    }
}

/// A stop of one scope's executions, registered by [`CommandService::stop`].
///
/// ```
/// use iris_command::{CommandConfig, CommandScope, CommandService};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let workspace = tempfile::tempdir()?;
/// let service = CommandService::new(CommandConfig::native(), workspace.path())?;
/// let scope = CommandScope::new("run-1", "s-1");
/// let stop = service.stop(&scope); // nothing runs: an empty stop completes at once
/// assert!(stop.call_ids().is_empty());
/// let receipt = stop.wait_stopped().await;
/// service.wait_drained(&receipt).await?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct StopOperation {
    service_id: u64,
    mode: CommandMode,
    scope: CommandScope,
    entries: Vec<Arc<ExecEntry>>,
}

impl StopOperation {
    /// The stopped scope.
    pub fn scope(&self) -> &CommandScope {
        &self.scope
    }

    /// The call ids of the executions this stop covers, known at registration.
    pub fn call_ids(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.call_id.clone()).collect()
    }

    /// Waits until every covered execution's process tree is physically gone.
    pub async fn wait_stopped(&self) -> CommandStopReceipt {
        let mut unconfirmed = Vec::new();
        for entry in &self.entries {
            if !entry.wait_stopped().await {
                unconfirmed.push(entry.call_id.clone());
            }
        }
        CommandStopReceipt {
            scope: self.scope.clone(),
            mode: self.mode,
            call_ids: self.call_ids(),
            unconfirmed,
            service_id: self.service_id,
            entries: self.entries.clone(),
        }
    }

    /// Waits until every covered execution has wrapped up (outcome delivered). It
    /// stops nothing started after the stop.
    pub async fn wait_drained(&self) {
        for entry in &self.entries {
            entry.wait_drained().await;
        }
    }
}

/// Confirmation that a stop physically happened.
#[derive(Debug, Clone)]
pub struct CommandStopReceipt {
    /// The stopped scope.
    pub scope: CommandScope,
    /// The service's mode.
    pub mode: CommandMode,
    /// The call ids of the stopped executions.
    pub call_ids: Vec<String>,
    /// Calls whose kill could not be confirmed (empty when every tree is gone).
    pub unconfirmed: Vec<String>,
    service_id: u64,
    entries: Vec<Arc<ExecEntry>>,
}
