//! The README's Rust examples, compiled.
//!
//! `build.rs` copies every ```rust block of `README.md` into a module of its own (a block that
//! starts with `let` becomes the body of an async function); each module sees the items in
//! [`scaffold`], which stand for what the README leaves to the reader (the application's store,
//! its row type, its mail client type). The blocks share those types, so a method the README defines
//! in one block and calls in another must agree in both. A README example that no longer
//! compiles fails the build, and so `cargo clippy --workspace` in CI.

/// What the README's examples assume the application has.
pub mod scaffold {
    pub use leader_runtime::JobError;
    pub use std::sync::Arc;

    /// The application's data access, holding its pool (the README adds methods to it).
    #[derive(Debug, Clone)]
    pub struct Store {
        pub pool: sqlx::PgPool,
    }

    impl Store {
        pub fn new(pool: sqlx::PgPool) -> Store {
            Store { pool }
        }
    }

    /// A row of the README's `email_outbox`.
    #[derive(Debug, sqlx::FromRow)]
    pub struct Email {
        pub id: i64,
        pub recipient: String,
    }

    /// The application's mail client, whose provider delivers one message per idempotency key.
    #[derive(Debug)]
    pub struct Smtp;

    impl Smtp {
        pub async fn send(&self, _email: &Email, _idempotency_key: &str) -> Result<(), JobError> {
            Ok(())
        }
    }
}

include!(concat!(env!("OUT_DIR"), "/readme_examples.rs"));

#[cfg(test)]
mod tests {
    const README: &str = include_str!("../../../README.md");

    #[test]
    fn the_readme_is_a_guide_of_at_most_300_lines() {
        let lines = README.lines().count();
        assert!(
            lines <= 300,
            "README.md has {lines} lines: move detail into docs/"
        );
    }

    /// A new user configures the runtime from the README alone: every option of the builder is
    /// named there (its configuration table, or the steps).
    #[test]
    fn the_readme_names_every_option_of_the_runtime_builder() {
        let builder = include_str!("../../../leader-runtime/src/builder.rs");
        let options: Vec<&str> = builder
            .lines()
            .filter_map(|line| line.trim_start().strip_prefix("pub fn "))
            .filter_map(|rest| rest.split(['(', '<']).next())
            .collect();
        assert!(options.contains(&"timings"), "{options:?}");
        let missing: Vec<&&str> = options
            .iter()
            .filter(|option| !README.contains(&format!(".{option}(")))
            .collect();
        assert!(
            missing.is_empty(),
            "README.md does not show these builder options: {missing:?}"
        );
    }

    #[test]
    fn every_rust_block_of_the_readme_is_compiled() {
        let rust_fences: Vec<usize> = README
            .lines()
            .enumerate()
            .filter(|(_, line)| line.trim_start().starts_with("```rust"))
            .map(|(index, _)| index + 1)
            .collect();
        assert!(!rust_fences.is_empty(), "the README has Rust examples");
        assert_eq!(super::BLOCKS, rust_fences.as_slice());
    }
}

/// The statement and outcome tables are written once, in the code's docs; `docs/architecture.md`,
/// the protocol's page, carries the same rows, word for word.
#[cfg(test)]
mod tables {
    const LEASE: &str = include_str!("../../../leader-core/src/lease/mod.rs");
    const OPERATOR: &str = include_str!("../../../leader-core/src/operator.rs");
    const OUTCOME: &str = include_str!("../../../leader-core/src/outcome.rs");
    const ARCHITECTURE: &str = include_str!("../../../docs/architecture.md");

    /// The body rows of the markdown tables in `source`'s doc comments.
    fn doc_rows(source: &str) -> Vec<String> {
        source
            .lines()
            .filter_map(|line| {
                let line = line.trim_start();
                line.strip_prefix("//! ")
                    .or_else(|| line.strip_prefix("/// "))
            })
            .filter(|line| line.starts_with("| ") && !line.starts_with("| statement |"))
            .filter(|line| !line.starts_with("| outcome |"))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn the_docs_carry_the_codes_statement_and_outcome_rows_word_for_word() {
        let mut rows = doc_rows(LEASE);
        rows.extend(doc_rows(OPERATOR));
        rows.extend(doc_rows(OUTCOME));
        assert_eq!(rows.len(), 15, "{rows:#?}");
        for (name, doc) in [("docs/architecture.md", ARCHITECTURE)] {
            let lines: Vec<&str> = doc.lines().collect();
            for row in &rows {
                assert!(
                    lines.contains(&row.as_str()),
                    "{name} lacks the row, or words it differently:\n{row}"
                );
            }
        }
    }
}
