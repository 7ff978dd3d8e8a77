//! The Docker backend, on `bollard`: one long-lived container per root service, one
//! exec per call.
//!
//! # The container
//! `DockerBackend::prepare` connects to the local engine (a unix socket or a Windows
//! named pipe, never TCP), negotiates the API version, checks that the image exists
//! (it never pulls or builds, and never falls back to native), then creates and starts
//! one container: network `none` or `bridge` (or, under `network: {allow: …}`, an
//! internal network of its own), `NanoCpus`, memory (swap disabled so the limit is
//! real), a pids limit, the workspace bind-mounted at the same path, the configured
//! environment, Docker's init (`tini`) as PID 1 so orphans are reaped, and the labels
//! in [`labels`] so leftovers can be found with
//! `docker ps -a --filter label=io.iris.command`. `DockerBackend::close` removes it.
//!
//! # The sandbox policy in the container
//! The container is the isolation; the policy's file-system rules become mounts (see
//! `workspace_mounts`): the protected paths (`.git`, `.iris`, the agent YAML and the
//! files it references) are mounted read-only over the workspace, the folders between
//! them and the workspace onto themselves (so they cannot be renamed away), `deny_read`
//! paths inside the workspace are masked, and those outside are simply not in the
//! container. `filesystem: read-only` mounts the workspace read-only. The container
//! drops `NET_RAW`, `SYS_CHROOT`, `MKNOD` and `SETFCAP` and runs with
//! `no-new-privileges`. Every call reports this in its outcome's `sandbox`, with the
//! refusals of its own egress proxy under `allow`.
//!
//! # Killing an exec
//! The engine has no API to kill an exec. Each call therefore runs under a small
//! `/bin/sh` wrapper ([`WRAPPER`]): it starts the payload with `setsid`, so the payload
//! leads a new session and process group whose id is its pid, and that process prints
//! its pid as the first line of stdout before `exec`ing the payload. The backend strips
//! that line and remembers the id. To kill the call, a second exec ([`KILL_SCRIPT`])
//! sends `SIGKILL` to the group until `kill -0` finds nobody left; the wrapper then
//! reaps the payload and exits, which ends the first exec's stream. When the payload
//! exits by itself, the wrapper kills what is left of its group (background jobs) and
//! exits with the payload's code, so nothing outlives a call, exactly as natively.
//! The image needs `/bin/sh` and `setsid` (util-linux or busybox); `prepare` checks.
//!
//! # Detached processes
//! A process that leaves the payload's group (`setsid`, a double fork) and whose parent
//! exits is adopted by the container's init (PID 1). Before it exits, the wrapper sweeps
//! such orphans ([`SWEEP`]): every live child of PID 1 except the container's keep-alive
//! shell (found at prepare) is killed with its descendants, unless another exec still
//! running in the container (a process whose parent is outside the container's pid
//! namespace) started before it — that exec may own it, and its own wrapper sweeps when
//! it ends. When the wrapper itself did not end normally (killed, or a signal-like exit
//! code), the backend runs the same sweep as a separate exec ([`SWEEP_SCRIPT`]).
//!
//! # Environment
//! The container's environment is `docker.environment`, then `env_passthrough` (host
//! values), then `env` (see [`crate::env`]); the host's own environment never enters it.
//!
//! A payload killed by a signal *inside* the container is reported with the shell's
//! `128 + n` code, because that is all the wrapper's `wait` can observe.

use std::collections::HashMap;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, HostConfig, Mount, MountType, NetworkCreateRequest};
use bollard::query_parameters::{CreateContainerOptions, RemoveContainerOptions};
use futures_core::Stream;
use iris_sandbox::{
    EgressProxy, FilesystemAccess, HelperPlan, LoopbackOverrides, NetworkAccess, PlanInputs,
    SandboxPolicy,
};
use tokio::io::AsyncWriteExt;

use crate::capture::Captures;
use crate::config::DockerConfig;
use crate::error::CommandError;
use crate::native::ReportSource;
use crate::request::{CommandPayload, SandboxReport};
use crate::run::{Job, Process, WaitOutcome};

/// Labels put on every container the backend creates.
pub mod labels {
    /// Present (`"1"`) on every container of the command backend.
    pub const CONTAINER: &str = "io.iris.command";
    /// The host workspace the container mounts.
    pub const WORKSPACE: &str = "io.iris.command.workspace";
    /// The pid of the host process that created the container.
    pub const OWNER_PID: &str = "io.iris.command.owner-pid";
}

/// Kills the container's detached orphans (see the [module docs](self)): `$k` is the
/// keep-alive shell's pid; the caller's own pid (`$$`) is not a blocker. Passes repeat
/// (bounded) until nothing is left to kill.
macro_rules! sweep_script {
    () => {
        r#"iris_st() {
  IFS= read -r l 2>/dev/null < "/proc/$1/stat" || return 1
  l=${l##*) }
  set -- $l
  S=$1 P=$2 T=${20}
}
n=0
while [ "$n" -lt 100 ]; do
  n=$((n+1))
  b=
  for d in /proc/[0-9]*; do
    q=${d#/proc/}
    if [ "$q" = 1 ] || [ "$q" = "$$" ]; then continue; fi
    iris_st "$q" || continue
    if [ "$P" = 0 ] && { [ -z "$b" ] || [ "$T" -lt "$b" ]; }; then b=$T; fi
  done
  v=
  for d in /proc/[0-9]*; do
    q=${d#/proc/}
    if [ "$q" = "$k" ]; then continue; fi
    iris_st "$q" || continue
    [ "$P" = 1 ] || continue
    case $S in Z|X|x) continue ;; esac
    if [ -n "$b" ] && [ "$b" -le "$T" ]; then continue; fi
    v="$v $q"
  done
  [ -n "$v" ] || break
  m=0
  while [ "$m" -lt 20 ]; do
    m=$((m+1))
    g=
    for d in /proc/[0-9]*; do
      q=${d#/proc/}
      case "$v " in *" $q "*) continue ;; esac
      iris_st "$q" || continue
      case "$v " in *" $P "*) v="$v $q"; g=1 ;; esac
    done
    [ -n "$g" ] || break
  done
  kill -9 $v 2>/dev/null
  sleep 0.02
done
"#
    };
}

/// The orphan sweep shared by [`WRAPPER`] and [`SWEEP_SCRIPT`] (expects `$k`).
pub const SWEEP: &str = sweep_script!();

/// Runs `"$@"` as the leader of a new session, printing its pid first; kills what is
/// left of that group after it exits, then sweeps detached orphans ([`SWEEP`]); exits
/// with its code. `$1` is the keep-alive shell's pid. Stdin (fd 0) is handed to the
/// payload through fd 3, because an asynchronous list would get `/dev/null`.
pub const WRAPPER: &str = concat!(
    r#"k=$1
shift
exec 3<&0
setsid /bin/sh -c 'printf "%s\n" "$$"; exec "$@"' iris-call "$@" <&3 3<&- &
p=$!
exec 3<&-
wait "$p"
rc=$?
kill -9 "-$p" 2>/dev/null
"#,
    sweep_script!(),
    r#"exit "$rc""#
);

/// Kills process group `$2` and sweeps detached orphans ([`SWEEP`]); `$1` is the
/// keep-alive shell's pid. Used when a call's wrapper did not end normally.
pub const SWEEP_SCRIPT: &str = concat!(
    r#"k=$1
kill -9 "-$2" 2>/dev/null
"#,
    sweep_script!(),
    "exit 0"
);

/// Lists the pids whose parent is PID 1 (at prepare: the keep-alive shell).
const INIT_CHILDREN: &str = r#"for d in /proc/[0-9]*; do
  IFS= read -r l 2>/dev/null < "$d/stat" || continue
  l=${l##*) }
  set -- $l
  if [ "$2" = 1 ]; then echo "${d#/proc/}"; fi
done"#;

/// Kills process group `$1` and waits (bounded: 400 checks, 25 ms apart) until no
/// member is left. Exit 0 when the group is gone, 1 when it is still there.
///
/// The `kill -9 -PGID` / `kill -0 -PGID` spellings (numeric signal, no `--`) are the
/// ones dash and busybox `sh` both accept.
pub const KILL_SCRIPT: &str = r#"p=$1
n=0
while kill -0 "-$p" 2>/dev/null; do
  kill -9 "-$p" 2>/dev/null
  n=$((n+1))
  if [ "$n" -ge 400 ]; then exit 1; fi
  sleep 0.025
done
exit 0"#;

/// How to get an engine, appended to every "engine unreachable" message.
const ENGINE_HINT: &str =
    "start the engine (for example `dockerd > /tmp/dockerd.log 2>&1 &`) or fix docker.endpoint";

/// Capabilities of Docker's default set the container drops (see `create_container`).
const DROPPED_CAPABILITIES: [&str; 4] = ["NET_RAW", "SYS_CHROOT", "MKNOD", "SETFCAP"];

/// Keeps the container alive; `tini` (PID 1) forwards the stop signal.
const KEEP_ALIVE: &str = "while :; do sleep 3600; done";
/// Python inside the image.
const IMAGE_PYTHON: &str = "python3";
/// Output frame capacity of an exec stream.
const FRAME_CAPACITY: usize = 64 * 1024;
/// How long to wait for the wrapper's pid line before a kill gives up on it.
const PID_LINE_WAIT: Duration = Duration::from_secs(10);
/// How many times a running container is confirmed after a signal-like exit code.
const CONTAINER_CHECKS: usize = 10;
/// Engine request timeout (seconds) for non-streaming calls.
const ENGINE_TIMEOUT_SECONDS: u64 = 120;

type OutputStream = Pin<Box<dyn Stream<Item = Result<LogOutput, bollard::errors::Error>> + Send>>;

/// What `prepare` made: the engine connection and the container.
#[derive(Debug)]
pub(crate) struct Prepared {
    docker: Docker,
    container_id: String,
    /// The keep-alive shell's pid in the container (never swept).
    keepalive: i64,
    /// Under `network: {allow: …}`: the container's internal network and the address
    /// the calls' egress proxies listen on (see [`Egress`]).
    egress: Option<Egress>,
    /// What the container's mounts enforce, for the calls' reports.
    confinement: Confinement,
}

/// `network: {allow: …}` in Docker mode: the container is attached only to an
/// internal Docker network (no route out of it), whose gateway address on the host is
/// where the egress proxies listen. Each call gets a proxy of its own on that address
/// (its exec's `HTTP_PROXY` and kin name it), so its refusals land in that call's
/// `data.sandbox`, as natively; the proxy admits the listed domains only. The network
/// lives as long as the container.
#[derive(Debug)]
pub(crate) struct Egress {
    /// The internal network's name (removed after the container).
    network: String,
    /// The network's gateway: the host's address on it, where proxies listen.
    gateway: std::net::IpAddr,
    /// Test names the proxies resolve to loopback addresses.
    overrides: LoopbackOverrides,
}

/// What the container enforces of the sandbox policy, as calls report it.
#[derive(Debug, Clone)]
struct Confinement {
    /// Workspace paths mounted read-only into the container.
    protected: Vec<PathBuf>,
    /// `deny_read` paths: those outside the workspace are not in the container at all,
    /// those inside are masked by mounts.
    deny_read: Vec<PathBuf>,
}

/// The Docker backend. Its `Debug` output names the container's variables, never their
/// values.
pub(crate) struct DockerBackend {
    config: DockerConfig,
    /// The container's whole environment (`NAME=value`).
    env: Vec<String>,
    workspace: PathBuf,
    /// The sandbox policy: its network rule (`allow` gets an [`Egress`]), its file
    /// system access and its protected and `deny_read` paths (mounts).
    policy: SandboxPolicy,
    /// Protected paths the host adds (the agent YAML and what it references).
    pub(crate) protected: std::sync::Mutex<Vec<PathBuf>>,
    /// Test names the egress proxy resolves to loopback addresses.
    pub(crate) overrides: std::sync::Mutex<LoopbackOverrides>,
    prepared: std::sync::Mutex<Option<Arc<Prepared>>>,
}

impl std::fmt::Debug for DockerBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = self
            .env
            .iter()
            .map(|pair| pair.split_once('=').map_or(pair.as_str(), |(name, _)| name));
        f.debug_struct("DockerBackend")
            .field("config", &self.config)
            .field("env", &crate::config::hidden_values(names))
            .field("workspace", &self.workspace)
            .field("prepared", &self.prepared)
            .finish()
    }
}

impl DockerBackend {
    pub(crate) fn new(
        config: DockerConfig,
        env: Vec<String>,
        workspace: PathBuf,
        policy: SandboxPolicy,
    ) -> Self {
        Self {
            config,
            env,
            workspace,
            policy,
            protected: std::sync::Mutex::new(Vec::new()),
            overrides: std::sync::Mutex::new(LoopbackOverrides::default()),
            prepared: std::sync::Mutex::new(None),
        }
    }

    fn current(&self) -> Option<Arc<Prepared>> {
        self.prepared.lock().ok().and_then(|p| p.clone())
    }

    /// The container id, once prepared.
    pub(crate) fn container_id(&self) -> Option<String> {
        self.current().map(|p| p.container_id.clone())
    }

    fn endpoint_label(&self) -> String {
        self.config
            .endpoint
            .clone()
            .unwrap_or_else(|| "the local default socket".to_owned())
    }

    fn connect(&self) -> Result<Docker, CommandError> {
        let fail = |e: bollard::errors::Error| {
            CommandError::unavailable(format!(
                "cannot connect to the Docker engine at {}: {e}; {ENGINE_HINT}",
                self.endpoint_label()
            ))
        };
        match self.config.endpoint.as_deref() {
            None => Docker::connect_with_local_defaults().map_err(fail),
            Some(url) if url.starts_with("unix://") => connect_unix(url).map_err(fail),
            Some(url) => connect_pipe(url).map_err(fail),
        }
    }

    /// Checks the engine and the image, then creates and starts the container.
    /// Idempotent once it succeeded.
    pub(crate) async fn prepare(&self) -> Result<(), CommandError> {
        if self.current().is_some() {
            return Ok(());
        }
        let docker = self.connect()?;
        let docker = docker.negotiate_version().await.map_err(|e| {
            CommandError::unavailable(format!(
                "the Docker engine at {} does not answer ({e}); {ENGINE_HINT}",
                self.endpoint_label()
            ))
        })?;
        docker.ping().await.map_err(|e| {
            CommandError::unavailable(format!(
                "the Docker engine at {} does not answer the ping: {e}",
                self.endpoint_label()
            ))
        })?;
        let image = &self.config.image;
        match docker.inspect_image(image).await {
            Ok(_) => {}
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => {
                return Err(CommandError::unavailable(format!(
                    "the image `{image}` does not exist in the Docker engine; build it first \
                     (crates/iris-command/docker/build-image.sh) — prepare never pulls or builds images"
                )));
            }
            Err(e) => {
                return Err(CommandError::unavailable(format!(
                    "cannot inspect the image `{image}`: {e}"
                )));
            }
        }
        let confinement = self.confinement().await?;
        let egress = match &self.policy.network {
            NetworkAccess::Allow(_) => Some(self.create_egress(&docker).await?),
            NetworkAccess::Off | NetworkAccess::On => None,
        };
        let created = self
            .create_container(&docker, egress.as_ref(), &confinement)
            .await;
        let container_id = match created {
            Ok(id) => id,
            Err(e) => {
                if let Some(egress) = &egress {
                    remove_network(&docker, &egress.network).await;
                }
                return Err(e);
            }
        };
        let mut prepared = Prepared {
            docker,
            container_id,
            keepalive: 0,
            egress,
            confinement,
        };
        let probed = match probe(&prepared).await {
            Ok(()) => keepalive_pid(&prepared).await,
            Err(e) => Err(e),
        };
        match probed {
            Ok(pid) => prepared.keepalive = pid,
            Err(e) => {
                remove(&prepared).await;
                return Err(e);
            }
        }
        let prepared = Arc::new(prepared);
        let won = {
            let mut slot = self
                .prepared
                .lock()
                .map_err(|_| CommandError::unavailable("the backend state is poisoned"))?;
            if slot.is_some() {
                false
            } else {
                *slot = Some(prepared.clone());
                true
            }
        };
        if !won {
            // A concurrent prepare won; keep one container.
            remove(&prepared).await;
        }
        Ok(())
    }

    /// Creates the internal network and starts the proxy on its gateway address.
    async fn create_egress(&self, docker: &Docker) -> Result<Egress, CommandError> {
        let name = format!("iris-egress-{}-{}", std::process::id(), unique_suffix());
        let labels = HashMap::from([
            (labels::CONTAINER.to_owned(), "1".to_owned()),
            (labels::OWNER_PID.to_owned(), std::process::id().to_string()),
        ]);
        docker
            .create_network(NetworkCreateRequest {
                name: name.clone(),
                driver: Some("bridge".to_owned()),
                internal: Some(true),
                labels: Some(labels),
                ..NetworkCreateRequest::default()
            })
            .await
            .map_err(|e| {
                CommandError::SandboxUnavailable(format!(
                    "cannot create the internal network of `network: allow`: {e}"
                ))
            })?;
        let gateway = docker
            .inspect_network(&name, None)
            .await
            .ok()
            .and_then(|n| n.ipam?.config?.into_iter().find_map(|c| c.gateway))
            .and_then(|g| g.parse::<std::net::IpAddr>().ok());
        let overrides = self.overrides.lock().map(|o| o.clone()).unwrap_or_default();
        // A first proxy proves the address can be listened on before any call needs it.
        let listened = match gateway {
            Some(gateway) => {
                EgressProxy::start_on(gateway, self.policy.network.clone(), overrides.clone())
                    .await
                    .map(|_| gateway)
                    .map_err(|e| format!("cannot listen on its gateway {gateway}: {e}"))
            }
            None => Err("its gateway address is unknown".to_owned()),
        };
        match listened {
            Ok(gateway) => Ok(Egress {
                network: name,
                gateway,
                overrides,
            }),
            Err(why) => {
                remove_network(docker, &name).await;
                Err(CommandError::SandboxUnavailable(format!(
                    "the egress proxy of `network: allow` cannot serve the internal network `{name}`: {why}"
                )))
            }
        }
    }

    /// Resolves what the container's mounts enforce (on the blocking pool: it
    /// canonicalizes paths): the protected paths inside the workspace, which exist now,
    /// `.iris` created first so it is among them, and the `deny_read` paths. With
    /// `filesystem: off` there is nothing to enforce.
    async fn confinement(&self) -> Result<Confinement, CommandError> {
        let policy = self.policy.clone();
        let workspace = self.workspace.clone();
        let host = self.protected.lock().map(|p| p.clone()).unwrap_or_default();
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        iris_fs::blocking::run_blocking_io(move || {
            if policy.filesystem == FilesystemAccess::Off {
                return Ok(Confinement {
                    protected: Vec::new(),
                    deny_read: Vec::new(),
                });
            }
            iris_fs::workspace::WorkspaceDir::open_root(&workspace)
                .map_err(|e| e.to_string())
                .and_then(|root| iris_fs::state_dir::create_in(&root).map_err(|e| e.to_string()))
                .map_err(|e| {
                    CommandError::SandboxUnavailable(format!(
                        "cannot create the workspace's .iris folder to protect it: {e}"
                    ))
                })?;
            let plan = HelperPlan::new(
                &policy,
                PlanInputs {
                    protected: &host,
                    home: home.as_deref(),
                    ..PlanInputs::new(&workspace)
                },
            );
            Ok(Confinement {
                protected: plan.protected,
                deny_read: plan.deny_read,
            })
        })
        .await
        .map_err(|e| CommandError::SandboxUnavailable(e.message))?
    }

    async fn create_container(
        &self,
        docker: &Docker,
        egress: Option<&Egress>,
        confinement: &Confinement,
    ) -> Result<String, CommandError> {
        let ws = self.workspace.to_string_lossy().into_owned();
        let memory = i64::try_from(self.config.memory_mb)
            .ok()
            .and_then(|mb| mb.checked_mul(1024 * 1024))
            .ok_or_else(|| CommandError::unavailable("docker.memory_mb is too large"))?;
        let pids = i64::try_from(self.config.pids_limit)
            .map_err(|_| CommandError::unavailable("docker.pids_limit is too large"))?;
        // Validation guarantees a positive finite value; the cast saturates.
        let nano_cpus = (self.config.cpus * 1e9).round() as i64;
        let labels = HashMap::from([
            (labels::CONTAINER.to_owned(), "1".to_owned()),
            (labels::WORKSPACE.to_owned(), ws.clone()),
            (labels::OWNER_PID.to_owned(), std::process::id().to_string()),
        ]);
        let env = self.env.clone();
        let network_mode = match egress {
            Some(egress) => egress.network.clone(),
            None => self.config.network.as_str().to_owned(),
        };
        let mounts = workspace_mounts(
            &self.workspace,
            self.policy.filesystem == FilesystemAccess::ReadOnly,
            confinement,
        );
        let body = ContainerCreateBody {
            image: Some(self.config.image.clone()),
            cmd: Some(vec!["/bin/sh".into(), "-c".into(), KEEP_ALIVE.into()]),
            entrypoint: Some(Vec::new()),
            working_dir: Some(ws.clone()),
            env: Some(env),
            labels: Some(labels),
            host_config: Some(HostConfig {
                network_mode: Some(network_mode),
                nano_cpus: Some(nano_cpus),
                memory: Some(memory),
                memory_swap: Some(memory),
                pids_limit: Some(pids),
                init: Some(true),
                mounts: Some(mounts),
                // What the native sandbox's seccomp filter and PR_SET_NO_NEW_PRIVS
                // refuse, the container refuses too: raw and packet sockets, chroot,
                // device nodes, and privilege gained through setuid binaries.
                cap_drop: Some(
                    DROPPED_CAPABILITIES
                        .iter()
                        .map(|c| (*c).to_owned())
                        .collect(),
                ),
                security_opt: Some(vec!["no-new-privileges".to_owned()]),
                ..HostConfig::default()
            }),
            ..ContainerCreateBody::default()
        };
        let name = format!("iris-command-{}-{}", std::process::id(), unique_suffix());
        let created = docker
            .create_container(
                Some(CreateContainerOptions {
                    name: Some(name),
                    ..CreateContainerOptions::default()
                }),
                body,
            )
            .await
            .map_err(|e| CommandError::unavailable(format!("cannot create the container: {e}")))?;
        if let Err(e) = docker.start_container(&created.id, None).await {
            let _ = docker
                .remove_container(&created.id, Some(force_remove()))
                .await;
            return Err(CommandError::unavailable(format!(
                "cannot start the container: {e}"
            )));
        }
        Ok(created.id)
    }

    /// Starts one call as an exec in the container.
    pub(crate) async fn spawn(&self, job: &Job) -> Result<DockerProcess, CommandError> {
        let prepared = self
            .current()
            .ok_or_else(|| CommandError::unavailable("the Docker backend is not prepared"))?;
        let mut cmd: Vec<String> = vec![
            "/bin/sh".into(),
            "-c".into(),
            WRAPPER.into(),
            "iris-exec".into(),
            prepared.keepalive.to_string(),
        ];
        match &job.payload {
            CommandPayload::Shell(line) => {
                cmd.extend(["/bin/sh".into(), "-c".into(), line.clone()]);
            }
            CommandPayload::Python(code) => {
                cmd.extend([IMAGE_PYTHON.into(), "-c".into(), code.clone()]);
            }
        }
        let proxy = match &prepared.egress {
            Some(egress) => Some(Arc::new(
                EgressProxy::start_on(
                    egress.gateway,
                    self.policy.network.clone(),
                    egress.overrides.clone(),
                )
                .await
                .map_err(|e| {
                    CommandError::SandboxUnavailable(format!(
                        "cannot start the call's egress proxy on {}: {e}",
                        egress.gateway
                    ))
                })?,
            )),
            None => None,
        };
        let env = proxy.as_ref().map(|proxy| {
            let url = proxy.url();
            let mut env = Vec::new();
            for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
                env.push(format!("{name}={url}"));
                env.push(format!("{}={url}", name.to_ascii_lowercase()));
            }
            env.extend(["NO_PROXY=".to_owned(), "no_proxy=".to_owned()]);
            env
        });
        let report = (!self.policy.is_off()).then(|| {
            ReportSource::new(
                SandboxReport {
                    filesystem: self.policy.filesystem,
                    network: self.policy.network.clone(),
                    protected: prepared.confinement.protected.clone(),
                    deny_read: prepared.confinement.deny_read.clone(),
                    proxy_refusals: Vec::new(),
                    widening: None,
                },
                proxy,
            )
        });
        let exec = prepared
            .docker
            .create_exec(
                &prepared.container_id,
                CreateExecOptions {
                    cmd: Some(cmd),
                    env,
                    attach_stdin: Some(job.stdin.is_some()),
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    tty: Some(false),
                    working_dir: Some(job.cwd.to_string_lossy().into_owned()),
                    ..CreateExecOptions::default()
                },
            )
            .await
            .map_err(|e| lost_container(&e, "cannot create the exec"))?;
        let started = prepared
            .docker
            .start_exec(&exec.id, Some(attached()))
            .await
            .map_err(|e| lost_container(&e, "cannot start the exec"))?;
        let StartExecResults::Attached { output, mut input } = started else {
            return Err(CommandError::unavailable("the engine detached the exec"));
        };
        if let Some(bytes) = job.stdin.clone() {
            tokio::spawn(async move {
                // Closing the write half is the end of stdin for the payload.
                let _ = input.write_all(&bytes).await;
                let _ = input.shutdown().await;
            });
        }
        Ok(DockerProcess {
            prepared,
            report,
            exec_id: exec.id,
            output,
            pgid: None,
            pid_line: Vec::new(),
            stream_done: false,
            ended: None,
            released: false,
        })
    }

    /// Removes the container; later calls find the backend unprepared.
    pub(crate) async fn close(&self) {
        let taken = self.prepared.lock().ok().and_then(|mut p| p.take());
        if let Some(prepared) = taken {
            remove(&prepared).await;
        }
    }

    /// Best-effort removal when the service is dropped without `close`.
    pub(crate) fn close_in_background(&self) {
        let taken = self.prepared.lock().ok().and_then(|mut p| p.take());
        if let (Some(prepared), Ok(handle)) = (taken, tokio::runtime::Handle::try_current()) {
            handle.spawn(async move { remove(&prepared).await });
        }
    }
}

/// The container's mounts: the workspace at its own path (read-only under
/// `filesystem: read-only`), each protected path read-only over it, every folder
/// between the workspace and a protected path bound onto itself (a mount point cannot
/// be renamed or removed, so the protected file cannot be swapped out by renaming its
/// folder), and each `deny_read` path inside the workspace masked: a folder by an empty
/// read-only tmpfs, a file by `/dev/null`. The engine mounts shallower targets first.
fn workspace_mounts(
    workspace: &std::path::Path,
    read_only: bool,
    confinement: &Confinement,
) -> Vec<Mount> {
    let bind = |path: &std::path::Path, source: &std::path::Path, read_only: bool| Mount {
        target: Some(path.to_string_lossy().into_owned()),
        source: Some(source.to_string_lossy().into_owned()),
        typ: Some(MountType::BIND),
        read_only: Some(read_only),
        ..Mount::default()
    };
    let mut mounts = vec![bind(workspace, workspace, read_only)];
    let mut folders: Vec<&std::path::Path> = Vec::new();
    for path in &confinement.protected {
        for folder in path.ancestors().skip(1) {
            if folder == workspace || !folder.starts_with(workspace) {
                break;
            }
            folders.push(folder);
        }
    }
    folders.sort();
    folders.dedup();
    folders.retain(|f| !confinement.protected.iter().any(|p| p == f));
    mounts.extend(folders.into_iter().map(|f| bind(f, f, read_only)));
    mounts.extend(confinement.protected.iter().map(|p| bind(p, p, true)));
    for path in confinement
        .deny_read
        .iter()
        .filter(|p| p.starts_with(workspace) && p.as_path() != workspace)
    {
        mounts.push(if path.is_dir() {
            Mount {
                target: Some(path.to_string_lossy().into_owned()),
                typ: Some(MountType::TMPFS),
                read_only: Some(true),
                ..Mount::default()
            }
        } else {
            bind(path, std::path::Path::new("/dev/null"), true)
        });
    }
    mounts
}

#[cfg(unix)]
fn connect_unix(url: &str) -> Result<Docker, bollard::errors::Error> {
    Docker::connect_with_unix(url, ENGINE_TIMEOUT_SECONDS, bollard::API_DEFAULT_VERSION)
}

#[cfg(not(unix))]
fn connect_unix(url: &str) -> Result<Docker, bollard::errors::Error> {
    Err(bollard::errors::Error::UnsupportedURISchemeError {
        uri: url.to_owned(),
    })
}

#[cfg(windows)]
fn connect_pipe(url: &str) -> Result<Docker, bollard::errors::Error> {
    Docker::connect_with_named_pipe(url, ENGINE_TIMEOUT_SECONDS, bollard::API_DEFAULT_VERSION)
}

#[cfg(not(windows))]
fn connect_pipe(url: &str) -> Result<Docker, bollard::errors::Error> {
    // Validation admits npipe:// for Windows hosts; elsewhere it cannot be reached.
    Err(bollard::errors::Error::UnsupportedURISchemeError {
        uri: url.to_owned(),
    })
}

fn attached() -> StartExecOptions {
    StartExecOptions {
        detach: false,
        tty: false,
        output_capacity: Some(FRAME_CAPACITY),
    }
}

fn force_remove() -> RemoveContainerOptions {
    RemoveContainerOptions {
        force: true,
        v: true,
        ..RemoveContainerOptions::default()
    }
}

/// A process-unique suffix for container names (time plus a counter).
fn unique_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("{nanos:08x}{}", COUNTER.fetch_add(1, Ordering::Relaxed))
}

fn lost_container(e: &bollard::errors::Error, what: &str) -> CommandError {
    CommandError::unavailable(format!("{what} in the command container: {e}"))
}

async fn remove(prepared: &Prepared) {
    if let Err(e) = prepared
        .docker
        .remove_container(&prepared.container_id, Some(force_remove()))
        .await
    {
        tracing::warn!(container = %prepared.container_id, error = %e, "removing the command container failed");
    }
    if let Some(egress) = &prepared.egress {
        remove_network(&prepared.docker, &egress.network).await;
    }
}

/// Removes an internal network of `network: allow` (after its container).
async fn remove_network(docker: &Docker, name: &str) {
    if let Err(e) = docker.remove_network(name).await {
        tracing::warn!(network = %name, error = %e, "removing the command network failed");
    }
}

/// Checks the container can run the wrapper: `/bin/sh` and `setsid` exist.
async fn probe(prepared: &Prepared) -> Result<(), CommandError> {
    let code = run_helper(
        prepared,
        vec![
            "/bin/sh".into(),
            "-c".into(),
            "command -v setsid >/dev/null 2>&1 || exit 3".into(),
        ],
    )
    .await
    .map_err(|e| CommandError::unavailable(format!("the command container does not run: {e}")))?;
    match code {
        Some(0) => Ok(()),
        Some(3) => Err(CommandError::unavailable(
            "the image has no `setsid` (util-linux or busybox), which the backend needs to kill a call's process tree",
        )),
        other => Err(CommandError::unavailable(format!(
            "the image cannot run /bin/sh (probe exit code {other:?})"
        ))),
    }
}

/// Finds the keep-alive shell: the one child of PID 1 right after the start (asked a few
/// times, since init forks it a moment after the container starts).
async fn keepalive_pid(prepared: &Prepared) -> Result<i64, CommandError> {
    for _ in 0..50 {
        let (code, stdout) = run_helper_output(
            prepared,
            vec!["/bin/sh".into(), "-c".into(), INIT_CHILDREN.into()],
        )
        .await
        .map_err(|e| {
            CommandError::unavailable(format!("the command container does not run: {e}"))
        })?;
        let pids: Vec<i64> = stdout
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        if code == Some(0)
            && let Some(pid) = pids.iter().min()
        {
            return Ok(*pid);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(CommandError::unavailable(
        "the command container's keep-alive process was not found under its init",
    ))
}

/// Runs a short helper exec to its end and returns its exit code.
async fn run_helper(prepared: &Prepared, cmd: Vec<String>) -> Result<Option<i64>, String> {
    run_helper_output(prepared, cmd).await.map(|(code, _)| code)
}

/// Runs a short helper exec to its end; its exit code and stdout (bounded to 64 KiB).
async fn run_helper_output(
    prepared: &Prepared,
    cmd: Vec<String>,
) -> Result<(Option<i64>, String), String> {
    let exec = prepared
        .docker
        .create_exec(
            &prepared.container_id,
            CreateExecOptions {
                cmd: Some(cmd),
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                ..CreateExecOptions::default()
            },
        )
        .await
        .map_err(|e| e.to_string())?;
    let started = prepared
        .docker
        .start_exec(&exec.id, Some(attached()))
        .await
        .map_err(|e| e.to_string())?;
    let mut stdout = Vec::new();
    if let StartExecResults::Attached { mut output, .. } = started {
        while let Some(item) = next(&mut output).await {
            if let LogOutput::StdOut { message } = item.map_err(|e| e.to_string())?
                && stdout.len() < 64 * 1024
            {
                stdout.extend_from_slice(&message);
            }
        }
    }
    let code = exit_code(prepared, &exec.id).await?;
    Ok((code, String::from_utf8_lossy(&stdout).into_owned()))
}

/// Why the container cannot run calls any more, or `None` while it runs.
///
/// The engine may end an exec's stream before it updates the state of a container
/// that is dying, so a running answer is confirmed a few times (bounded, about
/// 0.5 s). This only happens for a missing or signal-like exit code.
async fn container_gone(prepared: &Prepared) -> Option<String> {
    for _ in 0..CONTAINER_CHECKS {
        match prepared
            .docker
            .inspect_container(&prepared.container_id, None)
            .await
        {
            Ok(inspect) if inspect.state.as_ref().and_then(|s| s.running) == Some(true) => {}
            Ok(_) => return Some("the command container stopped".to_owned()),
            Err(e) => return Some(format!("the command container is gone: {e}")),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// The argv of the sweep exec for one call (its group and the container's orphans).
fn sweep_command(keepalive: i64, pgid: i64) -> Vec<String> {
    vec![
        "/bin/sh".into(),
        "-c".into(),
        SWEEP_SCRIPT.into(),
        "iris-sweep".into(),
        keepalive.to_string(),
        pgid.to_string(),
    ]
}

/// The argv of the kill exec for one process group.
fn kill_command(pgid: i64) -> Vec<String> {
    vec![
        "/bin/sh".into(),
        "-c".into(),
        KILL_SCRIPT.into(),
        "iris-kill".into(),
        pgid.to_string(),
    ]
}

async fn next(stream: &mut OutputStream) -> Option<Result<LogOutput, bollard::errors::Error>> {
    std::future::poll_fn(|cx| stream.as_mut().poll_next(cx)).await
}

/// The exit code of a finished exec. The engine may report it a moment after the
/// stream ended, so a still-running answer is asked again (bounded).
async fn exit_code(prepared: &Prepared, exec_id: &str) -> Result<Option<i64>, String> {
    for _ in 0..200 {
        let inspect = prepared
            .docker
            .inspect_exec(exec_id)
            .await
            .map_err(|e| e.to_string())?;
        if inspect.running != Some(true) {
            return Ok(inspect.exit_code);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(None)
}

/// One call's exec.
pub(crate) struct DockerProcess {
    prepared: Arc<Prepared>,
    /// The call's sandbox report (and its egress proxy, kept until the call ends).
    report: Option<ReportSource>,
    exec_id: String,
    output: OutputStream,
    /// The payload's process group inside the container, once its pid line arrived.
    pgid: Option<i64>,
    pid_line: Vec<u8>,
    /// Whether the output stream returned its end (it is not polled again after that).
    stream_done: bool,
    /// Set once the stream ended: the exec's exit code (or why it is unknown).
    ended: Option<Result<Option<i64>, String>>,
    /// Whether [`Process::release`] ran.
    released: bool,
}

impl std::fmt::Debug for DockerProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerProcess")
            .field("exec_id", &self.exec_id)
            .field("pgid", &self.pgid)
            .finish_non_exhaustive()
    }
}

impl DockerProcess {
    /// Where the call's sandbox report comes from (taken once, by the service).
    pub(crate) fn take_report(&mut self) -> Option<ReportSource> {
        self.report.take()
    }

    /// Feeds stdout bytes, splitting off the wrapper's pid line first.
    fn stdout(&mut self, out: &mut Captures, bytes: &[u8]) -> Result<(), String> {
        if self.pgid.is_some() {
            out.stdout.push(bytes);
            return Ok(());
        }
        self.pid_line.extend_from_slice(bytes);
        if let Some(pos) = self.pid_line.iter().position(|b| *b == b'\n') {
            let pid = std::str::from_utf8(&self.pid_line[..pos])
                .ok()
                .and_then(|s| s.trim().parse::<i64>().ok())
                .filter(|pid| *pid > 1)
                .ok_or_else(|| "the exec wrapper did not report a process id".to_owned())?;
            self.pgid = Some(pid);
            let rest = self.pid_line.split_off(pos + 1);
            self.pid_line = Vec::new();
            out.stdout.push(&rest);
        } else if self.pid_line.len() > 32 {
            return Err("the exec wrapper did not report a process id".to_owned());
        }
        Ok(())
    }

    /// Pumps one stream item; `false` once the stream ended.
    async fn pump(&mut self, out: &mut Captures) -> Result<bool, String> {
        if self.stream_done {
            return Ok(false);
        }
        match next(&mut self.output).await {
            Some(Ok(LogOutput::StdErr { message })) => {
                out.stderr.push(&message);
                Ok(true)
            }
            Some(Ok(
                LogOutput::StdOut { message }
                | LogOutput::Console { message }
                | LogOutput::StdIn { message },
            )) => {
                self.stdout(out, &message)?;
                Ok(true)
            }
            Some(Err(e)) => {
                self.stream_done = true;
                Err(format!("the exec stream failed: {e}"))
            }
            None => {
                self.stream_done = true;
                Ok(false)
            }
        }
    }
}

impl Process for DockerProcess {
    async fn wait(&mut self, out: &mut Captures) -> WaitOutcome {
        if self.ended.is_none() {
            loop {
                match self.pump(out).await {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(reason) => {
                        self.ended = Some(Err(reason.clone()));
                        return WaitOutcome::Lost(reason);
                    }
                }
            }
            let mut code = exit_code(&self.prepared, &self.exec_id).await;
            // A missing or signal-like code may mean the container itself went away
            // under the call; then the environment, not the command, ended it.
            if matches!(code, Ok(None) | Ok(Some(128..)))
                && let Some(reason) = container_gone(&self.prepared).await
            {
                code = Err(reason);
            }
            self.ended = Some(code);
        }
        match &self.ended {
            Some(Ok(code)) if self.pgid.is_none() => WaitOutcome::Lost(format!(
                "the exec wrapper ended (exit code {code:?}) before starting the command"
            )),
            Some(Ok(code)) => WaitOutcome::Exited(code.and_then(|c| i32::try_from(c).ok())),
            Some(Err(reason)) => WaitOutcome::Lost(reason.clone()),
            None => WaitOutcome::Lost("the exec stream state is unknown".to_owned()),
        }
    }

    async fn kill(&mut self, out: &mut Captures) -> Result<(), String> {
        if matches!(self.ended, Some(Ok(_))) {
            // The exec finished: the wrapper already killed what was left of its group.
            return Ok(());
        }
        if let (None, Some(Err(e))) = (self.pgid, &self.ended) {
            return Err(format!("{e}, before the exec reported its process id"));
        }
        if self.pgid.is_none() {
            // The payload prints its pid first thing; wait for it (bounded).
            let waited = tokio::time::timeout(PID_LINE_WAIT, async {
                while self.pgid.is_none() {
                    if !self.pump(out).await? {
                        return Ok(false);
                    }
                }
                Ok::<bool, String>(true)
            })
            .await;
            match waited {
                Ok(Ok(true)) => {}
                // The stream ended: nothing is left to kill.
                Ok(Ok(false)) => return Ok(()),
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err("the exec never reported its process id".to_owned()),
            }
        }
        let Some(pgid) = self.pgid else {
            return Err("the exec never reported its process id".to_owned());
        };
        let code = run_helper(&self.prepared, kill_command(pgid)).await?;
        match code {
            Some(0) => Ok(()),
            other => Err(format!(
                "process group {pgid} in the container survived SIGKILL (kill exec exit {other:?})"
            )),
        }
    }

    async fn release(&mut self) -> Result<(), String> {
        self.sweep_if_needed().await
    }
}

impl DockerProcess {
    /// After the call: when the wrapper did not end normally, its sweep may not have
    /// run, so run it as a separate exec.
    async fn sweep_if_needed(&mut self) -> Result<(), String> {
        if self.released {
            return Ok(());
        }
        self.released = true;
        let needed = match &self.ended {
            // The wrapper exited and swept; a signal-like code may mean it was killed.
            Some(Ok(Some(code))) => !(0..128).contains(code),
            Some(Ok(None)) | None => true,
            // The stream or the container failed: the kill path already ran.
            Some(Err(_)) => false,
        };
        let Some(pgid) = self.pgid.filter(|_| needed) else {
            return Ok(());
        };
        match run_helper(&self.prepared, sweep_command(self.prepared.keepalive, pgid)).await {
            Ok(Some(0)) => Ok(()),
            Ok(other) => Err(format!(
                "the sweep of detached processes exited with {other:?}"
            )),
            Err(e) => Err(format!("the sweep of detached processes failed: {e}")),
        }
    }
}

impl Drop for DockerProcess {
    fn drop(&mut self) {
        // The driver is gone mid-run (runtime shutting down): kill the tree if we can.
        if self.ended.is_none()
            && let (Some(pgid), Ok(handle)) = (self.pgid, tokio::runtime::Handle::try_current())
        {
            let prepared = self.prepared.clone();
            handle.spawn(async move {
                let _ = run_helper(&prepared, kill_command(pgid)).await;
            });
        }
    }
}
