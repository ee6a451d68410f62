//! The Rust side's generator (`tools/send-generator`), compiled: every generated `#[fenced]`
//! body goes through rustc and the real macro, in one crate of two programs built with one
//! `cargo check`: the bodies without the attribute, every one of which must compile (so the
//! generator writes Rust, and a refusal below is the macro's, not a type error), and the same
//! bodies under `#[fenced]`. Each compiler error is laid at the door of the body whose lines it
//! points at; the bodies with an error are the refused ones. A body the contract refuses that
//! compiles is a hole; a readable, fenced body that does not is a false rejection; the test
//! fails on either, and prints the figures.
//!
//! Left out: the `sqlx::query!` bodies, which need a database with the claim's table to compile
//! (`leader-macros`' run of the macro's steps covers them).
//!
//! The crate is written under the target directory beside trybuild's and checked as trybuild
//! checks its crate (its target directory, the workspace's lock file, the same dependencies,
//! target and flags: [`TRYBUILD_RUSTFLAGS`]), so the two share their dependencies' builds; were
//! trybuild to change its flags, this would cost a build of them, not a wrong verdict.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use send_generator::{Case, Form, cases, program};

/// The workspace dependencies the crate takes, as trybuild's does.
const DEPENDENCIES: [&str; 4] = ["async-trait", "chrono", "sqlx", "tokio"];

/// The flags trybuild 1.0 builds with (its `rustflags.rs`).
const TRYBUILD_RUSTFLAGS: &str = r#"["--cfg", "trybuild", "--verbose", "-A", "dead_code"]"#;

#[test]
fn every_generated_body_compiles_and_gets_the_verdict_the_contract_gives_it() {
    let cases: Vec<Case> = cases()
        .into_iter()
        .filter(|case| case.form != Form::QueryMacro)
        .collect();
    let (fenced, fenced_lines) = program(&cases, "#[fenced]");
    let (plain, plain_lines) = program(&cases, "");
    let project = write_project(&fenced, &plain);
    let errors = check(&project);

    let plain_errors: Vec<&Error> = errors.iter().filter(|e| e.program == "plain").collect();
    assert!(
        plain_errors.is_empty(),
        "{} errors in the bodies without `#[fenced]` (the generator must write Rust); the \
         first, in {:?}:\n{}",
        plain_errors.len(),
        plain_errors[0]
            .line
            .and_then(|l| body_at(&plain_lines, l))
            .map(|i| cases[i]),
        plain_errors[0].rendered
    );

    let mut refused = BTreeSet::new();
    for error in errors.iter().filter(|e| e.program == "fenced") {
        match error.line.and_then(|line| body_at(&fenced_lines, line)) {
            Some(body) => {
                refused.insert(body);
            }
            None => panic!("an error outside every body:\n{}", error.rendered),
        }
    }
    let must_refuse = cases.iter().filter(|c| c.must_refuse()).count();
    let holes: Vec<usize> = (0..cases.len())
        .filter(|i| cases[*i].must_refuse() && !refused.contains(i))
        .collect();
    let false_rejections: Vec<usize> = (0..cases.len())
        .filter(|i| !cases[*i].must_refuse() && refused.contains(i))
        .collect();
    let report = format!(
        "{} bodies compiled ({} readable and fenced), {} refused; {} accepted against the \
         contract; {} readable, fenced bodies refused",
        cases.len(),
        cases.len() - must_refuse,
        refused.len(),
        holes.len(),
        false_rejections.len()
    );
    println!("{report}");
    assert!(
        holes.is_empty(),
        "{report}\nthe first accepted against the contract, {:?}:\n{}",
        cases[holes[0]],
        cases[holes[0]].source("claim")
    );
    assert!(
        false_rejections.is_empty(),
        "{report}\nthe first readable, fenced body refused, {:?}:\n{}\n{}",
        cases[false_rejections[0]],
        cases[false_rejections[0]].source("claim"),
        errors_of(&errors, &fenced_lines, false_rejections[0])
    );
}

/// The body whose lines hold `line`.
fn body_at(lines: &[std::ops::Range<usize>], line: usize) -> Option<usize> {
    lines.iter().position(|range| range.contains(&line))
}

/// The rendered errors of `fenced`'s body `body`.
fn errors_of(errors: &[Error], lines: &[std::ops::Range<usize>], body: usize) -> String {
    errors
        .iter()
        .filter(|e| e.program == "fenced" && e.line.and_then(|l| body_at(lines, l)) == Some(body))
        .map(|e| e.rendered.as_str())
        .collect()
}

/// A compiler error: the program it is in, the line of its primary span there, and its text.
struct Error {
    program: String,
    line: Option<usize>,
    rendered: String,
}

/// The target directory this test was built in (`CARGO_TARGET_TMPDIR` is its `tmp`).
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target directory")
        .to_owned()
}

/// Writes the crate: its manifest, the workspace's lock file and the two programs.
fn write_project(fenced: &str, plain: &str) -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("ui-tests is in the workspace");
    let project = target_dir().join("tests").join("generated-sends");
    fs::create_dir_all(&project).expect("create the generated crate's folder");
    let manifest = fs::read_to_string(workspace.join("Cargo.toml")).expect("read Cargo.toml");
    let mut dependencies: Vec<String> = DEPENDENCIES
        .iter()
        .map(|name| workspace_dependency(&manifest, name))
        .collect();
    dependencies.push(format!(
        "leader-runtime = {{ path = {:?} }}",
        workspace.join("leader-runtime").display().to_string()
    ));
    let toml = format!(
        "[package]\nname = \"generated-sends\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
         publish = false\n\n[dependencies]\n{}\n\n\
         [[bin]]\nname = \"fenced\"\npath = \"fenced.rs\"\n\n\
         [[bin]]\nname = \"plain\"\npath = \"plain.rs\"\n\n[workspace]\n",
        dependencies.join("\n")
    );
    write_if_changed(&project.join("Cargo.toml"), &toml);
    let lock = fs::read_to_string(workspace.join("Cargo.lock")).expect("read Cargo.lock");
    write_if_changed(&project.join("Cargo.lock"), &lock);
    write_if_changed(&project.join("fenced.rs"), fenced);
    write_if_changed(&project.join("plain.rs"), plain);
    place_schema(&project);
    project
}

/// `#[fenced]` reads the prepared schema next to the crate's manifest: the bodies are checked
/// against this crate's (`leader-schema.json`, with the migrations and `leader-tables.sql` it was
/// prepared from, which the macro checks it against).
fn place_schema(project: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![
        PathBuf::from("leader-tables.sql"),
        PathBuf::from("leader-schema.json"),
    ];
    for entry in fs::read_dir(source.join("migrations")).expect("read ui-tests/migrations") {
        let name = entry.expect("a directory entry").file_name();
        files.push(Path::new("migrations").join(name));
    }
    fs::create_dir_all(project.join("migrations")).expect("create the migrations folder");
    for file in files {
        let text = fs::read_to_string(source.join(&file))
            .unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
        write_if_changed(&project.join(&file), &text);
    }
}

/// The line `name = …` of the workspace manifest's `[workspace.dependencies]`.
fn workspace_dependency(manifest: &str, name: &str) -> String {
    let section = manifest
        .split("[workspace.dependencies]")
        .nth(1)
        .expect("the workspace manifest has [workspace.dependencies]");
    section
        .lines()
        .take_while(|line| !line.starts_with('['))
        .find(|line| line.split('=').next().is_some_and(|key| key.trim() == name))
        .unwrap_or_else(|| panic!("[workspace.dependencies] has no {name}"))
        .to_owned()
}

/// Writes `text` unless the file holds it already, so an unchanged crate is not rebuilt.
fn write_if_changed(path: &Path, text: &str) {
    if fs::read_to_string(path).ok().as_deref() != Some(text) {
        fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }
}

/// The host's target triple, from `rustc -vV`.
fn host_target() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let output = Command::new(rustc)
        .arg("-vV")
        .output()
        .expect("run rustc -vV");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_owned()
}

/// Checks both programs and returns every error, from cargo's JSON messages.
fn check(project: &Path) -> Vec<Error> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let host = host_target();
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
    let mut errors = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if message["reason"] != "compiler-message" || message["message"]["level"] != "error" {
            continue;
        }
        let diagnostic = &message["message"];
        let spans = diagnostic["spans"].as_array().cloned().unwrap_or_default();
        if spans.is_empty() {
            // "aborting due to N previous errors" and the like.
            continue;
        }
        let primary = spans
            .iter()
            .find(|s| s["is_primary"] == true)
            .unwrap_or(&spans[0]);
        errors.push(Error {
            program: message["target"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            line: primary["line_start"]
                .as_u64()
                .and_then(|l| usize::try_from(l).ok()),
            rendered: diagnostic["rendered"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        });
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() || !errors.is_empty(),
        "cargo check failed without a compiler error:\n{stderr}"
    );
    errors
}
