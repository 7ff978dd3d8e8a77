//! Shared fixtures: a temporary folder holding an agent YAML and the files it names.

use std::path::{Path, PathBuf};

/// A temporary folder with `iris.yaml` and extra files.
pub(crate) struct Fixture {
    pub(crate) dir: tempfile::TempDir,
}

impl Fixture {
    /// A folder holding `iris.yaml` with `yaml` and each `(relative path, text)` file.
    pub(crate) fn new(yaml: &str, files: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("iris.yaml"), yaml).unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Self { dir }
    }

    pub(crate) fn file(&self) -> PathBuf {
        self.dir.path().join("iris.yaml")
    }

    pub(crate) fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Replaces the temporary folder with `<dir>` so messages are stable in snapshots.
    pub(crate) fn redact(&self, text: &str) -> String {
        let root = std::fs::canonicalize(self.root()).unwrap();
        text.replace(&root.display().to_string(), "<dir>")
            .replace(&self.root().display().to_string(), "<dir>")
    }
}
