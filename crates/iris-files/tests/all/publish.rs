//! `publish_artifact`: independent, immutable copies that do not count as reads.

use iris_files::codes;
use serde_json::json;

use crate::support::{Harness, code};

#[tokio::test]
async fn publishes_an_independent_read_only_copy() {
    let h = Harness::new();
    h.put("out/report.md", "# Report\nv1\n");
    let mut ctx = h.ctx.clone();
    ctx.call_id = "call-1".into();
    let r = h
        .call_in(
            &ctx,
            "publish_artifact",
            json!({"file_path": "out/report.md"}),
        )
        .await;
    assert_eq!(code(&r), "OK", "{}", r.model_content());
    assert_eq!(
        r.model_content(),
        "Published `out/report.md` as `.iris/published/s-1/call-1-report.md` (12 bytes, text/markdown)."
    );
    let artifact = r.artifact.clone().unwrap();
    assert_eq!(
        artifact.path,
        h.path(".iris/published/s-1/call-1-report.md")
            .canonicalize()
            .unwrap()
    );
    assert_eq!(artifact.mime_type, "text/markdown");
    assert_eq!(artifact.size_bytes, 12);
    assert_eq!(artifact.preview, "# Report\nv1\n");
    assert!(
        std::fs::metadata(&artifact.path)
            .unwrap()
            .permissions()
            .readonly()
    );
    assert_eq!(r.data["source_path"], "out/report.md");

    // Changing the original later does not change the published copy.
    h.call("read_file", json!({"file_path": "out/report.md"}))
        .await;
    let e = h
        .call(
            "edit_file",
            json!({"file_path": "out/report.md", "old_string": "v1", "new_string": "v2"}),
        )
        .await;
    assert_eq!(code(&e), "OK");
    assert_eq!(
        std::fs::read_to_string(&artifact.path).unwrap(),
        "# Report\nv1\n"
    );

    // Publishing again never overwrites the earlier copy.
    let again = h
        .call_in(
            &ctx,
            "publish_artifact",
            json!({"file_path": "out/report.md"}),
        )
        .await;
    assert_eq!(
        again.data["published_path"],
        ".iris/published/s-1/call-1-report-2.md"
    );
    assert_eq!(
        std::fs::read_to_string(&artifact.path).unwrap(),
        "# Report\nv1\n"
    );
    assert_eq!(
        h.text(".iris/published/s-1/call-1-report-2.md"),
        "# Report\nv2\n"
    );
    // Published copies stay out of listings and searches.
    let listed = h.call("list_files", json!({})).await;
    assert_eq!(listed.data["files"], json!(["out/report.md"]));
}

#[tokio::test]
async fn publishing_is_not_reading() {
    let h = Harness::new();
    h.put("a.txt", "x\n");
    h.call("publish_artifact", json!({"file_path": "a.txt"}))
        .await;
    assert!(h.service.session_state("s-1").is_empty());
}

#[tokio::test]
async fn publish_table() {
    let h = Harness::new();
    h.put("dir/a.bin", b"\0\x01");
    h.put("img.png", b"\x89PNG\r\n\x1a\n....");
    for (session, call_id, file, expect, published, mime) in [
        (
            "s-1",
            "",
            "dir/a.bin",
            "OK",
            Some(".iris/published/s-1/a.bin"),
            "application/octet-stream",
        ),
        (
            "../../evil",
            "c/1",
            "img.png",
            "OK",
            Some(".iris/published/.._.._evil/c_1-img.png"),
            "image/png",
        ),
        (
            "",
            "",
            "img.png",
            "OK",
            Some(".iris/published/default/img.png"),
            "image/png",
        ),
        ("s-1", "", "missing.txt", codes::FILE_NOT_FOUND, None, ""),
        ("s-1", "", "dir", codes::NOT_A_FILE, None, ""),
    ] {
        let mut ctx = h.session(session);
        ctx.call_id = call_id.into();
        let r = h
            .call_in(&ctx, "publish_artifact", json!({"file_path": file}))
            .await;
        assert_eq!(code(&r), expect, "{session} {file}");
        if let Some(p) = published {
            assert_eq!(r.data["published_path"], p);
            assert_eq!(r.data["mime_type"], mime);
            assert_eq!(h.get(p), h.get(file));
        }
    }
}
