//! Images: PNG/JPEG/WebP become image blocks, paging ignored; other binaries refused.

use base64::Engine as _;
use iris_files::{FileToolsConfig, codes};
use iris_tools_core::ContentBlock;
use serde_json::json;

use crate::support::{Harness, code};

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAADUlEQVR4nGP4zwAE/wEHAAH/4iOeWQAAAABJRU5ErkJggg==";
const JPEG: &str = "/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAP//////////////////////////////////////////////////////////////////////////////////////wgALCAABAAEBAREA/8QAFBABAAAAAAAAAAAAAAAAAAAAAP/aAAgBAQABPxA=";
const WEBP: &str = "UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==";
const GIF: &str = "R0lGODlhAQABAAAAACw=";

fn decode(b64: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap()
}

#[tokio::test]
async fn images_become_image_blocks() {
    let h = Harness::new();
    // The content decides, not the extension: the WebP file is misnamed.
    for (name, b64, mime) in [
        ("pixel.png", PNG, "image/png"),
        ("photo.jpg", JPEG, "image/jpeg"),
        ("anim.bin", WEBP, "image/webp"),
    ] {
        h.put(name, decode(b64));
        // Paging and line-number parameters are ignored for images.
        for input in [
            json!({"file_path": name}),
            json!({"file_path": name, "offset": 99, "column": 5, "limit": 0, "with_line_numbers": true}),
        ] {
            let r = h.call("read_file", input).await;
            assert_eq!(code(&r), "OK", "{name}");
            let size = decode(b64).len();
            assert_eq!(
                r.content,
                vec![
                    ContentBlock::text(format!("Image `{name}` ({mime}, {size} bytes).")),
                    ContentBlock::image(mime, b64),
                ],
                "{name}"
            );
            assert_eq!(r.data["mime_type"], mime);
            assert_eq!(r.data["kind"], "image");
            // The model projection keeps the image.
            assert_eq!(r.model_blocks().len(), 2);
        }
    }
}

#[tokio::test]
async fn other_binaries_and_large_images_are_refused() {
    let h = Harness::with_config(FileToolsConfig::default().with_max_image_bytes(40));
    h.put("a.gif", decode(GIF));
    h.put("big.png", decode(PNG)); // 70 bytes, over the 40-byte image limit
    for (name, expect) in [
        ("a.gif", codes::BINARY_FILE),
        ("big.png", codes::FILE_TOO_LARGE),
    ] {
        let r = h.call("read_file", json!({"file_path": name})).await;
        assert_eq!(code(&r), expect, "{name}");
    }
}

/// An image read counts as a read: the file may then be replaced.
#[tokio::test]
async fn image_reads_record_observations() {
    let h = Harness::new();
    h.put("pixel.png", decode(PNG));
    let before = h
        .call(
            "write_file",
            json!({"file_path": "pixel.png", "content": "x"}),
        )
        .await;
    assert_eq!(code(&before), codes::READ_REQUIRED);
    h.call("read_file", json!({"file_path": "pixel.png"})).await;
    let after = h
        .call(
            "write_file",
            json!({"file_path": "pixel.png", "content": "x"}),
        )
        .await;
    assert_eq!(code(&after), "OK");
}
