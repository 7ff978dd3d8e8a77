//! All six file tools through the real `ToolExecutor`: schema validation, the default
//! permission policy (writes need approval), parallel read windows, read-before-edit and
//! identity binding on the one executor path.

use iris_executor::{ApprovalMode, DefaultPermissionPolicy, ToolExecutor};
use iris_files::builtin_tools;
use iris_tools_core::{ToolExecutionContext, ToolRegistry, ToolUse};
use serde_json::json;

fn executor(write_mode: ApprovalMode) -> ToolExecutor {
    let registry = ToolRegistry::new();
    registry.register_many(builtin_tools()).unwrap();
    ToolExecutor::new(registry)
        .with_permission_policy(DefaultPermissionPolicy::new().write_mode(write_mode))
}

#[tokio::test]
async fn the_six_tools_run_through_the_executor() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("src")).unwrap();
    std::fs::write(ws.path().join("src/app.toml"), "level = \"DEBUG\"\n").unwrap();
    std::fs::write(ws.path().join("src/notes.txt"), "alpha\nbeta ERROR here\n").unwrap();
    let ctx = ToolExecutionContext::new(ws.path()).session_id("s-1");
    let exec = executor(ApprovalMode::Allow);

    // Reads, a listing and a search are read-only and concurrency-safe: one window.
    let reads = vec![
        ToolUse::new("r1", "read_file", json!({"file_path": "src/app.toml"})),
        ToolUse::new("r2", "list_files", json!({"path": "src"})),
        ToolUse::new(
            "r3",
            "grep_search",
            json!({"pattern": "ERROR", "path": "."}),
        ),
    ];
    assert_eq!(exec.prepare_many(&reads, &ctx).to_string(), "par[0..3]");
    let results = exec.execute_many(&reads, &ctx).await;
    assert!(results.iter().all(|r| !r.is_error()), "{results:#?}");
    assert_eq!(
        results[0].model_content().lines().next(),
        Some("level = \"DEBUG\"")
    );
    assert!(results[1].model_content().contains("src/notes.txt"));
    assert!(
        results[2]
            .model_content()
            .contains("src/notes.txt:2:beta ERROR here")
    );
    assert_eq!(
        (
            results[2].tool_use_id.as_str(),
            results[2].tool_name.as_str()
        ),
        ("r3", "grep_search")
    );

    // The read above satisfies read-before-edit for the edit below.
    let edit = ToolUse::new(
        "w1",
        "edit_file",
        json!({"file_path": "src/app.toml", "old_string": "DEBUG", "new_string": "INFO"}),
    );
    let edited = exec.execute_one(&edit, &ctx, None).await;
    assert!(!edited.is_error(), "{}", edited.model_content());
    assert_eq!(
        std::fs::read_to_string(ws.path().join("src/app.toml")).unwrap(),
        "level = \"INFO\"\n"
    );

    // Overwriting a file this session never read is refused by the file service.
    let overwrite = ToolUse::new(
        "w2",
        "write_file",
        json!({"file_path": "src/notes.txt", "content": "x"}),
    );
    assert_eq!(
        exec.execute_one(&overwrite, &ctx, None).await.error_code(),
        Some("READ_REQUIRED")
    );

    let create = ToolUse::new(
        "w3",
        "write_file",
        json!({"file_path": "out/report.md", "content": "# Report\n"}),
    );
    assert!(!exec.execute_one(&create, &ctx, None).await.is_error());
    let publish = ToolUse::new(
        "p1",
        "publish_artifact",
        json!({"file_path": "out/report.md"}),
    );
    let published = exec.execute_one(&publish, &ctx, None).await;
    let artifact = published.output.artifact.clone().unwrap();
    assert_eq!(
        std::fs::read_to_string(&artifact.path).unwrap(),
        "# Report\n"
    );

    // Bad input never reaches a tool: the executor's schema check answers first.
    let bad = ToolUse::new("b1", "list_files", json!({"max_results": 1001}));
    assert_eq!(
        exec.execute_one(&bad, &ctx, None).await.error_code(),
        Some("INVALID_INPUT")
    );
    // An escape is refused by the permission policy before the body runs.
    let escape = ToolUse::new("b2", "read_file", json!({"file_path": "../../etc/passwd"}));
    assert_eq!(
        exec.execute_one(&escape, &ctx, None).await.error_code(),
        Some("PERMISSION_DENIED")
    );
}

#[tokio::test]
async fn writes_wait_for_approval_under_the_default_policy() {
    let ws = tempfile::tempdir().unwrap();
    let ctx = ToolExecutionContext::new(ws.path()).session_id("s-1");
    let exec = executor(ApprovalMode::Confirm);
    let write = ToolUse::new(
        "w1",
        "write_file",
        json!({"file_path": "a.txt", "content": "hi"}),
    );
    let waiting = exec.execute_one(&write, &ctx, None).await;
    assert_eq!(waiting.error_code(), Some("APPROVAL_REQUIRED"));
    assert!(!ws.path().join("a.txt").exists());
    let approved = exec.execute_one(&write, &ctx, Some("w1")).await;
    assert!(!approved.is_error(), "{}", approved.model_content());
    assert_eq!(
        std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
        "hi"
    );
}

/// Random text over `a`, `b`, ` ` and `c` (the SplitMix generator of the support
/// module), with a newline every `line` bytes: a pattern ending in `x` never matches it,
/// and `\w*a[a-z ]{1000}x` defeats the lazy DFA, so every byte costs the slow engine.
fn hostile_text(len: usize, line: usize) -> Vec<u8> {
    let mut rng = crate::support::Rng::new(7);
    (0..len)
        .map(|i| {
            if (i + 1) % line == 0 {
                b'\n'
            } else {
                *rng.pick(b"ab c")
            }
        })
        .collect()
}

const CATASTROPHIC: &str = r"\w*a[a-z ]{1000}x";

/// A runtime with a single blocking thread: a call that needs it after an abandoned
/// search can only run once that search's worker has returned.
fn one_blocking_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// A catastrophic regex over a large file used to run on long after its call timed
/// out (the stop flag was only checked between files and at matches). Now the stop is
/// checked before every read inside a file: once the call's deadline drops it, the
/// worker returns within one bounded line, and the next call, which needs the only
/// blocking thread, completes.
#[test]
fn a_timed_out_search_stops_its_worker() {
    let ws = tempfile::tempdir().unwrap();
    // 120 lines of 60 KB: minutes of regex work in all, a second or so per line.
    std::fs::write(
        ws.path().join("big.txt"),
        hostile_text(120 * 60_000, 60_000),
    )
    .unwrap();
    std::fs::write(ws.path().join("small.txt"), "hello\n").unwrap();
    let exec = executor(ApprovalMode::Allow);
    let runtime = one_blocking_thread();
    let (grep, read) = runtime.block_on(async {
        let ctx = ToolExecutionContext::new(ws.path())
            .session_id("s-1")
            .tool_timeout(std::time::Duration::from_millis(300));
        let search = ToolUse::new(
            "g1",
            "grep_search",
            json!({"pattern": CATASTROPHIC, "path": "big.txt"}),
        );
        let grep = exec.execute_one(&search, &ctx, None).await;
        let ctx = ToolExecutionContext::new(ws.path()).session_id("s-1");
        let next = ToolUse::new("r1", "read_file", json!({"file_path": "small.txt"}));
        let read = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            exec.execute_one(&next, &ctx, None),
        )
        .await;
        (grep, read)
    });
    // Never wait for a worker that did not stop (that is the failure reported below).
    runtime.shutdown_background();
    assert_eq!(
        grep.error_code(),
        Some("TOOL_TIMEOUT"),
        "{}",
        grep.model_content()
    );
    let read = read.expect("the next call waited on the timed-out search: its worker kept running");
    assert_eq!(read.model_content(), "hello\n");
}

/// A line longer than `grep_max_line_bytes` (1 MiB by default) is never handed to the
/// regex engine: the file is skipped and counted, so a catastrophic pattern over a
/// 3 MB line returns at once instead of running for minutes.
#[test]
fn a_line_over_the_bound_is_skipped_not_searched() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join("one-line.txt"),
        hostile_text(3_000_000, usize::MAX),
    )
    .unwrap();
    std::fs::write(ws.path().join("short.txt"), "a".repeat(1001) + "x\n").unwrap();
    let exec = executor(ApprovalMode::Allow);
    let runtime = one_blocking_thread();
    let grep = runtime.block_on(async {
        let ctx = ToolExecutionContext::new(ws.path())
            .session_id("s-1")
            .tool_timeout(std::time::Duration::from_secs(30));
        let search = ToolUse::new("g1", "grep_search", json!({"pattern": CATASTROPHIC}));
        exec.execute_one(&search, &ctx, None).await
    });
    runtime.shutdown_background();
    assert_eq!(grep.error_code(), None, "{}", grep.model_content());
    assert_eq!(grep.output.data["skipped_long_lines"], 1);
    assert_eq!(grep.output.data["total_matches"], 1);
    let text = grep.model_content();
    assert!(text.starts_with("short.txt:1:"), "{text}");
    assert!(
        text.ends_with(
            "[1 files not searched: they have a line longer than 1048576 bytes; use read_file to page them.]"
        ),
        "{text}"
    );
}

/// A 500 KB glob used to panic inside globset (TOOL_PANICKED, with a 2 MB panic
/// message). The length is bounded by the schema and again when the glob is compiled.
#[tokio::test]
async fn a_huge_glob_is_invalid_input() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "a\n").unwrap();
    let ctx = ToolExecutionContext::new(ws.path()).session_id("s-1");
    let exec = executor(ApprovalMode::Allow);
    for (pattern, expect) in [
        ("a".repeat(500_000), Some("INVALID_INPUT")),
        ("[ab]".repeat(125_000), Some("INVALID_INPUT")),
        (
            "?".repeat(iris_files::MAX_GLOB_CHARS + 1),
            Some("INVALID_INPUT"),
        ),
        ("*".repeat(iris_files::MAX_GLOB_CHARS), None),
    ] {
        let call = ToolUse::new("l1", "list_files", json!({"pattern": pattern}));
        let result = exec.execute_one(&call, &ctx, None).await;
        assert_eq!(result.error_code(), expect, "{} chars", pattern.len());
        assert!(
            result.model_content().len() < 2_000,
            "{} chars: a {}-byte answer",
            pattern.len(),
            result.model_content().len()
        );
    }
}

/// An offset past u64 (`18446744073709551616`) used to be reported as "must be at
/// least 0"; the message now names the real bound.
#[tokio::test]
async fn an_offset_past_u64_names_the_real_bound() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "a\n").unwrap();
    let ctx = ToolExecutionContext::new(ws.path()).session_id("s-1");
    let exec = executor(ApprovalMode::Allow);
    for raw in [
        r#"{"file_path": "a.txt", "offset": 18446744073709551616}"#,
        r#"{"file_path": "a.txt", "offset": 1e30}"#,
        r#"{"file_path": "a.txt", "column": 18446744073709551616}"#,
    ] {
        let input: serde_json::Value = serde_json::from_str(raw).unwrap();
        let result = exec
            .execute_one(&ToolUse::new("r1", "read_file", input), &ctx, None)
            .await;
        assert_eq!(result.error_code(), Some("INVALID_INPUT"), "{raw}");
        let message = &result.output.error_info().unwrap().message;
        assert!(message.contains("18446744073709551615"), "{raw}: {message}");
        assert!(!message.contains("at least 0"), "{raw}: {message}");
    }
}
