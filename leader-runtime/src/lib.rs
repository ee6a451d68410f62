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

pub mod cancel;
pub mod context;
mod fence_parameter;
mod heartbeat;
mod holder;
pub mod metrics;
mod panic_capture;
pub mod panic_guard;
mod poll;
#[cfg(feature = "prometheus")]
pub mod prometheus;
pub mod registry;
mod role_spec;
mod runtime;
pub mod shutdown;
mod statements;
mod tick;
mod wake;

#[cfg(test)]
mod fake;

pub use cancel::{CancelCause, TickCancellation};
pub use context::TickContext;
pub use leader_core::{
    Error, Fence, ReleaseOutcome, Role, Statement, Timings, TimingsError, batch,
    check_schema_ready, lease, schema, status,
};
pub use leader_macros::{fenced, leader_role, unfenced};

/// The whole-crate fence audit: every row-locking statement sits in a `#[fenced]` function or
/// says why not (feature `audit`).
#[cfg(feature = "audit")]
pub use leader_audit as audit;
pub use registry::{JobError, JobRegistration, registered_jobs};
pub use runtime::{Runtime, RuntimeBuilder};

/// Paths used by the macros' expansions. Not a public API: it can change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::fence_parameter::{FenceParameter, assert_fence_parameter};
    pub use crate::registry::{JobError, JobFuture, JobRegistration, JobResult};
    pub use core::time::Duration;
    pub use inventory;
}
