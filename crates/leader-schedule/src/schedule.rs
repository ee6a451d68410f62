//! A role's schedule: a fixed interval, or a cron expression in a time zone.

use std::fmt;
use std::time::Duration;

use crate::{CronSchedule, ScheduleError, format_interval};

/// When a role runs.
///
/// ```
/// use std::time::Duration;
/// use leader_schedule::Schedule;
///
/// let hourly: Schedule = Duration::from_secs(3600).into();
/// assert_eq!(hourly.to_string(), "every 1h");
/// let nightly = Schedule::cron("0 2 * * *", "Europe/Berlin")?;
/// assert_eq!(nightly.to_string(), "cron \"0 2 * * *\" in Europe/Berlin");
/// # Ok::<(), leader_schedule::ScheduleError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Schedule {
    /// At most once every interval: the least time between the ends of two completed ticks.
    Every(Duration),
    /// Once for each instant of a cron expression in a time zone, on the database clock: each
    /// instant is completed at most once cluster-wide, and no tick starts before its instant.
    Cron(CronSchedule),
}

impl Schedule {
    /// [`Schedule::Every`]`(interval)`.
    pub const fn every(interval: Duration) -> Schedule {
        Schedule::Every(interval)
    }

    /// [`Schedule::Cron`] of `expr` in the IANA time zone `zone`, running the latest missed
    /// instant; see [`CronSchedule::new`], and [`CronSchedule::missed`] for the other policy.
    ///
    /// # Errors
    ///
    /// As [`CronSchedule::new`].
    pub fn cron(expr: &str, zone: &str) -> Result<Schedule, ScheduleError> {
        CronSchedule::new(expr, zone).map(Schedule::Cron)
    }

    /// The interval of an [`Every`](Schedule::Every) schedule.
    pub fn interval(&self) -> Option<Duration> {
        match self {
            Schedule::Every(interval) => Some(*interval),
            Schedule::Cron(_) => None,
        }
    }

    /// The cron schedule of a [`Cron`](Schedule::Cron) schedule.
    pub fn as_cron(&self) -> Option<&CronSchedule> {
        match self {
            Schedule::Every(_) => None,
            Schedule::Cron(cron) => Some(cron),
        }
    }
}

impl From<Duration> for Schedule {
    fn from(interval: Duration) -> Schedule {
        Schedule::Every(interval)
    }
}

impl From<CronSchedule> for Schedule {
    fn from(cron: CronSchedule) -> Schedule {
        Schedule::Cron(cron)
    }
}

impl fmt::Display for Schedule {
    /// `every 1h` (the interval as [`format_interval`] writes it), or the cron schedule's text: what the lease row's `schedule` column shows.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schedule::Every(interval) => write!(f, "every {}", format_interval(*interval)),
            Schedule::Cron(cron) => cron.fmt(f),
        }
    }
}
