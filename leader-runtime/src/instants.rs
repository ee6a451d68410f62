//! Which scheduled instant the poller asks ACQUIRE for, for a role on a calendar schedule.
//!
//! The lease row is the truth: ACQUIRE grants an instant only if it is due on the database clock
//! and later than the last completed one, and every answer says which instant completed last.
//! The poller only plans from what the last answer said, so a stale plan costs one refused
//! ACQUIRE, never a second run of an instant.

use std::time::Duration;

use chrono::{DateTime, Utc};
use leader_core::Role;
use leader_core::lease::{Grant, Refusal, Wanted};
use leader_schedule::{CronSchedule, Planned};
use tokio::time::Instant;

/// The database clock as the last ACQUIRE answer read it, and when that answer arrived.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DbClock {
    db_now: DateTime<Utc>,
    at: Instant,
}

impl DbClock {
    pub(crate) fn new(db_now: DateTime<Utc>, at: Instant) -> DbClock {
        DbClock { db_now, at }
    }

    /// The database clock now, estimated from the local monotonic clock since the answer.
    fn now(self) -> DateTime<Utc> {
        self.db_now + self.at.elapsed()
    }
}

/// What the poller knows of one calendar role between its ACQUIREs.
#[derive(Debug, Default)]
pub(crate) struct InstantPlanner {
    /// The last completed instant as the last answer said (`Some(None)`: none yet); `None`
    /// until an answer said.
    last_completed: Option<Option<DateTime<Utc>>>,
    /// The plan the last ACQUIRE carried.
    planned: Option<Planned>,
}

/// A calendar role's grant, as the poller reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ScheduledGrant {
    /// How long after its instant the tick was granted, on the database clock.
    pub delay: Duration,
    /// How many older instants it skips.
    pub skipped: u64,
    /// Whether `skipped` is a lower bound.
    pub skipped_at_least: bool,
}

impl InstantPlanner {
    /// What to ask ACQUIRE for `role`: the planned instant, or, before any answer said which
    /// instant completed last (or with no database clock yet), nothing (the answer says).
    pub(crate) fn wanted(
        &mut self,
        role: Role,
        cron: &CronSchedule,
        clock: Option<DbClock>,
    ) -> Wanted {
        self.planned = match (self.last_completed, clock) {
            (Some(last), Some(clock)) => cron.plan(last, clock.now()),
            _ => None,
        };
        Wanted::instant(role, cron, self.planned.as_ref())
    }

    /// Learns the last completed instant from a refusal.
    pub(crate) fn refused(&mut self, refusal: &Refusal) {
        self.last_completed = Some(refusal.last_completed_instant);
    }

    /// What the grant serves, against the plan it was asked with.
    pub(crate) fn granted(&mut self, grant: &Grant) -> Option<ScheduledGrant> {
        let instant = grant.tick_instant?;
        let planned = self.planned.filter(|p| p.instant == instant);
        Some(ScheduledGrant {
            delay: (grant.acquired_at - instant)
                .to_std()
                .unwrap_or(Duration::ZERO),
            skipped: planned.map_or(0, |p| p.skipped),
            skipped_at_least: planned.is_some_and(|p| p.skipped_at_least),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use leader_core::Fence;
    use leader_core::lease::RefusalReason;

    fn utc(h: u32, m: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, h, m, 0).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn asks_for_nothing_until_an_answer_says_what_completed_then_plans_from_it() {
        let role = Role::from_static("alpha");
        let hourly = CronSchedule::new("0 * * * *", "UTC").unwrap();
        let mut planner = InstantPlanner::default();
        let clock = DbClock::new(utc(9, 20), Instant::now());
        assert_eq!(
            planner.wanted(role, &hourly, Some(clock)),
            Wanted::instant(role, &hourly, None)
        );
        planner.refused(
            &Refusal::forge(RefusalReason::InstantCompleted, None, None, utc(9, 20))
                .with_last_completed(Some(utc(5, 0))),
        );
        let wanted = planner.wanted(role, &hourly, Some(clock));
        let plan = hourly.plan(Some(utc(5, 0)), utc(9, 20)).unwrap();
        assert_eq!(wanted, Wanted::instant(role, &hourly, Some(&plan)));
        let grant = Grant::forge(Fence::forge(role, 7), utc(9, 20), utc(9, 21))
            .with_tick_instant(utc(9, 0));
        assert_eq!(
            planner.granted(&grant),
            Some(ScheduledGrant {
                delay: Duration::from_secs(20 * 60),
                skipped: 3,
                skipped_at_least: false
            })
        );
        // The database clock moves on with the local one.
        tokio::time::advance(Duration::from_secs(3600)).await;
        let later = hourly.plan(Some(utc(5, 0)), utc(10, 20)).unwrap();
        assert_eq!(
            planner.wanted(role, &hourly, Some(clock)),
            Wanted::instant(role, &hourly, Some(&later))
        );
    }
}
