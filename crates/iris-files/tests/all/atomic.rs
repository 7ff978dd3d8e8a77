//! Atomic writes: readers never see a partial file; permissions and symlinks kept.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::json;

use crate::support::{Harness, code};

const SIZE: usize = 256 * 1024;

/// A reader polling the file while the tools rewrite it 40 times only ever sees
/// one whole version. A truncate-then-write implementation fails this quickly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_never_see_a_partial_file() {
    let h = Harness::new();
    h.put("big.txt", "a".repeat(SIZE));
    let path = h.path("big.txt");
    let done = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let reader = {
        let (done, reads) = (Arc::clone(&done), Arc::clone(&reads));
        std::thread::spawn(move || {
            let mut bad = Vec::new();
            while !done.load(Ordering::Relaxed) {
                let bytes = std::fs::read(&path).unwrap();
                let whole = bytes.len() == SIZE
                    && (bytes.iter().all(|b| *b == b'a') || bytes.iter().all(|b| *b == b'b'));
                if !whole {
                    bad.push(bytes.len());
                }
                reads.fetch_add(1, Ordering::Relaxed);
            }
            bad
        })
    };
    h.call("read_file", json!({"file_path": "big.txt", "limit": 0}))
        .await;
    for i in 0..40 {
        let c = if i % 2 == 0 { "b" } else { "a" };
        let r = h
            .call(
                "write_file",
                json!({"file_path": "big.txt", "content": c.repeat(SIZE)}),
            )
            .await;
        assert_eq!(code(&r), "OK", "{}", r.model_content());
    }
    done.store(true, Ordering::Relaxed);
    let bad = reader.join().unwrap();
    assert!(reads.load(Ordering::Relaxed) > 0);
    assert!(bad.is_empty(), "partial reads of sizes {bad:?}");
    // No temporary files are left behind.
    let names: Vec<String> = std::fs::read_dir(&h.ws)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["big.txt"]);
}

#[cfg(unix)]
#[tokio::test]
async fn permissions_are_kept() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    for (file_mode, tool, input) in [
        (
            0o640,
            "edit_file",
            json!({"file_path": "f.sh", "old_string": "one", "new_string": "two"}),
        ),
        (
            0o755,
            "edit_file",
            json!({"file_path": "f.sh", "old_string": "one", "new_string": "two"}),
        ),
        (
            0o600,
            "write_file",
            json!({"file_path": "f.sh", "content": "two\n"}),
        ),
        (
            0o751,
            "write_file",
            json!({"file_path": "f.sh", "content": "two\n"}),
        ),
    ] {
        let h = Harness::new();
        h.put("f.sh", "one\n");
        std::fs::set_permissions(h.path("f.sh"), std::fs::Permissions::from_mode(file_mode))
            .unwrap();
        h.call("read_file", json!({"file_path": "f.sh"})).await;
        let r = h.call(tool, input).await;
        assert_eq!(code(&r), "OK");
        assert_eq!(h.text("f.sh"), "two\n");
        assert_eq!(mode(&h.path("f.sh")), file_mode, "{tool} {file_mode:o}");
    }
    // A new file gets the same mode as any file this process creates.
    let h = Harness::new();
    h.call(
        "write_file",
        json!({"file_path": "new.txt", "content": "x"}),
    )
    .await;
    h.put("reference.txt", "x");
    assert_eq!(mode(&h.path("new.txt")), mode(&h.path("reference.txt")));
}

/// Writing through a symlink changes the target; the link stays a link.
#[cfg(unix)]
#[tokio::test]
async fn writes_through_symlinks_keep_the_link() {
    let h = Harness::new();
    h.put("real.txt", "old\n");
    std::os::unix::fs::symlink(h.path("real.txt"), h.path("link.txt")).unwrap();
    h.call("read_file", json!({"file_path": "link.txt"})).await;
    let r = h
        .call(
            "write_file",
            json!({"file_path": "link.txt", "content": "new\n"}),
        )
        .await;
    assert_eq!(code(&r), "OK");
    assert_eq!(r.data["path"], "real.txt");
    assert_eq!(h.text("real.txt"), "new\n");
    assert!(
        std::fs::symlink_metadata(h.path("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// File names near the 255-byte limit still get a valid temporary name.
#[tokio::test]
async fn long_file_names_are_written() {
    let h = Harness::new();
    let name = format!("{}.txt", "n".repeat(250));
    for (tool, input) in [
        ("write_file", json!({"file_path": name, "content": "one\n"})),
        ("write_file", json!({"file_path": name, "content": "two\n"})),
        ("publish_artifact", json!({"file_path": name})),
    ] {
        let r = h.call(tool, input).await;
        assert_eq!(code(&r), "OK", "{tool}: {}", r.model_content());
    }
    assert_eq!(h.text(&name), "two\n");
}
