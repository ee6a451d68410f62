//! The README's `main`, run as a process on a database without the framework's migrations,
//! prints the start-up error as the README says: its message and its fix, not a struct dump.

use std::process::Command;

use leader_testkit::TestDb;

/// The ```text block that follows the README's `main`: what it prints when start-up fails.
fn readme_start_up_error() -> Vec<&'static str> {
    let readme = include_str!("../../../README.md");
    let after_main = &readme[readme
        .find("async fn main()")
        .expect("the README shows its main")..];
    let block = after_main
        .split_once("```text\n")
        .expect("a text block follows the README's main")
        .1;
    let block = block.split_once("```").expect("the text block ends").0;
    block.lines().collect()
}

#[tokio::test]
async fn the_readme_main_prints_a_start_up_error_as_its_message_and_fix() {
    let db = TestDb::unmigrated().await;
    let output = Command::new(env!("CARGO_BIN_EXE_readme-main"))
        .env("DATABASE_URL", db.url())
        .output()
        .expect("the README's main runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("`leaderctl migrate`"), "{stderr}");
    assert!(!stderr.contains("NotReady"), "a struct dump: {stderr}");
    // Each line the README shows is printed, in order; its `...` stands for the lines between.
    let printed: Vec<&str> = stderr.lines().collect();
    let mut at = 0;
    for shown in readme_start_up_error() {
        if shown.trim() == "..." {
            continue;
        }
        let found = printed[at..].iter().position(|line| *line == shown);
        let found = found.unwrap_or_else(|| {
            panic!("the README shows {shown:?}, which the process did not print next:\n{stderr}")
        });
        at += found + 1;
    }
}
