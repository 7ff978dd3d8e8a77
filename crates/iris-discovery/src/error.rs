//! [`Error`]: what configuring discovery fails with.

use std::path::PathBuf;

use iris_tools_core::codes;

/// The code of [`Error::ModelMissing`].
pub const MODEL_MISSING: &str = "MODEL_MISSING";
/// The code of [`Error::ModelLoad`].
pub const MODEL_LOAD_FAILED: &str = "MODEL_LOAD_FAILED";
/// The code of [`Error::Embedding`].
pub const EMBEDDING_FAILED: &str = "EMBEDDING_FAILED";

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
}

impl Error {
    /// The stable error code: `INVALID_CONFIG`, `MODEL_MISSING`, `MODEL_LOAD_FAILED` or
    /// `EMBEDDING_FAILED`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidConfig { .. } => codes::INVALID_CONFIG,
            Error::ModelMissing { .. } => MODEL_MISSING,
            Error::ModelLoad { .. } => MODEL_LOAD_FAILED,
            Error::Embedding { .. } => EMBEDDING_FAILED,
        }
    }
}

/// Shorthand result type for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
