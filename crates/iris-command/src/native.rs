//! The native backend: `/bin/sh -c` (or the host's Python) in its own process group,
//! with an allow-listed environment, contained so that nothing it starts outlives it.
//!
//! Each call is one process started with `process_group(0)`, so it leads a new process
//! group that its children and grandchildren inherit, and with `env_clear()` plus the
//! environment of [`crate::env`]. Killing means `SIGKILL` to the whole group, repeated
//! until no live (non-zombie) member is left. When the leader exits by itself, the rest
//! of its group is killed too: a call owns its processes, and background jobs do not
//! outlive it.
//!
//! Processes that leave the group (`setsid`, `setpgid`, double forks) are contained by
//! [`crate::ProcessContainment`]: a cgroup per call (the leader starts behind a gate on
//! its stdin and is moved into the cgroup before it runs the payload; the end of the call
//! writes `cgroup.kill`) or, without a writable cgroup v2, the subreaper sweep. Either
//! runs when the leader exits, when the call is killed, and once more before the outcome
//! is returned.
//!
//! When the host has `setpriv` (util-linux), the leader is started as
//! `setpriv --pdeathsig KILL -- …`, so it is killed if the host process dies without
//! cleaning up (see the crate README for the limits of that backstop). A sandboxed
//! call's leader is the sandbox helper itself, which asks for the same signal and waits
//! at the cgroup gate on its own ([`iris_sandbox::Gate`]): two `exec`s fewer per call.
//!
//! A request the model caused ([`crate::CommandOrigin::Model`]) runs under the
//! service's sandbox policy unless it is off: the payload is started through the
//! sandbox helper ([`iris_sandbox`]), which restricts itself and then execs it; the call
//! gets a temp folder of its own (`TMPDIR`, removed at the end) and, for `network:
//! {allow: …}`, an egress proxy of its own (`HTTP_PROXY` and its kin). `prepare`
//! finds the helper and has it check the policy against this kernel, so a host that
//! cannot enforce it fails there with `COMMAND_SANDBOX_UNAVAILABLE`.
//!
//! The backend needs a Unix host; on other hosts `prepare` reports
//! `COMMAND_UNAVAILABLE` (a Windows `cmd.exe` variant is not written yet).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use tokio::time::Instant;

use iris_sandbox::{
    ChannelPlan, EgressProxy, Gate, HelperPlan, LoopbackOverrides, NetworkAccess, PlanInputs,
    SandboxPolicy,
};

use crate::capture::Captures;
use crate::contain::{self, CallCgroup, CallTicket, ProcessContainment};
use crate::error::CommandError;
use crate::request::{CommandOrigin, CommandPayload, SandboxReport};
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

/// The gate of a contained call: waits for one line on stdin (sent once the leader is in
/// its cgroup), then becomes the payload with the rest of stdin.
const GATE: &str = "IFS= read -r iris_gate || exit 125; exec \"$@\"";
/// The gate of a call without stdin bytes: the payload's stdin is `/dev/null`.
const GATE_NULL: &str = "IFS= read -r iris_gate || exit 125; exec \"$@\" </dev/null";

/// What `prepare` decided for the calls of this backend.
#[derive(Debug, Clone)]
struct Prepared {
    /// The cgroup directory calls get child cgroups in; `None` for the reaper.
    cgroup: Option<&'static Path>,
    /// Whether a cgroup was demanded (no fallback to the reaper).
    cgroup_required: bool,
    /// `setpriv` for the parent-death backstop.
    launcher: Option<PathBuf>,
    /// The sandbox helper, unless the policy is off.
    helper: Option<PathBuf>,
}

/// What the host adds to the sandbox policy (set on the service before `prepare`).
#[derive(Debug, Clone, Default)]
pub(crate) struct SandboxSettings {
    /// An explicit helper binary.
    pub(crate) helper: Option<PathBuf>,
    /// Protected paths the host adds (the agent YAML and what it references).
    pub(crate) protected: Vec<PathBuf>,
    /// Test names the egress proxy resolves to loopback addresses.
    pub(crate) overrides: LoopbackOverrides,
}

/// The native backend (stateless apart from its settings: each call is its own process).
/// Its `Debug` output names the calls' variables, never their values.
pub(crate) struct NativeBackend {
    /// The interpreter for `run_python`; `None` means [`PYTHON_ENV`] or `python3`.
    pub(crate) python: Mutex<Option<PathBuf>>,
    /// The requested containment.
    pub(crate) containment: Mutex<ProcessContainment>,
    /// The whole environment of every call.
    env: BTreeMap<OsString, OsString>,
    /// The sandbox policy of the model's calls.
    policy: SandboxPolicy,
    /// What the host adds to it.
    pub(crate) sandbox: Mutex<SandboxSettings>,
    /// The canonical workspace root.
    workspace: PathBuf,
    /// The host user's home, for `~/` entries of `deny_read`.
    home: Option<PathBuf>,
    prepared: OnceLock<Prepared>,
}

impl std::fmt::Debug for NativeBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeBackend")
            .field("python", &self.python)
            .field("containment", &self.containment)
            .field(
                "env",
                &crate::config::hidden_values(self.env.keys().map(|k| k.to_string_lossy())),
            )
            .field("policy", &self.policy)
            .field("sandbox", &self.sandbox)
            .field("prepared", &self.prepared)
            .finish()
    }
}

impl NativeBackend {
    /// A backend whose calls get exactly `env`, and the model's calls `policy`.
    pub(crate) fn new(
        env: BTreeMap<OsString, OsString>,
        policy: SandboxPolicy,
        workspace: PathBuf,
    ) -> Self {
        Self {
            python: Mutex::new(None),
            containment: Mutex::new(ProcessContainment::Auto),
            env,
            policy,
            sandbox: Mutex::new(SandboxSettings::default()),
            workspace,
            home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
            prepared: OnceLock::new(),
        }
    }

    fn settings(&self) -> SandboxSettings {
        self.sandbox.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Finds the helper and has it check the policy on this kernel (with a masked path,
    /// so the namespaces are checked too); `None` when the policy is off.
    async fn prepare_sandbox(&self) -> Result<Option<PathBuf>, CommandError> {
        if self.policy.is_off() {
            return Ok(None);
        }
        let settings = self.settings();
        let policy = self.policy.clone();
        let workspace = self.workspace.clone();
        let home = self.home.clone();
        let checked = iris_fs::blocking::run_blocking_io(move || {
            let helper = iris_sandbox::locate_helper(settings.helper.as_deref())?;
            CallTemp::sweep_stale();
            if policy.filesystem != iris_sandbox::FilesystemAccess::Off {
                // `.iris` exists before any command runs, so it is mounted read-only
                // from the first call on: a command cannot plant Iris state.
                iris_fs::workspace::WorkspaceDir::open_root(&workspace)
                    .map_err(|e| e.to_string())
                    .and_then(|root| {
                        iris_fs::state_dir::create_in(&root).map_err(|e| e.to_string())
                    })
                    .map_err(|e| {
                        CommandError::SandboxUnavailable(format!(
                            "cannot create the workspace's .iris folder to protect it: {e}"
                        ))
                    })?;
            }
            let probe = CallTemp::create()?;
            let mut plan = HelperPlan::new(
                &policy,
                PlanInputs {
                    temp_dir: Some(probe.path()),
                    protected: &settings.protected,
                    proxy_port: matches!(policy.network, NetworkAccess::Allow(_)).then_some(1),
                    home: home.as_deref(),
                    ..PlanInputs::new(&workspace)
                },
            );
            if policy.filesystem != iris_sandbox::FilesystemAccess::Off {
                plan.deny_read.push(probe.path().to_path_buf());
            }
            iris_sandbox::check_plan(&helper, &plan)?;
            Ok::<_, CommandError>(helper)
        })
        .await
        .map_err(|e| CommandError::SandboxUnavailable(e.message))??;
        Ok(Some(checked))
    }

    /// Checks the shell exists and decides containment and the backstop.
    pub(crate) async fn prepare(&self) -> Result<(), CommandError> {
        if !cfg!(unix) {
            // Killing a whole process tree is implemented with Unix process groups;
            // a Windows (cmd.exe, job object) variant is not written yet.
            return Err(CommandError::unavailable(
                "native commands need a Unix host in this version; use docker mode",
            ));
        }
        if !Path::new(SHELL).exists() {
            return Err(CommandError::unavailable(format!(
                "the host shell {SHELL} does not exist"
            )));
        }
        if self.prepared.get().is_some() {
            return Ok(());
        }
        let requested = self
            .containment
            .lock()
            .map(|c| *c)
            .unwrap_or(ProcessContainment::Auto);
        let cgroup = match requested {
            ProcessContainment::Reaper => None,
            ProcessContainment::Auto => contain::cgroup_root(),
            ProcessContainment::Cgroup => Some(contain::cgroup_root().ok_or_else(|| {
                CommandError::unavailable(
                    "process containment `cgroup` needs a writable cgroup v2 hierarchy with cgroup.kill (Linux 5.14+); none was found",
                )
            })?),
        };
        if cgroup.is_none() {
            contain::ensure_subreaper();
        }
        let launcher = contain::pdeathsig_launcher().await;
        let helper = self.prepare_sandbox().await?;
        let _ = self.prepared.set(Prepared {
            cgroup,
            cgroup_required: requested == ProcessContainment::Cgroup,
            launcher,
            helper,
        });
        Ok(())
    }

    /// The containment in effect, once prepared.
    pub(crate) fn effective_containment(&self) -> Option<ProcessContainment> {
        self.prepared.get().map(|p| match p.cgroup {
            Some(_) => ProcessContainment::Cgroup,
            None => ProcessContainment::Reaper,
        })
    }

    /// The interpreter of `run_python`, resolved on the calls' `PATH`.
    fn python(&self) -> Result<PathBuf, CommandError> {
        let chosen = self.python.lock().ok().and_then(|p| p.clone());
        let python: PathBuf = match chosen {
            Some(path) => path,
            None => std::env::var_os(PYTHON_ENV)
                .filter(|v| !v.is_empty())
                .map_or_else(|| DEFAULT_PYTHON.into(), Into::into),
        };
        let path = self.env.get(&OsString::from("PATH"));
        contain::resolve_program(&python, path.map(OsString::as_os_str)).ok_or_else(|| {
            CommandError::unavailable(format!(
                "the Python interpreter `{}` was not found; install python3 or set {PYTHON_ENV}",
                python.display()
            ))
        })
    }

    /// Starts the job's process.
    pub(crate) async fn spawn(&self, job: &Job) -> Result<NativeProcess, CommandError> {
        let prepared = self
            .prepared
            .get()
            .cloned()
            .ok_or_else(|| CommandError::unavailable("the native backend is not prepared"))?;
        let payload: Vec<OsString> = match &job.payload {
            CommandPayload::Shell(line) => vec![SHELL.into(), "-c".into(), line.into()],
            CommandPayload::Python(code) => {
                vec![self.python()?.into_os_string(), "-c".into(), code.into()]
            }
        };
        let mut env = self.env.clone();
        // An approved widening applies to this call only.
        let policy = match &job.widening {
            Some(widening) => self.policy.widened(widening),
            None => self.policy.clone(),
        };
        let mut sandbox = match (&prepared.helper, job.origin) {
            (Some(_), CommandOrigin::Model) if !policy.is_off() => {
                let call = self.sandbox_call(job, policy).await?;
                env.insert("TMPDIR".into(), call.temp.path().into());
                if let Some(proxy) = &call.proxy {
                    for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
                        env.insert(name.into(), proxy.url().into());
                        env.insert(name.to_ascii_lowercase().into(), proxy.url().into());
                    }
                    env.insert("NO_PROXY".into(), "".into());
                    env.insert("no_proxy".into(), "".into());
                }
                Some(call)
            }
            _ => None,
        };
        let mut ticket = CallTicket::pending();
        let mut cgroup = match prepared.cgroup.map(CallCgroup::create) {
            None => None,
            Some(Ok(cgroup)) => Some(cgroup),
            Some(Err(e)) if prepared.cgroup_required => {
                return Err(CommandError::unavailable(format!(
                    "cannot create the call's cgroup: {e}"
                )));
            }
            Some(Err(e)) => {
                tracing::warn!(error = %e, "cannot create a cgroup for the call; using the reaper");
                contain::ensure_subreaper();
                None
            }
        };
        let gated = cgroup.is_some();
        let mut argv: Vec<OsString> = Vec::new();
        match (&prepared.helper, sandbox.as_mut()) {
            (Some(helper), Some(call)) => {
                // The helper is the call's first process: it asks for the parent-death
                // signal and waits at the gate itself, so the chain is the helper and
                // the command, not `setpriv`, a gate shell, the helper and the command.
                call.plan.parent = Some(std::process::id());
                call.plan.gate = gated.then_some(if job.stdin.is_some() {
                    Gate::Stdin
                } else {
                    Gate::NullStdin
                });
                argv.extend(call.plan.argv(helper, &payload));
            }
            _ => {
                if let Some(launcher) = &prepared.launcher {
                    argv.extend([
                        launcher.clone().into_os_string(),
                        "--pdeathsig".into(),
                        "KILL".into(),
                        "--".into(),
                    ]);
                }
                if gated {
                    let gate = if job.stdin.is_some() { GATE } else { GATE_NULL };
                    argv.extend([SHELL.into(), "-c".into(), gate.into(), "iris-gate".into()]);
                }
                argv.extend(payload);
            }
        }
        let mut command = Command::new(&argv[0]);
        command.args(&argv[1..]);
        #[cfg(unix)]
        command.process_group(0);
        command
            .current_dir(&job.cwd)
            .env_clear()
            .envs(&env)
            .stdin(if gated || job.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let program = argv[0].to_string_lossy().into_owned();
        let mut child = command
            .spawn()
            .map_err(|e| CommandError::unavailable(format!("cannot start `{program}`: {e}")))?;
        let Some(pid) = child.id() else {
            return Err(CommandError::unavailable("the started process has no pid"));
        };
        let pgid = i32::try_from(pid)
            .map_err(|_| CommandError::unavailable("the started process has no valid pid"))?;
        if let Some(cg) = &cgroup
            && let Err(e) = cg.add(pid)
        {
            if prepared.cgroup_required {
                // The gate has not opened: nothing of the payload ran.
                signal_group(pgid);
                return Err(CommandError::unavailable(format!(
                    "cannot move the call into its cgroup: {e}"
                )));
            }
            tracing::warn!(error = %e, "cannot move the call into its cgroup; using the reaper");
            contain::ensure_subreaper();
            cgroup = None;
        }
        ticket.started(pgid);
        let mut stdin = child.stdin.take();
        if gated && let Some(pipe) = stdin.as_mut() {
            // Opens the gate; a leader that already died makes this fail, and the
            // driver then sees it exit.
            let _ = pipe.write_all(b"\n").await;
        }
        match (job.stdin.clone(), stdin) {
            (Some(bytes), Some(mut pipe)) => {
                // A writer task, so a process that never reads cannot block the driver;
                // a process that exits without reading makes the write fail, which is
                // fine.
                tokio::spawn(async move {
                    let _ = pipe.write_all(&bytes).await;
                });
            }
            // Closing the pipe ends the gate's stdin.
            (_, pipe) => drop(pipe),
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
            cgroup,
            ticket,
            released: false,
            sandbox,
        })
    }

    /// One call's sandbox under `policy` (the service's, or its approved widening):
    /// its temp folder, its proxy (for `allow`) and its plan.
    async fn sandbox_call(
        &self,
        job: &Job,
        policy: SandboxPolicy,
    ) -> Result<CallSandbox, CommandError> {
        let settings = self.settings();
        let proxy = match &policy.network {
            NetworkAccess::Allow(_) => Some(std::sync::Arc::new(
                EgressProxy::start(policy.network.clone(), settings.overrides.clone())
                    .await
                    .map_err(|e| {
                        CommandError::SandboxUnavailable(format!(
                            "cannot start the egress proxy: {e}"
                        ))
                    })?,
            )),
            _ => None,
        };
        let channel = job.channel.as_ref().map(|c| ChannelPlan {
            path: c.path.clone(),
            count: c.count,
            env: c.env.clone(),
        });
        let (filesystem, network) = (policy.filesystem, policy.network.clone());
        let workspace = self.workspace.clone();
        let home = self.home.clone();
        let port = proxy.as_ref().map(|p| p.port());
        // The temp folder and the plan (which canonicalizes paths) in one trip to the
        // blocking pool.
        let (temp, plan) = iris_fs::blocking::run_blocking_io(move || {
            let temp = CallTemp::create()?;
            let plan = HelperPlan::new(
                &policy,
                PlanInputs {
                    temp_dir: Some(temp.path()),
                    protected: &settings.protected,
                    proxy_port: port,
                    home: home.as_deref(),
                    channel,
                    ..PlanInputs::new(&workspace)
                },
            );
            Ok::<_, CommandError>((temp, plan))
        })
        .await
        .map_err(|e| CommandError::SandboxUnavailable(e.message))??;
        Ok(CallSandbox {
            report: SandboxReport {
                filesystem,
                network,
                protected: plan.protected.clone(),
                deny_read: plan.deny_read.clone(),
                proxy_refusals: Vec::new(),
                widening: job.widening,
            },
            plan,
            temp,
            proxy,
        })
    }
}

/// A call's own temp folder (mode 0700), removed when the call ends.
#[derive(Debug)]
struct CallTemp(Option<PathBuf>);

impl CallTemp {
    fn create() -> Result<Self, CommandError> {
        use std::os::unix::fs::DirBuilderExt as _;
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let mut last = None;
        for _ in 0..8 {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!("iris-call-{}-{n}-{nanos:x}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    let path = std::fs::canonicalize(&path).unwrap_or(path);
                    return Ok(Self(Some(path)));
                }
                Err(e) => last = Some(e),
            }
        }
        Err(CommandError::SandboxUnavailable(format!(
            "cannot create the call's temp folder in `{}`: {}",
            base.display(),
            last.map(|e| e.to_string()).unwrap_or_default()
        )))
    }

    fn path(&self) -> &Path {
        self.0.as_deref().unwrap_or(Path::new("/nonexistent"))
    }

    /// Removes the temp folders of hosts that died before they could (their names
    /// carry the host's pid): a host killed mid-call cannot clean up after itself.
    fn sweep_stale() {
        let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let pid = name
                .to_str()
                .and_then(|n| n.strip_prefix("iris-call-"))
                .and_then(|rest| rest.split('-').next())
                .and_then(|pid| pid.parse::<u32>().ok());
            if let Some(pid) = pid
                && !Path::new(&format!("/proc/{pid}")).exists()
            {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }

    /// Removes the folder (blocking).
    fn remove(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = std::fs::remove_dir_all(path);
        }
    }
}

impl Drop for CallTemp {
    fn drop(&mut self) {
        self.remove();
    }
}

/// The sandbox of one running call.
#[derive(Debug)]
pub(crate) struct CallSandbox {
    plan: HelperPlan,
    temp: CallTemp,
    proxy: Option<std::sync::Arc<EgressProxy>>,
    report: SandboxReport,
}

/// Reads a call's sandbox report once the call ended (it keeps the proxy until then).
#[derive(Debug)]
pub(crate) struct ReportSource {
    report: SandboxReport,
    proxy: Option<std::sync::Arc<EgressProxy>>,
}

impl ReportSource {
    /// A report to finish when the call ends, with the refusals of `proxy` if any.
    pub(crate) fn new(report: SandboxReport, proxy: Option<std::sync::Arc<EgressProxy>>) -> Self {
        Self { report, proxy }
    }

    /// The report, with the proxy's refusals.
    pub(crate) fn finish(self) -> SandboxReport {
        let mut report = self.report;
        if let Some(proxy) = self.proxy {
            report.proxy_refusals = proxy.refusals();
        }
        report
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
    /// The call's cgroup, when it has one (else the reaper contains it).
    cgroup: Option<CallCgroup>,
    ticket: CallTicket,
    released: bool,
    /// The call's sandbox, when it runs in one.
    sandbox: Option<CallSandbox>,
}

impl NativeProcess {
    /// Where the call's sandbox report comes from, when it runs in one.
    pub(crate) fn report_source(&self) -> Option<ReportSource> {
        self.sandbox.as_ref().map(|s| ReportSource {
            report: s.report.clone(),
            proxy: s.proxy.clone(),
        })
    }
}

impl Drop for NativeProcess {
    fn drop(&mut self) {
        // If the driver is dropped mid-run (runtime shutdown), the tree must not survive.
        if self.status.is_none() {
            signal_group(self.pgid);
        }
        // The cgroup and the ticket kill and sweep what is left when they drop.
    }
}

/// Kills what left the group once the leader is gone: the cgroup, or one sweep pass
/// (without waiting; [`Process::release`] confirms).
fn kill_escaped(cgroup: Option<&CallCgroup>, ticket: &CallTicket) {
    match cgroup {
        Some(cg) => cg.kill(),
        None => {
            if contain::subreaper_active()
                && let Some(from) = contain::current_period()
            {
                contain::sweep_once(from, Some(ticket.id()));
            }
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
            cgroup,
            ticket,
            ..
        } = self;
        loop {
            if stdout.is_none() && stderr.is_none() {
                let exit = match status {
                    Some(s) => *s,
                    None => match child.wait().await {
                        Ok(s) => {
                            *status = Some(s);
                            signal_group(*pgid);
                            kill_escaped(cgroup.as_ref(), ticket);
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
                        // Background jobs of the call die with it (see the module docs),
                        // and so does whatever left the group.
                        signal_group(*pgid);
                        kill_escaped(cgroup.as_ref(), ticket);
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
            // Signalling is one syscall, but confirming reads /proc (every process's
            // stat) and the cgroup's files: on the blocking pool, not the async worker.
            // The cgroup travels there and back (it is removed when dropped).
            let pgid = self.pgid;
            let cgroup = self.cgroup.take();
            let checked = iris_fs::blocking::run_blocking_io(move || {
                signal_group(pgid);
                if let Some(cg) = &cgroup {
                    cg.kill();
                }
                let left = group_alive(pgid) || cgroup.as_ref().is_some_and(CallCgroup::populated);
                (left, cgroup)
            })
            .await;
            let left = match checked {
                Ok((left, cgroup)) => {
                    self.cgroup = cgroup;
                    left
                }
                // The worker failed (its cgroup, dropped there, was killed and
                // removed): check again on the next round.
                Err(_) => true,
            };
            if !left {
                break;
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
        if self.cgroup.is_none()
            && contain::subreaper_active()
            && let Some(from) = contain::current_period()
        {
            contain::sweep(from, Some(self.ticket.id())).await?;
        }
        Ok(())
    }

    async fn release(&mut self) -> Result<(), String> {
        if self.released {
            return Ok(());
        }
        self.released = true;
        let mut result = Ok(());
        if let Some(cg) = self.cgroup.as_mut() {
            result = cg.finish(KILL_CONFIRM).await;
        }
        let period = self.ticket.finish();
        if contain::subreaper_active() {
            // Also for cgroup calls: orphans of reaper calls that this call protected
            // while it ran are due now. (The sweep reaps adopted zombies too.)
            match period {
                Some(from) => {
                    if let Err(e) = contain::sweep(from, None).await {
                        result = result.and(Err(e));
                    }
                }
                None => contain::reap_zombies(),
            }
        }
        if let Some(mut temp) = self
            .sandbox
            .as_mut()
            .map(|s| std::mem::replace(&mut s.temp, CallTemp(None)))
        {
            let _ = iris_fs::blocking::run_blocking_io(move || temp.remove()).await;
        }
        result
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
        if !Path::new("/proc/self/stat").exists() {
            return probe_group(pgid);
        }
        contain::snapshot()
            .iter()
            .any(|p| p.pgrp == pgid && !matches!(p.state, 'Z' | 'X' | 'x'))
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
