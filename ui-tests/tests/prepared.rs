//! The errors of a crate whose prepared schema is missing or out of date, as a user's build
//! shows them: one `#[fenced]` function in a crate of its own (trybuild's crate has one schema
//! for every case, so these two cannot be among its cases), checked with `cargo check` as
//! `tests/generated_sends.rs` checks its crate (the same target directory and flags, so the two
//! share their dependencies' builds). The rendered errors must be `prepared/missing.stderr` and
//! `prepared/stale.stderr`; `UPDATE_EXPECT=1` writes them.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The flags trybuild 1.0 builds with (its `rustflags.rs`).
const TRYBUILD_RUSTFLAGS: &str = r#"["--cfg", "trybuild", "--verbose", "-A", "dead_code"]"#;

const CLAIM: &str = r#"use leader_runtime::{Fence, fenced};

#[fenced]
async fn claim(pool: &sqlx::PgPool, fence: Fence) -> sqlx::Result<()> {
    sqlx::query("UPDATE jobs SET runs = runs + 1 WHERE leader_fence($1, $2)")
        .bind(fence.role())
        .bind(fence.token())
        .execute(pool)
        .await?;
    Ok(())
}

fn main() {
    let _ = claim;
}
"#;

#[test]
fn a_missing_or_stale_schema_is_an_error_naming_the_command() {
    let project = write_project();
    let source = Path::new(env!("CARGO_MANIFEST_DIR"));

    // No file: the user's first build.
    let _ = fs::remove_file(project.join("leader-schema.json"));
    compare(&check(&project), &source.join("prepared/missing.stderr"));

    // The file, then a migration changed after it was prepared.
    fs::copy(
        source.join("leader-schema.json"),
        project.join("leader-schema.json"),
    )
    .expect("copy the prepared schema");
    fs::write(
        project.join("migrations/0004_tables.sql"),
        fs::read_to_string(source.join("migrations/0004_tables.sql")).unwrap()
            + "\nALTER TABLE jobs ADD COLUMN later text;\n",
    )
    .unwrap();
    compare(&check(&project), &source.join("prepared/stale.stderr"));

    // Current: it compiles.
    copy_fixtures(&project);
    assert_eq!(check(&project), "", "a current schema compiles");
}

fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target directory")
        .to_owned()
}

/// The crate: manifest, the workspace's lock file, the program and this crate's migrations.
fn write_project() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("ui-tests is in the workspace");
    let project = target_dir().join("tests").join("prepared-schema");
    fs::create_dir_all(&project).expect("create the crate's folder");
    let manifest = fs::read_to_string(workspace.join("Cargo.toml")).expect("read Cargo.toml");
    let sqlx = manifest
        .lines()
        .find(|line| line.starts_with("sqlx = "))
        .expect("the workspace names sqlx");
    let toml = format!(
        "[package]\nname = \"prepared-schema\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
         publish = false\n\n[dependencies]\n{sqlx}\nleader-runtime = {{ path = {:?} }}\n\n\
         [[bin]]\nname = \"claim\"\npath = \"claim.rs\"\n\n[workspace]\n",
        workspace.join("leader-runtime").display().to_string()
    );
    fs::write(project.join("Cargo.toml"), toml).unwrap();
    fs::copy(workspace.join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
    fs::write(project.join("claim.rs"), CLAIM).unwrap();
    copy_fixtures(&project);
    project
}

/// This crate's migrations and `leader-tables.sql`, as they are.
fn copy_fixtures(project: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"));
    let _ = fs::remove_dir_all(project.join("migrations"));
    fs::create_dir_all(project.join("migrations")).unwrap();
    for entry in fs::read_dir(source.join("migrations")).unwrap() {
        let path = entry.unwrap().path();
        fs::copy(
            &path,
            project.join("migrations").join(path.file_name().unwrap()),
        )
        .unwrap();
    }
    fs::copy(
        source.join("leader-tables.sql"),
        project.join("leader-tables.sql"),
    )
    .unwrap();
}

/// The rendered errors of `cargo check`, the crate's directory written as `$DIR`.
fn check(project: &Path) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let host = String::from_utf8_lossy(&Command::new(rustc).arg("-vV").output().unwrap().stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: ").map(str::to_owned))
        .expect("rustc -vV names the host");
    // An edit of a migration rebuilds the crate because the first expansion includes it: touch
    // the program anyway, so each step is checked whatever the file times say.
    fs::write(project.join("claim.rs"), CLAIM).unwrap();
    let output = Command::new(cargo)
        .current_dir(project)
        .args([
            "check",
            "--quiet",
            "--offline",
            "--bins",
            "--message-format=json",
        ])
        .args(["--target", &host])
        .arg(format!("--config=build.rustflags={TRYBUILD_RUSTFLAGS}"))
        .arg(format!(
            "--config=target.{host}.rustflags={TRYBUILD_RUSTFLAGS}"
        ))
        .env(
            "CARGO_TARGET_DIR",
            target_dir().join("tests").join("trybuild"),
        )
        .env("CARGO_INCREMENTAL", "0")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run cargo check");
    let mut rendered = String::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if message["reason"] == "compiler-message"
            && message["message"]["level"] == "error"
            && message["message"]["spans"]
                .as_array()
                .is_some_and(|s| !s.is_empty())
        {
            rendered.push_str(message["message"]["rendered"].as_str().unwrap_or_default());
        }
    }
    rendered.replace(project.to_str().expect("a UTF-8 path"), "$DIR")
}

fn compare(actual: &str, expected: &Path) {
    if std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1") {
        fs::create_dir_all(expected.parent().unwrap()).unwrap();
        fs::write(expected, actual).unwrap();
        return;
    }
    let wanted = fs::read_to_string(expected)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_EXPECT=1 writes it)", expected.display()));
    assert_eq!(
        actual,
        wanted,
        "{} (UPDATE_EXPECT=1 rewrites it)",
        expected.display()
    );
}
