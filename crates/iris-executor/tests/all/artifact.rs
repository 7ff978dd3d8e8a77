//! Tests for the `artifact` area: previews at their exact boundaries and around
//! multi-byte characters, `persist_if_large` (unchanged vs saved, reference line, what a
//! new result keeps), atomic writes, collision-free names, `persist_json` and
//! `persist_file`.
// Tests report failures by panicking, so unwrap/expect are the clearest assertions here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use iris_executor::artifact::{
    DEFAULT_SESSION_DIR, MAX_FILE_STEM_CHARS, TOOL_RESULTS_DIR, mime_type_for_path, preview,
    sanitize_file_stem,
};
use iris_executor::{Error, ToolArtifactStore};
use iris_test_support::workspace::Workspace;
use iris_tools_core::{ContentBlock, PreviewMode, ToolArtifact, ToolErrorInfo, ToolOutput, codes};
use serde_json::json;

use PreviewMode::{Head, HeadTail};

/// Checks one preview against its exact expected text.
fn check_preview(text: &str, chars: usize, mode: PreviewMode, expect: &str) {
    assert_eq!(
        preview(text, chars, mode),
        expect,
        "preview({text:?}, {chars}, {mode:?})"
    );
}

#[test]
fn preview_boundaries() {
    let cases: &[(&str, usize, PreviewMode, &str)] = &[
        // Fits: returned unchanged, whatever the mode.
        ("", 0, Head, ""),
        ("", 0, HeadTail, ""),
        ("abc", 3, Head, "abc"),
        ("abc", 3, HeadTail, "abc"),
        ("abc", 100, HeadTail, "abc"),
        // One over: cut.
        ("abcd", 3, Head, "abc"),
        ("abc", 0, Head, ""),
        // Head+tail: ⌈n/2⌉ first, ⌊n/2⌋ last, one marker line between.
        ("abcdefgh", 3, HeadTail, "ab\n[... 5 chars omitted ...]\nh"),
        ("abcdefgh", 4, HeadTail, "ab\n[... 4 chars omitted ...]\ngh"),
        (
            "abcdefgh",
            7,
            HeadTail,
            "abcd\n[... 1 chars omitted ...]\nfgh",
        ),
        ("abcdefgh", 1, HeadTail, "a\n[... 7 chars omitted ...]"),
        ("abcdefgh", 0, HeadTail, "[... 8 chars omitted ...]"),
        // Newlines at the cut are not doubled.
        (
            "ab\ncdef\ngh",
            6,
            HeadTail,
            "ab\n[... 4 chars omitted ...]\ngh",
        ),
        (
            "ab\ncdef\ngh",
            4,
            HeadTail,
            "ab\n[... 6 chars omitted ...]\ngh",
        ),
    ];
    for (text, n, mode, expect) in cases {
        check_preview(text, *n, *mode, expect);
    }
}

#[test]
fn preview_never_splits_a_character() {
    let family = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}"; // man ZWJ woman ZWJ girl
    let thumbs = "\u{1F44D}\u{1F3FD}"; // thumbs up + medium skin tone
    let flags = "\u{1F1EF}\u{1F1F5}\u{1F1EB}\u{1F1F7}"; // JP FR
    let cases: Vec<(String, usize, PreviewMode, String)> = vec![
        // CJK: three bytes a character, counted as one.
        ("日本語のテキスト".into(), 3, Head, "日本語".into()),
        (
            "日本語のテキスト".into(),
            3,
            HeadTail,
            "日本\n[... 5 chars omitted ...]\nト".into(),
        ),
        (
            "日本語のテキスト".into(),
            8,
            HeadTail,
            "日本語のテキスト".into(),
        ),
        // Emoji: four bytes a character.
        ("😀😁😂🤣".into(), 2, Head, "😀😁".into()),
        (
            "😀😁😂🤣".into(),
            2,
            HeadTail,
            "😀\n[... 2 chars omitted ...]\n🤣".into(),
        ),
        // Combining marks stay with their base: the cut backs off (head) or moves
        // forward (tail) instead of separating them.
        (
            "e\u{301}e\u{301}e\u{301}".into(),
            3,
            Head,
            "e\u{301}".into(),
        ),
        (
            "e\u{301}e\u{301}e\u{301}".into(),
            4,
            Head,
            "e\u{301}e\u{301}".into(),
        ),
        (
            "e\u{301}abce\u{301}".into(),
            4,
            HeadTail,
            "e\u{301}\n[... 3 chars omitted ...]\ne\u{301}".into(),
        ),
        (
            "e\u{301}abce\u{301}".into(),
            2,
            HeadTail,
            "[... 7 chars omitted ...]".into(),
        ),
        // Joiner sequences, skin tones and flags are one visible character each.
        (format!("x{family}"), 3, Head, "x".into()),
        (format!("x{family}"), 6, Head, format!("x{family}")),
        (format!("{thumbs}{thumbs}"), 1, Head, String::new()),
        (format!("{thumbs}{thumbs}"), 3, Head, thumbs.into()),
        (flags.into(), 1, Head, String::new()),
        (flags.into(), 2, Head, "\u{1F1EF}\u{1F1F5}".into()),
        (flags.into(), 3, Head, "\u{1F1EF}\u{1F1F5}".into()),
        // Half a flag on each side: both cuts move outward, so only the marker is left.
        (
            flags.into(),
            2,
            HeadTail,
            "[... 4 chars omitted ...]".into(),
        ),
        (
            flags.into(),
            3,
            HeadTail,
            "\u{1F1EF}\u{1F1F5}\n[... 2 chars omitted ...]".into(),
        ),
        // CRLF is one line break.
        ("ab\r\ncd".into(), 3, Head, "ab".into()),
    ];
    for (text, n, mode, expect) in &cases {
        check_preview(text, *n, *mode, expect);
    }
}

#[test]
fn head_previews_are_prefixes_within_budget() {
    let text = "a\u{301}日本😀\u{1F1EF}\u{1F1F5}x\r\ny\u{1F44D}\u{1F3FD}z";
    let total = text.chars().count();
    for n in 0..=total + 1 {
        let head = preview(text, n, Head);
        assert!(text.starts_with(&head), "n={n}: {head:?} is a prefix");
        assert!(head.chars().count() <= n, "n={n}: {head:?} fits");
        let tail_mode = preview(text, n, HeadTail);
        assert!(
            tail_mode.chars().count() <= n + 40,
            "n={n}: marker is one short line"
        );
    }
}

fn session_store(workspace: &Path, chars: usize, mode: PreviewMode) -> ToolArtifactStore {
    ToolArtifactStore::for_session(workspace, "s-1").with_preview(chars, mode)
}

/// Runs `persist_if_large` and checks every invariant that holds whatever the case:
/// short outputs come back untouched with nothing written; long ones are saved whole
/// and the new output keeps its outcome (flag and error), data, stats, metadata,
/// artifact error, revealed tools and images. Returns the new output's model body.
fn persist_checked(
    store: &ToolArtifactStore,
    call_id: &str,
    result: ToolOutput,
    max: usize,
) -> String {
    let body = result.model_content();
    let out = store
        .persist_if_large(call_id, result.clone(), max)
        .unwrap();
    if body.chars().count() <= max {
        assert_eq!(out, result, "short results are returned unchanged");
        let saved = store.root.join(format!("{call_id}.txt"));
        assert!(!saved.exists(), "nothing saved for a short result");
        return out.model_content();
    }
    let artifact = out.artifact.clone().unwrap();
    let text_path = artifact.text_path.clone().unwrap();
    assert_eq!(
        std::fs::read_to_string(&text_path).unwrap(),
        body,
        "saved whole"
    );
    assert!(text_path.starts_with(&store.root));
    match &result.artifact {
        Some(existing) => {
            assert_eq!(artifact.path, existing.path);
            assert_eq!(artifact.mime_type, existing.mime_type);
            assert_eq!(artifact.size_bytes, existing.size_bytes);
        }
        None => {
            assert_eq!(artifact.path, text_path);
            assert_eq!(artifact.mime_type, "text/plain");
            assert_eq!(artifact.size_bytes, body.len() as u64);
        }
    }
    // (An output has no identity to keep: the executor binds it after this stage.)
    assert_eq!(out.is_error(), result.is_error());
    assert_eq!(out.outcome, result.outcome);
    assert_eq!(out.data, result.data);
    assert_eq!(out.stats, result.stats);
    assert_eq!(out.metadata, result.metadata);
    assert_eq!(out.artifact_error, result.artifact_error);
    assert_eq!(out.revealed_tools, result.revealed_tools);
    assert!(
        out.hook_feedback.is_empty(),
        "feedback lives in the saved body"
    );
    let images = |r: &ToolOutput| -> Vec<ContentBlock> {
        r.content
            .iter()
            .filter(|b| matches!(b, ContentBlock::Image { .. }))
            .cloned()
            .collect()
    };
    assert_eq!(
        out.content[1..],
        images(&result)[..],
        "one text block, then the images"
    );
    assert_eq!(out.content[0].as_text(), Some(artifact.preview.as_str()));
    out.model_content()
}

#[test]
fn persist_if_large_at_the_boundary() {
    let ws = tempfile::tempdir().unwrap();
    let store = session_store(ws.path(), 10, Head);
    let cases: Vec<(&str, String, usize)> = vec![
        ("empty, max 0", String::new(), 0),
        ("len = max", "a".repeat(20), 20),
        ("len = max, multi-byte", "日".repeat(20), 20),
        ("len < max", "a".repeat(5), 20),
    ];
    for (label, text, max) in cases {
        let id = format!("short_{}", label.len());
        let result = ToolOutput::text(text.clone());
        assert_eq!(persist_checked(&store, &id, result, max), text, "{label}");
    }
    // Nothing was written for any of them.
    assert!(!store.root.exists());

    let result = ToolOutput::text("abcdefghijklmnopqrstu");
    insta::assert_snapshot!(
        "len_max_plus_one",
        persist_checked(&store, "call_1", result, 20)
    );
}

#[test]
fn persist_if_large_reference_lines() {
    let ws = tempfile::tempdir().unwrap();
    let lines: String = (0..8).map(|i| format!("line {i}\n")).collect(); // 7 chars a line
    let cases: Vec<(&str, PreviewMode, usize, String)> = vec![
        // 17 chars = two whole lines and 3 chars of the third: resume mid-line.
        ("head_mid_line", Head, 17, lines.clone()),
        // 14 chars = exactly two lines: resume at the start of line 2.
        ("head_line_start", Head, 14, lines.clone()),
        // Head 7 (line 0), tail 7 (line 7): the omitted part is lines 1-6.
        ("head_tail_lines", HeadTail, 14, lines.clone()),
        // Odd budget: head 4, tail 3, on one long line.
        (
            "head_tail_one_line",
            HeadTail,
            7,
            "0123456789abcdefghij".into(),
        ),
        // CJK: sizes in chars vs bytes.
        ("cjk", Head, 4, "日本語のテキストです。".repeat(3)),
    ];
    for (name, mode, chars, body) in cases {
        let store = session_store(ws.path(), chars, mode);
        let result = ToolOutput::text(body);
        insta::assert_snapshot!(name, persist_checked(&store, name, result, 18));
    }
}

#[test]
fn persist_if_large_keeps_what_the_result_carries() {
    let ws = tempfile::tempdir().unwrap();
    let store = session_store(ws.path(), 30, Head);

    // Error + content + feedback: the error line is re-added by the projection, so it
    // counts against the preview and appears exactly once.
    let mut failed = ToolOutput::error(
        ToolErrorInfo::new(codes::TOOL_FAILED, "boom").with_detail("exit_code", 2),
    );
    failed.content = vec![ContentBlock::text("x".repeat(50))];
    failed.hook_feedback = vec!["hint: retry with --verbose".into()];
    failed.data.insert("exit_code".into(), json!(2));
    failed.stats.insert("duration_ms".into(), json!(12));
    failed.metadata.insert("mode".into(), json!("native"));
    let body = persist_checked(&store, "call_err", failed.clone(), 40);
    assert_eq!(body.matches("Error[TOOL_FAILED]: boom").count(), 1);
    assert!(body.starts_with("Error[TOOL_FAILED]: boom\nxxxxx\n[Truncated"));
    assert!(
        !body.contains("hint:"),
        "feedback is in the file, not repeated"
    );
    insta::assert_snapshot!("error_with_feedback", body);

    // Images stay as blocks after the preview; their pixels are not saved as text.
    let mut with_images = ToolOutput::new(vec![
        ContentBlock::image("image/png", "AAAA"),
        ContentBlock::text("y".repeat(60)),
        ContentBlock::image("image/jpeg", "BBBB"),
    ]);
    with_images.hook_feedback = vec!["fb".into()];
    persist_checked(&store, "call_img", with_images, 40);
    let saved = std::fs::read_to_string(store.root.join("call_img.txt")).unwrap();
    assert_eq!(saved, format!("{}\nfb", "y".repeat(60)));

    // An existing artifact keeps its path (the published file); text_path is the body.
    let mut published = ToolOutput::text("z".repeat(60));
    published.artifact = Some(Box::new(ToolArtifact {
        path: ws.path().join("out/report.pdf"),
        mime_type: "application/pdf".into(),
        size_bytes: 1234,
        preview: "old".into(),
        text_path: None,
    }));
    persist_checked(&store, "call_pub", published, 40);
}

#[test]
fn persist_if_large_preview_budget_and_paths() {
    let ws = tempfile::tempdir().unwrap();
    // preview_chars larger than max_chars: the preview is cut to max_chars.
    let store = session_store(ws.path(), 8_000, Head);
    let body = persist_checked(&store, "call_b", ToolOutput::text("q".repeat(30)), 12);
    assert!(body.starts_with(&format!(
        "{}\n[Truncated: showing the first 12 of 30",
        "q".repeat(12)
    )));
    assert!(body.contains("file_path \".iris/tool-results/s-1/call_b.txt\""));

    // A store outside any workspace names the file by its full path.
    let plain = ToolArtifactStore::new(ws.path().join("elsewhere")).with_preview(4, Head);
    assert_eq!(plain.workspace(), None);
    let body = persist_checked(&plain, "call_c", ToolOutput::text("r".repeat(30)), 12);
    let full = ws.path().join("elsewhere").join("call_c.txt");
    assert!(
        body.contains(&format!("file_path \"{}\"", full.display())),
        "{body}"
    );
}

/// Every file under `dir`, recursively, relative to it.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn writes_are_atomic_and_leave_no_temp_file() {
    let ws = tempfile::tempdir().unwrap();
    let store = session_store(ws.path(), 5, Head);
    let source = ws.path().join("in.csv");
    std::fs::write(&source, "a,b\n1,2\n").unwrap();
    for round in 0..3 {
        // Rewriting the same names replaces them whole.
        let long = ToolOutput::text(format!("{round}").repeat(50));
        store.persist_if_large("call_1", long, 10).unwrap();
        store
            .persist_json("call_1", &json!({"round": round}), "")
            .unwrap();
        store.persist_file("call_1", &source, "").unwrap();
    }
    assert_eq!(
        files_under(&store.root),
        [
            PathBuf::from("call_1.files/in.csv"),
            PathBuf::from("call_1.json"),
            PathBuf::from("call_1.txt"),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(store.root.join("call_1.txt")).unwrap(),
        "2".repeat(50)
    );

    // A failed rename (the destination is a directory) removes its temporary file.
    std::fs::create_dir_all(store.root.join("blocked.txt")).unwrap();
    let err = store
        .persist_if_large("blocked", ToolOutput::text("b".repeat(50)), 10)
        .unwrap_err();
    // The store writes through the shared atomic writer, whose failures are
    // `Error::Write` with the path in the details.
    assert!(
        matches!(&err, Error::Write(info)
            if info.details["path"].as_str().is_some_and(|p| p.ends_with("blocked.txt"))),
        "{err:?}"
    );
    assert_eq!(err.code(), codes::IO_ERROR);
    let info = err.to_artifact_info();
    assert_eq!(info.code, codes::ARTIFACT_ERROR);
    assert!(
        info.details["path"]
            .as_str()
            .is_some_and(|p| p.ends_with("blocked.txt")),
        "{info:?}"
    );
    assert!(
        files_under(&store.root)
            .iter()
            .all(|p| !p.to_string_lossy().contains(".tmp"))
    );
}

#[test]
fn sanitized_names() {
    let clean = [
        "call_01",
        "toolu_01AbC.x-y",
        "a",
        "A.B",
        "x-0123456789abcde",
    ];
    for id in clean {
        assert_eq!(sanitize_file_stem(id), id, "clean ids are kept");
    }
    let long = "a".repeat(1_000);
    let dirty: &[(&str, &str)] = &[
        ("a/b", "a_b"),
        ("../etc/passwd", "_._etc_passwd"),
        ("..", "_."),
        (".", "_"),
        (".hidden", "_hidden"),
        ("a b\tc", "a_b_c"),
        ("日本", "__"),
        ("C:\\x", "C__x"),
        ("", ""),
        // Clean, but shaped like a sanitized stem: hashed too, so it cannot collide.
        ("x-0123456789abcdef", "x-0123456789abcdef"),
        (&long, &long[..MAX_FILE_STEM_CHARS]),
    ];
    for (id, kept) in dirty {
        // `<kept>-<16 hex digits>`, or just the hash when nothing is kept.
        let stem = sanitize_file_stem(id);
        let hash = match stem.strip_prefix(kept) {
            Some(rest) if kept.is_empty() => rest,
            Some(rest) => rest
                .strip_prefix('-')
                .unwrap_or_else(|| panic!("{id:?} → {stem}")),
            None => panic!("{id:?} → {stem} does not keep {kept:?}"),
        };
        assert_eq!(hash.len(), 16, "{id:?} → {stem}");
        assert!(
            hash.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert!(!stem.starts_with('.'));
    }
    assert_eq!(
        sanitize_file_stem("a/b"),
        sanitize_file_stem("a/b"),
        "stable"
    );
}

#[test]
fn ids_that_sanitize_alike_do_not_collide() {
    let ws = tempfile::tempdir().unwrap();
    let store = session_store(ws.path(), 5, Head);
    let long_a = format!("{}a", "x".repeat(200));
    let long_b = format!("{}b", "x".repeat(200));
    let ids: Vec<String> = vec![
        "a/b".into(),
        "a:b".into(),
        "a b".into(),
        "a\\b".into(),
        "a_b".into(),
        sanitize_file_stem("a/b"), // a clean id equal to another id's stem
        "../a_b".into(),
        "".into(),
        ".".into(),
        "..".into(),
        long_a,
        long_b,
    ];
    let mut paths = BTreeSet::new();
    for id in &ids {
        let artifact = store.persist_json(id, &json!({"id": id}), "").unwrap();
        assert_eq!(
            artifact.path.parent(),
            Some(store.root.as_path()),
            "{id:?} stays in the root"
        );
        let long = store.persist_if_large(id, ToolOutput::text(format!("{id}|").repeat(40)), 10);
        let text_path = long.unwrap().artifact.unwrap().text_path.unwrap();
        assert_eq!(text_path.parent(), Some(store.root.as_path()));
        assert!(paths.insert(artifact.path), "{id:?}: json path collides");
        assert!(paths.insert(text_path), "{id:?}: text path collides");
    }
    for id in &ids {
        let path = store.root.join(format!("{}.json", sanitize_file_stem(id)));
        let saved: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(saved["id"], json!(id), "each file holds its own id");
    }
}

#[test]
fn persist_json_saves_the_whole_payload() {
    let ws = tempfile::tempdir().unwrap();
    let store = session_store(ws.path(), 12, Head);
    let payload = json!({
        "content": [{"type": "text", "text": "日本語 ✓"}],
        "structuredContent": {"rows": (0..50).collect::<Vec<_>>()},
        "isError": false,
    });
    let artifact = store
        .persist_json("mcp_call_1", &payload, "a preview longer than twelve chars")
        .unwrap();
    let text = std::fs::read_to_string(&artifact.path).unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&text).unwrap(),
        payload
    );
    assert_eq!(artifact.path, store.root.join("mcp_call_1.json"));
    assert_eq!(artifact.mime_type, "application/json");
    assert_eq!(artifact.size_bytes, text.len() as u64);
    assert_eq!(
        artifact.preview, "a preview lo",
        "cut to the store's preview"
    );
    assert_eq!(artifact.text_path, None);
    assert!(
        text.lines().count() > 50,
        "pretty-printed so read_file can page it"
    );
}

#[test]
fn persist_file_copies_independently() {
    let ws = tempfile::tempdir().unwrap();
    let store = session_store(ws.path(), 100, Head);
    let source = ws.path().join("report final.CSV");
    std::fs::write(&source, "a,b\n1,2\n").unwrap();

    let artifact = store.persist_file("call/7", &source, "a,b").unwrap();
    let dir = store
        .root
        .join(format!("{}.files", sanitize_file_stem("call/7")));
    assert_eq!(artifact.path.parent(), Some(dir.as_path()));
    let name = artifact
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        name.starts_with("report_final-") && name.ends_with(".CSV"),
        "{name}"
    );
    assert_eq!(artifact.mime_type, "text/csv");
    assert_eq!(artifact.size_bytes, 8);
    assert_eq!(artifact.preview, "a,b");
    assert_eq!(artifact.text_path, None);

    // The copy is independent: later changes to the source do not reach it.
    std::fs::write(&source, "changed").unwrap();
    assert_eq!(
        std::fs::read_to_string(&artifact.path).unwrap(),
        "a,b\n1,2\n"
    );

    // A missing source is an I/O error naming the source; nothing is created.
    let missing = ws.path().join("missing.bin");
    let err = store.persist_file("call_8", &missing, "").unwrap_err();
    assert!(
        matches!(&err, Error::Io { path, .. } if path == &missing),
        "{err:?}"
    );
    assert_eq!(err.code(), codes::IO_ERROR);
    assert!(!store.root.join("call_8.files").exists());
    let info = err.to_artifact_info();
    assert_eq!(info.code, codes::ARTIFACT_ERROR);
    assert_eq!(info.details["cause_code"], "IO_ERROR");
    assert_eq!(info.details["path"], json!(missing.display().to_string()));
    assert!(
        info.message.starts_with("I/O error at "),
        "{}",
        info.message
    );
}

/// The store itself (as the MCP tools and the executor use it) refuses a symlinked
/// `.iris` for every kind of write, with a typed error and nothing written outside.
#[cfg(unix)]
#[test]
fn a_symlinked_store_is_refused_for_every_write() {
    let sandbox = tempfile::tempdir().unwrap();
    let ws = sandbox.path().join("ws");
    let outside = sandbox.path().join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink("../outside", ws.join(".iris")).unwrap();
    let source = ws.join("in.csv");
    std::fs::write(&source, "a,b\n").unwrap();
    let store = session_store(&ws, 5, Head);
    let errors = [
        store
            .persist_if_large("call_1", ToolOutput::text("x".repeat(50)), 10)
            .unwrap_err(),
        store
            .persist_json("call_1", &json!({"a": 1}), "")
            .unwrap_err(),
        store.persist_file("call_1", &source, "").unwrap_err(),
    ];
    for err in errors {
        assert!(matches!(err, Error::Path(_)), "{err:?}");
        assert_eq!(err.code(), codes::INVALID_PATH);
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(err.to_artifact_info().code, codes::ARTIFACT_ERROR);
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

#[test]
fn mime_types_by_extension() {
    let cases = [
        ("a.txt", "text/plain"),
        ("a.LOG", "text/plain"),
        ("a.md", "text/markdown"),
        ("a.csv", "text/csv"),
        ("a.json", "application/json"),
        ("a.html", "text/html"),
        ("a.yaml", "application/yaml"),
        ("a.pdf", "application/pdf"),
        ("a.png", "image/png"),
        ("a.JPEG", "image/jpeg"),
        ("a.svg", "image/svg+xml"),
        ("a.zip", "application/zip"),
        ("a.tar.gz", "application/gzip"),
        ("a.unknownext", "application/octet-stream"),
        ("Makefile", "application/octet-stream"),
        (".bashrc", "application/octet-stream"),
    ];
    for (name, mime) in cases {
        assert_eq!(mime_type_for_path(Path::new(name)), mime, "{name}");
    }
}

#[test]
fn session_directories() {
    let ws = Path::new("/ws");
    let results = ws.join(TOOL_RESULTS_DIR);
    let cases = [
        ("s-1", "s-1".to_owned()),
        ("", DEFAULT_SESSION_DIR.to_owned()),
        ("../../etc", sanitize_file_stem("../../etc")),
        ("a/b", sanitize_file_stem("a/b")),
    ];
    for (session, segment) in cases {
        let store = ToolArtifactStore::for_session(ws, session);
        assert_eq!(store.root, results.join(&segment), "{session:?}");
        assert_eq!(store.workspace(), Some(ws), "{session:?}");
        assert_eq!(store.preview_chars, 8_000);
        assert_eq!(store.preview_mode, Head);
    }
}

/// What `git status` lists as untracked in `repo` (files, one per line).
fn untracked(repo: &Path) -> String {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(repo)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    if !repo.join(".git").exists() {
        git(&["init", "-q"]);
    }
    git(&["status", "--porcelain", "--untracked-files=all"])
}

/// The store is what first makes `.iris/` in most workspaces: the folder it makes holds
/// whole results, so it comes with an ignore file git honours.
#[test]
fn a_state_folder_the_store_makes_is_ignored_by_git() {
    let ws = Workspace::new().file("notes.md", "mine");
    let store = session_store(ws.root(), 5, Head);
    store
        .persist_if_large("call_1", ToolOutput::text("secret".repeat(50)), 10)
        .unwrap();
    store.persist_json("call_2", &json!({"a": 1}), "").unwrap();
    assert_eq!(ws.text(".iris/.gitignore"), "*\n");
    assert_eq!(untracked(ws.root()), "?? notes.md\n");
}

/// A `.iris/` the user made (a committed `.iris/agent.yaml`) keeps its own rules.
#[test]
fn an_existing_state_folder_gets_no_ignore_file() {
    let ws = Workspace::new().file(".iris/agent.yaml", "tools: {}\n");
    let store = session_store(ws.root(), 5, Head);
    store
        .persist_if_large("call_1", ToolOutput::text("x".repeat(50)), 10)
        .unwrap();
    assert!(!ws.path(".iris/.gitignore").exists());
    assert!(untracked(ws.root()).contains("?? .iris/agent.yaml\n"));
}

/// The path form for host-chosen workspaces (run stores, session files): the same
/// rule, and a missing workspace is created.
#[test]
fn state_dir_create_at_writes_the_ignore_file_only_for_a_new_folder() {
    use iris_fs::state_dir;
    let sandbox = tempfile::tempdir().unwrap();
    let ws = sandbox.path().join("new-ws");
    let dir = state_dir::create_at(&ws).unwrap();
    assert_eq!(dir, ws.join(".iris"));
    assert_eq!(
        std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
        state_dir::GITIGNORE_CONTENT
    );
    // Again: nothing changes, no error.
    std::fs::write(dir.join(".gitignore"), "runs.db\n").unwrap();
    assert_eq!(state_dir::create_at(&ws).unwrap(), dir);
    assert_eq!(
        std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
        "runs.db\n"
    );
    let existing = sandbox.path().join("old-ws");
    std::fs::create_dir_all(existing.join(".iris")).unwrap();
    state_dir::create_at(&existing).unwrap();
    assert!(!existing.join(".iris/.gitignore").exists());
}
