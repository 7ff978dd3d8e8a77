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

/// The probe, run for real: this kernel (Landlock ABI 7, seccomp, user namespaces)
/// enforces every rule of the default policy and of `allow`; a kernel one ABI short
/// enforces none of the Landlock rules and says so.
#[test]
fn the_probe_reports_what_this_kernel_enforces() {
    let support = iris_sandbox::probe_kernel(&helper()).expect("the helper answers the probe");
    assert!(
        support.landlock_abi.expect("Landlock is enabled") >= iris_sandbox::REQUIRED_LANDLOCK_ABI,
        "{support:?}"
    );
    assert!(support.seccomp.available, "{support:?}");
    assert!(support.user_namespaces.available, "{support:?}");
    assert!(support.loopback_listener.available, "{support:?}");
    let allow: SandboxPolicy =
        serde_json::from_str(r#"{"network": {"allow": ["pypi.org"]}}"#).expect("policy");
    for policy in [SandboxPolicy::default(), allow.clone()] {
        let rules = support.rules(&policy);
        assert!(
            rules.len() >= 5 && rules.iter().all(|r| r.enforced),
            "{rules:?}"
        );
        assert_eq!(support.missing(&policy), None);
    }
    assert!(
        support
            .rules(&allow)
            .iter()
            .any(|r| r.rule == "network allow: the proxy admits only pypi.org")
    );
    assert!(support.rules(&SandboxPolicy::off()).is_empty());
    let short = iris_sandbox::KernelSupport {
        landlock_abi: Some(iris_sandbox::REQUIRED_LANDLOCK_ABI - 1),
        ..support
    };
    let missing = short.missing(&SandboxPolicy::default()).expect("missing");
    assert!(
        missing.contains("this kernel lacks Landlock ABI 6 (found 5)")
            && missing.contains("`command.mode: docker`"),
        "{missing}"
    );
}
