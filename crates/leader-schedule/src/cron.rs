//! A cron expression in a time zone: its instants, and the instant the next tick serves.

use std::fmt;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

use crate::{Missed, ScheduleError};

/// How many skipped instants [`CronSchedule::plan`] counts at most; beyond it the count is a
/// lower bound ([`Planned::skipped_at_least`]).
const SKIPPED_COUNT_LIMIT: u64 = 10_000;

/// The instants of a cron expression, read as wall-clock times in an IANA time zone.
///
/// The expression has 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds
/// first ([`CronSchedule::FIELD_COUNTS`]), each as parsed by [`croner`] (the Open Cron Pattern
/// Specification: `L`, `#`, `W`, names of months and weekdays; day-of-month and day-of-week match
/// when either does, as in Vixie cron). Any other count is refused, though croner alone would take
/// a seventh field (a year) and nicknames (`@daily`): one rule for the runtime, `#[leader_role]`
/// and the docs.
///
/// ```
/// use leader_schedule::{CronSchedule, ScheduleError};
///
/// assert!(CronSchedule::new("0 2 * * *", "UTC").is_ok());
/// assert!(CronSchedule::new("30 0 2 * * *", "UTC").is_ok());
/// let year = CronSchedule::new("0 0 2 * * * 2030", "UTC").unwrap_err();
/// assert!(matches!(year, ScheduleError::FieldCount { fields: 7, .. }));
/// assert!(year.to_string().contains("has 7 field(s), not 5 or 6: write 5 fields"));
/// ```
///
/// # Daylight saving time
///
/// The instants are croner's, which follows Vixie cron:
///
/// * A wall-clock time that does not exist (spring forward, e.g. 02:30 on the night Berlin goes
///   from 02:00 to 03:00): an expression with fixed seconds, minutes and hours runs once at the
///   first wall-clock time after the gap (03:00); one with a wildcard or step in those fields skips
///   the instants in the gap.
/// * A wall-clock time that happens twice (fall back, 02:30 on the night Berlin goes from 03:00
///   back to 02:00): a fixed-time expression runs once, at the first of the two (summer time); one
///   with a wildcard or step runs at each matching instant of both passes.
///
/// `UTC` has neither.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronSchedule {
    expr: String,
    cron: Box<Cron>,
    zone: Tz,
    missed: Missed,
}

/// The instant the next tick of a [`CronSchedule`] serves, from [`CronSchedule::plan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Planned {
    /// The scheduled instant the tick serves. It may be in the past (a missed instant) or in the
    /// future (the tick waits for it).
    pub instant: DateTime<Utc>,
    /// The instant after it, if the expression has one: when the role is next due once this one
    /// completes.
    pub following: Option<DateTime<Utc>>,
    /// The instant before it, if the expression has one: with [`Missed::Each`], `instant` may run
    /// only once this one has completed.
    pub previous: Option<DateTime<Utc>>,
    /// How many instants after the last completed one, and before `instant`, this tick skips
    /// (only [`Missed::Latest`] skips).
    pub skipped: u64,
    /// True when `skipped` stopped counting at 10 000 and is a lower bound.
    pub skipped_at_least: bool,
}

impl CronSchedule {
    /// The numbers of fields an expression may have: 5 (minute hour day-of-month month
    /// day-of-week), or 6 with seconds first.
    pub const FIELD_COUNTS: [usize; 2] = [5, 6];

    /// The instants of `expr` in the IANA time zone `zone`, running the latest missed instant
    /// ([`Missed::Latest`]).
    ///
    /// # Errors
    ///
    /// [`ScheduleError::FieldCount`] if `expr` has neither 5 nor 6 fields
    /// ([`FIELD_COUNTS`](Self::FIELD_COUNTS)), [`ScheduleError::Cron`] if a field does not parse,
    /// [`ScheduleError::NeverDue`] if it has no instant from now on, [`ScheduleError::Zone`] if
    /// `zone` is not an IANA time zone.
    pub fn new(expr: &str, zone: &str) -> Result<CronSchedule, ScheduleError> {
        let fields = expr.split_whitespace().count();
        if !Self::FIELD_COUNTS.contains(&fields) {
            return Err(ScheduleError::FieldCount {
                expr: expr.to_owned(),
                fields,
            });
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Disallowed)
            .build()
            .parse(expr)
            .map_err(|error| ScheduleError::Cron {
                expr: expr.to_owned(),
                reason: error.to_string(),
            })?;
        let zone: Tz = zone.parse().map_err(|_| ScheduleError::Zone {
            zone: zone.to_owned(),
        })?;
        let schedule = CronSchedule {
            expr: expr.to_owned(),
            cron: Box::new(cron),
            zone,
            missed: Missed::default(),
        };
        if schedule.next_after(Utc::now()).is_none() {
            return Err(ScheduleError::NeverDue {
                expr: expr.to_owned(),
            });
        }
        Ok(schedule)
    }

    /// This schedule with `missed` as its missed-instant policy.
    #[must_use = "returns the schedule with the policy; the original is unchanged"]
    pub fn missed(mut self, missed: Missed) -> CronSchedule {
        self.missed = missed;
        self
    }

    /// The cron expression as given.
    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// The time zone the expression is read in.
    pub fn zone(&self) -> Tz {
        self.zone
    }

    /// The missed-instant policy.
    pub fn missed_policy(&self) -> Missed {
        self.missed
    }

    /// `instant` as a wall-clock time in this schedule's time zone.
    pub fn local(&self, instant: DateTime<Utc>) -> DateTime<Tz> {
        instant.with_timezone(&self.zone)
    }

    /// The first instant strictly after `after`, or `None` if there is none (or it lies beyond
    /// croner's search limit).
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.cron
            .find_next_occurrence(&self.local(after), false)
            .ok()
            .map(|next| next.with_timezone(&Utc))
    }

    /// The last instant at or before `at`, or `None` if there is none.
    pub fn latest_at_or_before(&self, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.cron
            .find_previous_occurrence(&self.local(at), true)
            .ok()
            .map(|latest| latest.with_timezone(&Utc))
    }

    /// The instant the next tick serves, given the last instant completed cluster-wide
    /// (`None`: none yet) and the database clock `now`; `None` if the expression has no more.
    ///
    /// * With [`Missed::Each`] and a completed instant: the first instant after it, past or
    ///   future, so every instant is served in order.
    /// * Otherwise: the latest instant at or before `now` if it is later than the last completed
    ///   one (older missed instants are skipped and counted), else the first instant after both.
    ///   A role that never completed a tick so serves its latest past instant at once.
    ///
    /// Only a plan: the lease statement grants the instant only if it is due on the database
    /// clock and later than the last completed instant it reads in the same statement.
    pub fn plan(
        &self,
        last_completed: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Option<Planned> {
        let instant = match (self.missed, last_completed) {
            (Missed::Each, Some(last)) => self.next_after(last)?,
            _ => match self.latest_at_or_before(now) {
                Some(latest) if last_completed.is_none_or(|last| latest > last) => latest,
                _ => self.next_after(last_completed.map_or(now, |last| last.max(now)))?,
            },
        };
        let (skipped, skipped_at_least) = match last_completed {
            Some(last) => self.count_between(last, instant),
            None => (0, false),
        };
        Some(Planned {
            instant,
            following: self.next_after(instant),
            previous: self.latest_at_or_before(instant - chrono::TimeDelta::milliseconds(1)),
            skipped,
            skipped_at_least,
        })
    }

    /// How many instants lie strictly between `after` and `before`, counting up to the limit.
    fn count_between(&self, after: DateTime<Utc>, before: DateTime<Utc>) -> (u64, bool) {
        let mut count = 0;
        let mut cursor = after;
        while let Some(next) = self.next_after(cursor).filter(|next| *next < before) {
            count += 1;
            if count == SKIPPED_COUNT_LIMIT {
                return (count, true);
            }
            cursor = next;
        }
        (count, false)
    }
}

impl fmt::Display for CronSchedule {
    /// `cron "0 2 * * *" in Europe/Berlin`, with `, missed instants: each` for [`Missed::Each`]:
    /// the text the lease row's `schedule` column shows.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cron {:?} in {}", self.expr, self.zone.name())?;
        if self.missed != Missed::Latest {
            write!(f, ", missed instants: {}", self.missed)?;
        }
        Ok(())
    }
}
