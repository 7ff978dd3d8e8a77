//! Finding the helper binary, and checking a plan with it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::SandboxError;
use crate::plan::{HELPER_ERROR_PREFIX, HelperPlan};

/// The variable naming the helper binary explicitly.
pub const HELPER_ENV: &str = "IRIS_SANDBOX_HELPER";

/// The helper binary's file name.
pub const HELPER_NAME: &str = "iris-sandbox";

/// Finds the helper: `explicit`, else [`HELPER_ENV`], else this binary when its `main`
/// called [`crate::run_helper_if_invoked`], else `iris-sandbox` beside this binary or
/// in its parent directory (test binaries live in `target/<profile>/deps`), else on
/// `PATH`.
pub fn locate_helper(explicit: Option<&Path>) -> Result<PathBuf, SandboxError> {
    if let Some(path) = explicit {
        return executable(path).ok_or_else(|| {
            SandboxError::unavailable(format!(
                "the sandbox helper `{}` is not an executable file",
                path.display()
            ))
        });
    }
    if let Some(path) = std::env::var_os(HELPER_ENV).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(path);
        return executable(&path).ok_or_else(|| {
            SandboxError::unavailable(format!(
                "{HELPER_ENV} names `{}`, which is not an executable file",
                path.display()
            ))
        });
    }
    let current = std::env::current_exe().ok();
    if crate::helper::binary_is_helper()
        && let Some(exe) = &current
    {
        return Ok(exe.clone());
    }
    let beside = current
        .iter()
        .flat_map(|exe| exe.ancestors().skip(1).take(2))
        .map(|dir| dir.join(HELPER_NAME));
    let on_path = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(HELPER_NAME))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    beside
        .chain(on_path)
        .find_map(|p| executable(&p))
        .ok_or_else(|| {
            SandboxError::unavailable(format!(
                "the sandbox helper `{HELPER_NAME}` was not found beside this program or on PATH (build it with `cargo build -p iris-sandbox`, or name it in {HELPER_ENV})"
            ))
        })
}

fn executable(path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let meta = std::fs::metadata(path).ok()?;
    (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then(|| path.to_path_buf())
}

/// Runs `helper` on `plan` without a command: `Ok` when this kernel enforces every
/// rule of the plan, else [`SandboxError::Unavailable`] naming what is missing.
/// Blocking (one short process).
pub fn check_plan(helper: &Path, plan: &HelperPlan) -> Result<(), SandboxError> {
    let argv = plan.argv(helper, &[]);
    let output = Command::new(&argv[0])
        .args(&argv[1..])
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| {
            SandboxError::unavailable(format!(
                "cannot start the helper `{}`: {e}",
                helper.display()
            ))
        })?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Err(SandboxError::unavailable(
        helper_error(&stderr).unwrap_or_else(|| {
            format!(
                "the helper `{}` failed ({})",
                helper.display(),
                output.status
            )
        }),
    ))
}

/// The helper's own error in a command's stderr, when the helper failed.
pub fn helper_error(stderr: &str) -> Option<String> {
    stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(HELPER_ERROR_PREFIX))
        .map(str::to_owned)
}
