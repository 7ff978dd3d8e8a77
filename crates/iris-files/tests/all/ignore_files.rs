//! The ignore files of `list_files` and `grep_search` in a hostile workspace: they are
//! read through the held root (no symlink followed, no FIFO or device opened, bounded),
//! never above the workspace root nor where a `.git` file points, and their precedence
//! is the `ignore` crate's.

use std::time::Duration;

use rustix::fs::{CWD, Mode, OFlags};
use serde_json::{Value, json};

use crate::support::{Harness, code, put};

/// How long a call may take before it counts as blocked.
const DEADLINE: Duration = Duration::from_secs(20);

/// Calls `tool` with a deadline; on a timeout, opens a writer on each FIFO in `fifos`
/// (which releases a worker stuck opening it) and fails the test.
async fn call(
    h: &Harness,
    tool: &str,
    input: Value,
    fifos: &[&str],
) -> iris_tools_core::ToolOutput {
    match tokio::time::timeout(DEADLINE, h.call(tool, input.clone())).await {
        Ok(result) => {
            assert_eq!(
                code(&result),
                "OK",
                "{tool} {input}: {}",
                result.model_content()
            );
            result
        }
        Err(_) => {
            for fifo in fifos {
                let _ = rustix::fs::open(
                    h.path(fifo),
                    OFlags::WRONLY | OFlags::NONBLOCK,
                    Mode::empty(),
                );
            }
            panic!("{tool} {input} blocked on an ignore file");
        }
    }
}

/// The files `list_files` shows for `input`.
async fn listed(h: &Harness, input: Value, fifos: &[&str]) -> Value {
    call(h, "list_files", input, fifos).await.data["files"].clone()
}

/// The paths of the lines `grep_search` finds for `input`, in order.
async fn found(h: &Harness, input: Value, fifos: &[&str]) -> Vec<String> {
    call(h, "grep_search", input, fifos).await.data["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap().to_owned())
        .collect()
}

/// A FIFO named `.gitignore` or `.ignore` used to block a walker thread in `open` for
/// good (the call timed out, the thread leaked); it is now not a rules file at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_ignore_file_blocks_nothing() {
    let h = Harness::new();
    h.put("a.txt", "hello\n");
    h.put("sub/b.txt", "hello\n");
    let fifos = [".gitignore", "sub/.ignore"];
    for fifo in fifos {
        rustix::fs::mkfifoat(CWD, h.path(fifo), Mode::from_raw_mode(0o600)).unwrap();
    }
    assert_eq!(
        listed(&h, json!({}), &fifos).await,
        json!(["a.txt", "sub/b.txt"])
    );
    assert_eq!(
        found(&h, json!({"pattern": "hello"}), &fifos).await,
        ["a.txt", "sub/b.txt"]
    );
}

/// A `.gitignore`, `.ignore` or `.git/info/exclude` that is a symlink is not followed:
/// the rules of the file outside it names are not applied.
#[tokio::test]
async fn symlinked_ignore_files_are_not_followed() {
    let h = Harness::new();
    put(&h.outside.join("rules"), "*.txt\n*.md\n*.rs\n");
    h.put("a.txt", "hello\n");
    h.put("sub/b.md", "hello\n");
    h.put("c.rs", "hello\n");
    h.put(".git/info/placeholder", "");
    std::os::unix::fs::symlink(h.outside.join("rules"), h.path(".gitignore")).unwrap();
    std::os::unix::fs::symlink(h.outside.join("rules"), h.path("sub/.ignore")).unwrap();
    std::os::unix::fs::symlink(h.outside.join("rules"), h.path(".git/info/exclude")).unwrap();
    let all = ["a.txt", "c.rs", "sub/b.md"];
    assert_eq!(listed(&h, json!({}), &[]).await, json!(all));
    assert_eq!(found(&h, json!({"pattern": "hello"}), &[]).await, all);
}

/// A `.gitignore` linked to `/dev/zero` (one endless line) used to grow one string
/// until the process ran out of memory; it is not a regular file, so it is skipped.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ignore_file_linked_to_a_device_is_skipped() {
    let h = Harness::new();
    h.put("a.txt", "hello\n");
    std::os::unix::fs::symlink("/dev/zero", h.path(".gitignore")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", h.path(".ignore")).unwrap();
    assert_eq!(listed(&h, json!({}), &[]).await, json!(["a.txt"]));
    assert_eq!(found(&h, json!({"pattern": "hello"}), &[]).await, ["a.txt"]);
}

/// An ignore file over 1 MiB is not applied (it is not read past the bound).
#[tokio::test]
async fn an_oversized_ignore_file_is_not_applied() {
    let h = Harness::new();
    h.put("a.txt", "hello\n");
    h.put("b.md", "hello\n");
    let mut huge = String::from("*.txt\n");
    while huge.len() <= 1 << 20 {
        huge.push_str("# padding padding padding padding padding padding padding\n");
    }
    h.put(".gitignore", &huge);
    h.put(".ignore", "*.md\n");
    assert_eq!(
        listed(&h, json!({"pattern": "*.{txt,md}"}), &[]).await,
        json!(["a.txt"])
    );
}

/// Ignore files in the directories above the workspace root are never read.
#[tokio::test]
async fn nothing_above_the_workspace_root_is_read() {
    let h = Harness::new();
    put(&h.sandbox.path().join(".gitignore"), "*.txt\nsub/\n");
    put(&h.sandbox.path().join(".ignore"), "*.md\n");
    h.put("a.txt", "hello\n");
    h.put("b.md", "hello\n");
    h.put("sub/c.txt", "hello\n");
    assert_eq!(
        listed(&h, json!({}), &[]).await,
        json!(["a.txt", "b.md", "sub/c.txt"])
    );
    assert_eq!(
        listed(&h, json!({"path": "sub"}), &[]).await,
        json!(["sub/c.txt"])
    );
    assert_eq!(
        found(&h, json!({"pattern": "hello"}), &[]).await,
        ["a.txt", "b.md", "sub/c.txt"]
    );
}

/// A `.git` file's `gitdir:` (and the `commondir` found there) is not followed, so the
/// `info/exclude` of a directory outside is never read.
#[tokio::test]
async fn a_git_file_pointing_outside_is_not_followed() {
    let h = Harness::new();
    let gitdir = h.outside.join("gitdir");
    let common = h.outside.join("common");
    put(&gitdir.join("commondir"), format!("{}\n", common.display()));
    put(&common.join("info/exclude"), "*.txt\n");
    h.put(".git", format!("gitdir: {}\n", gitdir.display()));
    h.put("a.txt", "hello\n");
    assert_eq!(listed(&h, json!({}), &[]).await, json!([".git", "a.txt"]));
}

/// The rules keep the crate's precedence: a deeper file overrides a shallower one of
/// the same kind, `.ignore` beats `.gitignore` beats `.git/info/exclude`, and the rules
/// of the directories above a listed subdirectory (up to the root) still apply.
#[tokio::test]
async fn nested_rules_keep_their_precedence() {
    let h = Harness::new();
    for (rel, content) in [
        (".gitignore", "*.log\n*.md\nout/\n"),
        (".ignore", "!README.md\n*.tmp\n"),
        (".git/info/exclude", "*.dat\n!*.log\n"),
        ("a.log", "hello\n"),
        ("README.md", "hello\n"),
        ("notes.md", "hello\n"),
        ("x.dat", "hello\n"),
        ("out/o.txt", "hello\n"),
        ("sub/.gitignore", "!keep.log\n!out/\n!x.tmp\n"),
        ("sub/keep.log", "hello\n"),
        ("sub/other.log", "hello\n"),
        ("sub/x.tmp", "hello\n"),
        ("sub/y.dat", "hello\n"),
        ("sub/out/p.txt", "hello\n"),
        ("sub/deeper/.ignore", "!*.dat\n"),
        ("sub/deeper/z.dat", "hello\n"),
        ("sub/deeper/w.log", "hello\n"),
    ] {
        h.put(rel, content);
    }
    let sub = [
        "sub/.gitignore",
        "sub/deeper/.ignore",
        "sub/deeper/z.dat",
        "sub/keep.log",
        "sub/out/p.txt",
    ];
    let mut all = vec![".gitignore", ".ignore", "README.md"];
    all.extend(sub);
    assert_eq!(listed(&h, json!({}), &[]).await, json!(all));
    assert_eq!(listed(&h, json!({"path": "sub"}), &[]).await, json!(sub));
    assert_eq!(
        listed(&h, json!({"path": "sub/deeper"}), &[]).await,
        json!(["sub/deeper/.ignore", "sub/deeper/z.dat"])
    );
    assert_eq!(
        found(&h, json!({"pattern": "hello", "path": "sub"}), &[]).await,
        ["sub/deeper/z.dat", "sub/keep.log", "sub/out/p.txt"]
    );
}

/// A line the matcher cannot compile (this one parses, but its automaton passes the
/// size limit) costs only itself: the file's other rules, before and after it, hold.
#[tokio::test]
async fn a_line_that_cannot_compile_drops_only_itself() {
    let h = Harness::new();
    let huge = "?".repeat(300_000);
    h.put(
        ".gitignore",
        format!("secret.txt\n{huge}\n*.log\n!keep.log\n"),
    );
    for rel in ["secret.txt", "a.log", "keep.log", "notes.md"] {
        h.put(rel, "hello\n");
    }
    assert_eq!(
        listed(&h, json!({}), &[]).await,
        json!([".gitignore", "keep.log", "notes.md"])
    );
    assert_eq!(
        found(&h, json!({"pattern": "hello"}), &[]).await,
        ["keep.log", "notes.md"]
    );
}
