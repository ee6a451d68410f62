//! The audit on two small source trees: one with unfenced row locks, one with the same
//! statements fenced or opted out.

use std::path::Path;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .join("src")
}

#[test]
fn unfenced_row_locks_are_found_with_file_and_line() {
    let findings = leader_audit::unfenced_row_locks(fixture("unfenced")).unwrap();
    let found: Vec<(usize, &str)> = findings.iter().map(|f| (f.line, f.item.as_str())).collect();
    assert_eq!(found, [(6, "Store::claim"), (10, "SWEEP"), (14, "logged")]);
    assert!(findings[0].file.ends_with("unfenced/src/lib.rs"));
    assert_eq!(
        findings[0].fragment,
        "SELECT id FROM jobs WHERE due FOR UPDATE SKIP LOCKED"
    );
    let shown = findings[1].to_string();
    assert!(
        shown.contains("lib.rs:10: `SWEEP` locks rows outside a #[fenced] function"),
        "{shown}"
    );
}

#[test]
#[should_panic(expected = "3 row-locking statement(s) outside a #[fenced] function")]
fn the_assertion_fails_on_findings() {
    leader_audit::assert_claims_fenced(fixture("unfenced"));
}

#[test]
fn fenced_and_opted_out_statements_pass() {
    leader_audit::assert_claims_fenced(fixture("opted_out"));
}

#[test]
fn unreadable_sources_are_an_error() {
    let e = leader_audit::unfenced_row_locks(fixture("missing")).unwrap_err();
    assert!(e.to_string().starts_with("cannot read "), "{e}");
}
