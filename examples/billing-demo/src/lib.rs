//! The reference application of `leader-runtime`: a billing service with five leader roles
//! (`billing`, `dunning`, `webhook_outbox`, `email_outbox`, `webhook_delivery`), each claiming
//! work through a `#[fenced]` funnel and completing it through compare-and-set writes.
//!
//! * [`store`]: the funnels and completions (its module docs list each effect and its guard).
//! * [`audit`]: the demo's record of grants, claims and completed ticks, kept beside the store.
//! * [`jobs`]: the five `#[leader_role]` jobs, with per-step and per-item panic guards.
//! * [`outbound`]: the mail provider the email outbox sends through, at least once.
//! * [`demo`]: replicas, a kill midway, and the closing [`checks`].

pub mod audit;
pub mod checks;
pub mod demo;
pub mod jobs;
pub mod outbound;
pub mod seed;
pub mod store;

/// The application's migrations: a copy of the framework's, its roles, its tables.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");
