//! The README's Rust examples, compiled.
//!
//! `build.rs` copies every ```rust block of `README.md` into a module of its own (a block that
//! starts with `let` becomes the body of an async function); each module sees the items in
//! [`scaffold`], which stand for what the README leaves to the reader (the application's store,
//! its row type, its mail client). The blocks share those types, so a method the README defines
//! in one block and calls in another must agree in both. A README example that no longer
//! compiles fails the build, and so `cargo clippy --workspace` in CI.

/// What the README's examples assume the application has.
pub mod scaffold {
    pub use leader_runtime::JobError;

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

    /// The application's mail client.
    #[derive(Debug)]
    pub struct Smtp;

    impl Smtp {
        pub async fn send(&self, _email: &Email) -> Result<(), JobError> {
            Ok(())
        }
    }

    /// The mail client the README's job uses.
    #[allow(non_upper_case_globals)]
    pub static smtp: Smtp = Smtp;
}

include!(concat!(env!("OUT_DIR"), "/readme_examples.rs"));

#[cfg(test)]
mod tests {
    #[test]
    fn every_rust_block_of_the_readme_is_compiled() {
        let readme = include_str!("../../README.md");
        let rust_fences: Vec<usize> = readme
            .lines()
            .enumerate()
            .filter(|(_, line)| line.trim_start().starts_with("```rust"))
            .map(|(index, _)| index + 1)
            .collect();
        assert!(!rust_fences.is_empty(), "the README has Rust examples");
        assert_eq!(super::BLOCKS, rust_fences.as_slice());
    }
}
