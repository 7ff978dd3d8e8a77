//! Shared checks of the fuzz targets (`fuzz_targets/*.rs`).
//!
//! Every target asserts that nothing panics (libFuzzer reports a panic as a crash) and
//! the cheap invariants below. `IRIS_FUZZ_STRICT=1` adds the project's style rules for
//! errors (one-line messages) as assertions too; they are findings to report, not
//! crashes, so the CI smoke run leaves them off.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Whether `IRIS_FUZZ_STRICT=1` is set (read once).
pub fn strict() -> bool {
    static STRICT: OnceLock<bool> = OnceLock::new();
    *STRICT.get_or_init(|| std::env::var("IRIS_FUZZ_STRICT").is_ok_and(|v| v == "1"))
}

/// A stable error code: non-empty `SCREAMING_SNAKE` (`A-Z`, `0-9`, `_`, starting with a
/// letter).
pub fn check_code(code: &str) {
    assert!(
        is_screaming_snake(code),
        "error code {code:?} is not a non-empty SCREAMING_SNAKE code"
    );
}

/// Whether `code` is a non-empty `SCREAMING_SNAKE` code.
pub fn is_screaming_snake(code: &str) -> bool {
    code.starts_with(|c: char| c.is_ascii_uppercase())
        && code
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// An error as a user sees it: a stable code and a non-empty message; under
/// [`strict`], a message on one line.
pub fn check_error(code: &str, message: &str) {
    check_code(code);
    assert!(!message.trim().is_empty(), "{code}: the message is empty");
    if strict() {
        assert!(
            !message.contains(['\n', '\r']),
            "{code}: the message spans several lines: {message:?}"
        );
    }
}

/// A scratch directory for targets that must go through a file (the loaders read
/// paths): `$TMPDIR/iris-fuzz-<pid>/<name>`, created once per process. `cargo xtask
/// fuzz` points `TMPDIR` at `target/fuzz/tmp` and removes it afterwards.
pub fn scratch_dir(name: &str) -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    let root =
        ROOT.get_or_init(|| std::env::temp_dir().join(format!("iris-fuzz-{}", std::process::id())));
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {dir:?}: {e}"));
    // Canonical, so workspace confinement checks see the same path the loaders do.
    dir.canonicalize().unwrap_or(dir)
}

/// Writes `data` to `path`, replacing what was there.
pub fn write(path: &Path, data: &[u8]) {
    std::fs::write(path, data).unwrap_or_else(|e| panic!("cannot write {path:?}: {e}"));
}
