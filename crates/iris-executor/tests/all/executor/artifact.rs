//! Long results become artifacts: the whole body saved, a preview returned.

use iris_executor::ToolExecutor;
use iris_tools_core::{
    PreviewMode, ToolCapability as Cap, ToolExecutionContext, ToolOutput, ToolRegistry, ToolUse,
};
use serde_json::json;

use super::fixtures::{def, register};

fn long_body(n: usize) -> String {
    (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect()
}

fn executor(max_chars: usize, preview: usize) -> ToolExecutor {
    let registry = ToolRegistry::new();
    let definition = def("dump", &[Cap::Read])
        .with_max_result_chars(max_chars)
        .with_preview(preview, PreviewMode::Head);
    register(&registry, definition, |input, _| async move {
        ToolOutput::text(long_body(input["n"].as_u64().unwrap_or(0) as usize))
    });
    ToolExecutor::new(registry)
}

/// (body length, threshold, whether it becomes an artifact)
#[tokio::test]
async fn long_results_are_saved_whole_short_ones_untouched() {
    let table = [
        (10, 1_000, false),
        (1_000, 1_000, false),
        (1_001, 1_000, true),
        (50_000, 1_000, true),
    ];
    for (n, max_chars, saved) in table {
        let workspace = tempfile::tempdir().unwrap();
        let ctx = ToolExecutionContext::new(workspace.path()).session_id("s-1");
        let result = executor(max_chars, 100)
            .execute_one(&ToolUse::new("call_1", "dump", json!({"n": n})), &ctx, None)
            .await;
        assert_eq!(result.error_code(), None, "n={n}");
        assert_eq!(result.tool_use_id, "call_1");
        let body = long_body(n);
        match (&result.output.artifact, saved) {
            (None, false) => assert_eq!(result.model_content(), body, "n={n}: unchanged"),
            (Some(artifact), true) => {
                let path = artifact
                    .text_path
                    .as_ref()
                    .expect("text_path of a saved body");
                let session_dir = workspace.path().join(".iris/tool-results/s-1");
                assert!(
                    path.starts_with(&session_dir),
                    "n={n}: {} under the session dir",
                    path.display()
                );
                assert_eq!(
                    std::fs::read_to_string(path).unwrap(),
                    body,
                    "n={n}: whole body saved"
                );
                assert!(
                    result.output.model_chars() < n,
                    "n={n}: the model sees a preview"
                );
                assert!(
                    result.model_content().starts_with(&body[..100]),
                    "n={n}: head preview"
                );
            }
            (artifact, _) => panic!("n={n}: artifact {artifact:?}, expected saved={saved}"),
        }
    }
}

/// The model chooses call ids; an id with path syntax cannot place the file outside
/// the session's directory, and the result keeps the real id.
#[tokio::test]
async fn hostile_call_ids_stay_inside_the_store() {
    let workspace = tempfile::tempdir().unwrap();
    let ctx = ToolExecutionContext::new(workspace.path()).session_id("s-1");
    let id = "../../escape";
    let result = executor(10, 5)
        .execute_one(&ToolUse::new(id, "dump", json!({"n": 100})), &ctx, None)
        .await;
    assert_eq!(result.tool_use_id, id);
    let path = result
        .output
        .artifact
        .and_then(|a| a.text_path)
        .expect("saved");
    let session_dir = workspace.path().join(".iris/tool-results/s-1");
    assert_eq!(path.parent(), Some(session_dir.as_path()));
}

/// When the artifact cannot be written, nothing is lost: the whole body stays in the
/// result and the failure is reported in `output.artifact_error`.
#[tokio::test]
async fn an_artifact_failure_keeps_the_whole_body() {
    let dir = tempfile::tempdir().unwrap();
    // A workspace "root" that is a regular file: no directory can be created under it.
    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, "x").unwrap();
    let ctx = ToolExecutionContext::new(&not_a_dir).session_id("s-1");
    let result = executor(10, 5)
        .execute_one(
            &ToolUse::new("call_1", "dump", json!({"n": 100})),
            &ctx,
            None,
        )
        .await;
    assert_eq!(result.model_content(), long_body(100));
    assert!(result.output.artifact.is_none());
    assert!(!result.is_error());
    let error = result
        .output
        .artifact_error
        .as_ref()
        .expect("artifact_error");
    assert_eq!(error.code, "ARTIFACT_ERROR");
    assert!(!error.message.is_empty(), "{error:?}");
}

/// Disk work never runs on the async workers: on a current-thread runtime, saving a
/// long body (and resolving a path parameter for the default policy) happens on a
/// blocking-pool thread, while a short result and a call without paths start none.
#[test]
fn disk_work_runs_on_the_blocking_pool() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use iris_executor::{ApprovalMode, DefaultPermissionPolicy};

    // (body length, whether the call names a path, blocking threads expected)
    let table = [(10, false, false), (5_000, false, true), (10, true, true)];
    for (n, with_path, expect_blocking) in table {
        let started = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&started);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .on_thread_start(move || {
                counter.fetch_add(1, Ordering::SeqCst);
            })
            .build()
            .unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let ctx = ToolExecutionContext::new(workspace.path()).session_id("s-1");
        let executor = executor(1_000, 100)
            .with_permission_policy(DefaultPermissionPolicy::new().write_mode(ApprovalMode::Allow));
        let input = if with_path {
            json!({"n": n, "path": "notes.txt"})
        } else {
            json!({"n": n})
        };
        let result =
            runtime.block_on(executor.execute_one(&ToolUse::new("c1", "dump", input), &ctx, None));
        assert!(!result.is_error(), "{result:?}");
        assert_eq!(result.output.artifact.is_some(), n > 1_000, "n = {n}");
        assert_eq!(
            started.load(Ordering::SeqCst) > 0,
            expect_blocking,
            "n = {n}, path = {with_path}: blocking threads started"
        );
    }
}

/// A workspace that ships `.iris -> ../outside` (or symlinks a deeper component of the
/// store) does not get tool results written outside: the store refuses the link, the
/// output keeps its whole body and reports `ARTIFACT_ERROR`.
#[cfg(unix)]
#[tokio::test]
async fn a_symlinked_store_directory_keeps_the_body_and_writes_nothing_outside() {
    use std::os::unix::fs::symlink;

    for link in [".iris", ".iris/tool-results", ".iris/tool-results/s-1"] {
        let sandbox = tempfile::tempdir().unwrap();
        let ws = sandbox.path().join("ws");
        let outside = sandbox.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        let at = ws.join(link);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        symlink(&outside, &at).unwrap();
        let ctx = ToolExecutionContext::new(&ws).session_id("s-1");
        let result = executor(10, 5)
            .execute_one(
                &ToolUse::new("call_1", "dump", json!({"n": 100})),
                &ctx,
                None,
            )
            .await;
        assert!(!result.is_error(), "{link}");
        assert_eq!(result.model_content(), long_body(100), "{link}: whole body");
        assert!(result.output.artifact.is_none(), "{link}");
        let error = result
            .output
            .artifact_error
            .as_ref()
            .unwrap_or_else(|| panic!("{link}: artifact_error"));
        assert_eq!(error.code, "ARTIFACT_ERROR", "{link}");
        assert_eq!(error.details["cause_code"], "INVALID_PATH", "{link}");
        assert!(
            error.message.contains("symbolic link"),
            "{link}: {}",
            error.message
        );
        assert_eq!(
            std::fs::read_dir(&outside).unwrap().count(),
            0,
            "{link}: something was written outside"
        );
    }
}
