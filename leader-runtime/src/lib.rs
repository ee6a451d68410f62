//! Run a background job on exactly one replica at a time, fenced, on PostgreSQL.
//!
//! Leadership of each role is a row in `leader_leases`, claimed for one tick by a single SQL
//! statement on the database clock, renewed while the tick runs and released when it ends. The
//! claim returns a [`Fence`]; every leader-only claim query proves it in its own WHERE with
//! `leader_fence(role, token)`, so a replaced or frozen leader claims nothing.
//!
//! * [`Runtime`]: leads roles (builder API, or every `#[leader_role]` job in the binary).
//! * [`TickContext`]: what a job gets each tick: the fence, a cancellation with its cause, the
//!   pool.
//! * [`panic_guard`]: per-step, per-item and rotating-sweep panic guards for job authors.
//! * [`leader_role`] and [`fenced`]: registration, and the compile-time check that a claim query
//!   carries the fence.
//! * [`lease`], [`schema`]: the protocol underneath, from `leader-core`.
//!
//! See the README for the migration an application adds, and the metrics in [`metrics`].
//!
//! # Features
//!
//! * `prometheus`: `prometheus::install(addr)` serves the metrics on `/metrics` at an address the
//!   application chooses (`metrics-exporter-prometheus`).
//! * `test-support`: `Fence::forge`, so a job's unit tests can build a [`TickContext`]
//!   ([`TickContext::from_grant`]) without a database granting the lease. Enable it only in
//!   `[dev-dependencies]`: a forged fence proves nothing to `leader_fence`.

#![warn(missing_docs)]

mod cancel;
mod context;
mod error;
mod fence_parameter;
mod heartbeat;
mod holder;
mod job;
mod leadership;
pub mod metrics;
mod panic_capture;
pub mod panic_guard;
mod poll;
#[cfg(feature = "prometheus")]
pub mod prometheus;
mod registry;
mod role_spec;
mod runtime;
pub mod shutdown;
mod state;
mod statements;
mod tick;
mod wake;

#[cfg(test)]
mod fake;

pub use cancel::{CancelCause, TickCancellation};
pub use context::TickContext;
pub use error::{BuildError, RunError};
pub use job::Job;
pub use leader_core::{Fence, Role, RoleNameError, TimingParts, Timings, TimingsError};
#[cfg(feature = "macros")]
pub use leader_macros::{fenced, leader_role, unfenced};
pub use leadership::Leadership;
pub use registry::JobError;
pub use runtime::{JobInfo, Runtime, RuntimeBuilder};
pub use state::State;

/// The sqlx this crate is built with (0.9), so an application uses the same `PgPool` type:
/// depend on it through here, or on `sqlx = "0.9"`. A pool from another sqlx version is a
/// different type ("expected `Pool<Postgres>`, found a different `Pool<Postgres>`").
pub use sqlx;

/// The framework's migrations and the start-up check that the database matches the code.
pub mod schema {
    pub use leader_core::schema::*;
    pub use leader_core::{SchemaError, check_schema_ready};
}

/// The protocol underneath, for tools (`leaderctl`, tests, benchmarks): the lease statements a
/// runtime sends, the operator's statements, `leader_status` as typed rows, and their errors. A
/// job author needs none of it.
pub mod protocol {
    pub use leader_core::{ReleaseOutcome, Statement, StatementError, lease, operator, status};
}

/// The whole-crate fence audit: every row-locking statement sits in a `#[fenced]` function or
/// says why not (feature `audit`).
#[cfg(feature = "audit")]
pub use leader_audit as audit;

/// Paths used by the macros' expansions. Not a public API: it can change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::fence_parameter::{FenceParameter, assert_fence_parameter};
    pub use crate::job::call_with_state;
    pub use crate::registry::{
        JobFuture, JobRegistration, JobResult, RegisteredJob, registered_jobs,
    };
    pub use core::any::{Any, TypeId, type_name};
    pub use core::time::Duration;
    pub use inventory;
}
