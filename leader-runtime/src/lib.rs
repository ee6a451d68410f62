//! Run a background job on exactly one replica at a time, fenced, on PostgreSQL.
//!
//! (Crate docs are completed with the runtime.)

pub mod cancel;
pub mod context;
pub mod registry;

pub use cancel::{CancelCause, TickCancellation};
pub use context::TickContext;
pub use leader_core::{
    Error, Fence, ReleaseOutcome, Role, Timings, TimingsError, check_schema_ready, lease, schema,
};
pub use leader_macros::{fenced, leader_role};
pub use registry::{JobError, JobRegistration, registered_jobs};

/// Paths used by the macros' expansions. Not a public API: it can change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::registry::{JobError, JobFuture, JobRegistration};
    pub use core::time::Duration;
    pub use inventory;
}
