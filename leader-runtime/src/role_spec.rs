//! A role the runtime leads: its name, interval and job.

use std::fmt;
use std::time::Duration;

use leader_core::Role;

use crate::job::JobFn;

/// One role as the runtime drives it.
#[derive(Clone)]
pub(crate) struct RoleSpec {
    /// The role.
    pub role: Role,
    /// The least time between the ends of two completed ticks.
    pub every: Duration,
    /// The job run on each granted tick, with the runtime's state bound in.
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
