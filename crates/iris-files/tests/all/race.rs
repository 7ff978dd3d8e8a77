//! Races a hostile workspace can run while a call is in flight: a directory on the
//! path swapped with a symlink to outside (`renameat2(RENAME_EXCHANGE)` in a loop), and
//! a FIFO swapped in for the file being read. Calls may fail while the tree changes
//! under them, but nothing outside is ever created or read, and nothing blocks.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use iris_executor::{ApprovalMode, DefaultPermissionPolicy, ToolExecutor};
use iris_files::builtin_tools;
use iris_tools_core::{ToolExecutionContext, ToolRegistry, ToolUse};
use rustix::fs::{CWD, RenameFlags, renameat_with};
use serde_json::json;

use crate::support::{Harness, code};

/// Calls made while the swapper runs.
const CALLS: usize = 300;
/// Reads continue until this many of them returned a file (inside or, before the fix,
/// outside), within [`MAX_READS`] calls.
const COMPLETED_READS: usize = 300;
/// Most reads made while the swapper runs.
const MAX_READS: usize = 3_000;
/// Reads of a name swapped between a file and a FIFO.
const FIFO_READS: usize = 2_000;
/// The swapper stops after this many exchanges even if nobody stops it.
const MAX_SWAPS: u64 = 10_000_000;
/// The pause between two exchanges of a directory: short enough to land between a
/// path check and its use many times per hundred calls, long enough not to starve the
/// calls of CPU.
const SWAP_PAUSE: Duration = Duration::from_micros(1);

/// Exchanges two names atomically in a loop on its own thread until dropped.
struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Swapper {
    /// Exchanges `a` and `b`, pausing `pause` after each exchange (`None`: flat out).
    fn start(a: PathBuf, b: PathBuf, pause: Option<Duration>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let thread = {
            let stop = Arc::clone(&stop);
            let swaps = Arc::clone(&swaps);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) && swaps.load(Ordering::Relaxed) < MAX_SWAPS {
                    renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE).expect("exchange");
                    swaps.fetch_add(1, Ordering::Relaxed);
                    if let Some(pause) = pause {
                        std::thread::sleep(pause);
                    }
                }
            })
        };
        Self {
            stop,
            swaps,
            thread: Some(thread),
        }
    }

    /// Waits (a bounded time) until the swapper made one more exchange.
    fn wait_for_progress(&self) {
        let seen = self.swaps.load(Ordering::Relaxed);
        let deadline = std::time::Instant::now() + Duration::from_secs(1);
        while self.swaps.load(Ordering::Relaxed) == seen && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
    }

    /// Stops the loop and waits for it; returns how many exchanges it made.
    fn finish(mut self) -> u64 {
        self.halt();
        self.swaps.load(Ordering::Relaxed)
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().expect("the swapper thread");
        }
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.halt();
    }
}

fn executor() -> ToolExecutor {
    let registry = ToolRegistry::new();
    registry.register_many(builtin_tools()).unwrap();
    ToolExecutor::new(registry)
        .with_permission_policy(DefaultPermissionPolicy::new().write_mode(ApprovalMode::Allow))
}

/// `<sandbox>/ws/sub` (a directory) and `<sandbox>/ws/.swap -> ../outside`, swapped
/// back and forth while the calls run.
struct Swapped {
    sandbox: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
}

fn swapped_tree() -> Swapped {
    let sandbox = tempfile::tempdir().unwrap();
    let ws = sandbox.path().join("ws");
    let outside = sandbox.path().join("outside");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink("../outside", ws.join(".swap")).unwrap();
    Swapped {
        sandbox,
        ws,
        outside,
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Once the swapper stopped: puts the real directory back at `ws/sub` (the symlink at
/// `ws/.swap`), so a call after the race shows the setup works.
fn settle(tree: &Swapped) {
    let sub = tree.ws.join("sub");
    if sub.symlink_metadata().unwrap().file_type().is_symlink() {
        renameat_with(CWD, &sub, CWD, tree.ws.join(".swap"), RenameFlags::EXCHANGE).unwrap();
    }
    assert!(sub.symlink_metadata().unwrap().is_dir());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swapped_parent_directory_never_lets_a_write_out() {
    let tree = swapped_tree();
    let exec = executor();
    let ctx = ToolExecutionContext::new(&tree.ws).session_id("s-1");
    let swapper = Swapper::start(tree.ws.join("sub"), tree.ws.join(".swap"), Some(SWAP_PAUSE));
    let mut written = Vec::new();
    for i in 0..CALLS {
        let name = format!("x-{i}");
        let call = ToolUse::new(
            format!("w{i}"),
            "write_file",
            json!({"file_path": format!("sub/{name}"), "content": format!("w{i}")}),
        );
        let result = exec.execute_one(&call, &ctx, None).await;
        if !result.is_error() {
            written.push(name);
        }
    }
    let swaps = swapper.finish();
    assert!(swaps > 0, "the swapper ran");
    assert_eq!(
        entries(&tree.outside),
        Vec::<String>::new(),
        "a write landed outside the workspace ({} of {CALLS} calls reported success)",
        written.len()
    );
    // Every write reported as done is inside, in the real directory.
    settle(&tree);
    for name in &written {
        let path = tree.ws.join("sub").join(name);
        assert!(path.is_file(), "{name} is missing from the workspace");
    }
    // Once the tree holds still, the same call succeeds (the calls above could fail
    // only because of the race).
    let call = ToolUse::new(
        "after",
        "write_file",
        json!({"file_path": "sub/after", "content": "after"}),
    );
    let after = exec.execute_one(&call, &ctx, None).await;
    assert!(!after.is_error(), "{}", after.model_content());
    assert_eq!(
        std::fs::read_to_string(tree.ws.join("sub/after")).unwrap(),
        "after"
    );
    assert_eq!(entries(&tree.outside), Vec::<String>::new());
    drop(tree.sandbox);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swapped_parent_directory_never_lets_a_read_out() {
    const SECRET: &str = "OUTSIDE SECRET";
    let tree = swapped_tree();
    std::fs::write(tree.ws.join("sub/x"), "inside\n").unwrap();
    std::fs::write(tree.outside.join("x"), format!("{SECRET}\n")).unwrap();
    let exec = executor();
    let ctx = ToolExecutionContext::new(&tree.ws).session_id("s-1");
    let swapper = Swapper::start(tree.ws.join("sub"), tree.ws.join(".swap"), Some(SWAP_PAUSE));
    let mut leaked = 0;
    let mut read_inside = 0;
    let mut calls = 0;
    while leaked + read_inside < COMPLETED_READS && calls < MAX_READS {
        calls += 1;
        let i = calls;
        let call = ToolUse::new(format!("r{i}"), "read_file", json!({"file_path": "sub/x"}));
        let result = exec.execute_one(&call, &ctx, None).await;
        let seen = format!(
            "{} {}",
            result.model_content(),
            serde_json::to_string(&result.output.data).unwrap()
        );
        if seen.contains(SECRET) {
            leaked += 1;
        } else if !result.is_error() {
            assert_eq!(result.model_content(), "inside\n");
            read_inside += 1;
        }
    }
    let swaps = swapper.finish();
    assert!(swaps > 0, "the swapper ran");
    assert_eq!(
        leaked, 0,
        "{leaked} of {calls} reads returned the outside file ({read_inside} the inside one)"
    );
    assert_eq!(entries(&tree.outside), ["x"]);
    // Once the tree holds still, the same call succeeds (the calls above could fail
    // only because of the race).
    settle(&tree);
    let call = ToolUse::new("after", "read_file", json!({"file_path": "sub/x"}));
    let after = exec.execute_one(&call, &ctx, None).await;
    assert_eq!(after.model_content(), "inside\n");
}

/// A FIFO swapped in right after a type check used to block `open` for good; the
/// handle is now opened non-blocking and judged by `fstat`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_swapped_in_never_blocks_a_read() {
    let h = Harness::new();
    h.put("f", "hello\n");
    rustix::fs::mkfifoat(CWD, h.path("p"), rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
    let swapper = Swapper::start(h.path("f"), h.path("p"), None);
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    let mut blocked = false;
    for _ in 0..FIFO_READS {
        // Every call races at least one exchange, however the threads are scheduled.
        swapper.wait_for_progress();
        let call = h.call("read_file", json!({"file_path": "f"}));
        match tokio::time::timeout(Duration::from_secs(20), call).await {
            Ok(result) => {
                let outcome = match code(&result) {
                    "OK" => {
                        assert_eq!(result.model_content(), "hello\n");
                        "OK".to_owned()
                    }
                    other => other.to_owned(),
                };
                *outcomes.entry(outcome).or_default() += 1;
            }
            Err(_) => {
                blocked = true;
                break;
            }
        }
    }
    drop(swapper);
    if blocked {
        // Release the worker stuck in `open`: a writer on the FIFO (whichever name it
        // has now) lets the reader's open return.
        for name in ["f", "p"] {
            let _ = rustix::fs::open(
                h.path(name),
                rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::NONBLOCK,
                rustix::fs::Mode::empty(),
            );
        }
        panic!("read_file blocked on a FIFO swapped in for the file ({outcomes:?})");
    }
    let allowed = ["OK", iris_files::codes::NOT_A_FILE];
    assert!(
        outcomes.keys().all(|k| allowed.contains(&k.as_str())),
        "{outcomes:?}"
    );
}

/// A FIFO named directly is refused at once with a typed error.
#[tokio::test]
async fn a_fifo_is_not_a_file() {
    let h = Harness::new();
    rustix::fs::mkfifoat(CWD, h.path("p"), rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
    for tool in ["read_file", "edit_file", "write_file", "publish_artifact"] {
        let input = match tool {
            "edit_file" => json!({"file_path": "p", "old_string": "a", "new_string": "b"}),
            "write_file" => json!({"file_path": "p", "content": "b"}),
            _ => json!({"file_path": "p"}),
        };
        let result = tokio::time::timeout(Duration::from_secs(20), h.call(tool, input))
            .await
            .unwrap_or_else(|_| panic!("{tool} blocked on a FIFO"));
        assert_eq!(code(&result), iris_files::codes::NOT_A_FILE, "{tool}");
    }
}

/// The other tools under the same swap: a search or a listing of `sub` never shows
/// what is outside, a publish never copies an outside file, an edit never changes one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swapped_parent_directory_never_lets_any_tool_out() {
    const SECRET: &str = "OUTSIDE SECRET";
    let tree = swapped_tree();
    std::fs::write(tree.ws.join("sub/x"), "inside\n").unwrap();
    std::fs::write(tree.outside.join("x"), format!("{SECRET}\n")).unwrap();
    std::fs::write(tree.outside.join("outside-only.txt"), "o\n").unwrap();
    // The edited file has the same content on both sides, so a stale-read check
    // cannot tell them apart: only the confinement can.
    std::fs::write(tree.ws.join("sub/e"), "edit me\n").unwrap();
    std::fs::write(tree.outside.join("e"), "edit me\n").unwrap();
    let exec = executor();
    let ctx = ToolExecutionContext::new(&tree.ws).session_id("s-1");
    let read = ToolUse::new("r0", "read_file", json!({"file_path": "sub/e"}));
    assert!(!exec.execute_one(&read, &ctx, None).await.is_error());

    let swapper = Swapper::start(tree.ws.join("sub"), tree.ws.join(".swap"), Some(SWAP_PAUSE));
    let mut problems = Vec::new();
    for i in 0..CALLS {
        let (old, new) = if i % 2 == 0 {
            ("edit me", "edited")
        } else {
            ("edited", "edit me")
        };
        let calls = [
            ("grep_search", json!({"pattern": "SECRET", "path": "sub"})),
            ("list_files", json!({"path": "sub"})),
            ("publish_artifact", json!({"file_path": "sub/x"})),
            (
                "edit_file",
                json!({"file_path": "sub/e", "old_string": old, "new_string": new}),
            ),
        ];
        for (n, (tool, input)) in calls.into_iter().enumerate() {
            let call = ToolUse::new(format!("c{i}-{n}"), tool, input);
            let result = exec.execute_one(&call, &ctx, None).await;
            let seen = format!(
                "{} {}",
                result.model_content(),
                serde_json::to_string(&result.output.data).unwrap()
            );
            if seen.contains(SECRET) || seen.contains("outside-only") {
                problems.push(format!("{tool} showed outside content: {seen}"));
            }
            if let Some(artifact) = &result.output.artifact
                && std::fs::read_to_string(&artifact.path).unwrap_or_default() != "inside\n"
            {
                problems.push(format!("{tool} published {}", artifact.path.display()));
            }
        }
    }
    swapper.finish();
    assert_eq!(
        std::fs::read_to_string(tree.outside.join("e")).unwrap(),
        "edit me\n",
        "edit_file changed the outside file"
    );
    assert_eq!(entries(&tree.outside), ["e", "outside-only.txt", "x"]);
    // Once the tree holds still, the same tools work on the real directory.
    settle(&tree);
    let grep = ToolUse::new(
        "g",
        "grep_search",
        json!({"pattern": "inside", "path": "sub"}),
    );
    let found = exec.execute_one(&grep, &ctx, None).await;
    assert_eq!(found.model_content(), "sub/x:1:inside");
    let list = ToolUse::new("l", "list_files", json!({"path": "sub"}));
    let listed = exec.execute_one(&list, &ctx, None).await;
    assert!(
        listed.output.data["files"]
            .as_array()
            .unwrap()
            .contains(&json!("sub/x"))
    );
    let publish = ToolUse::new("p", "publish_artifact", json!({"file_path": "sub/x"}));
    let published = exec.execute_one(&publish, &ctx, None).await;
    let artifact = published.output.artifact.as_ref().unwrap();
    assert_eq!(std::fs::read_to_string(&artifact.path).unwrap(), "inside\n");
    assert!(
        problems.is_empty(),
        "{} problems: {:?}",
        problems.len(),
        &problems[..problems.len().min(3)]
    );
}
