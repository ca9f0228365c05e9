//! Temporary directories for the tests' store files, removed when dropped.

use std::path::{Path, PathBuf};

/// A fresh directory under the system's temporary directory, removed (with what it holds)
/// when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    /// A new empty directory whose name starts with `agent-<label>-`.
    pub fn new(label: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("agent-{label}-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The path of the file `name` in the directory, as the text a store spec takes.
    pub fn file(&self, name: &str) -> String {
        self.0.join(name).to_str().expect("utf-8 path").to_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
