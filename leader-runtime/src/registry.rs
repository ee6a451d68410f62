//! Jobs registered by `#[leader_role]`, found by the runtime without a hand-written list.
//!
//! Macro plumbing: reachable only through `__private`, for the expansion. An application reads
//! the registrations through [`crate::RuntimeBuilder::registered_jobs`].

use std::any::{Any, TypeId};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use leader_core::Role;

use crate::context::TickContext;

/// The error a job returns. Any `std::error::Error + Send + Sync + 'static` converts into it with
/// `?`.
pub type JobError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What a job returns: `Result<(), E>` with `E` convertible into [`JobError`].
///
/// `#[leader_role]` requires it at the job's return type, so a wrong type is reported there,
/// with this explanation, and type aliases work.
#[diagnostic::on_unimplemented(
    message = "a leader job returns `Result<(), E>` with `E` convertible into `Box<dyn Error + Send + Sync>`, not `{Self}`",
    label = "not a `Result<(), E>` with `E: Into<JobError>`",
    note = "a leader job is `async fn name(tick: TickContext) -> Result<(), E>`, or `async fn name(tick: TickContext, State(app): State<App>) -> Result<(), E>`"
)]
pub trait JobResult {
    /// The result with its error boxed.
    fn into_job_result(self) -> Result<(), JobError>;
}

impl<E: Into<JobError>> JobResult for Result<(), E> {
    fn into_job_result(self) -> Result<(), JobError> {
        self.map_err(Into::into)
    }
}

/// The future of one tick of a job.
pub type JobFuture = Pin<Box<dyn Future<Output = Result<(), JobError>> + Send + 'static>>;

/// How a registered job is called.
#[derive(Debug, Clone, Copy)]
pub enum RegisteredJob {
    /// `async fn(TickContext)`.
    TickOnly(fn(TickContext) -> JobFuture),
    /// `async fn(TickContext, State<S>)`: the state's type, and the call given the runtime's
    /// state (checked at build to be an `S`).
    WithState {
        /// `TypeId::of::<S>()` (a function: `TypeId::of` is not yet usable in a `static`).
        state: fn() -> TypeId,
        /// `type_name::<S>()`, for the build's error (a function for the same reason).
        state_name: fn() -> &'static str,
        /// Starts a tick.
        call: fn(TickContext, &(dyn Any + Send + Sync)) -> JobFuture,
    },
}

/// One job registered by `#[leader_role]`.
#[derive(Debug, Clone, Copy)]
pub struct JobRegistration {
    /// The role the job leads.
    pub role: Role,
    /// When it runs.
    pub schedule: RegisteredSchedule,
    /// The job.
    pub job: RegisteredJob,
    /// The job function's path, for errors and logs.
    pub name: &'static str,
    /// `shards = N`: the role's shard count; `None` for an unsharded role.
    pub shard_count: Option<u32>,
}

/// The schedule `#[leader_role]` was given, checked at compile time and built at
/// [`registered_jobs`](crate::RuntimeBuilder::registered_jobs).
#[derive(Debug, Clone, Copy)]
pub enum RegisteredSchedule {
    /// `every = "…"`.
    Every(Duration),
    /// `cron = "…"`, `tz = "…"` (UTC when absent), `missed = "…"` (`latest` when absent).
    Cron {
        /// The cron expression.
        expr: &'static str,
        /// The IANA time zone.
        zone: &'static str,
        /// The missed-instant policy's name.
        missed: &'static str,
    },
}

impl RegisteredSchedule {
    /// The schedule.
    ///
    /// # Errors
    ///
    /// What `CronSchedule::new` or the policy's parse says; the macro refused the same input at
    /// compile time, so only a registration written by hand meets it.
    pub fn build(self) -> Result<leader_schedule::Schedule, leader_schedule::ScheduleError> {
        match self {
            RegisteredSchedule::Every(interval) => Ok(leader_schedule::Schedule::Every(interval)),
            RegisteredSchedule::Cron { expr, zone, missed } => {
                let missed = missed.parse()?;
                Ok(leader_schedule::CronSchedule::new(expr, zone)?
                    .missed(missed)
                    .into())
            }
        }
    }
}

inventory::collect!(JobRegistration);

/// Every job registered with `#[leader_role]` in the binary, in no particular order.
pub fn registered_jobs() -> impl Iterator<Item = &'static JobRegistration> {
    inventory::iter::<JobRegistration>.into_iter()
}
