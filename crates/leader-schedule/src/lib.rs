//! When a `leader-runtime` role runs: every fixed interval ([`Schedule::Every`]), or at the
//! instants of a cron expression in a time zone ([`Schedule::Cron`]).
//!
//! This crate only computes instants; it holds no clock. The runtime asks it which instant a tick
//! should serve given the last instant completed (which the lease row records) and the database
//! clock, and the lease statement grants that instant only if it is due on the database clock and
//! later than the last completed one. Shared by `leader-core` and `leader-macros`, so that
//! `#[leader_role(cron = …, tz = …)]` refuses at compile time exactly what the runtime would.
//!
//! ```
//! use chrono::{TimeZone, Utc};
//! use leader_schedule::{CronSchedule, Missed, Schedule};
//!
//! // 02:00 in Berlin every day; after an outage, run each missed day in order.
//! let billing = CronSchedule::new("0 2 * * *", "Europe/Berlin")?.missed(Missed::Each);
//! let after = Utc.with_ymd_and_hms(2026, 12, 4, 12, 0, 0).unwrap();
//! // Winter time: 02:00 in Berlin is 01:00 UTC.
//! assert_eq!(
//!     billing.next_after(after),
//!     Some(Utc.with_ymd_and_hms(2026, 12, 5, 1, 0, 0).unwrap())
//! );
//! let schedule: Schedule = billing.into();
//! assert_eq!(schedule.to_string(), "cron \"0 2 * * *\" in Europe/Berlin, missed instants: each");
//! # Ok::<(), leader_schedule::ScheduleError>(())
//! ```

#![warn(missing_docs)]

mod cron;
mod error;
mod interval;
mod missed;
mod schedule;

pub use crate::cron::{CronSchedule, Planned};
pub use error::ScheduleError;
pub use interval::{INTERVAL_FORMS, format_interval, parse_interval};
pub use missed::Missed;
pub use schedule::Schedule;
