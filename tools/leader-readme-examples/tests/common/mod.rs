//! What the tests that read the workspace's files share.

use std::path::{Path, PathBuf};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("leader-readme-examples sits in tools/ of the workspace root")
        .to_path_buf()
}

/// `path`'s text, or a panic naming the file.
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
