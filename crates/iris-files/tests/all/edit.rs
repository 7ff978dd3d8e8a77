//! Read-before-edit, `edit_file` matching and `write_file` semantics.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use iris_files::{ReadState, codes};
use serde_json::{Value, json};

use crate::support::{Harness, code};

const ORIGINAL: &str = "level = DEBUG\nname = app\n";

/// Something that happens before the final edit or overwrite.
#[derive(Debug, Clone, Copy)]
enum Step {
    Read,
    ReadPartial,
    ReadOtherSession,
    ReadViaSymlink,
    ChangeOnDisk,
    /// Same size, and the modification time put back: only the hash can tell.
    SameSizeChangeSameMtime,
    Touch,
    RecreateSameContent,
    Delete,
    Publish,
    OwnEdit,
}

async fn apply(h: &Harness, step: Step) {
    let target = h.path("cfg.toml");
    match step {
        Step::Read => {
            let r = h.call("read_file", json!({"file_path": "cfg.toml"})).await;
            assert_eq!(code(&r), "OK");
        }
        Step::ReadPartial => {
            let r = h
                .call("read_file", json!({"file_path": "cfg.toml", "limit": 1}))
                .await;
            assert_eq!(code(&r), "OK");
        }
        Step::ReadOtherSession => {
            let r = h
                .call_in(
                    &h.session("s-2"),
                    "read_file",
                    json!({"file_path": "cfg.toml"}),
                )
                .await;
            assert_eq!(code(&r), "OK");
        }
        Step::ReadViaSymlink => {
            // Where symlinks are unavailable the step is a plain read.
            #[cfg(unix)]
            std::os::unix::fs::symlink(&target, h.path("link.toml")).unwrap();
            let name = if cfg!(unix) { "link.toml" } else { "cfg.toml" };
            let r = h.call("read_file", json!({"file_path": name})).await;
            assert_eq!(code(&r), "OK");
        }
        Step::ChangeOnDisk => h.put("cfg.toml", "level = DEBUG\nname = app\nmore = 1\n"),
        Step::SameSizeChangeSameMtime => {
            let before = std::fs::metadata(&target).unwrap().modified().unwrap();
            h.put("cfg.toml", ORIGINAL.replace("app", "ppa"));
            let file = std::fs::File::options().write(true).open(&target).unwrap();
            file.set_modified(before).unwrap();
        }
        Step::Touch => {
            let file = std::fs::File::options().write(true).open(&target).unwrap();
            file.set_modified(SystemTime::now() + Duration::from_secs(60))
                .unwrap();
        }
        Step::RecreateSameContent => {
            std::fs::remove_file(&target).unwrap();
            h.put("cfg.toml", ORIGINAL);
        }
        Step::Delete => std::fs::remove_file(&target).unwrap(),
        Step::Publish => {
            let r = h
                .call("publish_artifact", json!({"file_path": "cfg.toml"}))
                .await;
            assert_eq!(code(&r), "OK");
        }
        Step::OwnEdit => {
            let r = h
                .call(
                    "edit_file",
                    json!({"file_path": "cfg.toml", "old_string": "app", "new_string": "svc"}),
                )
                .await;
            assert_eq!(code(&r), "OK", "{}", r.model_content());
        }
    }
}

/// Runs `steps`, then the final edit and (separately) the final overwrite.
async fn check(steps: &[Step], edit_expect: &str, write_expect: &str) {
    for (op, expect) in [("edit", edit_expect), ("write", write_expect)] {
        let h = Harness::new();
        h.put("cfg.toml", ORIGINAL);
        for step in steps {
            apply(&h, *step).await;
        }
        let before = std::fs::read(h.path("cfg.toml")).ok();
        let r = if op == "edit" {
            h.call(
                "edit_file",
                json!({"file_path": "cfg.toml", "old_string": "DEBUG", "new_string": "INFO"}),
            )
            .await
        } else {
            h.call(
                "write_file",
                json!({"file_path": "cfg.toml", "content": "level = INFO\n"}),
            )
            .await
        };
        assert_eq!(
            code(&r),
            expect,
            "{steps:?} then {op}: {}",
            r.model_content()
        );
        let after = std::fs::read(h.path("cfg.toml")).ok();
        if expect == "OK" {
            let text = String::from_utf8(after.unwrap()).unwrap();
            assert!(text.contains("level = INFO"), "{steps:?} {op}");
        } else {
            assert_eq!(
                before, after,
                "{steps:?} then {op}: a refused call changed the file"
            );
            if matches!(expect, codes::READ_REQUIRED | codes::STALE_READ) {
                assert!(
                    r.error_info().unwrap().message.contains("read_file"),
                    "the message tells the model to read"
                );
            }
        }
    }
}

#[tokio::test]
async fn read_before_edit_matrix() {
    use Step::*;
    const OK: &str = "OK";
    let rows: &[(&[Step], &str, &str)] = &[
        (&[], codes::READ_REQUIRED, codes::READ_REQUIRED),
        (&[Read], OK, OK),
        (&[ReadPartial], OK, OK),
        (&[ReadViaSymlink], OK, OK),
        (
            &[ReadOtherSession],
            codes::READ_REQUIRED,
            codes::READ_REQUIRED,
        ),
        (&[Read, ChangeOnDisk], codes::STALE_READ, codes::STALE_READ),
        (
            &[Read, SameSizeChangeSameMtime],
            codes::STALE_READ,
            codes::STALE_READ,
        ),
        (&[Read, Touch], OK, OK),
        (&[Read, RecreateSameContent], OK, OK),
        (&[Read, ChangeOnDisk, Read], OK, OK),
        (&[Publish], codes::READ_REQUIRED, codes::READ_REQUIRED),
        (&[Read, Publish], OK, OK),
        (
            &[Read, ChangeOnDisk, Publish],
            codes::STALE_READ,
            codes::STALE_READ,
        ),
        (&[Read, OwnEdit], OK, OK),
        (
            &[Read, OwnEdit, ChangeOnDisk],
            codes::STALE_READ,
            codes::STALE_READ,
        ),
        // A deleted file cannot be edited, and writing it again is a creation.
        (&[Read, Delete], codes::FILE_NOT_FOUND, OK),
        (&[Delete], codes::FILE_NOT_FOUND, OK),
    ];
    for (steps, edit, write) in rows {
        check(steps, edit, write).await;
    }
}

/// A host-provided ReadState is the one consulted; another context's is not.
#[tokio::test]
async fn host_read_state_is_used() {
    let h = Harness::new();
    h.put("cfg.toml", ORIGINAL);
    let state = Arc::new(ReadState::new());
    let host = h.with_state(Arc::clone(&state));
    let edit = json!({"file_path": "cfg.toml", "old_string": "DEBUG", "new_string": "INFO"});
    h.call_in(&host, "read_file", json!({"file_path": "cfg.toml"}))
        .await;
    assert_eq!(state.len(), 1);
    // The default session of the service never read it.
    assert_eq!(
        code(&h.call("edit_file", edit.clone()).await),
        codes::READ_REQUIRED
    );
    assert_eq!(code(&h.call_in(&host, "edit_file", edit).await), "OK");
    // An extension of a foreign type is not a read state: the session's own applies.
    let foreign = iris_tools_core::ToolExecutionContext::new(&h.ws)
        .session_id("s-1")
        .with_extension(String::from("not a ReadState"));
    let r = h
        .call_in(
            &foreign,
            "edit_file",
            json!({"file_path": "cfg.toml", "old_string": "INFO", "new_string": "WARN"}),
        )
        .await;
    assert_eq!(code(&r), codes::READ_REQUIRED);
}

/// What `edit_file` does with a fresh read, by `old_string`/`new_string`.
#[tokio::test]
async fn edit_matching_table() {
    let content = "a = 1\nb = 2\naaa\nline one\nline two\n";
    let cases: &[(&str, &str, &str, Option<&str>)] = &[
        (
            "b = 2",
            "b = 3",
            "OK",
            Some("a = 1\nb = 3\naaa\nline one\nline two\n"),
        ),
        (
            "line one\nline two",
            "lines",
            "OK",
            Some("a = 1\nb = 2\naaa\nlines\n"),
        ),
        (
            "b = 2\n",
            "",
            "OK",
            Some("a = 1\naaa\nline one\nline two\n"),
        ),
        ("missing", "x", codes::EDIT_NO_MATCH, None),
        (" = ", "=", codes::EDIT_AMBIGUOUS, None),
        ("aa", "b", codes::EDIT_AMBIGUOUS, None),
        ("a = 1", "a = 1", codes::EDIT_NO_CHANGE, None),
    ];
    for (old, new, expect, after) in cases {
        let h = Harness::new();
        h.put("f.txt", content);
        h.call("read_file", json!({"file_path": "f.txt"})).await;
        let r = h
            .call(
                "edit_file",
                json!({"file_path": "f.txt", "old_string": old, "new_string": new}),
            )
            .await;
        assert_eq!(code(&r), *expect, "{old:?}");
        assert_eq!(h.text("f.txt"), after.unwrap_or(content), "{old:?}");
    }
}

#[tokio::test]
async fn edit_errors_say_how_many_matched() {
    let h = Harness::new();
    h.put("f.txt", "x = 1\nx = 2\nx = 3\n");
    h.call("read_file", json!({"file_path": "f.txt"})).await;
    let many = h
        .call(
            "edit_file",
            json!({"file_path": "f.txt", "old_string": "x = ", "new_string": "y = "}),
        )
        .await;
    assert_eq!(
        many.model_content(),
        "Error[EDIT_AMBIGUOUS]: old_string matches 3 times in `f.txt` (lines 1, 2, 3); include more surrounding text so it matches exactly once"
    );
    assert_eq!(many.error_info().unwrap().details["matches"], 3);
    let none = h
        .call(
            "edit_file",
            json!({"file_path": "f.txt", "old_string": "z", "new_string": "y"}),
        )
        .await;
    assert_eq!(
        none.model_content(),
        "Error[EDIT_NO_MATCH]: old_string matches 0 times in `f.txt`; copy the exact text from read_file (whitespace included)"
    );
    let ok = h
        .call(
            "edit_file",
            json!({"file_path": "f.txt", "old_string": "x = 2", "new_string": "x = 20"}),
        )
        .await;
    assert_eq!(
        ok.model_content(),
        "Edited `f.txt`: replaced 1 occurrence at line 2."
    );
}

/// Writing and editing targets that are not plain, editable text files.
#[tokio::test]
async fn write_and_edit_target_table() {
    let h = Harness::new();
    h.put("dir/keep.txt", "k");
    h.put("file.txt", "text\n");
    h.put("bin.dat", b"\0\x01\x02");
    h.put(".iris/published/s-1/c-report.md", "published\n");
    h.call("read_file", json!({"file_path": "bin.dat"})).await;
    h.call(
        "read_file",
        json!({"file_path": ".iris/published/s-1/c-report.md"}),
    )
    .await;
    let cases: &[(&str, Value, &str)] = &[
        (
            "write_file",
            json!({"file_path": "dir", "content": "x"}),
            codes::NOT_A_FILE,
        ),
        (
            "write_file",
            json!({"file_path": "file.txt/child", "content": "x"}),
            codes::NOT_A_DIRECTORY,
        ),
        (
            "write_file",
            json!({"file_path": ".iris/published/s-1/c-report.md", "content": "x"}),
            codes::PROTECTED_PATH,
        ),
        (
            "write_file",
            json!({"file_path": ".iris/published/s-1/new.md", "content": "x"}),
            codes::PROTECTED_PATH,
        ),
        (
            "edit_file",
            json!({"file_path": "dir", "old_string": "a", "new_string": "b"}),
            codes::NOT_A_FILE,
        ),
        (
            "edit_file",
            json!({"file_path": "nope.txt", "old_string": "a", "new_string": "b"}),
            codes::FILE_NOT_FOUND,
        ),
        (
            "edit_file",
            json!({"file_path": "bin.dat", "old_string": "a", "new_string": "b"}),
            codes::BINARY_FILE,
        ),
        (
            "edit_file",
            json!({"file_path": ".iris/published/s-1/c-report.md", "old_string": "published", "new_string": "x"}),
            codes::PROTECTED_PATH,
        ),
        // A binary file that was read may be replaced as a whole.
        (
            "write_file",
            json!({"file_path": "bin.dat", "content": "now text\n"}),
            "OK",
        ),
    ];
    for (tool, input, expect) in cases {
        let r = h.call(tool, input.clone()).await;
        assert_eq!(code(&r), *expect, "{tool} {input}: {}", r.model_content());
    }
    assert_eq!(h.text(".iris/published/s-1/c-report.md"), "published\n");
}

/// New files need no read; missing directories are created; the write becomes the
/// session's observation, so a following edit needs no extra read.
#[tokio::test]
async fn create_then_edit_without_reading() {
    let h = Harness::new();
    let r = h
        .call(
            "write_file",
            json!({"file_path": "new/deep/notes.md", "content": "# Notes\ntodo\n"}),
        )
        .await;
    assert_eq!(
        r.model_content(),
        "Created `new/deep/notes.md` (13 bytes, 2 lines)."
    );
    assert_eq!(r.data["created"], true);
    assert_eq!(h.text("new/deep/notes.md"), "# Notes\ntodo\n");
    let e = h
        .call(
            "edit_file",
            json!({"file_path": "new/deep/notes.md", "old_string": "todo", "new_string": "done"}),
        )
        .await;
    assert_eq!(code(&e), "OK");
    let w = h
        .call(
            "write_file",
            json!({"file_path": "new/deep/notes.md", "content": ""}),
        )
        .await;
    assert_eq!(
        w.model_content(),
        "Wrote `new/deep/notes.md` (0 bytes, 0 lines)."
    );
    assert_eq!(h.text("new/deep/notes.md"), "");
}

/// The workspace policy's protected paths (`.iris`, `.git` and what the host adds, such
/// as the agent YAML) can be read but never written or edited.
#[tokio::test]
async fn protected_paths_are_read_only_to_the_file_tools() {
    let policy = iris_executor::WorkspacePolicy::new().with_protected_paths(["agents/iris.yaml"]);
    let h =
        Harness::with_config(iris_files::FileToolsConfig::default().with_workspace_policy(policy));
    h.put("agents/iris.yaml", "name: a\n");
    h.put(".git/config", "[core]\n");
    h.call("read_file", json!({"file_path": "agents/iris.yaml"}))
        .await;
    h.call("read_file", json!({"file_path": ".git/config"}))
        .await;
    let cases: &[(&str, Value)] = &[
        (
            "write_file",
            json!({"file_path": "agents/iris.yaml", "content": "x"}),
        ),
        (
            "edit_file",
            json!({"file_path": "agents/iris.yaml", "old_string": "a", "new_string": "b"}),
        ),
        (
            "write_file",
            json!({"file_path": ".git/hooks/pre-commit", "content": "x"}),
        ),
        (
            "edit_file",
            json!({"file_path": ".git/config", "old_string": "core", "new_string": "x"}),
        ),
        (
            "write_file",
            json!({"file_path": ".iris/runs/planted", "content": "x"}),
        ),
        (
            "write_file",
            json!({"file_path": "agents/../.git/config", "content": "x"}),
        ),
    ];
    for (tool, input) in cases {
        let r = h.call(tool, input.clone()).await;
        assert_eq!(
            code(&r),
            codes::PROTECTED_PATH,
            "{tool} {input}: {}",
            r.model_content()
        );
    }
    assert_eq!(h.text("agents/iris.yaml"), "name: a\n");
    assert_eq!(h.text(".git/config"), "[core]\n");
    assert!(!h.path(".git/hooks/pre-commit").exists());
    // Next to them, writing is as usual.
    let r = h
        .call(
            "write_file",
            json!({"file_path": "agents/notes.md", "content": "x"}),
        )
        .await;
    assert_eq!(code(&r), "OK", "{}", r.model_content());
}
