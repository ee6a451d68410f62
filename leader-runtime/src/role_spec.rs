//! A role the runtime leads: its name, schedule and job.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use leader_core::lease::Grant;
use leader_core::{Role, Shard};
use leader_schedule::Schedule;

use crate::job::JobFn;

/// One lease row a replica polls for: a role, and which of its shards for a sharded role.
pub(crate) type LeaseKey = (Role, Option<Shard>);

/// One role as the runtime drives it.
#[derive(Clone)]
pub(crate) struct RoleSpec {
    /// The role.
    pub role: Role,
    /// When it runs.
    pub schedule: Schedule,
    /// The job run on each granted tick, with the runtime's state bound in.
    pub job: JobFn,
    /// The job's name, for logs and errors.
    pub name: String,
    /// How many shards the role has, for a sharded role (checked at build to be 1 to
    /// [`MAX_SHARDS`](leader_core::MAX_SHARDS)); `None` for an unsharded one.
    pub shard_count: Option<u32>,
}

impl RoleSpec {
    /// The lease rows the runtime polls for: the role's one row, or one per shard.
    pub fn leases(&self) -> Vec<LeaseKey> {
        match self.shard_count {
            None => vec![(self.role, None)],
            Some(count) => (0..count)
                .filter_map(|index| Shard::new(index, count).ok())
                .map(|shard| (self.role, Some(shard)))
                .collect(),
        }
    }

    /// The interval RELEASE sets cooldowns from: an interval role's interval; for a calendar
    /// role, the time from the instant `grant` serves to the next one (at least 1 ms; one hour
    /// when the expression has no next instant).
    pub fn release_interval(&self, grant: &Grant) -> Duration {
        match (&self.schedule, grant.tick_instant) {
            (Schedule::Cron(cron), Some(instant)) => cron
                .next_after(instant)
                .and_then(|next| (next - instant).to_std().ok())
                .unwrap_or(Duration::from_secs(3600))
                .max(Duration::from_millis(1)),
            (schedule, _) => schedule.interval().unwrap_or(Duration::from_secs(3600)),
        }
    }

    /// The instant `grant` serves, in the schedule's time zone.
    pub fn tick_instant(&self, grant: &Grant) -> Option<DateTime<Tz>> {
        let instant: DateTime<Utc> = grant.tick_instant?;
        Some(match &self.schedule {
            Schedule::Cron(cron) => cron.local(instant),
            _ => instant.with_timezone(&Tz::UTC),
        })
    }
}

impl fmt::Debug for RoleSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RoleSpec")
            .field("role", &self.role)
            .field("schedule", &self.schedule)
            .field("name", &self.name)
            .field("shard_count", &self.shard_count)
            .finish_non_exhaustive()
    }
}
