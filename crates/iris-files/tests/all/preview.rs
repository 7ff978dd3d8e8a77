//! `change_diff`: the unified diff an approval of `edit_file` / `write_file` shows,
//! recognised by the tool's type (a host's own `edit_file` gets none) and confined to
//! the workspace.

use iris_files::{MAX_PREVIEW_BYTES, change_diff};
use iris_tools_core::{Tool, tool};
use serde_json::{Value, json};

use crate::support::Harness;

/// The diff the harness' tool `name` shows for `args`.
fn diff(h: &Harness, name: &str, args: Value) -> Option<String> {
    change_diff(&h.ws, h.tool(name).as_ref(), &args)
}

#[test]
fn an_edit_shows_the_changed_lines_with_context() {
    let h = Harness::new();
    h.put("src/app.toml", "a\nb\nc\nlevel = \"DEBUG\"\nd\ne\nf\ng\n");
    let args = json!({
        "file_path": "src/app.toml",
        "old_string": "level = \"DEBUG\"",
        "new_string": "level = \"INFO\"",
    });
    assert_eq!(
        diff(&h, "edit_file", args).unwrap(),
        "--- a/src/app.toml\n+++ b/src/app.toml\n@@ -1,7 +1,7 @@\n a\n b\n c\n\
         -level = \"DEBUG\"\n+level = \"INFO\"\n d\n e\n f\n"
    );
}

#[test]
fn a_write_diffs_against_the_current_file_or_dev_null() {
    let h = Harness::new();
    h.put("notes.md", "one\ntwo\n");
    let replace = json!({"file_path": "notes.md", "content": "one\n2\n"});
    assert_eq!(
        diff(&h, "write_file", replace).unwrap(),
        "--- a/notes.md\n+++ b/notes.md\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"
    );
    let create = json!({"file_path": "new/dir/file.txt", "content": "hello\n"});
    assert_eq!(
        diff(&h, "write_file", create).unwrap(),
        "--- /dev/null\n+++ b/new/dir/file.txt\n@@ -0,0 +1 @@\n+hello\n"
    );
    // Nothing was written.
    assert_eq!(h.text("notes.md"), "one\ntwo\n");
    assert!(!h.path("new").exists());
}

#[test]
fn an_edit_the_tool_would_refuse_has_no_diff() {
    let h = Harness::new();
    h.put("f.txt", "aaa\nx\nx\n");
    let cases = [
        // No match, several matches, overlapping matches, no change.
        json!({"file_path": "f.txt", "old_string": "zzz", "new_string": "y"}),
        json!({"file_path": "f.txt", "old_string": "x", "new_string": "y"}),
        json!({"file_path": "f.txt", "old_string": "aa", "new_string": "b"}),
        json!({"file_path": "f.txt", "old_string": "aaa", "new_string": "aaa"}),
        // A file that does not exist.
        json!({"file_path": "missing.txt", "old_string": "a", "new_string": "b"}),
    ];
    for args in cases {
        assert_eq!(diff(&h, "edit_file", args.clone()), None, "{args}");
    }
}

#[test]
fn a_host_tool_named_edit_file_gets_no_diff() {
    /// A host's own tool that only shares the name and parameters of `edit_file`.
    #[tool]
    async fn edit_file(file_path: String, old_string: String, new_string: String) -> String {
        format!("{file_path}: {old_string} -> {new_string}")
    }
    let h = Harness::new();
    h.put("f.txt", "before\n");
    let args = json!({"file_path": "f.txt", "old_string": "before", "new_string": "after"});
    let host_tool = edit_file::tool();
    assert_eq!(host_tool.definition().name, "edit_file");
    assert_eq!(change_diff(&h.ws, &host_tool, &args), None);
    // The crate's own tool of that name does get one, and other file tools none.
    assert!(diff(&h, "edit_file", args).is_some());
    assert_eq!(diff(&h, "read_file", json!({"file_path": "f.txt"})), None);
    // write_file's arguments sent to edit_file do not parse: no diff either.
    let write_args = json!({"file_path": "f.txt", "content": "x"});
    assert_eq!(diff(&h, "edit_file", write_args), None);
}

#[cfg(unix)]
#[test]
fn nothing_outside_the_workspace_is_shown() {
    let h = Harness::new();
    crate::support::put(&h.outside.join("secret.txt"), "top secret\n");
    std::os::unix::fs::symlink(h.outside.join("secret.txt"), h.path("link.txt")).unwrap();
    let outside = h.outside.join("secret.txt");
    for path in [
        "../outside/secret.txt",
        outside.to_str().unwrap(),
        "link.txt",
    ] {
        let write = json!({"file_path": path, "content": "x\n"});
        assert_eq!(diff(&h, "write_file", write), None, "{path}");
        let edit = json!({"file_path": path, "old_string": "top", "new_string": "x"});
        assert_eq!(diff(&h, "edit_file", edit), None, "{path}");
    }
}

#[test]
fn binary_and_oversized_files_have_no_diff() {
    let h = Harness::new();
    h.put("image.bin", [0xff_u8, 0xfe, 0x00, 0x01]);
    let args = json!({"file_path": "image.bin", "content": "text\n"});
    assert_eq!(diff(&h, "write_file", args), None);
    let big = "x".repeat(usize::try_from(MAX_PREVIEW_BYTES).unwrap() + 1);
    h.put("big.txt", &big);
    let args = json!({"file_path": "big.txt", "content": "small\n"});
    assert_eq!(diff(&h, "write_file", args), None);
    let args = json!({"file_path": "new.txt", "content": big});
    assert_eq!(diff(&h, "write_file", args), None);
}
