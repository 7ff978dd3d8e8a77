//! Recognizing images (by their magic bytes) and guessing MIME types.

use std::path::Path;

/// The MIME type of a PNG, JPEG or WebP image, judged by its first bytes.
///
/// Only these three formats are imported as image content; the bytes
/// decide, not the file name, so a mislabelled file is still handled correctly.
pub(crate) fn sniff_image(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// A MIME type for a published file: images by content, common formats by
/// extension, otherwise text or octet-stream depending on whether it is UTF-8.
pub(crate) fn guess_mime(path: &Path, head: &[u8]) -> &'static str {
    if let Some(image) = sniff_image(head) {
        return image;
    }
    if head.starts_with(b"%PDF-") {
        return "application/pdf";
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let by_ext = match ext.as_deref() {
        Some("md" | "markdown") => Some("text/markdown"),
        Some("txt" | "log") => Some("text/plain"),
        Some("csv") => Some("text/csv"),
        Some("json") => Some("application/json"),
        Some("html" | "htm") => Some("text/html"),
        Some("xml") => Some("application/xml"),
        Some("yaml" | "yml") => Some("application/yaml"),
        Some("gif") => Some("image/gif"),
        Some("svg") => Some("image/svg+xml"),
        Some("zip") => Some("application/zip"),
        _ => None,
    };
    if let Some(mime) = by_ext {
        return mime;
    }
    // `head` may end inside a UTF-8 sequence; only an invalid byte counts.
    let utf8 = match std::str::from_utf8(head) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    };
    if !head.contains(&0) && utf8 {
        "text/plain"
    } else {
        "application/octet-stream"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniff_table() {
        for (bytes, expect) in [
            (&b"\x89PNG\r\n\x1a\nrest"[..], Some("image/png")),
            (&[0xFF, 0xD8, 0xFF, 0xE0][..], Some("image/jpeg")),
            (&b"RIFF\0\0\0\0WEBPVP8 "[..], Some("image/webp")),
            (&b"RIFF\0\0\0\0WAVE"[..], None),
            (&b"GIF89a"[..], None),
            (&b"\x89PN"[..], None),
            (&b""[..], None),
        ] {
            assert_eq!(sniff_image(bytes), expect, "{bytes:?}");
        }
    }

    #[test]
    fn mime_table() {
        for (name, head, expect) in [
            ("a.md", &b"# x"[..], "text/markdown"),
            ("a.bin", &b"\x89PNG\r\n\x1a\n"[..], "image/png"),
            ("report", &b"%PDF-1.7"[..], "application/pdf"),
            ("notes", &b"plain words"[..], "text/plain"),
            ("blob", &b"\0\x01"[..], "application/octet-stream"),
            ("DATA.CSV", &b"a,b"[..], "text/csv"),
        ] {
            assert_eq!(guess_mime(Path::new(name), head), expect, "{name}");
        }
    }
}
