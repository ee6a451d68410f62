//! A role the runtime leads: its name, interval and job.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use leader_core::Role;

use crate::context::TickContext;
use crate::registry::JobFuture;

/// A job: starts one tick's future from its context.
pub type JobFn = Arc<dyn Fn(TickContext) -> JobFuture + Send + Sync + 'static>;

/// One role as the runtime drives it.
#[derive(Clone)]
pub struct RoleSpec {
    /// The role.
    pub role: Role,
    /// The least time between the ends of two completed ticks.
    pub every: Duration,
    /// The job run on each granted tick.
    pub job: JobFn,
    /// The job's name, for logs and errors.
    pub name: String,
}

impl fmt::Debug for RoleSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RoleSpec")
            .field("role", &self.role)
            .field("every", &self.every)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
