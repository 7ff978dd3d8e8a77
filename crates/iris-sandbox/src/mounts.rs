//! The helper's first step: its own user and mount namespaces, where protected paths
//! are bind-mounted read-only and `deny_read` paths are masked.
//!
//! Each directory between the workspace and a protected path is bind-mounted onto
//! itself first: a mount point cannot be renamed or removed (`EBUSY`), so a command
//! cannot move a protected file's parent aside and put a forged file in its place.
//! Mounts made here are private to the namespace: the host's view never changes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::statvfs::{FsFlags, statvfs};
use nix::unistd::{getgid, getuid};

use crate::plan::HelperPlan;

/// Enters new user and mount namespaces and applies the plan's mounts.
pub(crate) fn isolate(plan: &HelperPlan) -> Result<(), String> {
    let (uid, gid) = (getuid(), getgid());
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS).map_err(|e| {
        format!("user and mount namespaces are unavailable (unshare: {e}); they keep protected paths read-only and deny_read paths unreadable")
    })?;
    // A process may map only its own ids into the namespace it just entered (a wider
    // map needs the parent namespace's CAP_SETUID, which it no longer has there).
    write_proc("setgroups", "deny\n")?;
    write_proc("uid_map", &format!("{uid} {uid} 1\n"))?;
    write_proc("gid_map", &format!("{gid} {gid} 1\n"))?;
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("cannot make the mounts private: {e}"))?;
    let mut pinned: BTreeSet<PathBuf> = BTreeSet::new();
    for path in &plan.protected {
        for dir in ancestors_below(path, &plan.workspace) {
            if pinned.insert(dir.clone()) {
                bind(&dir, &dir, false)?;
            }
        }
        bind(path, path, true)?;
    }
    for path in &plan.deny_read {
        if path.is_dir() {
            mount(
                Some("tmpfs"),
                path,
                Some("tmpfs"),
                MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
                Some("size=0,mode=0500"),
            )
            .map_err(|e| format!("cannot mask `{}`: {e}", path.display()))?;
        } else {
            bind(Path::new("/dev/null"), path, true)?;
        }
    }
    // The working directory was entered before the mounts: enter it again by path, so
    // relative paths go through them (a cwd inside `.git` must not bypass its
    // read-only mount).
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
    std::env::set_current_dir(&cwd).map_err(|e| {
        format!(
            "cannot enter the working directory `{}`: {e}",
            cwd.display()
        )
    })?;
    Ok(())
}

/// The directories strictly between `root` and `path`, outermost first.
fn ancestors_below(path: &Path, root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = path
        .ancestors()
        .skip(1)
        .take_while(|a| *a != root && a.starts_with(root))
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    dirs
}

/// Bind-mounts `source` onto `target`; read-only when asked, keeping the flags the
/// underlying mount has (a namespace may not clear them).
fn bind(source: &Path, target: &Path, read_only: bool) -> Result<(), String> {
    let fail = |e: nix::Error| format!("cannot bind-mount `{}`: {e}", target.display());
    mount(
        Some(source),
        target,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(fail)?;
    if read_only {
        let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
        let existing = statvfs(target).map_err(fail)?.flags();
        for (st, ms) in [
            (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
            (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
            (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
            (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
            (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
            (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
        ] {
            if existing.contains(st) {
                flags |= ms;
            }
        }
        mount(None::<&str>, target, None::<&str>, flags, None::<&str>).map_err(fail)?;
    }
    Ok(())
}

fn write_proc(file: &str, content: &str) -> Result<(), String> {
    std::fs::write(format!("/proc/self/{file}"), content)
        .map_err(|e| format!("cannot write /proc/self/{file}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors_stop_at_the_workspace() {
        let dirs = ancestors_below(Path::new("/w/a/b/f.sh"), Path::new("/w"));
        assert_eq!(dirs, vec![PathBuf::from("/w/a"), PathBuf::from("/w/a/b")]);
        assert!(ancestors_below(Path::new("/w/.git"), Path::new("/w")).is_empty());
    }
}
