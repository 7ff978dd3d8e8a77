//! [`DiscoveryConfig`]: the `context_policy.discovery` section that picks the backend
//! behind `tool_search`, and builds it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::backend::{DiscoveryBackend, LocalDiscoveryBackend};
use crate::error::{Error, Result};

/// The files a model directory must hold, in the order [`check_model_dir`] returns them.
pub const MODEL_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Checks that `dir` holds every one of [`MODEL_FILES`] as a regular file (symlinks
/// followed) and returns their paths. Reads nothing.
///
/// ```
/// use iris_discovery::check_model_dir;
/// let err = check_model_dir(std::path::Path::new("/no/such/model")).unwrap_err();
/// assert_eq!(err.code(), "MODEL_MISSING");
/// assert!(err.to_string().contains("/no/such/model/config.json"));
/// ```
///
/// # Errors
/// [`Error::ModelMissing`] (`MODEL_MISSING`) naming the first file that is missing or
/// not a regular file.
pub fn check_model_dir(dir: &Path) -> Result<[PathBuf; 3]> {
    let paths = MODEL_FILES.map(|f| dir.join(f));
    for path in &paths {
        if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
            return Err(Error::ModelMissing { path: path.clone() });
        }
    }
    Ok(paths)
}

/// The folder name of the all-MiniLM-L6-v2 model inside the user's model cache.
pub const DEFAULT_MODEL_NAME: &str = "all-minilm-l6-v2";

/// The user's model cache folder for the default model, from the environment:
/// `$XDG_CACHE_HOME/iris/models/all-minilm-l6-v2`, else
/// `$HOME/.cache/iris/models/all-minilm-l6-v2`; `None` when neither is set (or both are
/// empty). `backend: hybrid` without `model_path` reads the model from here.
pub fn default_model_dir() -> Option<PathBuf> {
    model_cache_dir(
        std::env::var_os("XDG_CACHE_HOME").as_deref(),
        std::env::var_os("HOME").as_deref(),
    )
}

/// [`default_model_dir`] for the given `XDG_CACHE_HOME` and `HOME` values.
///
/// ```
/// use iris_discovery::model_cache_dir;
/// use std::{ffi::OsStr, path::Path};
/// let dir = model_cache_dir(None, Some(OsStr::new("/home/u"))).unwrap();
/// assert_eq!(dir, Path::new("/home/u/.cache/iris/models/all-minilm-l6-v2"));
/// let dir = model_cache_dir(Some(OsStr::new("/c")), Some(OsStr::new("/home/u"))).unwrap();
/// assert_eq!(dir, Path::new("/c/iris/models/all-minilm-l6-v2"));
/// assert_eq!(model_cache_dir(Some(OsStr::new("")), None), None);
/// ```
pub fn model_cache_dir(
    xdg_cache_home: Option<&std::ffi::OsStr>,
    home: Option<&std::ffi::OsStr>,
) -> Option<PathBuf> {
    Some(
        iris_cache(xdg_cache_home, home)?
            .join("models")
            .join(DEFAULT_MODEL_NAME),
    )
}

/// The user's folder of tool vectors kept across runs by the hybrid backend (one file
/// per model, `vectors::VectorCache`): `$XDG_CACHE_HOME/iris/vectors`, else
/// `$HOME/.cache/iris/vectors`; `None` when neither is set (or both are empty).
pub fn default_vector_dir() -> Option<PathBuf> {
    vector_cache_dir(
        std::env::var_os("XDG_CACHE_HOME").as_deref(),
        std::env::var_os("HOME").as_deref(),
    )
}

/// [`default_vector_dir`] for the given `XDG_CACHE_HOME` and `HOME` values.
///
/// ```
/// use iris_discovery::vector_cache_dir;
/// use std::{ffi::OsStr, path::Path};
/// let dir = vector_cache_dir(None, Some(OsStr::new("/home/u"))).unwrap();
/// assert_eq!(dir, Path::new("/home/u/.cache/iris/vectors"));
/// assert_eq!(vector_cache_dir(None, None), None);
/// ```
pub fn vector_cache_dir(
    xdg_cache_home: Option<&std::ffi::OsStr>,
    home: Option<&std::ffi::OsStr>,
) -> Option<PathBuf> {
    Some(iris_cache(xdg_cache_home, home)?.join("vectors"))
}

/// `$XDG_CACHE_HOME/iris`, else `$HOME/.cache/iris`.
fn iris_cache(
    xdg_cache_home: Option<&std::ffi::OsStr>,
    home: Option<&std::ffi::OsStr>,
) -> Option<PathBuf> {
    let cache = match (xdg_cache_home, home) {
        (Some(xdg), _) if !xdg.is_empty() => PathBuf::from(xdg),
        (_, Some(home)) if !home.is_empty() => PathBuf::from(home).join(".cache"),
        _ => return None,
    };
    Some(cache.join("iris"))
}

/// Which backend answers `tool_search`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// Lexical ranking ([`LocalDiscoveryBackend`]). The default.
    #[default]
    Local,
    /// Lexical + embedding ranking (`HybridDiscoveryBackend`, the `embed` feature); the
    /// model is `model_path`, else the user's model cache ([`default_model_dir`]).
    Hybrid,
    /// A decision model (`iris-decision`); built by the runner, not here.
    Decision,
}

/// The `context_policy.discovery` section: `{backend: local | hybrid | decision,
/// model_path: …}`. Unknown fields are rejected.
///
/// `model_path` is the directory of a sentence-embedding model ([`MODEL_FILES`]); `hybrid`
/// reads it, or the user's model cache ([`default_model_dir`]) when it is left out, and
/// the other backends refuse it (nothing would read it). A relative path is resolved
/// against the `base` directory given to [`check`] and [`build`] (the runner passes the
/// agent file's directory).
///
/// [`check`]: DiscoveryConfig::check
/// [`build`]: DiscoveryConfig::build
///
/// ```
/// use iris_discovery::{BackendKind, DiscoveryConfig};
/// use std::path::Path;
///
/// let local: DiscoveryConfig = serde_json::from_str("{}").unwrap();
/// assert_eq!(local.backend, BackendKind::Local);
/// assert!(local.check(Path::new(".")).is_ok());
///
/// let hybrid: DiscoveryConfig =
///     serde_json::from_str(r#"{"backend": "hybrid", "model_path": "/no/such/model"}"#).unwrap();
/// let err = hybrid.check(Path::new(".")).unwrap_err();
/// # #[cfg(feature = "embed")]
/// assert_eq!(err.code(), "MODEL_MISSING");
/// # #[cfg(not(feature = "embed"))]
/// # assert_eq!(err.code(), "INVALID_CONFIG");
///
/// assert!(serde_json::from_str::<DiscoveryConfig>(r#"{"backend": "bm25"}"#).is_err());
/// assert!(serde_json::from_str::<DiscoveryConfig>(r#"{"model": "x"}"#).is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DiscoveryConfig {
    /// The backend. Default `local`.
    pub backend: BackendKind,
    /// The embedding model's directory (`hybrid` only).
    pub model_path: Option<PathBuf>,
}

/// What [`DiscoveryConfig::build`] produced.
#[derive(Debug, Clone)]
pub enum BuiltBackend {
    /// A ready backend, for `ToolSearchTool::with_backend`.
    Ready(Arc<dyn DiscoveryBackend>),
    /// `backend: decision`: the runner builds the decision backend (`iris-decision`).
    Decision,
}

impl DiscoveryConfig {
    /// The model directory: `model_path` resolved against `base` when relative; for
    /// `hybrid` without one, the user's model cache ([`default_model_dir`]).
    pub fn model_dir(&self, base: &Path) -> Option<PathBuf> {
        match (&self.model_path, self.backend) {
            (Some(p), _) => Some(base.join(p)),
            (None, BackendKind::Hybrid) => default_model_dir(),
            (None, _) => None,
        }
    }

    /// Checks the section without loading anything: `hybrid` has a `model_path` whose
    /// directory holds the model files and this build has the `embed` feature; the
    /// other backends have no `model_path`. What `iris check` reports.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] (`INVALID_CONFIG`) naming
    /// `context_policy.discovery.model_path` or `.backend`; [`Error::ModelMissing`]
    /// (`MODEL_MISSING`) naming the missing file.
    pub fn check(&self, base: &Path) -> Result<()> {
        let field = |name: &str, reason: &str| Error::InvalidConfig {
            field: format!("context_policy.discovery.{name}"),
            reason: reason.to_owned(),
        };
        match self.backend {
            BackendKind::Local | BackendKind::Decision => {
                if self.model_path.is_some() {
                    return Err(field(
                        "model_path",
                        "is only read by `backend: hybrid`; remove it or switch the backend",
                    ));
                }
                Ok(())
            }
            BackendKind::Hybrid => {
                let Some(dir) = self.model_dir(base) else {
                    return Err(field(
                        "model_path",
                        "is required by `backend: hybrid` when neither XDG_CACHE_HOME nor \
                         HOME names a model cache (a directory with config.json, \
                         tokenizer.json and model.safetensors)",
                    ));
                };
                if !cfg!(feature = "embed") {
                    return Err(field(
                        "backend",
                        "`hybrid` needs iris-discovery built with the `embed` feature",
                    ));
                }
                check_model_dir(&dir).map(|_| ())
            }
        }
    }

    /// Checks the section (see [`check`](Self::check)) and builds its backend: `local`
    /// at once, `hybrid` by loading the model (about a second for MiniLM), with its tool
    /// vectors kept in the user's cache ([`default_vector_dir`]) when there is one;
    /// `decision` is left to the runner.
    ///
    /// # Errors
    /// Whatever [`check`](Self::check) returns, and [`Error::ModelLoad`]
    /// (`MODEL_LOAD_FAILED`) when the model files do not load.
    pub fn build(&self, base: &Path) -> Result<BuiltBackend> {
        self.check(base)?;
        match self.backend {
            BackendKind::Local => Ok(BuiltBackend::Ready(Arc::new(LocalDiscoveryBackend::new()))),
            BackendKind::Decision => Ok(BuiltBackend::Decision),
            BackendKind::Hybrid => self.build_hybrid(base),
        }
    }

    #[cfg(feature = "embed")]
    fn build_hybrid(&self, base: &Path) -> Result<BuiltBackend> {
        let dir = self.model_dir(base).unwrap_or_default();
        let model = crate::embed::EmbeddingModel::load(dir)?;
        let mut backend = crate::hybrid::HybridDiscoveryBackend::new(Arc::new(model));
        if let Some(vectors) = default_vector_dir() {
            backend = backend.with_vector_cache(vectors);
        }
        Ok(BuiltBackend::Ready(Arc::new(backend)))
    }

    #[cfg(not(feature = "embed"))]
    fn build_hybrid(&self, _base: &Path) -> Result<BuiltBackend> {
        // `check` refuses `hybrid` without the feature before this is reached.
        Err(Error::InvalidConfig {
            field: "context_policy.discovery.backend".to_owned(),
            reason: "`hybrid` needs iris-discovery built with the `embed` feature".to_owned(),
        })
    }
}
