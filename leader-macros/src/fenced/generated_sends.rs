//! The Rust side's generator (issue 32, `tools/send-generator`) run through the macro's own
//! parse and validate steps: every body with an unfenced or unreadable claim refused, every
//! readable fenced one accepted. A body accepted against the contract is a hole and fails the
//! test. One refused though readable and fenced is a false rejection: the test prints their
//! share by dimension, and fails on any (96 of 304 were, all a `const` declared in the body,
//! until the macro read those).
//!
//! This run takes seconds and sees the macro's verdict from its tokens; `ui-tests`'
//! `generated_sends` compiles the same bodies with rustc.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::str::FromStr;

use proc_macro2::TokenStream;
use send_generator::cases;

/// Whether `#[fenced]` refuses `source` (its parse or its validation reports an error).
fn refused(source: &str) -> bool {
    let item = TokenStream::from_str(source)
        .unwrap_or_else(|e| panic!("a generated body does not tokenize: {e}\n{source}"));
    match super::parse::parse(item) {
        Err(_) => true,
        Ok(fenced) => super::validate::validate(&fenced, None).is_err(),
    }
}

#[test]
fn every_generated_body_gets_the_verdict_the_contract_gives_it() {
    let cases = cases();
    let mut holes = Vec::new();
    let mut false_rejections: BTreeMap<String, usize> = BTreeMap::new();
    let (mut readable_fenced, mut refused_total) = (0usize, 0usize);
    for case in &cases {
        let source = case.source("claim");
        let verdict = refused(&source);
        refused_total += usize::from(verdict);
        if case.must_refuse() {
            if !verdict {
                holes.push(format!("{case:?}\n{source}"));
            }
        } else {
            readable_fenced += 1;
            if verdict {
                for key in case.dimensions() {
                    *false_rejections.entry(key).or_default() += 1;
                }
            }
        }
    }
    let rejected: usize = false_rejections
        .iter()
        .filter(|(k, _)| k.starts_with("origin"))
        .map(|(_, n)| n)
        .sum();
    let mut report = format!(
        "{} bodies ({} readable and fenced), {refused_total} refused; {} accepted against the \
         contract; {rejected} readable, fenced bodies refused ({:.1} %)\n",
        cases.len(),
        readable_fenced,
        holes.len(),
        100.0 * rejected as f64 / readable_fenced.max(1) as f64
    );
    for (key, n) in &false_rejections {
        let _ = writeln!(report, "  refused though readable and fenced, {key}: {n}");
    }
    println!("{report}");
    assert!(
        holes.is_empty(),
        "{report}\n{} bodies accepted against the contract; the first:\n{}",
        holes.len(),
        holes[0]
    );
    assert_eq!(
        rejected, 0,
        "{report}\nreadable, fenced bodies refused: none was when this generator was last changed"
    );
}
