//! Compile tests for `#[leader_role]` and `#[fenced]`.
//!
//! `pass/` files must compile; each `fail/` file holds one mistake and its `.stderr` the exact
//! errors. Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test -p ui-tests`, then
//! read every changed one.

use std::fs;
use std::path::{Path, PathBuf};

#[test]
fn ui() {
    place_schema(&trybuild_project());
    let t = trybuild::TestCases::new();
    t.pass("pass/*.rs");
    t.compile_fail("fail/*.rs");
}

/// trybuild compiles the test files as binaries of a crate it generates at
/// `<target>/tests/trybuild/ui-tests/`, and that is the `CARGO_MANIFEST_DIR` the macros see. So
/// that `#[leader_role]` and `#[fenced]` read the prepared schema from where they would in a real
/// crate, copy this crate's: `leader-schema.json` and the migrations and `leader-tables.sql` it
/// was prepared from (the macros check it against them).
fn place_schema(project: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"));
    copy_dir(&source.join("migrations"), &project.join("migrations"));
    for file in ["leader-tables.sql", "leader-schema.json"] {
        fs::copy(source.join(file), project.join(file))
            .unwrap_or_else(|e| panic!("copy {file}: {e}"));
    }
}

/// trybuild's crate, under the target directory.
fn trybuild_project() -> PathBuf {
    // Cargo gives integration tests `<target>/tmp`; trybuild builds under `<target>/tests`.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target directory");
    target.join("tests").join("trybuild").join("ui-tests")
}

fn copy_dir(from: &Path, to: &Path) {
    let _ = fs::remove_dir_all(to);
    fs::create_dir_all(to).expect("create the migrations folder");
    let mut files: Vec<PathBuf> = fs::read_dir(from)
        .expect("read the migrations fixtures")
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    files.sort();
    for file in files {
        let name = file.file_name().expect("a file name");
        fs::copy(&file, to.join(name)).expect("copy a migration");
    }
}
