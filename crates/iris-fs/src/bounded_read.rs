//! Bounded reads of files a repository ships (agent YAML, MCP files, subagent catalogs,
//! decision files, `SKILL.md`, provider scripts): the one place that decides how much of
//! such a file a process takes in.
//!
//! [`read_regular_file`] / [`read_regular_text`] open with `O_NONBLOCK` (a FIFO cannot
//! block the `open`), check the *handle* with `fstat` and refuse anything but a regular
//! file (a FIFO, `/dev/zero`, a socket, a directory), refuse a file whose size is over
//! the limit before reading it, and read at most `limit + 1` bytes, so a file that grows
//! while it is read is refused too. YAML read this way goes through [`crate::yaml`]
//! before a parser sees it.
//!
//! ```
//! use iris_fs::bounded_read::{ReadError, read_regular_text, MAX_CONFIG_BYTES};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let file = dir.path().join("iris.yaml");
//! std::fs::write(&file, "tools: {}\n")?;
//! assert_eq!(read_regular_text(&file, MAX_CONFIG_BYTES)?, "tools: {}\n");
//!
//! let err = read_regular_text("/dev/zero", MAX_CONFIG_BYTES).unwrap_err();
//! assert!(matches!(err, ReadError::NotRegular { .. }));
//! assert_eq!(err.to_string(), "is a character device, not a regular file");
//!
//! let err = read_regular_text(&file, 4).unwrap_err();
//! assert_eq!(err.to_string(), "is larger than the 4-byte limit");
//! # Ok(()) }
//! ```

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use rustix::fs::{Mode, OFlags};

/// The size limit of one configuration file: agent YAML, MCP files, subagent catalogs,
/// decision files and `SKILL.md` (1 MiB).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Why a bounded read refused a file or failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be opened or read.
    #[error("cannot be read: {0}")]
    Io(#[source] std::io::Error),
    /// The path names something other than a regular file.
    #[error("is {kind}, not a regular file")]
    NotRegular {
        /// What it is instead, with its article: `a FIFO`, `a character device`,
        /// `a block device`, `a socket`, `a directory`.
        kind: &'static str,
    },
    /// The file is larger than the limit.
    #[error("is larger than the {} limit", ByteSize(*limit))]
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// The file is not UTF-8 text ([`read_regular_text`] only).
    #[error("is not valid UTF-8 text")]
    NotUtf8,
}

impl From<ReadError> for std::io::Error {
    /// The error as an I/O error, for callers whose error types carry one: refusals
    /// become `InvalidInput` / `FileTooLarge` / `InvalidData` with the same message.
    fn from(err: ReadError) -> Self {
        use std::io::ErrorKind;
        match err {
            ReadError::Io(e) => e,
            ReadError::NotRegular { .. } => std::io::Error::new(ErrorKind::InvalidInput, err),
            ReadError::TooLarge { .. } => std::io::Error::new(ErrorKind::FileTooLarge, err),
            ReadError::NotUtf8 => std::io::Error::new(ErrorKind::InvalidData, err),
        }
    }
}

/// A byte count as people write limits: `1 MiB`, `64 KiB`, else `N-byte`.
///
/// ```
/// use iris_fs::bounded_read::ByteSize;
/// assert_eq!(ByteSize(1 << 20).to_string(), "1 MiB");
/// assert_eq!(ByteSize(3 << 10).to_string(), "3 KiB");
/// assert_eq!(ByteSize(1000).to_string(), "1000-byte");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
            write!(f, "{} MiB", n >> 20)
        } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
            write!(f, "{} KiB", n >> 10)
        } else {
            write!(f, "{n}-byte")
        }
    }
}

/// Reads a regular file of at most `limit` bytes.
///
/// Opens without blocking (`O_NONBLOCK | O_NOCTTY | O_CLOEXEC`), `fstat`s the handle and
/// refuses anything but a regular file, refuses a size over `limit` before reading, and
/// reads at most `limit + 1` bytes so a file that grows meanwhile is refused as well.
/// Symlinks are followed; confining the path is the caller's job.
///
/// # Errors
/// [`ReadError::Io`] when the file cannot be opened or read, [`ReadError::NotRegular`]
/// for a FIFO, device, socket or directory, [`ReadError::TooLarge`] past `limit`.
pub fn read_regular_file(path: impl AsRef<Path>, limit: u64) -> Result<Vec<u8>, ReadError> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path.as_ref(), flags, Mode::empty())
        .map_err(|e| ReadError::Io(e.into()))?;
    let file = File::from(fd);
    let meta = file.metadata().map_err(ReadError::Io)?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let kind = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() {
            "a character device"
        } else if kind.is_block_device() {
            "a block device"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_dir() {
            "a directory"
        } else {
            "a special file"
        };
        return Err(ReadError::NotRegular { kind });
    }
    if meta.len() > limit {
        return Err(ReadError::TooLarge { limit });
    }
    let expected = usize::try_from(meta.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(expected.saturating_add(1));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > limit {
        return Err(ReadError::TooLarge { limit });
    }
    Ok(bytes)
}

/// [`read_regular_file`], then UTF-8.
///
/// # Errors
/// As [`read_regular_file`], plus [`ReadError::NotUtf8`].
pub fn read_regular_text(path: impl AsRef<Path>, limit: u64) -> Result<String, ReadError> {
    String::from_utf8(read_regular_file(path, limit)?).map_err(|_| ReadError::NotUtf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_refuse_what_is_not_a_small_regular_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let fifo = dir.path().join("fifo");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, Mode::from_raw_mode(0o600))
            .unwrap_or_else(|e| panic!("{e}"));
        let big = dir.path().join("big");
        File::create(&big)
            .and_then(|f| f.set_len(64 << 20))
            .unwrap_or_else(|e| panic!("{e}"));
        let text = dir.path().join("text");
        std::fs::write(&text, [0xFF, 0xFE]).unwrap_or_else(|e| panic!("{e}"));
        let shown = |path: &Path| match read_regular_text(path, MAX_CONFIG_BYTES) {
            Ok(_) => "ok".to_owned(),
            Err(e) => e.to_string(),
        };
        assert_eq!(shown(&fifo), "is a FIFO, not a regular file");
        assert_eq!(
            shown(Path::new("/dev/null")),
            "is a character device, not a regular file"
        );
        assert_eq!(shown(dir.path()), "is a directory, not a regular file");
        assert_eq!(shown(&big), "is larger than the 1 MiB limit");
        assert_eq!(shown(&text), "is not valid UTF-8 text");
        assert!(shown(&dir.path().join("none")).starts_with("cannot be read: "));
        let io: std::io::Error = ReadError::TooLarge { limit: 10 }.into();
        assert_eq!(io.kind(), std::io::ErrorKind::FileTooLarge);
        assert_eq!(io.to_string(), "is larger than the 10-byte limit");
    }
}
