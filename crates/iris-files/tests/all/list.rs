//! `list_files`: recursion, order, globs, limits and ignore rules.

use iris_files::{FileToolsConfig, codes};
use serde_json::{Value, json};

/// The rows and exact total expected, or an error code.
type Expect = Result<(&'static [&'static str], u64), &'static str>;

use crate::support::{Harness, VISIBLE, code, ignore_tree};

/// Checks the listed files (or the error code) and the exact total.
async fn check(h: &Harness, input: Value, expect: Expect) {
    let r = h.call("list_files", input.clone()).await;
    match expect {
        Ok((files, total)) => {
            assert_eq!(code(&r), "OK", "{input}: {}", r.model_content());
            assert_eq!(r.data["files"], json!(files), "{input}");
            assert_eq!(r.data["total"], json!(total), "{input}");
            assert_eq!(
                r.data["truncated"],
                json!((files.len() as u64) < total),
                "{input}"
            );
        }
        Err(expected) => assert_eq!(code(&r), expected, "{input}"),
    }
}

#[tokio::test]
async fn list_table() {
    let h = Harness::new();
    ignore_tree(&h);
    let rs: &[&str] = &["src/lib.rs", "src/main.rs", "src/nested/deep.rs"];
    let cases: Vec<(Value, Expect)> = vec![
        (json!({}), Ok((&VISIBLE, 10))),
        (json!({"path": "."}), Ok((&VISIBLE, 10))),
        (json!({"path": "./src/.."}), Ok((&VISIBLE, 10))),
        (json!({"pattern": "*.rs"}), Ok((rs, 3))),
        (json!({"pattern": "src/*.rs"}), Ok((&rs[..2], 2))),
        (json!({"pattern": "src/**/*.rs"}), Ok((rs, 3))),
        (
            json!({"pattern": "*.{md,log}"}),
            Ok((&["README.md", "docs/guide.md", "keep.log"], 3)),
        ),
        (json!({"path": "src", "pattern": "*.rs"}), Ok((rs, 3))),
        (
            json!({"path": "src", "pattern": "nested/*.rs"}),
            Ok((&["src/nested/deep.rs"], 1)),
        ),
        (json!({"pattern": "*.py"}), Ok((&[], 0))),
        (json!({"max_results": 2}), Ok((&VISIBLE[..2], 10))),
        (json!({"max_results": 0}), Ok((&[], 10))),
        // Explicit paths into ignored directories work, as in ripgrep.
        (json!({"path": "build"}), Ok((&["build/out.o"], 1))),
        (json!({"path": "README.md"}), Err(codes::NOT_A_DIRECTORY)),
        (json!({"path": "nope"}), Err(codes::FILE_NOT_FOUND)),
        (json!({"pattern": "["}), Err(codes::INVALID_GLOB)),
    ];
    for (input, expect) in cases {
        check(&h, input, expect).await;
    }
}

#[tokio::test]
async fn texts_for_the_model() {
    let h = Harness::new();
    ignore_tree(&h);
    for (input, text) in [
        (json!({"path": "docs"}), "docs/guide.md".to_owned()),
        (
            json!({"max_results": 2}),
            ".env\n.gitignore\n[2 of 10 files shown; narrow the pattern or path to see the rest.]"
                .to_owned(),
        ),
        (json!({"max_results": 0}), "10 files under `.`.".to_owned()),
        (
            json!({"pattern": "*.py"}),
            "No files matching `*.py` under `.`.".to_owned(),
        ),
    ] {
        assert_eq!(h.call("list_files", input).await.model_content(), text);
    }
}

#[tokio::test]
async fn ignore_rules_can_be_turned_off_but_git_and_iris_stay_skipped() {
    let h = Harness::with_config(FileToolsConfig::default().with_respect_ignore_files(false));
    ignore_tree(&h);
    let r = h.call("list_files", json!({})).await;
    let mut all: Vec<&str> = VISIBLE.to_vec();
    all.extend([
        "a.log",
        "build/out.o",
        "excluded.md",
        "secret.txt",
        "src/nested/gen.rs",
    ]);
    all.sort_unstable();
    assert_eq!(r.data["files"], json!(all));
}

/// `max_results` at its upper bound on a tree with more files: the first 1000 in
/// order, with the exact total.
#[tokio::test]
async fn max_results_upper_bound() {
    let h = Harness::new();
    for i in 0..1200 {
        h.put(&format!("d{}/f{i:04}.txt", i % 7), "x");
    }
    let r = h.call("list_files", json!({"max_results": 1000})).await;
    let files = r.data["files"].as_array().unwrap();
    assert_eq!(files.len(), 1000);
    assert_eq!(r.data["total"], 1200);
    let mut expected: Vec<String> = (0..1200)
        .map(|i| format!("d{}/f{i:04}.txt", i % 7))
        .collect();
    expected.sort();
    expected.truncate(1000);
    assert_eq!(r.data["files"], json!(expected));
}

/// Symlinks are not followed, so nothing outside the workspace is listed.
#[cfg(unix)]
#[tokio::test]
async fn symlinks_are_not_followed() {
    let h = Harness::new();
    h.put("inside.txt", "x");
    crate::support::put(&h.outside.join("secret.txt"), "s");
    std::os::unix::fs::symlink(&h.outside, h.path("out-dir")).unwrap();
    std::os::unix::fs::symlink(h.outside.join("secret.txt"), h.path("out-file")).unwrap();
    let r = h.call("list_files", json!({})).await;
    assert_eq!(r.data["files"], json!(["inside.txt"]));
}

/// Names that are not UTF-8 are listed lossily instead of failing the call.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn non_utf8_names_do_not_break_listing() {
    use std::os::unix::ffi::OsStrExt;
    let h = Harness::new();
    let name = std::ffi::OsStr::from_bytes(b"bad-\xff.txt");
    std::fs::write(h.ws.join(name), "x").unwrap();
    h.put("good.txt", "y");
    let r = h.call("list_files", json!({})).await;
    assert_eq!(r.data["files"], json!(["bad-\u{fffd}.txt", "good.txt"]));
}

/// The host's own skip list and line bound reach both walkers: `with_skip_dirs`
/// replaces the default names (`.git`, `.iris`), `with_grep_max_line_bytes` sets the
/// longest line `grep_search` hands to the regex engine.
#[tokio::test]
async fn configured_skip_dirs_and_line_bound_apply() {
    let config = FileToolsConfig::default()
        .with_skip_dirs(["vendor"])
        .with_grep_max_line_bytes(4096);
    let h = Harness::with_config(config);
    h.put("vendor/lib.rs", "hello vendored\n");
    h.put(".iris/notes.txt", "hello state\n");
    h.put("src/a.rs", "hello\n");
    h.put("src/long.rs", format!("hello {}\n", "x".repeat(5000)));
    let listed = h.call("list_files", json!({})).await;
    assert_eq!(
        listed.data["files"],
        json!([".iris/notes.txt", "src/a.rs", "src/long.rs"])
    );
    let found = h.call("grep_search", json!({"pattern": "hello"})).await;
    assert_eq!(code(&found), "OK", "{}", found.model_content());
    let paths: Vec<&str> = found.data["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, [".iris/notes.txt", "src/a.rs"]);
    assert_eq!(found.data["skipped_long_lines"], 1);
}
