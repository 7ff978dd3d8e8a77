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
