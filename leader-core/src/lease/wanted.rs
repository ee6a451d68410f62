//! What one role asks ACQUIRE for: a tick after its interval, or the tick of one scheduled instant.

use std::time::Duration;

use chrono::{DateTime, Utc};
use leader_schedule::{CronSchedule, Missed, Planned, Schedule};

use crate::{Role, Shard};

/// One role an [`acquire`](super::acquire) asks for, with what makes it due.
///
/// `(Role, Duration)` converts into an interval role's `Wanted`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    pub(crate) role: Role,
    pub(crate) shard: Option<Shard>,
    pub(crate) schedule: String,
    pub(crate) due: Due,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Due {
    /// Due once the last completed tick ended at least this long ago.
    Interval(Duration),
    /// Due at `instant` (on the database clock) if it is later than the last completed instant;
    /// `None` asks for nothing and learns the last completed instant.
    Instant {
        instant: Option<DateTime<Utc>>,
        following: Option<DateTime<Utc>>,
        /// Whether the policy is [`Missed::Each`](leader_schedule::Missed::Each): then the instant
        /// is granted only if `previous` (the schedule's instant before it) is completed.
        each: bool,
        previous: Option<DateTime<Utc>>,
    },
}

impl Wanted {
    /// `role` on an interval: due when its last completed tick ended at least `interval` ago.
    pub fn every(role: Role, interval: Duration) -> Wanted {
        Wanted {
            role,
            shard: None,
            schedule: Schedule::Every(interval).to_string(),
            due: Due::Interval(interval),
        }
    }

    /// `role` on the calendar schedule `schedule`, for the instant `planned` (from
    /// [`CronSchedule::plan`]): granted only once that instant is due on the database clock and
    /// later than the last instant completed, and, with [`Missed::Each`], only if the instant
    /// before it in the schedule is the last completed one (or none completed yet). With
    /// `planned` `None`, nothing is granted and the
    /// refusal ([`RefusalReason::InstantCompleted`](super::RefusalReason::InstantCompleted))
    /// carries the last completed instant to plan from.
    pub fn instant(role: Role, schedule: &CronSchedule, planned: Option<&Planned>) -> Wanted {
        Wanted {
            role,
            shard: None,
            schedule: schedule.to_string(),
            due: Due::Instant {
                instant: planned.map(|p| p.instant),
                following: planned.and_then(|p| p.following),
                each: schedule.missed_policy() == Missed::Each,
                previous: planned.and_then(|p| p.previous),
            },
        }
    }

    /// This, for one shard of a sharded role: granted only the lease row of `shard`, and only
    /// while the role has `shard.count()` shards in the database (otherwise refused with
    /// [`RefusalReason::ShardCountChanged`](super::RefusalReason::ShardCountChanged)).
    #[must_use]
    pub fn in_shard(mut self, shard: Shard) -> Wanted {
        self.shard = Some(shard);
        self
    }

    /// The role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The shard asked for; `None` for an unsharded role.
    pub fn shard(&self) -> Option<Shard> {
        self.shard
    }

    /// The lease row's shard: an unsharded role is its shard 0 of 1.
    pub(crate) fn shard_or_sole(&self) -> Shard {
        self.shard.unwrap_or(Shard::SOLE)
    }
}

impl From<(Role, Duration)> for Wanted {
    fn from((role, interval): (Role, Duration)) -> Wanted {
        Wanted::every(role, interval)
    }
}

impl From<&(Role, Duration)> for Wanted {
    fn from(&(role, interval): &(Role, Duration)) -> Wanted {
        Wanted::every(role, interval)
    }
}

impl From<&Wanted> for Wanted {
    fn from(wanted: &Wanted) -> Wanted {
        wanted.clone()
    }
}
