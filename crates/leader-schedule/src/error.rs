//! Why a schedule was refused.

/// How to write a cron expression, as every cron error says it: the field counts
/// [`CronSchedule::new`](crate::CronSchedule::new) accepts.
const FIELDS_FIX: &str = "write 5 fields (minute hour day-of-month month day-of-week), or 6 with \
                          seconds first, e.g. \"0 2 * * *\" for 02:00 every day or \
                          \"*/10 * * * * *\" for every 10 seconds";

/// A cron expression or time zone that cannot make a schedule. Each message names the input and
/// the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// The cron expression has 5 or 6 fields but one of them does not parse.
    #[error("cron expression {expr:?} does not parse ({reason}): {fix}", fix = FIELDS_FIX)]
    Cron {
        /// The expression as given.
        expr: String,
        /// What the cron parser said.
        reason: String,
    },
    /// The cron expression does not have 5 or 6 fields (a year field, a field missing, or a
    /// nickname such as `@daily`).
    #[error(
        "cron expression {expr:?} has {fields} field(s), not 5 or 6: {fix}",
        fix = FIELDS_FIX
    )]
    FieldCount {
        /// The expression as given.
        expr: String,
        /// How many whitespace-separated fields it has.
        fields: usize,
    },
    /// The cron expression parses but names no instant from now on (`0 0 30 2 *`, 30 February).
    #[error(
        "cron expression {expr:?} has no instant from now on: a role on it would never run; check its day-of-month and month fields"
    )]
    NeverDue {
        /// The expression as given.
        expr: String,
    },
    /// The time zone is not in the IANA database.
    #[error(
        "unknown time zone {zone:?}: name an IANA time zone, e.g. \"Europe/Berlin\", \"America/New_York\" or \"UTC\""
    )]
    Zone {
        /// The time zone as given.
        zone: String,
    },
    /// The interval does not parse: see [`parse_interval`](crate::parse_interval).
    #[error("{text:?} is not an interval: write {forms}", forms = crate::INTERVAL_FORMS)]
    Interval {
        /// The interval as given.
        text: String,
    },
    /// The missed-instant policy is not `latest` or `each`.
    #[error(
        "unknown missed-instant policy {policy:?}: write \"latest\" (run the latest missed instant once) or \"each\" (run every missed instant in order)"
    )]
    Missed {
        /// The policy as given.
        policy: String,
    },
}
