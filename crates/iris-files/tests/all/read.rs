//! `read_file`: paging, notices, errors and read observations.

use iris_files::{FileToolsConfig, codes};
use iris_tools_core::codes::INVALID_PATH;
use serde_json::{Value, json};

use crate::support::{Harness, code, first_text};

/// What one read should produce.
struct Expect {
    code: &'static str,
    body: &'static str,
    notice: Option<&'static str>,
    next: (Value, Value),
}

const fn ok(body: &'static str) -> Expect {
    Expect {
        code: "OK",
        body,
        notice: None,
        next: (Value::Null, Value::Null),
    }
}

fn fixture() -> Harness {
    let h = Harness::new();
    h.put("lines.txt", "one\ntwo\nthree\n");
    h.put("crlf.txt", "a\r\nb\r\n");
    h.put("no_eol.txt", "x\ny");
    h.put("empty.txt", "");
    h.put("uni.txt", "héllo wörld 中文 😀\n");
    h.put("nul.bin", b"abc\0def");
    h.put("latin1.txt", b"caf\xe9\n");
    h.put("dir/inner.txt", "inner\n");
    h
}

async fn check(h: &Harness, input: Value, expect: Expect) {
    let result = h.call("read_file", input.clone()).await;
    assert_eq!(
        code(&result),
        expect.code,
        "{input}: {}",
        result.model_content()
    );
    if expect.code != "OK" {
        let message = &result.error_info().unwrap().message;
        assert!(!message.is_empty() && !message.contains('\n'), "{message}");
        return;
    }
    let has_body = result.data["chars"].as_u64().unwrap() > 0;
    assert_eq!(
        if has_body { first_text(&result) } else { "" },
        expect.body,
        "{input}"
    );
    let notice = result
        .content
        .get(usize::from(has_body))
        .and_then(|b| b.as_text());
    assert_eq!(notice, expect.notice, "{input}");
    assert_eq!(
        (
            result.data["next_offset"].clone(),
            result.data["next_column"].clone()
        ),
        expect.next,
        "{input}"
    );
}

#[tokio::test]
async fn read_table() {
    let h = fixture();
    let cases = [
        (json!({"file_path": "lines.txt"}), ok("one\ntwo\nthree\n")),
        (
            json!({"file_path": "./dir/../lines.txt"}),
            ok("one\ntwo\nthree\n"),
        ),
        (
            json!({"file_path": "lines.txt", "offset": 1, "limit": 1}),
            Expect {
                notice: Some("[Showing lines 2-2 of 3; continue with offset=2.]"),
                next: (json!(2), json!(0)),
                ..ok("two\n")
            },
        ),
        (
            json!({"file_path": "lines.txt", "with_line_numbers": true}),
            ok("     1\tone\n     2\ttwo\n     3\tthree\n"),
        ),
        (
            json!({"file_path": "lines.txt", "offset": 2, "with_line_numbers": true}),
            ok("     3\tthree\n"),
        ),
        (
            json!({"file_path": "lines.txt", "offset": 3}),
            Expect {
                notice: Some("[End of file: it has 3 lines.]"),
                ..ok("")
            },
        ),
        (
            json!({"file_path": "lines.txt", "offset": 4}),
            Expect {
                code: codes::READ_OUT_OF_RANGE,
                ..ok("")
            },
        ),
        (
            json!({"file_path": "lines.txt", "column": 2}),
            ok("e\ntwo\nthree\n"),
        ),
        (
            json!({"file_path": "lines.txt", "column": 4}),
            Expect {
                code: codes::READ_OUT_OF_RANGE,
                ..ok("")
            },
        ),
        (
            json!({"file_path": "lines.txt", "limit": 0}),
            Expect {
                notice: Some("[No lines requested; the file has 3 lines. Read from offset=0.]"),
                next: (json!(0), json!(0)),
                ..ok("")
            },
        ),
        (
            json!({"file_path": "lines.txt", "limit": 1000}),
            ok("one\ntwo\nthree\n"),
        ),
        (json!({"file_path": "crlf.txt"}), ok("a\r\nb\r\n")),
        (json!({"file_path": "no_eol.txt", "offset": 1}), ok("y")),
        (
            json!({"file_path": "empty.txt"}),
            Expect {
                notice: Some("[The file is empty.]"),
                ..ok("")
            },
        ),
        (
            json!({"file_path": "uni.txt", "column": 12}),
            ok("中文 😀\n"),
        ),
        (
            json!({"file_path": "missing.txt"}),
            Expect {
                code: codes::FILE_NOT_FOUND,
                ..ok("")
            },
        ),
        (
            json!({"file_path": "lines.txt/x"}),
            Expect {
                code: codes::FILE_NOT_FOUND,
                ..ok("")
            },
        ),
        (
            json!({"file_path": "dir"}),
            Expect {
                code: codes::NOT_A_FILE,
                ..ok("")
            },
        ),
        (
            json!({"file_path": "nul.bin"}),
            Expect {
                code: codes::BINARY_FILE,
                ..ok("")
            },
        ),
        (
            json!({"file_path": "latin1.txt"}),
            Expect {
                code: codes::BINARY_FILE,
                ..ok("")
            },
        ),
        (
            json!({"file_path": "a\u{0}b"}),
            Expect {
                code: INVALID_PATH,
                ..ok("")
            },
        ),
    ];
    for (input, expect) in cases {
        check(&h, input, expect).await;
    }
}

/// `limit` bounds in behaviour: 1000 lines at most, and the default is 1000.
#[tokio::test]
async fn limit_defaults_to_1000_lines() {
    let h = Harness::new();
    let text: String = (0..1500).map(|i| format!("{i}\n")).collect();
    h.put("big.txt", &text);
    for input in [
        json!({"file_path": "big.txt"}),
        json!({"file_path": "big.txt", "limit": null}),
        json!({"file_path": "big.txt", "limit": 1000}),
    ] {
        let r = h.call("read_file", input).await;
        assert_eq!(r.data["lines"], 1000);
        assert_eq!(r.data["next_offset"], 1000);
        assert_eq!(r.data["total_lines"], 1500);
        assert!(first_text(&r).ends_with("999\n"));
    }
    let rest = h
        .call("read_file", json!({"file_path": "big.txt", "offset": 1000}))
        .await;
    assert_eq!(rest.data["lines"], 500);
    assert_eq!(rest.data["next_offset"], Value::Null);
}

/// The budget cuts inside a line and says where to continue.
#[tokio::test]
async fn budget_cuts_long_lines_with_next_column() {
    let h = Harness::with_config(FileToolsConfig::default().with_read_char_budget(64));
    let line = "é".repeat(150);
    h.put("long.txt", format!("{line}\nshort\n"));
    let first = h.call("read_file", json!({"file_path": "long.txt"})).await;
    assert_eq!(first_text(&first), "é".repeat(64));
    assert_eq!(first.data["truncated"], true);
    assert_eq!(
        (
            first.data["next_offset"].clone(),
            first.data["next_column"].clone()
        ),
        (json!(0), json!(64))
    );
    assert_eq!(
        first.content[1].as_text(),
        Some(
            "[Stopped at the 64-character budget inside line 1; continue with offset=0, column=64.]"
        )
    );
    // With line numbers the prefix counts against the budget too.
    let numbered = h
        .call(
            "read_file",
            json!({"file_path": "long.txt", "column": 128, "with_line_numbers": true}),
        )
        .await;
    assert_eq!(
        first_text(&numbered),
        format!("     1\t{}\n     2\tshort\n", "é".repeat(22))
    );
    assert_eq!(numbered.data["next_offset"], Value::Null);
}

/// A single 10 MB line is read in pieces that reassemble exactly.
#[tokio::test]
async fn ten_megabyte_line_in_pieces() {
    let budget = 1_000_000;
    let h = Harness::with_config(FileToolsConfig::default().with_read_char_budget(budget));
    let line = "aé中😀".repeat(1_000_000); // 10 bytes per repeat: 10 MB, 4 M characters
    h.put("one-line.txt", &line);
    let mut out = String::with_capacity(line.len());
    let (mut offset, mut column) = (0u64, 0u64);
    let mut pages = 0;
    loop {
        let r = h
            .call(
                "read_file",
                json!({"file_path": "one-line.txt", "offset": offset, "column": column}),
            )
            .await;
        assert_eq!(code(&r), "OK");
        let piece = first_text(&r);
        assert!(piece.chars().count() <= budget);
        out.push_str(piece);
        pages += 1;
        match (
            r.data["next_offset"].as_u64(),
            r.data["next_column"].as_u64(),
        ) {
            (Some(o), Some(c)) => (offset, column) = (o, c),
            _ => break,
        }
    }
    assert_eq!(pages, 4);
    assert!(out == line, "reassembled line differs");
}

#[tokio::test]
async fn oversized_text_is_refused() {
    let h = Harness::with_config(FileToolsConfig::default().with_max_text_bytes(100));
    h.put("small.txt", "a".repeat(100));
    h.put("big.txt", "a".repeat(101));
    let ok = h.call("read_file", json!({"file_path": "small.txt"})).await;
    assert_eq!(code(&ok), "OK");
    let big = h.call("read_file", json!({"file_path": "big.txt"})).await;
    assert_eq!(code(&big), codes::FILE_TOO_LARGE);
    assert_eq!(big.error_info().unwrap().details["size_bytes"], 101);
}

/// Successful reads record an observation; failed ones (other than binary) do not.
#[tokio::test]
async fn reads_record_observations() {
    let h = fixture();
    let state = h.service.session_state("s-1");
    for (file, recorded) in [
        ("missing.txt", false),
        ("dir", false),
        ("lines.txt", true),
        ("nul.bin", true),
    ] {
        h.call("read_file", json!({"file_path": file})).await;
        let canonical = h.path(file).canonicalize().ok();
        let seen = canonical.is_some_and(|p| state.get(&p).is_some());
        assert_eq!(seen, recorded, "{file}");
    }
    // Other sessions see nothing.
    assert!(h.service.session_state("s-2").is_empty());
}

/// A long result saved by the artifact store can be paged back with read_file.
#[tokio::test]
async fn saved_tool_results_can_be_paged() {
    let h = Harness::with_config(FileToolsConfig::default().with_read_char_budget(1000));
    let body: String = (0..500).map(|i| format!("row {i}\n")).collect();
    let store = iris_executor::ToolArtifactStore::for_session(&h.ws, "s-1");
    let saved = store
        .persist_if_large(
            "call_9",
            iris_tools_core::ToolOutput::text(body.clone()),
            100,
        )
        .unwrap();
    let path = saved.artifact.unwrap().text_path.unwrap();
    let rel = path
        .strip_prefix(&h.ws)
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let mut out = String::new();
    let mut next = Some((0, 0));
    while let Some((offset, column)) = next {
        let r = h
            .call(
                "read_file",
                json!({"file_path": rel, "offset": offset, "column": column}),
            )
            .await;
        assert_eq!(code(&r), "OK");
        out.push_str(first_text(&r));
        next = r.data["next_offset"]
            .as_u64()
            .zip(r.data["next_column"].as_u64());
    }
    assert!(out == body, "the saved body reassembles");
}

/// A call whose cancellation was already requested does no work.
#[tokio::test]
async fn cancelled_calls_stop() {
    let h = fixture();
    let signal = iris_tools_core::CancellationSignal::new();
    signal.cancel();
    let ctx = h.ctx.clone().cancellation(signal);
    for (tool, input) in [
        ("read_file", json!({"file_path": "lines.txt"})),
        ("list_files", json!({})),
        ("grep_search", json!({"pattern": "x"})),
        (
            "write_file",
            json!({"file_path": "new.txt", "content": "x"}),
        ),
    ] {
        let r = h.call_in(&ctx, tool, input).await;
        assert_eq!(code(&r), iris_tools_core::codes::CANCELLED, "{tool}");
    }
    assert!(!h.path("new.txt").exists());
}
