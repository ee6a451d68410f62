//! A generated differential test of `leader-fence-check` against PostgreSQL.
//!
//! The checker decides at compile time whether a claim's SQL, run by a superseded leader (a
//! stale fencing token), can return, change, insert, delete or lock a row. This crate asks it
//! about thousands of generated statements and runs each on PostgreSQL with a stale token, so a
//! hole shows as an accepted statement that acted, shrunk to a minimal reproducer, and a
//! needless refusal shows as a refused statement that did nothing, counted by construct.
//!
//! *Acted* follows the checker's contract: a statement acts when it changes or locks a row, and
//! a claim (a statement with an `UPDATE`, `DELETE`, `INSERT`, `MERGE`, locking clause or
//! function call) also when it returns one; a statement that only reads may return rows.
//!
//! * [`ast`]: the grammar, a typed tree over a fixed schema.
//! * [`generator`]: the proptest strategy of that tree, weighted towards well-fenced claims.
//! * [`render`]: the tree as SQL, with the [`tags`] of the constructs it uses.
//! * [`schema`]: the database, and a role granted to a holder that is superseded, then to the
//!   live one.
//! * [`probe`]: runs a statement in a rolled-back transaction and measures its effect.
//! * [`runner`]: the run: seed, check, probe, classify, shrink.
//! * [`outcome`]: what a run found, counted by class, construct and refusal reason.
//! * [`refusal`]: the checker's refusals reduced to their reason, to count them by rule.
//! * [`report`]: the Markdown report.
//! * [`page`]: the report as the page of a long run, between generated-report markers.
//!
//! The test `tests/generated.rs` runs it in CI; the binary `fence-differential` runs it long,
//! for `docs/benchmarks/fence-differential.md`.

#![forbid(unsafe_code)]

pub mod ast;
pub mod generator;
pub mod history;
pub mod history_claims;
pub mod history_run;
pub mod outcome;
pub mod page;
pub mod probe;
pub mod refusal;
pub mod render;
pub mod report;
pub mod runner;
pub mod schema;
pub mod tags;

/// A step's result, with any error that may cross threads.
pub type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;
