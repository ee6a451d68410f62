//! Extracts every ```rust block of the workspace README into `$OUT_DIR/readme_examples.rs`, one
//! module per block, for `src/lib.rs` to compile against its scaffolding.
//!
//! * A block whose first line of code starts with `let` is a function body: it is placed in
//!   `async fn example(url: String) -> Result<(), Box<dyn Error>>`, followed by `Ok(())`.
//! * Any other block is a list of items (`use`, `fn`, `impl`, annotated jobs).
//! * The one item block that defines `async fn main` is the README's program: its `main` is
//!   made `pub` and re-exported as `readme_main`, which `src/bin/readme-main.rs` runs, so a test
//!   can run the README's `main` as a process.
//! * Each block sees the public items of the item blocks before it, as a reader does (the state
//!   type a job block defines is the one the run block builds); the module `readme` re-exports
//!   every item block's public items, for the tests that run the README's claims.
//! * A block marked `ignore`, `no_compile` or `text` after `rust` is refused: every Rust example in
//!   the README compiles.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let readme =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../README.md");
    println!("cargo::rerun-if-changed={}", readme.display());
    let text = std::fs::read_to_string(&readme).expect("the workspace README.md is readable");

    let mut out = String::new();
    let mut lines = text.lines().enumerate();
    let mut starts = Vec::new();
    let mut item_blocks: Vec<usize> = Vec::new();
    let mut main_block: Option<usize> = None;
    while let Some((number, line)) = lines.next() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            continue;
        };
        let fence_is_rust = info.split(',').next() == Some("rust");
        let body: Vec<&str> = lines
            .by_ref()
            .map(|(_, line)| line)
            .take_while(|line| !line.trim_start().starts_with("```"))
            .collect();
        if !fence_is_rust {
            continue;
        }
        let line = number + 1;
        if let Some(mark) = info.split(',').skip(1).find(|m| !m.trim().is_empty()) {
            panic!(
                "README.md:{line}: the rust block is marked `{mark}`; README examples must \
                 compile: remove the marker, or make the block `text`"
            );
        }
        starts.push(line);
        let code = body.join("\n");
        let first = body
            .iter()
            .map(|l| l.trim())
            .find(|l| !l.is_empty() && !l.starts_with("//"))
            .unwrap_or("");
        writeln!(out, "/// README.md, the block at line {line}.").unwrap();
        writeln!(out, "#[allow(unused_imports, dead_code)]").unwrap();
        writeln!(out, "mod readme_line_{line} {{").unwrap();
        writeln!(out, "    use crate::scaffold::*;").unwrap();
        for earlier in &item_blocks {
            writeln!(out, "    use super::readme_line_{earlier}::*;").unwrap();
        }
        if first.starts_with("let ") {
            writeln!(
                out,
                "    pub async fn example(url: String) -> Result<(), Box<dyn std::error::Error>> {{\n\
                 {code}\n        Ok(())\n    }}"
            )
            .unwrap();
        } else if code.contains("\nasync fn main(") {
            if let Some(first) = main_block {
                panic!(
                    "README.md:{line}: a second `async fn main` (the first is at line {first}); \
                     the README shows one program"
                );
            }
            main_block = Some(line);
            writeln!(
                out,
                "{}",
                code.replacen("\nasync fn main(", "\npub async fn main(", 1)
            )
            .unwrap();
        } else {
            writeln!(out, "{code}").unwrap();
            item_blocks.push(line);
        }
        writeln!(out, "}}\n").unwrap();
    }
    let main_block =
        main_block.expect("README.md shows the program's `async fn main` in a ```rust block");
    writeln!(
        out,
        "/// The README's `main` (the block at line {main_block}), for `src/bin/readme-main.rs`.\n\
         pub use readme_line_{main_block}::main as readme_main;\n"
    )
    .unwrap();
    writeln!(
        out,
        "/// The README lines where the compiled blocks start.\npub const BLOCKS: &[usize] = &{starts:?};"
    )
    .unwrap();
    writeln!(
        out,
        "/// The public items the README's examples define (its claims among them), for tests that \
         run them (a block with none re-exports nothing).\n#[allow(unused_imports)]\npub mod readme {{"
    )
    .unwrap();
    for block in &item_blocks {
        writeln!(out, "    pub use super::readme_line_{block}::*;").unwrap();
    }
    writeln!(out, "}}").unwrap();
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("readme_examples.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}
