//! Process containment of native calls: how "nothing a call starts outlives it" holds
//! for processes that leave the call's process group (`setsid`, double forks).
//!
//! A call's leader leads its own process group, and a group kill reaches everything that
//! stays in it. What leaves the group is contained by one of two mechanisms (see
//! [`ProcessContainment`] and the crate README for the limits):
//!
//! - **cgroup** (exact): each call runs in a fresh cgroup v2 below the host process's
//!   own cgroup. The leader starts behind a gate (`read` on its stdin) so it is moved
//!   into the cgroup before it can fork; the end of the call writes `cgroup.kill`, waits
//!   until `cgroup.events` reports `populated 0` and removes the cgroup.
//! - **reaper** (fallback): the host process becomes a child subreaper, so orphans of a
//!   call reparent to it instead of init. At the end of a call, a `/proc` sweep kills the
//!   *detached* orphans (own session, or a foreign process group) that a finished call
//!   must have started: born during the current busy period, and not after the start of
//!   any call still running (that call might own them; its own end sweeps again).
//!
//! A parent-death signal backstop (`setpriv --pdeathsig KILL`, when the host has it)
//! kills each call's leader if the host process dies without cleaning up.

/// How a native [`crate::CommandService`] contains the processes of its calls.
///
/// Linux only; elsewhere every mode is the process-group kill alone.
///
/// ```
/// use iris_command::{CommandConfig, CommandService, ProcessContainment};
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let workspace = tempfile::tempdir()?;
/// // A doctest has no `iris-sandbox` helper binary: the sandbox is off here.
/// let unsandboxed = CommandConfig::native().with_sandbox(iris_command::SandboxPolicy::off());
/// let service = CommandService::new(unsandboxed, workspace.path())?
///     .with_process_containment(ProcessContainment::Auto);
/// service.prepare().await?;
/// // Auto resolves to Cgroup where a writable cgroup v2 exists, else to Reaper.
/// assert!(matches!(
///     service.process_containment(),
///     Some(ProcessContainment::Cgroup | ProcessContainment::Reaper)
/// ));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ProcessContainment {
    /// A cgroup per call when the cgroup v2 file system is writable, else `Reaper`.
    #[default]
    Auto,
    /// A cgroup per call; `prepare` fails with `COMMAND_UNAVAILABLE` when no cgroup can
    /// be created.
    Cgroup,
    /// The host process becomes a child subreaper and sweeps detached orphans at the end
    /// of each call (best effort, see the crate README).
    Reaper,
}

impl ProcessContainment {
    /// `"auto"`, `"cgroup"` or `"reaper"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProcessContainment::Auto => "auto",
            ProcessContainment::Cgroup => "cgroup",
            ProcessContainment::Reaper => "reaper",
        }
    }
}

#[cfg(target_os = "linux")]
pub(crate) use linux::*;
#[cfg(not(target_os = "linux"))]
pub(crate) use other::*;

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::{BTreeMap, BTreeSet};
    use std::ffi::OsStr;
    use std::io;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Mutex, OnceLock, PoisonError};
    use std::time::Duration;

    use rustix::process::{Pid, PidfdFlags, Signal, WaitOptions};

    /// One `/proc/<pid>/stat` line, the fields containment needs.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) struct Stat {
        pub(crate) pid: i32,
        pub(crate) state: char,
        pub(crate) ppid: i32,
        pub(crate) pgrp: i32,
        pub(crate) session: i32,
        /// Start time in clock ticks since boot.
        pub(crate) start: u64,
    }

    impl Stat {
        fn live(&self) -> bool {
            !matches!(self.state, 'Z' | 'X' | 'x')
        }
    }

    /// Parses a `/proc/<pid>/stat` line. The command name (field 2) may hold spaces and
    /// parentheses, so fields are counted from the last `)`.
    pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
        let open = text.find('(')?;
        let pid = text[..open].trim().parse().ok()?;
        let rest = &text[text.rfind(')')? + 1..];
        let mut fields = rest.split_whitespace();
        let state = fields.next()?.chars().next()?;
        let ppid = fields.next()?.parse().ok()?;
        let pgrp = fields.next()?.parse().ok()?;
        let session = fields.next()?.parse().ok()?;
        // Fields 7 (tty_nr) to 21 (itrealvalue), then 22: starttime.
        let start = fields.nth(15)?.parse().ok()?;
        Some(Stat {
            pid,
            state,
            ppid,
            pgrp,
            session,
            start,
        })
    }

    /// The stat of one process, `None` when it is gone.
    pub(crate) fn read_stat(pid: i32) -> Option<Stat> {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|t| parse_stat(&t))
    }

    /// Every process's stat (processes that vanish while listing are skipped).
    pub(crate) fn snapshot() -> Vec<Stat> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(read_stat)
            .collect()
    }

    // ---- the registry of running calls (reaper attribution) -------------------------

    #[derive(Debug)]
    struct Registry {
        next: u64,
        /// Calls registered but whose leader's start is not known yet.
        pending: BTreeSet<u64>,
        /// id → (leader pid, leader start).
        running: BTreeMap<u64, (i32, u64)>,
        /// The earliest start of the current busy period (a stretch of time during
        /// which at least one call was registered).
        period_start: Option<u64>,
    }

    static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
        next: 1,
        pending: BTreeSet::new(),
        running: BTreeMap::new(),
        period_start: None,
    });

    fn registry() -> std::sync::MutexGuard<'static, Registry> {
        REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What a sweep may do right now.
    struct View {
        pending: bool,
        /// Starts of the running calls other than the excluded one.
        blockers: Vec<u64>,
        leaders: BTreeSet<i32>,
    }

    fn view(exclude: Option<u64>) -> View {
        let reg = registry();
        View {
            pending: reg.pending.iter().any(|id| Some(*id) != exclude),
            blockers: reg
                .running
                .iter()
                .filter(|(id, _)| Some(**id) != exclude)
                .map(|(_, (_, start))| *start)
                .collect(),
            leaders: reg.running.values().map(|(pid, _)| *pid).collect(),
        }
    }

    /// The start of the current busy period, while a call is registered.
    pub(crate) fn current_period() -> Option<u64> {
        registry().period_start
    }

    /// One native call's place in the registry; unregisters on drop.
    #[derive(Debug)]
    pub(crate) struct CallTicket {
        id: u64,
        done: bool,
    }

    impl CallTicket {
        /// Registers a call about to spawn: until [`CallTicket::started`], sweeps kill
        /// nothing (its early orphans cannot be told apart yet).
        pub(crate) fn pending() -> Self {
            let mut reg = registry();
            let id = reg.next;
            reg.next += 1;
            reg.pending.insert(id);
            Self { id, done: false }
        }

        /// The id sweeps exclude when this call is the one ending.
        pub(crate) fn id(&self) -> u64 {
            self.id
        }

        /// Records the leader; its start time dates the call.
        pub(crate) fn started(&mut self, leader: i32) {
            // The leader is our unreaped child, so its stat is readable; if it is not,
            // date the call at the beginning of the period (conservative: it then
            // protects every orphan of the period while it runs).
            let mut reg = registry();
            let start = read_stat(leader)
                .map(|s| s.start)
                .or(reg.period_start)
                .unwrap_or(0);
            reg.pending.remove(&self.id);
            reg.running.insert(self.id, (leader, start));
            reg.period_start = Some(reg.period_start.map_or(start, |p| p.min(start)));
        }

        /// Unregisters; returns the start of the busy period the call belonged to (what
        /// its final sweep may attribute), and ends the period when no call is left.
        pub(crate) fn finish(&mut self) -> Option<u64> {
            if self.done {
                return None;
            }
            self.done = true;
            let mut reg = registry();
            reg.pending.remove(&self.id);
            let was_running = reg.running.remove(&self.id).is_some();
            let period = reg.period_start;
            if reg.running.is_empty() && reg.pending.is_empty() {
                reg.period_start = None;
            }
            if was_running { period } else { None }
        }
    }

    impl Drop for CallTicket {
        fn drop(&mut self) {
            if let Some(from) = self.finish()
                && subreaper_active()
            {
                sweep_once(from, None);
            }
        }
    }

    // ---- the subreaper and the sweep -------------------------------------------------

    static SUBREAPER: OnceLock<bool> = OnceLock::new();

    /// Makes the host process a child subreaper (once); whether it is one.
    pub(crate) fn ensure_subreaper() -> bool {
        *SUBREAPER.get_or_init(|| {
            match rustix::process::set_child_subreaper(Some(rustix::process::getpid())) {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot become a child subreaper; detached processes of commands reparent to init and are not swept");
                    false
                }
            }
        })
    }

    /// Whether [`ensure_subreaper`] succeeded in this process.
    pub(crate) fn subreaper_active() -> bool {
        SUBREAPER.get() == Some(&true)
    }

    struct Me {
        pid: i32,
        session: i32,
        pgrp: i32,
    }

    /// This process's pid, session and group, read from `/proc/self/stat`. In a PID
    /// namespace whose session or group leader lives outside it (a container started
    /// without a new session, `unshare --pid`), the kernel reports them as 0; rustix's
    /// `getsid`/`getpgrp` assert a positive id and would panic there, so they are not
    /// used. 0 is a fine value: our children inherit it, a detached orphan does not.
    fn me() -> Me {
        let pid = rustix::process::getpid().as_raw_nonzero().get();
        let own = read_stat(pid);
        Me {
            pid,
            session: own.map_or(0, |s| s.session),
            pgrp: own.map_or(0, |s| s.pgrp),
        }
    }

    /// An adopted orphan that left the process group it was born in: its own session,
    /// or a group that is neither its own nor ours. (A child the host spawned itself —
    /// an MCP server, a call's leader — leads its own group in our session.)
    fn detached(p: &Stat, me: &Me) -> bool {
        p.session != me.session || (p.pgrp != p.pid && p.pgrp != me.pgrp)
    }

    /// One sweep pass: reaps the zombies of adopted detached orphans, then kills every
    /// detached orphan born at or after `from` that no running call (other than
    /// `exclude`) may own, with all its descendants. Returns how many orphans it
    /// targeted.
    pub(crate) fn sweep_once(from: u64, exclude: Option<u64>) -> usize {
        let me = me();
        let snap = snapshot();
        let view = view(exclude);
        reap(&snap, &me, &view.leaders);
        if view.pending {
            return 0;
        }
        let roots: Vec<&Stat> = snap
            .iter()
            .filter(|p| {
                p.ppid == me.pid
                    && p.live()
                    && !view.leaders.contains(&p.pid)
                    && detached(p, &me)
                    && p.start >= from
                    && view.blockers.iter().all(|b| *b > p.start)
            })
            .collect();
        if roots.is_empty() {
            return 0;
        }
        // Descendants, from the same snapshot.
        let mut victims: BTreeMap<i32, u64> = roots.iter().map(|p| (p.pid, p.start)).collect();
        loop {
            let before = victims.len();
            for p in &snap {
                if victims.contains_key(&p.ppid) && p.live() {
                    victims.insert(p.pid, p.start);
                }
            }
            if victims.len() == before {
                break;
            }
        }
        for (pid, start) in victims {
            kill_verified(pid, start);
        }
        roots.len()
    }

    /// Sweeps until no orphan is left to kill (bounded); the last pass also reaps the
    /// ones killed before it. `Err` when some survived every pass.
    pub(crate) async fn sweep(from: u64, exclude: Option<u64>) -> Result<(), String> {
        const PASSES: usize = 200;
        for pass in 0..PASSES {
            if sweep_once(from, exclude) == 0 {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(if pass < 20 { 5 } else { 50 })).await;
        }
        Err("detached processes of the call survived SIGKILL".to_owned())
    }

    /// Kills `pid` if it is still the process that started at `start` (a pidfd pins the
    /// process, so a recycled pid is never hit).
    fn kill_verified(pid: i32, start: u64) {
        let Some(target) = Pid::from_raw(pid) else {
            return;
        };
        match rustix::process::pidfd_open(target, PidfdFlags::empty()) {
            Ok(fd) => {
                if read_stat(pid).is_some_and(|s| s.start == start) {
                    let _ = rustix::process::pidfd_send_signal(&fd, Signal::KILL);
                }
            }
            // Kernels before 5.3: check, then kill by pid.
            Err(_) => {
                if read_stat(pid).is_some_and(|s| s.start == start) {
                    let _ = rustix::process::kill_process(target, Signal::KILL);
                }
            }
        }
    }

    /// Reaps the zombies of detached orphans we adopted (as a subreaper nobody else
    /// waits for them). Children the host spawned itself are never waited for here.
    pub(crate) fn reap_zombies() {
        if subreaper_active() {
            reap(&snapshot(), &me(), &view(None).leaders);
        }
    }

    fn reap(snap: &[Stat], me: &Me, leaders: &BTreeSet<i32>) {
        if !subreaper_active() {
            return;
        }
        for p in snap {
            if p.ppid == me.pid
                && p.state == 'Z'
                && detached(p, me)
                && !leaders.contains(&p.pid)
                && let Some(pid) = Pid::from_raw(p.pid)
            {
                let _ = rustix::process::waitpid(Some(pid), WaitOptions::NOHANG);
            }
        }
    }

    // ---- cgroups ---------------------------------------------------------------------

    static CGROUP_ROOT: OnceLock<Option<PathBuf>> = OnceLock::new();

    /// The host process's own cgroup v2 directory, when calls can get child cgroups
    /// there (probed once: create, check `cgroup.kill`, remove).
    pub(crate) fn cgroup_root() -> Option<&'static Path> {
        CGROUP_ROOT.get_or_init(find_cgroup_root).as_deref()
    }

    fn find_cgroup_root() -> Option<PathBuf> {
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let rel = own.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let dir = mountinfo.lines().find_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            if after.split(' ').next()? != "cgroup2" {
                return None;
            }
            let fields: Vec<&str> = before.split(' ').collect();
            let root = unescape(fields.get(3)?);
            let mount = unescape(fields.get(4)?);
            let inner = if root == "/" {
                rel.to_owned()
            } else {
                let rest = rel.strip_prefix(root.as_str())?;
                if !(rest.is_empty() || rest.starts_with('/')) {
                    return None;
                }
                rest.to_owned()
            };
            Some(Path::new(&mount).join(inner.trim_start_matches('/')))
        })?;
        remove_stale(&dir);
        let probe = dir.join(format!("iris-command.{}.probe", std::process::id()));
        let _ = std::fs::remove_dir(&probe);
        std::fs::create_dir(&probe).ok()?;
        let usable = ["cgroup.kill", "cgroup.procs", "cgroup.events"]
            .iter()
            .all(|f| probe.join(f).exists());
        let _ = std::fs::remove_dir(&probe);
        if !usable {
            tracing::debug!(dir = %dir.display(), "cgroup v2 without cgroup.kill; commands use the reaper");
        }
        usable.then_some(dir)
    }

    /// Removes the empty call cgroups that host processes which no longer exist left
    /// behind (killed before they could remove them); a cgroup that still holds a
    /// process cannot be removed, and is left alone.
    fn remove_stale(dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(owner) = name
                .to_str()
                .and_then(|n| n.strip_prefix("iris-command."))
                .and_then(|rest| rest.split('.').next())
                .and_then(|pid| pid.parse::<u32>().ok())
            else {
                continue;
            };
            if owner != std::process::id() && !Path::new(&format!("/proc/{owner}")).exists() {
                let _ = remove_cgroup(&entry.path());
            }
        }
    }

    /// Decodes mountinfo's octal escapes (`\040` for a space).
    fn unescape(field: &str) -> String {
        let bytes = field.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'\\'
                && i + 3 < bytes.len()
                && bytes[i + 1..i + 4]
                    .iter()
                    .all(|b| (b'0'..=b'7').contains(b))
            {
                let value = bytes[i + 1..i + 4]
                    .iter()
                    .fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 4;
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Removes a cgroup and the child cgroups a process inside may have made (an Iris
    /// run as a command makes its own call cgroups there), deepest first.
    fn remove_cgroup(dir: &Path) -> io::Result<()> {
        if let Ok(entries) = std::fs::read_dir(dir) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    let _ = remove_cgroup(&entry.path());
                }
            }
        }
        std::fs::remove_dir(dir)
    }

    /// One call's cgroup; killed and removed when dropped, if not before.
    #[derive(Debug)]
    pub(crate) struct CallCgroup {
        dir: PathBuf,
        removed: bool,
    }

    impl CallCgroup {
        /// Creates `iris-command.<pid>.<n>` under `root`.
        pub(crate) fn create(root: &Path) -> io::Result<Self> {
            static SEQ: AtomicU64 = AtomicU64::new(1);
            let mut last = io::Error::other("no free cgroup name");
            for _ in 0..16 {
                let n = SEQ.fetch_add(1, Ordering::Relaxed);
                let dir = root.join(format!("iris-command.{}.{n}", std::process::id()));
                match std::fs::create_dir(&dir) {
                    Ok(()) => {
                        return Ok(Self {
                            dir,
                            removed: false,
                        });
                    }
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = e,
                    Err(e) => return Err(e),
                }
            }
            Err(last)
        }

        /// Moves a process into the cgroup.
        pub(crate) fn add(&self, pid: u32) -> io::Result<()> {
            std::fs::write(self.dir.join("cgroup.procs"), pid.to_string())
        }

        /// `SIGKILL` to every process in the cgroup (and any it forks meanwhile).
        pub(crate) fn kill(&self) {
            if let Err(e) = std::fs::write(self.dir.join("cgroup.kill"), "1")
                && e.kind() != io::ErrorKind::NotFound
            {
                tracing::warn!(cgroup = %self.dir.display(), error = %e, "writing cgroup.kill failed");
            }
        }

        /// Whether a live process is left in the cgroup (zombies do not count).
        pub(crate) fn populated(&self) -> bool {
            std::fs::read_to_string(self.dir.join("cgroup.events"))
                .map(|events| {
                    events
                        .lines()
                        .find_map(|l| l.strip_prefix("populated "))
                        .is_some_and(|v| v.trim() != "0")
                })
                .unwrap_or(false)
        }

        /// Kills everything, waits (bounded) until the cgroup is empty, removes it.
        pub(crate) async fn finish(&mut self, confirm: Duration) -> Result<(), String> {
            if self.removed {
                return Ok(());
            }
            let give_up = tokio::time::Instant::now() + confirm;
            loop {
                self.kill();
                if !self.populated() {
                    break;
                }
                if tokio::time::Instant::now() >= give_up {
                    return Err(format!(
                        "the call's cgroup still had live processes after {}s of SIGKILL",
                        confirm.as_secs()
                    ));
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            for _ in 0..100 {
                match remove_cgroup(&self.dir) {
                    Ok(()) => {
                        self.removed = true;
                        return Ok(());
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        self.removed = true;
                        return Ok(());
                    }
                    // Busy for a moment after the last process left.
                    Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
                }
            }
            tracing::warn!(cgroup = %self.dir.display(), "the call's cgroup could not be removed");
            Ok(())
        }
    }

    impl Drop for CallCgroup {
        fn drop(&mut self) {
            if self.removed {
                return;
            }
            self.kill();
            if remove_cgroup(&self.dir).is_ok() {
                return;
            }
            // Still dying: remove it from a short-lived thread once it is empty.
            let dir = self.dir.clone();
            let _ = std::thread::Builder::new()
                .name("iris-cgroup-rm".into())
                .spawn(move || {
                    for _ in 0..2000 {
                        let _ = std::fs::write(dir.join("cgroup.kill"), "1");
                        if remove_cgroup(&dir).is_ok() || !dir.exists() {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(5));
                    }
                });
        }
    }

    // ---- the parent-death backstop ---------------------------------------------------

    static LAUNCHER: tokio::sync::OnceCell<Option<PathBuf>> = tokio::sync::OnceCell::const_new();

    /// `setpriv` when it exists and accepts `--pdeathsig KILL` (util-linux 2.33+).
    pub(crate) async fn pdeathsig_launcher() -> Option<PathBuf> {
        LAUNCHER.get_or_init(find_launcher).await.clone()
    }

    async fn find_launcher() -> Option<PathBuf> {
        let path = std::env::var_os("PATH");
        let mut dirs: Vec<PathBuf> = path
            .as_deref()
            .map(|p| std::env::split_paths(p).collect())
            .unwrap_or_default();
        dirs.extend(["/usr/bin", "/bin", "/usr/sbin", "/sbin"].map(PathBuf::from));
        let candidate = dirs
            .into_iter()
            .filter(|d| d.is_absolute())
            .map(|d| d.join("setpriv"))
            .find(|p| p.is_file())?;
        let probe = tokio::process::Command::new(&candidate)
            .args(["--pdeathsig", "KILL", "--", "/bin/sh", "-c", "exit 0"])
            .env_clear()
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .status();
        match tokio::time::timeout(Duration::from_secs(10), probe).await {
            Ok(Ok(status)) if status.success() => Some(candidate),
            other => {
                tracing::debug!(launcher = %candidate.display(), result = ?other, "setpriv --pdeathsig is not usable; commands run without the parent-death backstop");
                None
            }
        }
    }

    /// Whether `path` names an executable file.
    pub(crate) fn is_executable(path: &Path) -> bool {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }

    /// Finds `program` the way `execvp` would, on the given `PATH`.
    pub(crate) fn resolve_program(program: &Path, path: Option<&OsStr>) -> Option<PathBuf> {
        if program.components().count() > 1 || program.is_absolute() {
            let program = std::path::absolute(program).ok()?;
            return is_executable(&program).then_some(program);
        }
        std::env::split_paths(path?)
            .filter(|d| !d.as_os_str().is_empty())
            .map(|d| d.join(program))
            .find(|c| is_executable(c))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn stat_lines_parse_from_the_last_parenthesis() {
            let line = "4242 (we (ird) name) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 0 0";
            assert_eq!(
                parse_stat(line),
                Some(Stat {
                    pid: 4242,
                    state: 'S',
                    ppid: 1,
                    pgrp: 4242,
                    session: 4242,
                    start: 987654
                })
            );
            assert_eq!(parse_stat("12 (x) R 1"), None);
        }

        #[test]
        fn mountinfo_escapes_decode() {
            assert_eq!(unescape(r"/sys/fs/cgroup\040x"), "/sys/fs/cgroup x");
            assert_eq!(unescape(r"/plain"), "/plain");
            assert_eq!(unescape(r"/end\04"), r"/end\04");
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod other {
    //! Hosts without `/proc`, cgroups or subreapers: the process-group kill is all.
    use std::ffi::OsStr;
    use std::io;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    #[derive(Debug)]
    pub(crate) struct CallTicket;

    impl CallTicket {
        pub(crate) fn pending() -> Self {
            CallTicket
        }
        pub(crate) fn id(&self) -> u64 {
            0
        }
        pub(crate) fn started(&mut self, _leader: i32) {}
        pub(crate) fn finish(&mut self) -> Option<u64> {
            None
        }
    }

    #[derive(Debug)]
    pub(crate) struct CallCgroup;

    impl CallCgroup {
        pub(crate) fn create(_root: &Path) -> io::Result<Self> {
            Err(io::Error::other("cgroups need Linux"))
        }
        pub(crate) fn add(&self, _pid: u32) -> io::Result<()> {
            Err(io::Error::other("cgroups need Linux"))
        }
        pub(crate) fn kill(&self) {}
        pub(crate) fn populated(&self) -> bool {
            false
        }
        pub(crate) async fn finish(&mut self, _confirm: Duration) -> Result<(), String> {
            Ok(())
        }
    }

    pub(crate) fn cgroup_root() -> Option<&'static Path> {
        None
    }
    pub(crate) fn current_period() -> Option<u64> {
        None
    }
    pub(crate) fn ensure_subreaper() -> bool {
        false
    }
    pub(crate) fn subreaper_active() -> bool {
        false
    }
    pub(crate) fn sweep_once(_from: u64, _exclude: Option<u64>) -> usize {
        0
    }
    pub(crate) async fn sweep(_from: u64, _exclude: Option<u64>) -> Result<(), String> {
        Ok(())
    }
    pub(crate) fn reap_zombies() {}
    pub(crate) async fn pdeathsig_launcher() -> Option<PathBuf> {
        None
    }
    pub(crate) fn resolve_program(program: &Path, path: Option<&OsStr>) -> Option<PathBuf> {
        if program.components().count() > 1 || program.is_absolute() {
            return program.exists().then(|| program.to_path_buf());
        }
        std::env::split_paths(path?)
            .map(|d| d.join(program))
            .find(|c| c.is_file())
    }
}
