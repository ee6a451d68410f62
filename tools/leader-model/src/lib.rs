//! The lease protocol of `leader-core` and `leader-runtime`, model-checked with
//! [Stateright](https://docs.rs/stateright).
//!
//! [`check()`] explores every state of a [`Config`] (replicas, the role's shards and work keys,
//! bounds, faults, and optionally a seeded [`Bug`]) and returns a [`Report`]: the safety properties violated, each with a shortest
//! counterexample as a readable trace, and the reachability properties not reached. The
//! statements' guards come from `leader-core` (see [`guards`]). `docs/model.md` says what is
//! modelled, how to run it and how to read a counterexample.
//!
//! ```
//! use leader_model::{Bug, check};
//!
//! let bug = Bug::TokenPlusOne;
//! let report = check(bug.scenario(), 1, Some(bug.breaks())).expect("the model builds");
//! let trace = report.counterexample(bug.breaks()).expect("a counterexample");
//! assert!(trace.contains("fails over"));
//! ```

pub mod anchor;
pub mod check;
pub mod config;
pub mod guards;
pub mod inline;
pub mod model;
pub mod properties;
mod replica;
mod server;
pub mod state;
pub mod trace;

pub use check::{Report, check};
pub use config::{Bug, Config, Timings};
pub use model::{Action, LeaseModel};
