//! Config discovery and workspace trust: which folders' *discovered* agent configs may
//! start processes.
//!
//! A cloned repository can ship an `iris.yaml` whose MCP servers and command hooks are
//! arbitrary programs. A host that finds a config by discovery ([`discover_config`]:
//! `./iris.yaml`, else `.iris/agent.yaml`) must therefore not assemble it unless the
//! folder it found it in is trusted: listed in the user's trusted-folders file
//! ([`TrustStore`], `$XDG_CONFIG_HOME/iris/trusted.json`, else
//! `~/.config/iris/trusted.json`) or trusted for one run by the user (`iris --trust`).
//! A config named explicitly (`iris --config FILE`) counts as trusted: the user chose it.
//!
//! Trust is per folder and exact: trusting `/home/me/src` does not trust
//! `/home/me/src/cloned-repo`. Folders are stored and compared canonical (symlinks
//! resolved), so a symlink to a trusted folder is that folder, and a folder renamed away
//! from a trusted path is no longer trusted.
//!
//! ```
//! use iris_runner::trust::{TrustStore, discover_config};
//!
//! let home = tempfile::tempdir()?;
//! let repo = tempfile::tempdir()?;
//! std::fs::write(repo.path().join("iris.yaml"), "tools: {builtin: [exec.command]}\n")?;
//! assert_eq!(discover_config(repo.path()), Some(repo.path().join("iris.yaml")));
//!
//! let file = home.path().join("iris/trusted.json");
//! let mut store = TrustStore::load(&file)?; // a missing file is an empty list
//! assert!(!store.is_trusted(repo.path()));
//! store.trust(repo.path())?;
//! store.save()?;
//! assert!(TrustStore::load(&file)?.is_trusted(repo.path()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Stable codes of the trust errors.
pub mod codes {
    /// A config was found by discovery in a folder that is not trusted; nothing started.
    pub const WORKSPACE_UNTRUSTED: &str = "WORKSPACE_UNTRUSTED";
    /// The trusted-folders file cannot be read or is not a trusted-folders list.
    pub const TRUST_STORE_INVALID: &str = "TRUST_STORE_INVALID";
    /// The trusted-folders file cannot be written.
    pub const TRUST_STORE_WRITE_FAILED: &str = "TRUST_STORE_WRITE_FAILED";
    /// Neither `XDG_CONFIG_HOME` nor `HOME` names a folder for the trusted-folders file.
    pub const TRUST_STORE_UNAVAILABLE: &str = "TRUST_STORE_UNAVAILABLE";
    /// The folder to trust or untrust does not exist or is not a directory.
    pub const TRUST_FOLDER_INVALID: &str = "TRUST_FOLDER_INVALID";
}

/// The files discovery looks for, in order, relative to the folder it runs in.
pub const DISCOVERED_CONFIGS: [&str; 2] = ["iris.yaml", ".iris/agent.yaml"];

/// The largest trusted-folders file [`TrustStore::load`] reads.
pub const TRUST_FILE_MAX_BYTES: u64 = 1024 * 1024;

/// The first of [`DISCOVERED_CONFIGS`] that is a regular file under `dir`, as
/// `dir.join(candidate)` (so `discover_config(Path::new(""))` returns a path relative
/// to the current directory, as a user would write it).
pub fn discover_config(dir: &Path) -> Option<PathBuf> {
    DISCOVERED_CONFIGS
        .iter()
        .map(|candidate| dir.join(candidate))
        .find(|path| path.is_file())
}

/// A trust problem: the trusted-folders file or the folder named.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// The trusted-folders file cannot be read, is too large, or has the wrong shape.
    #[error("{}: not a readable trusted-folders file: {message}", file.display())]
    Invalid {
        /// The trusted-folders file.
        file: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The trusted-folders file cannot be written.
    #[error("{}: cannot save the trusted folders: {message}", file.display())]
    Write {
        /// The trusted-folders file.
        file: PathBuf,
        /// The I/O reason.
        message: String,
    },
    /// No folder for the trusted-folders file is known.
    #[error(
        "no place for the trusted-folders file: neither XDG_CONFIG_HOME nor HOME is set to an absolute path"
    )]
    Unavailable,
    /// The folder to trust does not exist or is not a directory.
    #[error("{}: {message}", folder.display())]
    Folder {
        /// The folder as given.
        folder: PathBuf,
        /// What is wrong with it.
        message: String,
    },
}

impl TrustError {
    /// The stable code of this error (see [`codes`]).
    pub fn code(&self) -> &'static str {
        match self {
            TrustError::Invalid { .. } => codes::TRUST_STORE_INVALID,
            TrustError::Write { .. } => codes::TRUST_STORE_WRITE_FAILED,
            TrustError::Unavailable => codes::TRUST_STORE_UNAVAILABLE,
            TrustError::Folder { .. } => codes::TRUST_FOLDER_INVALID,
        }
    }
}

/// The file's shape: `{"version": 1, "folders": ["/canonical/path", …]}`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TrustFile {
    #[serde(default = "version")]
    version: u32,
    #[serde(default)]
    folders: Vec<PathBuf>,
}

fn version() -> u32 {
    1
}

/// The user's trusted folders, loaded from and saved to one JSON file.
#[derive(Debug, Clone)]
pub struct TrustStore {
    file: PathBuf,
    folders: BTreeSet<PathBuf>,
}

impl TrustStore {
    /// The trusted-folders file of this process's user: `$XDG_CONFIG_HOME/iris/trusted.json`
    /// when `XDG_CONFIG_HOME` is an absolute path, else `$HOME/.config/iris/trusted.json`
    /// when `HOME` is, else `None`.
    pub fn default_file() -> Option<PathBuf> {
        Self::file_from(
            std::env::var_os("XDG_CONFIG_HOME").as_deref(),
            std::env::var_os("HOME").as_deref(),
        )
    }

    /// [`TrustStore::default_file`] from explicit values (relative or empty values are
    /// ignored, as the XDG base-directory rules say).
    ///
    /// ```
    /// use std::ffi::OsStr;
    /// use std::path::PathBuf;
    /// use iris_runner::trust::TrustStore;
    ///
    /// let file = TrustStore::file_from(Some(OsStr::new("/x")), Some(OsStr::new("/home/u")));
    /// assert_eq!(file, Some(PathBuf::from("/x/iris/trusted.json")));
    /// let file = TrustStore::file_from(Some(OsStr::new("rel")), Some(OsStr::new("/home/u")));
    /// assert_eq!(file, Some(PathBuf::from("/home/u/.config/iris/trusted.json")));
    /// assert_eq!(TrustStore::file_from(None, Some(OsStr::new(""))), None);
    /// ```
    pub fn file_from(xdg_config_home: Option<&OsStr>, home: Option<&OsStr>) -> Option<PathBuf> {
        fn absolute(v: Option<&OsStr>) -> Option<&Path> {
            v.map(Path::new).filter(|p| p.is_absolute())
        }
        absolute(xdg_config_home)
            .map(Path::to_path_buf)
            .or_else(|| absolute(home).map(|h| h.join(".config")))
            .map(|dir| dir.join("iris").join("trusted.json"))
    }

    /// Loads `file`; a missing file is an empty list.
    ///
    /// # Errors
    /// [`TrustError::Invalid`] when the file is not a regular file, is larger than
    /// [`TRUST_FILE_MAX_BYTES`], cannot be read, is not the expected JSON, or lists a
    /// folder that is not an absolute path.
    pub fn load(file: impl Into<PathBuf>) -> Result<Self, TrustError> {
        let file = file.into();
        let invalid = |message: String| TrustError::Invalid {
            file: file.clone(),
            message,
        };
        let meta = match std::fs::metadata(&file) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self {
                    file,
                    folders: BTreeSet::new(),
                });
            }
            Err(e) => return Err(invalid(e.to_string())),
        };
        // A FIFO or a device would block or never end; neither is a list of folders.
        if !meta.is_file() {
            return Err(invalid("not a regular file".into()));
        }
        if meta.len() > TRUST_FILE_MAX_BYTES {
            return Err(invalid(format!("larger than {TRUST_FILE_MAX_BYTES} bytes")));
        }
        let mut bytes = Vec::new();
        std::fs::File::open(&file)
            .and_then(|f| f.take(TRUST_FILE_MAX_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|e| invalid(e.to_string()))?;
        if bytes.len() as u64 > TRUST_FILE_MAX_BYTES {
            return Err(invalid(format!("larger than {TRUST_FILE_MAX_BYTES} bytes")));
        }
        let shape = |e: String| {
            invalid(format!(
                "expected {{\"version\": 1, \"folders\": [\"/absolute/path\", …]}}: {e}"
            ))
        };
        // An object only: serde would also read a struct from a JSON array.
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| shape(e.to_string()))?;
        if !value.is_object() {
            return Err(shape("not a JSON object".into()));
        }
        let parsed: TrustFile = serde_json::from_value(value).map_err(|e| shape(e.to_string()))?;
        if parsed.version != 1 {
            return Err(invalid(format!(
                "version {} is not supported (expected 1)",
                parsed.version
            )));
        }
        if let Some((i, _)) = parsed
            .folders
            .iter()
            .enumerate()
            .find(|(_, f)| !f.is_absolute())
        {
            return Err(invalid(format!("folders[{i}] is not an absolute path")));
        }
        Ok(Self {
            file,
            folders: parsed.folders.into_iter().collect(),
        })
    }

    /// The file this store loads from and saves to.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The trusted folders, canonical, sorted.
    pub fn folders(&self) -> impl Iterator<Item = &Path> {
        self.folders.iter().map(PathBuf::as_path)
    }

    /// Whether `folder` (canonicalized first) is listed. A folder that cannot be
    /// canonicalized (it does not exist) is not trusted.
    pub fn is_trusted(&self, folder: &Path) -> bool {
        std::fs::canonicalize(folder).is_ok_and(|c| self.folders.contains(&c))
    }

    /// Adds `folder`, canonical; returns it and whether it was new. Call
    /// [`TrustStore::save`] to keep it.
    ///
    /// # Errors
    /// [`TrustError::Folder`] when `folder` does not exist or is not a directory.
    pub fn trust(&mut self, folder: &Path) -> Result<(PathBuf, bool), TrustError> {
        let canonical = canonical_dir(folder)?;
        let added = self.folders.insert(canonical.clone());
        Ok((canonical, added))
    }

    /// Removes `folder` (canonicalized when it still exists, else as given); returns
    /// the path removed and whether it was listed. Call [`TrustStore::save`] to keep it.
    pub fn untrust(&mut self, folder: &Path) -> (PathBuf, bool) {
        let key = std::fs::canonicalize(folder)
            .or_else(|_| std::path::absolute(folder))
            .unwrap_or_else(|_| folder.to_path_buf());
        let removed = self.folders.remove(&key);
        (key, removed)
    }

    /// Writes the list: a temporary file beside it, then one rename, so a reader sees
    /// the old list or the new one. Creates the parent folders.
    ///
    /// # Errors
    /// [`TrustError::Write`] on any I/O failure.
    pub fn save(&self) -> Result<(), TrustError> {
        let failed = |e: std::io::Error| TrustError::Write {
            file: self.file.clone(),
            message: e.to_string(),
        };
        let parent = self
            .file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(failed)?;
        let body = TrustFile {
            version: 1,
            folders: self.folders.iter().cloned().collect(),
        };
        let mut text =
            serde_json::to_string_pretty(&body).map_err(|e| failed(std::io::Error::other(e)))?;
        text.push('\n');
        let name = self
            .file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "trusted.json".into());
        let temp = parent.join(format!(".{name}.{}.tmp", std::process::id()));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .and_then(|mut f| {
                f.write_all(text.as_bytes())?;
                f.sync_all()
            })
            .and_then(|()| std::fs::rename(&temp, &self.file));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(failed(e));
        }
        Ok(())
    }
}

fn canonical_dir(folder: &Path) -> Result<PathBuf, TrustError> {
    let err = |message: String| TrustError::Folder {
        folder: folder.to_path_buf(),
        message,
    };
    let canonical = std::fs::canonicalize(folder).map_err(|e| err(e.to_string()))?;
    if !canonical.is_dir() {
        return Err(err("not a directory".into()));
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn load_rejects_what_is_not_a_list() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("trusted.json");
        for (text, fragment) in [
            ("[]", "expected"),
            (
                r#"{"folders": ["relative"]}"#,
                "folders[0] is not an absolute path",
            ),
            (r#"{"version": 2}"#, "version 2"),
            (r#"{"folders": [], "extra": 1}"#, "unknown field"),
        ] {
            std::fs::write(&file, text).unwrap();
            let err = TrustStore::load(&file).unwrap_err();
            assert_eq!(err.code(), codes::TRUST_STORE_INVALID);
            assert!(err.to_string().contains(fragment), "{text}: {err}");
        }
        std::fs::remove_file(&file).unwrap();
        std::fs::create_dir(&file).unwrap();
        let err = TrustStore::load(&file).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }

    #[test]
    fn trust_is_exact_and_canonical() {
        let dir = tempfile::tempdir().unwrap();
        let parent = dir.path().join("src");
        let child = parent.join("repo");
        std::fs::create_dir_all(&child).unwrap();
        std::os::unix::fs::symlink(&child, dir.path().join("link")).unwrap();
        let mut store = TrustStore::load(dir.path().join("t.json")).unwrap();
        let (canonical, added) = store.trust(&parent).unwrap();
        assert!(added && canonical.is_absolute());
        assert!(!store.trust(&parent).unwrap().1);
        assert!(store.is_trusted(&parent));
        assert!(!store.is_trusted(&child));
        store.trust(&child).unwrap();
        assert!(store.is_trusted(&dir.path().join("link")));
        assert!(store.untrust(&child).1);
        assert!(!store.is_trusted(&dir.path().join("link")));
        let err = store.trust(&dir.path().join("missing")).unwrap_err();
        assert_eq!(err.code(), codes::TRUST_FOLDER_INVALID);
    }
}
