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
    let r = h
        .call("publish_artifact", json!({"file_path": "a.txt"}))
        .await;
    assert_eq!(code(&r), "OK", "{}", r.model_content());
    assert_eq!(h.text(".iris/published/s-1/a.txt"), "x\n");
    assert!(h.service.session_state("s-1").is_empty());
    // The copy exists and is still not a read: an edit of the source is refused.
    let e = h
        .call(
            "edit_file",
            json!({"file_path": "a.txt", "old_string": "x", "new_string": "y"}),
        )
        .await;
    assert_ne!(code(&e), "OK", "{}", e.model_content());
    assert_eq!(h.text("a.txt"), "x\n");
}

/// Publishing may be what first makes `.iris/`; the folder then comes with an ignore
/// file, so published copies are never committed by accident.
#[tokio::test]
async fn publishing_makes_an_ignored_state_folder() {
    let h = Harness::new();
    h.put("a.txt", "x\n");
    let r = h
        .call("publish_artifact", json!({"file_path": "a.txt"}))
        .await;
    assert_eq!(code(&r), "OK", "{}", r.model_content());
    assert_eq!(h.text(".iris/.gitignore"), "*\n");
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

/// A workspace that ships `.iris -> ../outside` (or a symlinked `published`) does not
/// get its published copies written outside: the store refuses the link.
#[cfg(unix)]
#[tokio::test]
async fn a_symlinked_store_directory_is_refused() {
    use std::os::unix::fs::symlink;
    for link in [".iris", ".iris/published", ".iris/published/s-1"] {
        let h = Harness::new();
        h.put("a.txt", "x\n");
        let at = h.path(link);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        symlink(&h.outside, &at).unwrap();
        let r = h
            .call("publish_artifact", json!({"file_path": "a.txt"}))
            .await;
        assert_eq!(code(&r), "ARTIFACT_ERROR", "{link}: {}", r.model_content());
        assert!(
            r.model_content().contains("is a symbolic link"),
            "{link}: {}",
            r.model_content()
        );
        assert!(r.artifact.is_none(), "{link}");
        assert_eq!(
            std::fs::read_dir(&h.outside).unwrap().count(),
            0,
            "{link}: something was written outside"
        );
    }
}

/// Publishing is capped by `max_publish_bytes` (apparent size, so a sparse file counts
/// with its holes), and nothing is left behind by a refused publish.
#[tokio::test]
async fn publishing_is_capped() {
    const CAP: u64 = 1 << 20;
    let h =
        Harness::with_config(iris_files::FileToolsConfig::default().with_max_publish_bytes(CAP));
    for (name, len, expect) in [
        ("at-cap.bin", CAP, "OK"),
        ("over-cap.bin", CAP + 1, codes::FILE_TOO_LARGE),
        ("sparse-huge.bin", 64 * CAP, codes::FILE_TOO_LARGE),
    ] {
        let file = std::fs::File::create(h.path(name)).unwrap();
        file.set_len(len).unwrap();
        let r = h.call("publish_artifact", json!({"file_path": name})).await;
        assert_eq!(code(&r), expect, "{name}: {}", r.model_content());
        if expect == codes::FILE_TOO_LARGE {
            let info = r.error_info().unwrap();
            assert_eq!(info.details["limit_bytes"], CAP, "{name}");
            assert_eq!(info.details["size_bytes"], len, "{name}");
        }
    }
    // Only the copy within the cap exists; no temporary copy is left behind.
    let store = h.path(".iris/published/s-1");
    let names: Vec<String> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["at-cap.bin"]);
}

/// A sparse file under the cap is copied whole (same bytes) without filling its holes,
/// where the filesystem keeps holes at all.
#[cfg(unix)]
#[tokio::test]
async fn sparse_files_stay_sparse() {
    use std::io::{Seek, SeekFrom, Write};
    use std::os::unix::fs::MetadataExt;

    let h = Harness::new();
    let len = 8 << 20;
    let mut file = std::fs::File::create(h.path("sparse.bin")).unwrap();
    file.set_len(len).unwrap();
    file.write_all(b"head").unwrap();
    file.seek(SeekFrom::Start(len / 2)).unwrap();
    file.write_all(b"middle").unwrap();
    file.sync_all().unwrap();
    drop(file);
    let r = h
        .call("publish_artifact", json!({"file_path": "sparse.bin"}))
        .await;
    assert_eq!(code(&r), "OK", "{}", r.model_content());
    let copy = r.artifact.unwrap().path;
    assert_eq!(std::fs::read(&copy).unwrap(), h.get("sparse.bin"));
    let allocated = |p: &std::path::Path| std::fs::metadata(p).unwrap().blocks() * 512;
    let source = allocated(&h.path("sparse.bin"));
    if source < len / 2 {
        // The filesystem keeps holes: the copy must keep them too.
        assert!(
            allocated(&copy) <= source + (256 << 10),
            "the copy allocates {} bytes for a source allocating {source}",
            allocated(&copy)
        );
    }
}
