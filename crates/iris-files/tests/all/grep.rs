//! `grep_search`: regex dialect, order, limits, clipping and skipped files.

use iris_files::{FileToolsConfig, codes};
use serde_json::{Value, json};

/// The rows and exact total expected, or an error code.
type Expect = Result<(&'static [&'static str], u64), &'static str>;

use crate::support::{Harness, code, ignore_tree};

fn fixture() -> Harness {
    let h = Harness::new();
    ignore_tree(&h);
    h.put("bin.dat", b"hello\0binary");
    h.put(
        "long.txt",
        format!("{}NEEDLE{}\n", "x".repeat(1000), "y".repeat(1000)),
    );
    h
}

/// Checks the matches as `path:line:text` rows (or the error code) and the total.
async fn check(h: &Harness, input: Value, expect: Expect) {
    let r = h.call("grep_search", input.clone()).await;
    match expect {
        Ok((rows, total)) => {
            assert_eq!(code(&r), "OK", "{input}: {}", r.model_content());
            let got: Vec<String> = r.data["matches"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    format!(
                        "{}:{}:{}",
                        m["path"].as_str().unwrap(),
                        m["line"],
                        m["text"].as_str().unwrap()
                    )
                })
                .collect();
            assert_eq!(got, rows, "{input}");
            assert_eq!(r.data["total_matches"], json!(total), "{input}");
        }
        Err(expected) => {
            assert_eq!(code(&r), expected, "{input}");
            assert!(!r.error_info().unwrap().message.contains('\n'));
        }
    }
}

#[tokio::test]
async fn grep_table() {
    let h = fixture();
    let hello: &[&str] = &[
        "keep.log:1:kept hello",
        "src/lib.rs:4:// hello again",
        "src/main.rs:2:    println!(\"hello\");",
    ];
    let cases: Vec<(Value, Expect)> = vec![
        (json!({"pattern": "hello"}), Ok((hello, 3))),
        (
            json!({"pattern": "(?i)hello"}),
            Ok((
                &[
                    "README.md:1:# Hello",
                    "keep.log:1:kept hello",
                    "src/lib.rs:4:// hello again",
                    "src/main.rs:2:    println!(\"hello\");",
                ],
                4,
            )),
        ),
        (
            json!({"pattern": r"fn \w+\(", "path": "src"}),
            Ok((
                &[
                    "src/lib.rs:1:pub fn add(a: i32) -> i32 {",
                    "src/main.rs:1:fn main() {",
                    "src/nested/deep.rs:1:fn deep() {}",
                ],
                3,
            )),
        ),
        (
            json!({"pattern": r"^\}$", "path": "src/main.rs"}),
            Ok((&["src/main.rs:3:}"], 1)),
        ),
        // An explicitly named ignored file is searched.
        (
            json!({"pattern": "hello", "path": "secret.txt"}),
            Ok((&["secret.txt:1:hello secret"], 1)),
        ),
        (
            json!({"pattern": "hello", "max_results": 1}),
            Ok((&hello[..1], 3)),
        ),
        (json!({"pattern": "hello", "max_results": 0}), Ok((&[], 3))),
        (json!({"pattern": "no such text"}), Ok((&[], 0))),
        (json!({"pattern": "("}), Err(codes::INVALID_REGEX)),
        (json!({"pattern": "(?<=a)b"}), Err(codes::INVALID_REGEX)),
        (
            json!({"pattern": "x", "path": "missing"}),
            Err(codes::FILE_NOT_FOUND),
        ),
    ];
    for (input, expect) in cases {
        check(&h, input, expect).await;
    }
}

#[tokio::test]
async fn texts_for_the_model() {
    let h = fixture();
    for (input, text) in [
        (
            json!({"pattern": "hello", "max_results": 1}),
            "keep.log:1:kept hello\n[1 of 3 matching lines shown (3 files); narrow the pattern or path to see the rest.]",
        ),
        (
            json!({"pattern": "hello", "max_results": 0}),
            "3 matching lines in 3 files under `.`.",
        ),
        (
            json!({"pattern": "zzz", "path": "docs"}),
            "No matches for `zzz` under `docs` (1 files searched).",
        ),
    ] {
        assert_eq!(h.call("grep_search", input).await.model_content(), text);
    }
}

/// Long lines are clipped around the match, never split inside a character.
#[tokio::test]
async fn long_lines_are_clipped_around_the_match() {
    let h = fixture();
    let r = h.call("grep_search", json!({"pattern": "NEEDLE"})).await;
    let text = r.data["matches"][0]["text"].as_str().unwrap();
    assert_eq!(text.chars().count(), 300 + 2);
    assert!(text.starts_with('…') && text.ends_with('…'));
    assert_eq!(text.find("NEEDLE").unwrap(), '…'.len_utf8() + 100);

    let h = Harness::with_config(FileToolsConfig::default().with_grep_line_chars(20));
    h.put(
        "wide.txt",
        format!("{}中NEEDLE中{}\n", "é".repeat(50), "😀".repeat(50)),
    );
    let r = h.call("grep_search", json!({"pattern": "NEEDLE"})).await;
    assert_eq!(
        r.data["matches"][0]["text"],
        "…ééééé中NEEDLE中😀😀😀😀😀😀😀…"
    );
}

/// Ignored, `.git`, `.iris` and binary files are never searched by default.
#[tokio::test]
async fn skipped_files() {
    let h = fixture();
    let r = h.call("grep_search", json!({"pattern": "hello"})).await;
    let paths: Vec<&str> = r.data["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap())
        .collect();
    for hidden in [
        "a.log",
        "build/out.o",
        "excluded.md",
        "secret.txt",
        "src/nested/gen.rs",
        ".git/config",
        ".iris/tool-results/s/x.txt",
        "bin.dat",
    ] {
        assert!(!paths.contains(&hidden), "{hidden} was searched");
    }
    // Hidden files are searched.
    let env = h.call("grep_search", json!({"pattern": "TOKEN"})).await;
    assert_eq!(env.data["matches"][0]["path"], ".env");
}

/// `max_results` at its upper bound: the first 1000 matches in (path, line) order.
#[tokio::test]
async fn max_results_upper_bound() {
    let h = Harness::new();
    let body: String = (0..300).map(|i| format!("hit {i}\n")).collect();
    for f in ["a.txt", "b.txt", "c.txt", "d.txt"] {
        h.put(f, &body);
    }
    let r = h
        .call(
            "grep_search",
            json!({"pattern": "hit", "max_results": 1000}),
        )
        .await;
    let matches = r.data["matches"].as_array().unwrap();
    assert_eq!(matches.len(), 1000);
    assert_eq!(r.data["total_matches"], 1200);
    assert_eq!(r.data["truncated"], true);
    assert_eq!(matches[999]["path"], "d.txt");
    assert_eq!(matches[999]["line"], 100);
    assert_eq!(matches[300]["path"], "b.txt");
    assert_eq!(matches[300]["line"], 1);
}
