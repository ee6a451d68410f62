//! Jobs registered by `#[leader_role]`, found by the runtime without a hand-written list.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use leader_core::Role;

use crate::context::TickContext;

/// The error a job returns. Any `std::error::Error + Send + Sync + 'static` converts into it with
/// `?`.
pub type JobError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The future of one tick of a job.
pub type JobFuture = Pin<Box<dyn Future<Output = Result<(), JobError>> + Send + 'static>>;

/// One job registered by `#[leader_role]`.
///
/// Built by the macro's expansion; an application reads them through
/// [`crate::RuntimeBuilder::registered_jobs`].
#[derive(Debug, Clone, Copy)]
pub struct JobRegistration {
    /// The role the job leads.
    pub role: Role,
    /// How often it runs: the least time between the ends of two completed ticks.
    pub every: Duration,
    /// Starts one tick.
    pub job: fn(TickContext) -> JobFuture,
    /// The job function's path, for errors and logs.
    pub name: &'static str,
}

inventory::collect!(JobRegistration);

/// Every job registered with `#[leader_role]` in the binary, in no particular order.
pub fn registered_jobs() -> impl Iterator<Item = &'static JobRegistration> {
    inventory::iter::<JobRegistration>.into_iter()
}
