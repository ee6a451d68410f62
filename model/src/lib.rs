//! The lease protocol of `leader-core` and `leader-runtime`, model-checked with
//! [Stateright](https://docs.rs/stateright).
//!
//! See `docs/model.md` for what the model covers, how to run it and how to read a
//! counterexample.

pub mod check;
pub mod config;
pub mod guards;
pub mod model;
pub mod properties;
pub mod state;
pub mod trace;

pub use check::{Report, check};
pub use config::{Bug, Config, Timings};
pub use model::{Action, LeaseModel};
