//! Read observations: what a session has read, so edits can prove the file is unchanged.
//!
//! The file service has (not the run state) the read-before-edit duty: an
//! edit or overwrite of an existing file is allowed only when this session's last
//! observation of the file still matches the bytes on disk.

use std::collections::HashMap;
use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

/// The SHA-256 of a file's bytes.
///
/// ```
/// use iris_files::ContentHash;
/// let h = ContentHash::of(b"abc");
/// assert_eq!(h.to_string(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ContentHash([u8; 32]);

impl ContentHash {
    /// Hashes `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// Hashes everything `reader` yields (an open file, say) by streaming it; returns
    /// the hash and the number of bytes.
    ///
    /// ```
    /// use iris_files::ContentHash;
    /// assert_eq!(ContentHash::of_reader(&b"abc"[..])?, (ContentHash::of(b"abc"), 3));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn of_reader(mut file: impl std::io::Read) -> std::io::Result<(Self, u64)> {
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut size = 0u64;
        loop {
            let n = file.read(&mut buf)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            size += n as u64;
        }
        Ok((Self(hasher.finalize().into()), size))
    }

    /// The raw digest.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl std::fmt::Display for ContentHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// Serialized as its 64 lower-case hex digits.
impl Serialize for ContentHash {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ContentHash {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let bad = || serde::de::Error::custom("a content hash is 64 hex digits");
        if text.len() != 64 || !text.is_ascii() {
            return Err(bad());
        }
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(Self(bytes))
    }
}

impl std::fmt::Debug for ContentHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ContentHash({self})")
    }
}

/// What one read saw: the content hash, the size and the modification time.
///
/// Staleness is decided by content (hash and size), not by the modification time:
/// a `touch` that leaves the bytes alone does not invalidate what the model read,
/// while a same-size rewrite within one mtime tick does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    /// SHA-256 of the bytes read.
    pub content_hash: ContentHash,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, where the platform reports one (kept for hosts and
    /// diagnostics).
    pub modified: Option<SystemTime>,
}

impl Observation {
    /// The observation of `bytes` as read from a file with metadata `meta`.
    pub fn of(bytes: &[u8], meta: &Metadata) -> Self {
        Self {
            content_hash: ContentHash::of(bytes),
            size: bytes.len() as u64,
            modified: meta.modified().ok(),
        }
    }

    /// Whether `bytes` are exactly the content this observation saw.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        self.size == bytes.len() as u64 && self.content_hash == ContentHash::of(bytes)
    }
}

/// One session's read observations, keyed by canonical path.
///
/// A host that owns sessions puts an `Arc<ReadState>` into the context's
/// [`extensions`](iris_tools_core::ToolExecutionContext::extensions); without one, the
/// [`crate::FileService`] keeps a `ReadState` per `session_id` itself.
///
/// ```
/// use std::sync::Arc;
/// use iris_files::{FileService, ReadState};
/// use iris_tools_core::ToolExecutionContext;
///
/// let state = Arc::new(ReadState::new());
/// let mut ctx = ToolExecutionContext::new("/srv/ws");
/// ctx.extensions.insert_arc(Arc::clone(&state));
/// assert!(Arc::ptr_eq(&FileService::default().read_state(&ctx), &state));
/// assert!(state.is_empty());
/// ```
#[derive(Debug, Default)]
pub struct ReadState {
    observations: Mutex<HashMap<PathBuf, Observation>>,
}

impl ReadState {
    /// An empty state.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<PathBuf, Observation>> {
        // Every mutation is a single insert or remove, so a panic elsewhere cannot
        // leave the map half-updated; recovering from poison is safe.
        self.observations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The last observation of `path` (a canonical path), if any.
    pub fn get(&self, path: &Path) -> Option<Observation> {
        self.lock().get(path).cloned()
    }

    /// Records (or replaces) the observation of `path`.
    pub fn record(&self, path: PathBuf, observation: Observation) {
        self.lock().insert(path, observation);
    }

    /// Every observed path, sorted.
    pub fn paths(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = self.lock().keys().cloned().collect();
        paths.sort();
        paths
    }

    /// Number of observed files.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing was observed.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Every observation, sorted by path: what a durable run persists so that
    /// read-before-edit holds when another process resumes it.
    ///
    /// ```
    /// use iris_files::{ContentHash, Observation, ReadState};
    ///
    /// let state = ReadState::new();
    /// let seen = Observation { content_hash: ContentHash::of(b"hi"), size: 2, modified: None };
    /// state.record("/srv/ws/a.txt".into(), seen.clone());
    /// let json = serde_json::to_string(&state.snapshot()).unwrap();
    /// let back: Vec<(std::path::PathBuf, Observation)> = serde_json::from_str(&json).unwrap();
    /// let restored = ReadState::restore(back);
    /// assert_eq!(restored.get("/srv/ws/a.txt".as_ref()), Some(seen));
    /// ```
    pub fn snapshot(&self) -> Vec<(PathBuf, Observation)> {
        let mut all: Vec<(PathBuf, Observation)> = self
            .lock()
            .iter()
            .map(|(p, o)| (p.clone(), o.clone()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// A state holding these observations (a [`ReadState::snapshot`] read back).
    pub fn restore(observations: impl IntoIterator<Item = (PathBuf, Observation)>) -> Self {
        Self {
            observations: Mutex::new(observations.into_iter().collect()),
        }
    }
}
