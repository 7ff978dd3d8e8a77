//! [`VectorCache`]: tool vectors kept on disk across runs, so a large catalog is embedded
//! once per model, not on every start.
//!
//! One file per model, `<dir>/<model identity>.vectors`, holds every vector that model
//! computed for a tool text, keyed by the first 16 bytes of the sha256 of (the model's
//! [`identity`](EmbeddingModel::identity), the text): a changed description is a new
//! key, so it is embedded again, and another model (or the same model in another weight
//! format) never reads these vectors.
//!
//! The file is `IRISVEC1`, the dimension and the record count (two u32, little-endian),
//! the records (key, then the dimension's f32s, little-endian) and the sha256 of all
//! that. A file that is short, long, of another dimension or whose checksum does not
//! match (a crash mid-write on a file system without atomic rename, a disk error, a
//! hand edit) is ignored as if absent, and the next store replaces it. A store writes
//! a temporary file in the same folder and renames it over the old one, so a reader
//! sees the old file or the new one, never a mix; two processes storing at once each
//! leave a valid file (the last one wins, and the other's new vectors are embedded
//! again next time).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::embed::EmbeddingModel;

const MAGIC: &[u8; 8] = b"IRISVEC1";
const KEY_LEN: usize = 16;
const CHECKSUM_LEN: usize = 32;

/// Most records one file keeps: past this, a store keeps only the vectors it was given
/// (the current catalog's), so the file cannot grow without bound across catalogs.
pub const MAX_RECORDS: usize = 200_000;

/// The key of one text's vector under one model.
pub type VectorKey = [u8; KEY_LEN];

/// The on-disk vector store of one model (see the [module documentation](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorCache {
    path: PathBuf,
    identity: String,
    dim: usize,
}

impl VectorCache {
    /// The cache of `model`'s vectors in the folder `dir` (created on the first store).
    pub fn new(dir: impl AsRef<Path>, model: &EmbeddingModel) -> Self {
        Self::for_identity(dir, model.identity(), model.dim())
    }

    /// The cache of the vectors of a model with this identity and dimension.
    pub fn for_identity(dir: impl AsRef<Path>, identity: &str, dim: usize) -> Self {
        Self {
            path: dir.as_ref().join(format!("{identity}.vectors")),
            identity: identity.to_owned(),
            dim,
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The key of `text`'s vector.
    pub fn key(&self, text: &str) -> VectorKey {
        let mut hasher = Sha256::new();
        hasher.update(self.identity.as_bytes());
        hasher.update([0]);
        hasher.update(text.as_bytes());
        let digest = hasher.finalize();
        let mut key = [0; KEY_LEN];
        key.copy_from_slice(&digest[..KEY_LEN]);
        key
    }

    /// Every vector in the file; empty when the file is missing or not valid.
    pub fn load(&self) -> HashMap<VectorKey, Vec<f32>> {
        let Ok(bytes) = std::fs::read(&self.path) else {
            return HashMap::new();
        };
        self.decode(&bytes).unwrap_or_default()
    }

    fn decode(&self, bytes: &[u8]) -> Option<HashMap<VectorKey, Vec<f32>>> {
        let record = KEY_LEN + 4 * self.dim;
        let body_len = bytes.len().checked_sub(CHECKSUM_LEN)?;
        let (body, checksum) = bytes.split_at(body_len);
        if body.len() < 16 || &body[..8] != MAGIC || Sha256::digest(body)[..] != *checksum {
            return None;
        }
        let dim = u32::from_le_bytes(body[8..12].try_into().ok()?) as usize;
        let count = u32::from_le_bytes(body[12..16].try_into().ok()?) as usize;
        if dim != self.dim || body.len() != 16 + count.checked_mul(record)? {
            return None;
        }
        let mut out = HashMap::with_capacity(count);
        for chunk in body[16..].chunks_exact(record) {
            let (key, values) = chunk.split_at(KEY_LEN);
            let vector = values
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            out.insert(key.try_into().ok()?, vector);
        }
        Some(out)
    }

    /// Replaces the file with these vectors (each of the cache's dimension; others are
    /// left out), written to a temporary file beside it and renamed into place.
    ///
    /// # Errors
    /// The I/O error of creating the folder, writing or renaming.
    pub fn store<'a>(
        &self,
        vectors: impl IntoIterator<Item = (&'a VectorKey, &'a [f32])>,
    ) -> std::io::Result<()> {
        let mut body = Vec::new();
        body.extend_from_slice(MAGIC);
        body.extend_from_slice(&u32::try_from(self.dim).unwrap_or(u32::MAX).to_le_bytes());
        body.extend_from_slice(&[0; 4]);
        let mut count: u32 = 0;
        for (key, vector) in vectors {
            if vector.len() != self.dim || count == u32::MAX {
                continue;
            }
            body.extend_from_slice(key);
            for x in vector {
                body.extend_from_slice(&x.to_le_bytes());
            }
            count += 1;
        }
        body[12..16].copy_from_slice(&count.to_le_bytes());
        let checksum = Sha256::digest(&body);
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut file = tempfile::NamedTempFile::new_in(dir)?;
        file.write_all(&body)?;
        file.write_all(&checksum)?;
        file.as_file().sync_all()?;
        file.persist(&self.path).map_err(|e| e.error)?;
        Ok(())
    }
}
