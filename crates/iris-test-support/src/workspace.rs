//! [`Workspace`]: a temporary workspace folder, removed when dropped, with files put
//! in it by relative path.
//!
//! ```
//! use iris_test_support::workspace::Workspace;
//!
//! let ws = Workspace::new().file("src/a.rs", "fn main() {}\n").file("README.md", "# hi\n");
//! assert_eq!(ws.text("src/a.rs"), "fn main() {}\n");
//! assert!(ws.path("README.md").is_file());
//! ```

use std::path::{Path, PathBuf};

/// A temporary workspace; see the module docs.
#[derive(Debug)]
pub struct Workspace {
    dir: tempfile::TempDir,
}

impl Default for Workspace {
    fn default() -> Self {
        Self::new()
    }
}

impl Workspace {
    /// An empty workspace in a fresh temporary folder.
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// Builder form of [`Workspace::put`].
    #[must_use]
    pub fn file(self, rel: &str, content: impl AsRef<[u8]>) -> Self {
        self.put(rel, content);
        self
    }

    /// Writes `content` to `rel`, creating its parent folders.
    pub fn put(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, content).unwrap();
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The absolute path of `rel`.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The text of `rel`.
    pub fn text(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }
}
