//! The helper binary, run for real: a plan it can enforce, one it cannot parse, and
//! what a command under it can and cannot do.

// Test code: a failed expect is a failed test with its message.
#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use iris_sandbox::{
    HELPER_FAILED_EXIT, HelperPlan, PlanInputs, SandboxPolicy, check_plan, helper_error,
};

fn helper() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_iris-sandbox"))
}

fn plan(workspace: &Path, deny: &Path) -> HelperPlan {
    let policy = SandboxPolicy {
        deny_read: vec![deny.to_path_buf()],
        ..SandboxPolicy::default()
    };
    HelperPlan::new(&policy, PlanInputs::new(workspace))
}

#[test]
fn a_plan_is_checked_and_enforced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = std::fs::canonicalize(dir.path()).expect("canonical");
    let workspace = root.join("ws");
    let secret = root.join("secret");
    std::fs::create_dir_all(workspace.join(".git")).expect("ws");
    std::fs::create_dir(&secret).expect("secret");
    std::fs::write(secret.join("key"), "s3cret").expect("key");
    let plan = plan(&workspace, &secret);
    assert!(plan.needs_namespaces());
    check_plan(&helper(), &plan).expect("this kernel enforces the plan");
    let script = format!(
        "cat {key}; echo in > in.txt; echo out > {out}; echo git > .git/x; cat in.txt",
        key = secret.join("key").display(),
        out = root.join("out.txt").display()
    );
    let argv = plan.argv(&helper(), &["/bin/sh".into(), "-c".into(), script.into()]);
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(&workspace)
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout,
        "in\n",
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!root.join("out.txt").exists());
    assert!(!workspace.join(".git/x").exists());
}

#[test]
fn a_broken_plan_fails_before_anything_runs() {
    let out = Command::new(helper())
        .args([iris_sandbox::HELPER_MARKER, "{not json", "/bin/echo", "ran"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(HELPER_FAILED_EXIT));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        helper_error(&stderr).is_some_and(|e| e.contains("plan is not valid")),
        "{stderr}"
    );
}

#[test]
fn the_bare_binary_explains_itself() {
    let out = Command::new(helper()).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an interactive tool"));
}
