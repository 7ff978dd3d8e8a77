//! The workspace-escape table, applied to every file tool: each attempt is denied
//! with a path error, nothing outside is read, listed, searched, created or changed.

use std::collections::BTreeMap;
use std::path::Path;

use iris_tools_core::codes::{INVALID_PATH, PATH_OUTSIDE_WORKSPACE};
use serde_json::{Value, json};

use crate::support::{Harness, code, put};

const SECRET: &str = "TOP SECRET";

/// Every file under `dir` with its content (the state that must not change).
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                out.insert(
                    e.path().display().to_string(),
                    std::fs::read(e.path()).unwrap(),
                );
            }
        }
    }
    out
}

fn sandbox() -> Harness {
    use std::os::unix::fs::symlink;
    let h = Harness::new();
    put(&h.outside.join("secret.txt"), format!("{SECRET}\n"));
    std::fs::create_dir_all(h.outside.join("dir")).unwrap();
    h.put("inside.txt", "inside\n");
    h.put("sub/deep/keep.txt", "keep\n");
    symlink(&h.outside, h.path("to_outside_dir")).unwrap();
    symlink(h.outside.join("secret.txt"), h.path("to_secret")).unwrap();
    symlink("..", h.path("to_parent")).unwrap();
    symlink("chain2", h.path("chain1")).unwrap();
    symlink(h.outside.join("secret.txt"), h.path("chain2")).unwrap();
    symlink(h.outside.join("nonexistent.txt"), h.path("dangling_out")).unwrap();
    symlink("../..", h.path("sub/up")).unwrap();
    symlink("deep", h.path("sub/deep_link")).unwrap();
    symlink(".", h.path("ws_self")).unwrap();
    symlink("/", h.path("abs_root")).unwrap();
    h
}

/// The attempts; `{ws}`, `{outside}` and `{sandbox}` are replaced by real paths.
const ATTEMPTS: [&str; 36] = [
    "../outside/secret.txt",
    "{outside}/secret.txt",
    "{outside}",
    "/etc/passwd",
    "/",
    "..",
    "../",
    "./../outside/secret.txt",
    "sub/../../outside/secret.txt",
    "sub/deep/../../../outside/secret.txt",
    "to_outside_dir/secret.txt",
    "to_outside_dir",
    "to_outside_dir/dir",
    "to_secret",
    "to_parent/outside/secret.txt",
    "to_parent",
    "to_parent/ws/../outside/secret.txt",
    "chain1",
    "chain2",
    "dangling_out",
    "sub/up/outside/secret.txt",
    "sub/deep_link/../../../outside/secret.txt",
    "ws_self/../outside/secret.txt",
    "abs_root/etc/passwd",
    "{ws}/../outside/secret.txt",
    "{ws}/to_secret",
    "{sandbox}/outside/dir/../secret.txt",
    "//etc/passwd",
    "/proc/self/root/etc/passwd",
    "missing/../../outside/secret.txt",
    "../outside/new-file.txt",
    "to_outside_dir/new-file.txt",
    "../ws-sibling/new.txt",
    "sub/up/outside/new.txt",
    "to_parent/new.txt",
    "nul\u{0}byte.txt",
];

fn input(tool: &str, path: &str) -> Value {
    match tool {
        "read_file" | "publish_artifact" => json!({"file_path": path}),
        "list_files" => json!({"path": path}),
        "grep_search" => json!({"pattern": "SECRET", "path": path}),
        "write_file" => json!({"file_path": path, "content": "pwned"}),
        _ => json!({"file_path": path, "old_string": "TOP", "new_string": "pwned"}),
    }
}

const TOOLS: [&str; 6] = [
    "read_file",
    "list_files",
    "grep_search",
    "write_file",
    "edit_file",
    "publish_artifact",
];

#[tokio::test]
async fn every_escape_is_denied_by_every_tool() {
    let h = sandbox();
    let sandbox_dir = h.sandbox.path().to_path_buf();
    let before = snapshot(&sandbox_dir);
    for attempt in ATTEMPTS {
        let path = attempt
            .replace("{ws}", &h.ws.display().to_string())
            .replace("{outside}", &h.outside.display().to_string())
            .replace("{sandbox}", &sandbox_dir.display().to_string());
        for tool in TOOLS {
            let r = h.call(tool, input(tool, &path)).await;
            assert!(
                matches!(code(&r), PATH_OUTSIDE_WORKSPACE | INVALID_PATH),
                "{tool} {attempt:?}: got {} ({})",
                code(&r),
                r.model_content()
            );
            let seen = format!("{} {}", r.model_content(), json!(r.data));
            assert!(
                !seen.contains(SECRET),
                "{tool} {attempt:?} leaked the secret"
            );
            assert!(r.artifact.is_none());
        }
    }
    // Nothing was created, changed or published anywhere in the sandbox.
    assert_eq!(snapshot(&sandbox_dir), before);
    assert!(!h.path(".iris").exists());
    assert!(!h.sandbox.path().join("new.txt").exists());
}

/// Walking the workspace never follows links out of it.
#[tokio::test]
async fn walks_do_not_follow_links_out() {
    let h = sandbox();
    let grep = h
        .call(
            "grep_search",
            json!({"pattern": "TOP SECRET", "max_results": 1000}),
        )
        .await;
    assert_eq!(grep.data["total_matches"], 0);
    let list = h.call("list_files", json!({"max_results": 1000})).await;
    assert_eq!(
        list.data["files"],
        json!(["inside.txt", "sub/deep/keep.txt"])
    );
}

/// Tricky spellings that stay inside the workspace are allowed, and a workspace
/// root reached through a symlink works the same.
#[tokio::test]
async fn inside_spellings_are_allowed() {
    let h = sandbox();
    for (path, expect) in [
        ("inside.txt", "OK"),
        ("./inside.txt", "OK"),
        ("sub/./../inside.txt", "OK"),
        ("sub/deep_link/../../inside.txt", "OK"),
        ("ws_self/inside.txt", "OK"),
        ("to_parent/ws/inside.txt", "OK"),
        ("{ws}/inside.txt", "OK"),
        ("~/inside.txt", iris_files::codes::FILE_NOT_FOUND),
        ("..\\outside\\secret.txt", iris_files::codes::FILE_NOT_FOUND),
    ] {
        let p = path.replace("{ws}", &h.ws.display().to_string());
        let r = h.call("read_file", json!({"file_path": p})).await;
        assert_eq!(code(&r), expect, "{path}");
    }
    let link = h.sandbox.path().join("ws-link");
    std::os::unix::fs::symlink(&h.ws, &link).unwrap();
    let ctx = iris_tools_core::ToolExecutionContext::new(&link).session_id("s-1");
    let ok = h
        .call_in(&ctx, "read_file", json!({"file_path": "inside.txt"}))
        .await;
    assert_eq!(code(&ok), "OK");
    let denied = h
        .call_in(
            &ctx,
            "read_file",
            json!({"file_path": "../outside/secret.txt"}),
        )
        .await;
    assert_eq!(code(&denied), PATH_OUTSIDE_WORKSPACE);
}
