//! Tests for the `workspace` area: `WorkspacePolicy::resolve_path` against a real tree
//! of files, directories and symlinks built in a temporary directory
//! (`iris_test_support::symlinks`).
//!
//! The fixture needs symlinks and arbitrary byte names, so the module is Unix-only.
#![cfg(unix)]
// Fixture paths are canonicalized with `unwrap`: a broken fixture must stop the test.
#![allow(clippy::unwrap_used)]

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use iris_fs::workspace::{PathError, WorkspacePolicy};
use iris_tools_core::codes;

use iris_test_support::symlinks::symlink_workspace as workspace_fixture;

/// What one resolution should give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Resolves inside the root, to these bytes relative to the canonical root
    /// (empty for the root itself).
    Ok(&'static [u8]),
    /// `PATH_OUTSIDE_WORKSPACE`.
    Outside,
    /// `INVALID_PATH`.
    Invalid,
}

/// Resolves `input` against `root`, where `{tmp}` in `input` stands for the fixture's
/// temporary directory, and compares with `expect`. Returns the mismatch as text, so
/// a table reports every failing row at once.
fn check(tmp: &Path, root: &Path, input: &[u8], expect: Expect) -> Result<(), String> {
    let input = expand(tmp, input);
    let got = WorkspacePolicy::new().resolve_path(&input, root);
    let actual = match &got {
        Ok(path) => {
            let croot = root.canonicalize().unwrap();
            match path.strip_prefix(&croot) {
                Ok(rel) if path.is_absolute() => {
                    format!("Ok({})", rel.as_os_str().as_bytes().escape_ascii())
                }
                _ => format!("Ok but outside the root: {}", path.display()),
            }
        }
        Err(e) => e.code().to_owned(),
    };
    let expected = match expect {
        Expect::Ok(rel) => format!("Ok({})", rel.escape_ascii()),
        Expect::Outside => codes::PATH_OUTSIDE_WORKSPACE.to_owned(),
        Expect::Invalid => codes::INVALID_PATH.to_owned(),
    };
    if actual == expected {
        Ok(())
    } else {
        Err(format!(
            "`{}`: expected {expected}, got {actual} ({got:?})",
            input.as_os_str().as_bytes().escape_ascii()
        ))
    }
}

/// Replaces `{tmp}` with the fixture directory, byte-wise (inputs may not be UTF-8).
fn expand(tmp: &Path, input: &[u8]) -> PathBuf {
    let marker = b"{tmp}";
    let mut out = Vec::new();
    let mut rest = input;
    while let Some(at) = rest.windows(marker.len()).position(|w| w == marker) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(tmp.as_os_str().as_bytes());
        rest = &rest[at + marker.len()..];
    }
    out.extend_from_slice(rest);
    PathBuf::from(OsStr::from_bytes(&out))
}

/// Runs a table and reports every mismatch together.
fn check_table(tmp: &Path, root: &Path, table: &[(&[u8], Expect)]) {
    let failures: Vec<String> = table
        .iter()
        .filter_map(|(input, expect)| check(tmp, root, input, *expect).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        table.len(),
        failures.join("\n")
    );
}

/// Escape attempts and legitimate paths against the fixture's `ws` root.
const TABLE: &[(&[u8], Expect)] = &[
    // Plain and degenerate spellings.
    (b"file.txt", Expect::Ok(b"file.txt")),
    (b"", Expect::Invalid),
    (b".", Expect::Ok(b"")),
    (b"./", Expect::Ok(b"")),
    (b"./././.", Expect::Ok(b"")),
    (b"dir/", Expect::Ok(b"dir")),
    (b"dir//nested.txt", Expect::Ok(b"dir/nested.txt")),
    (b"dir/./nested.txt", Expect::Ok(b"dir/nested.txt")),
    (b"dir/../file.txt", Expect::Ok(b"file.txt")),
    (b"dir/sub/../../file.txt", Expect::Ok(b"file.txt")),
    (b"a\0b", Expect::Invalid),
    (b"dir/\0", Expect::Invalid),
    (b"file.txt/x", Expect::Invalid),
    (b"file.txt/..", Expect::Invalid),
    // Climbing out with `..`.
    (b"..", Expect::Outside),
    (b"../", Expect::Outside),
    (b"a/../../x", Expect::Outside),
    (b"dir/sub/../../..", Expect::Outside),
    (b"../outside/secret.txt", Expect::Outside),
    // Only the landing place counts, not the way there.
    (b"../ws/file.txt", Expect::Ok(b"file.txt")),
    (b"../ws_link/file.txt", Expect::Ok(b"file.txt")),
    // Absolute paths.
    (b"{tmp}/ws", Expect::Ok(b"")),
    (b"{tmp}/ws/", Expect::Ok(b"")),
    (b"{tmp}/ws/file.txt", Expect::Ok(b"file.txt")),
    (
        b"{tmp}/ws_link/dir/nested.txt",
        Expect::Ok(b"dir/nested.txt"),
    ),
    (b"{tmp}/outside/secret.txt", Expect::Outside),
    (b"{tmp}/ws/../outside", Expect::Outside),
    (b"{tmp}/wsx", Expect::Outside),
    (b"/etc/passwd", Expect::Outside),
    (b"/", Expect::Outside),
    (b"////", Expect::Outside),
    // Symlinks that stay inside.
    (b"link_dir/nested.txt", Expect::Ok(b"dir/nested.txt")),
    (b"link_dir/../file.txt", Expect::Ok(b"file.txt")),
    (b"link_abs_in/nested.txt", Expect::Ok(b"dir/nested.txt")),
    (b"chain_in1/nested.txt", Expect::Ok(b"dir/nested.txt")),
    (b"dir/sub/link_in/nested.txt", Expect::Ok(b"dir/nested.txt")),
    (b"dir/up/file.txt", Expect::Ok(b"file.txt")),
    (b"link_file", Expect::Ok(b"file.txt")),
    (b"link_file/x", Expect::Invalid),
    // Symlinks that escape.
    (b"link_parent", Expect::Outside),
    (b"link_parent/outside/secret.txt", Expect::Outside),
    (b"link_parent/ws/file.txt", Expect::Ok(b"file.txt")),
    (b"link_outside_dir", Expect::Outside),
    (b"link_outside_dir/secret.txt", Expect::Outside),
    (b"link_outside_dir/../ws/file.txt", Expect::Ok(b"file.txt")),
    (b"link_etc", Expect::Outside),
    (b"link_etc/passwd", Expect::Outside),
    (b"chain1", Expect::Outside),
    (b"chain1/secret.txt", Expect::Outside),
    // `..` after a symlink is the parent of the target, not of the link: `dir/up` is
    // the root, so `dir/up/..` is the root's parent (lexically it would be `dir`).
    (b"dir/up/../file.txt", Expect::Outside),
    (b"dir/up/..", Expect::Outside),
    // Write targets that do not exist yet.
    (b"new.txt", Expect::Ok(b"new.txt")),
    (b"new/deeper/file.txt", Expect::Ok(b"new/deeper/file.txt")),
    (b"new/deeper/", Expect::Ok(b"new/deeper")),
    (b"new/../file.txt", Expect::Ok(b"file.txt")),
    (b"new/../../x", Expect::Outside),
    (b"new/deeper/../../../x", Expect::Outside),
    (b"link_dir/new/file.txt", Expect::Ok(b"dir/new/file.txt")),
    (b"link_outside_dir/new/file.txt", Expect::Outside),
    (b"link_parent/new.txt", Expect::Outside),
    // Popping a missing name lands back in real directories, where links count again.
    (b"new/../link_etc/x", Expect::Outside),
    (b"new/../link_dir/x", Expect::Ok(b"dir/x")),
    // Dangling symlinks: a later write would follow them.
    (b"dangling_in", Expect::Ok(b"dir/new.txt")),
    (b"dangling_out", Expect::Outside),
    (b"dangling_abs_out", Expect::Outside),
    (b"dangling_chain", Expect::Outside),
    (b"dir/dangling_rel_out", Expect::Outside),
    (b"loop_a", Expect::Invalid),
    (b"loop_a/x", Expect::Invalid),
    // Names that are not UTF-8 keep their exact bytes.
    (b"caf\xe9.txt", Expect::Ok(b"caf\xe9.txt")),
    (b"new_\xff\xfe/x", Expect::Ok(b"new_\xff\xfe/x")),
    (b"bad\xff_link", Expect::Outside),
    (b"bad\xff_link/new.txt", Expect::Outside),
];

#[test]
fn resolve_path_table() {
    let fx = workspace_fixture();
    assert!(TABLE.len() >= 30, "the brief asks for at least 30 rows");
    check_table(&fx.tmp, &fx.root, TABLE);
}

#[test]
fn symlinked_workspace_root_uses_its_canonical_form() {
    let fx = workspace_fixture();
    let root = fx.tmp.join("ws_link");
    check_table(
        &fx.tmp,
        &root,
        &[
            (b"file.txt", Expect::Ok(b"file.txt")),
            (b".", Expect::Ok(b"")),
            (b"{tmp}/ws_link", Expect::Ok(b"")),
            (b"{tmp}/ws_link/file.txt", Expect::Ok(b"file.txt")),
            (b"{tmp}/ws/file.txt", Expect::Ok(b"file.txt")),
            (b"..", Expect::Outside),
            (b"../outside/secret.txt", Expect::Outside),
            (b"link_parent", Expect::Outside),
        ],
    );
    // The answer is spelled with the canonical root, not through the link.
    let got = WorkspacePolicy::new()
        .resolve_path("file.txt", &root)
        .unwrap();
    assert_eq!(got, fx.tmp.canonicalize().unwrap().join("ws/file.txt"));
}

#[test]
fn unusable_workspace_roots_are_invalid_path() {
    let fx = workspace_fixture();
    let table: &[(&str, PathBuf)] = &[
        ("missing root", fx.tmp.join("nope")),
        ("root is a file", fx.root.join("file.txt")),
        ("root is a dangling symlink", fx.root.join("dangling_out")),
        ("root is empty", PathBuf::new()),
    ];
    for (label, root) in table {
        match WorkspacePolicy::new().resolve_path("file.txt", root) {
            Err(err) => {
                assert_eq!(err.code(), codes::INVALID_PATH, "{label}: {err}");
                assert_eq!(err.path(), root.as_path(), "{label}: names the root");
            }
            Ok(path) => panic!("{label}: resolved to {}", path.display()),
        }
    }
}

#[test]
fn errors_are_one_line_with_the_path_in_details() {
    let fx = workspace_fixture();
    let policy = WorkspacePolicy::new();
    let tmp = fx.tmp.canonicalize().unwrap();
    let tmp = tmp.to_string_lossy();
    let mut rendered = Vec::new();
    for input in ["../outside", "a\0b", "loop_a", ""] {
        let err = match policy.resolve_path(input, &fx.root) {
            Err(err) => err,
            Ok(path) => panic!("{input:?} resolved to {}", path.display()),
        };
        if input == "../outside" {
            assert!(matches!(err, PathError::OutsideWorkspace { .. }));
        }
        let info = err.to_info();
        assert_eq!(info.code, err.code());
        assert_eq!(info.details["path"], input);
        assert!(!info.message.contains('\n'), "one line: {}", info.message);
        rendered.push(info.to_string().replace(tmp.as_ref(), "[tmp]"));
    }
    insta::assert_snapshot!("path_errors", rendered.join("\n"));
}

/// A file name near the 255-byte limit in four-byte characters is written atomically:
/// the temporary name keeps at most 64 bytes of it, not 64 characters.
#[test]
fn atomic_writes_of_long_non_latin_names_fit_the_name_limit() {
    let ws = tempfile::tempdir().unwrap();
    let name = "😀".repeat(63); // 252 bytes
    let target = ws.path().join(&name);
    let exists = || iris_tools_core::ToolErrorInfo::new("EXISTS", "taken");
    iris_fs::atomic::write_atomic(
        &target,
        &name,
        b"first",
        iris_fs::atomic::WriteMode::CreateNew { exists: &exists },
    )
    .unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), b"first");
    let root = iris_fs::workspace::WorkspaceDir::open_root(ws.path()).unwrap();
    iris_fs::atomic::write_atomic_in(
        &root,
        std::ffi::OsStr::new(&name),
        &name,
        b"second",
        iris_fs::atomic::WriteMode::Replace { verify: &|| Ok(()) },
    )
    .unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), b"second");
    // No temporary file is left behind.
    assert_eq!(std::fs::read_dir(ws.path()).unwrap().count(), 1);
}
