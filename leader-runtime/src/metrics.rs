//! The runtime's metrics, through the `metrics` facade.
//!
//! Each metric's name is a constant below, whose doc states its kind and labels; the table of
//! every metric with its labels' values and its meaning, and the tick's log lines and span, are
//! written once, in the repository's `docs/metrics.md` (this module's tests check that table
//! against these constants and against what the runtime describes). Every metric is described (`# HELP` in
//! Prometheus) when the runtime starts, to whatever recorder is installed then, and by the
//! exporter's `install`. The age, unknown and paused gauges are refreshed by every runtime from
//! the table, so any replica reports the cluster's facts, not only the leader.
//!
//! Code that reads the metrics (a test's recorder, an alert generator) names them by constant:
//! [`PAUSED`] rather than `"leader_paused"`.

use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use leader_core::Role;
use metrics::Unit;
use sqlx::{PgPool, Row};
use tokio::time::Instant;

/// `leader_last_tick_age_seconds`. A gauge labelled `role`: the age of the role's last completed
/// tick, on the database clock; only set when known.
pub const LAST_TICK_AGE_SECONDS: &str = "leader_last_tick_age_seconds";
/// `leader_last_tick_unknown`. A gauge labelled `role` and `reason` (`never_ran`, `read_failed`): 1
/// while the age is unknown for that reason, else 0.
pub const LAST_TICK_UNKNOWN: &str = "leader_last_tick_unknown";
/// `leader_paused`. A gauge labelled `role`: 1 while an operator has paused the role, else 0.
pub const PAUSED: &str = "leader_paused";
/// `leader_paused_seconds`. A gauge labelled `role`: how long the role has been paused, on the
/// database clock; 0 while not paused.
pub const PAUSED_SECONDS: &str = "leader_paused_seconds";
/// `leader_interval_seconds`. A gauge labelled `role`, for an interval role: its interval.
pub const INTERVAL_SECONDS: &str = "leader_interval_seconds";
/// `leader_lease_lost_total`. A counter labelled `role` and `reason` (`taken_over`, `paused`,
/// `released`, `expired`, `heartbeat_timeout`, `anchor_lost`, `panicked`): ticks that ended without their lease.
pub const LEASE_LOST_TOTAL: &str = "leader_lease_lost_total";
/// `leader_tick_duration_seconds`. A histogram labelled `role` and `outcome` (`completed`,
/// `failed`, `panicked`, `shutdown`, `lost`, `anchor_lost`): how long each tick ran.
pub const TICK_DURATION_SECONDS: &str = "leader_tick_duration_seconds";
/// `leader_database_read_only`. A gauge labelled `role`: 1 while this replica's ACQUIRE for the
/// role is refused because the server is read-only, else 0.
pub const DATABASE_READ_ONLY: &str = "leader_database_read_only";
/// `leader_clock_drift_seconds`. A gauge with no labels: the database clock minus the local clock;
/// informational.
pub const CLOCK_DRIFT_SECONDS: &str = "leader_clock_drift_seconds";
/// `leader_schedule_start_delay_seconds`. A histogram labelled `role`, for a calendar role: how
/// long after its instant each tick was granted.
pub const SCHEDULE_START_DELAY_SECONDS: &str = "leader_schedule_start_delay_seconds";
/// `leader_schedule_skipped_instants_total`. A counter labelled `role`, for a calendar role: the
/// instants its ticks skipped under the `latest` policy.
pub const SCHEDULE_SKIPPED_INSTANTS_TOTAL: &str = "leader_schedule_skipped_instants_total";
/// `leader_schedule_overdue_seconds`. A gauge labelled `role`, for a calendar role: how long its
/// next instant is past while unpaused.
pub const SCHEDULE_OVERDUE_SECONDS: &str = "leader_schedule_overdue_seconds";
/// `leader_fast_takeover`. A gauge with no labels, only with
/// [`take_over_when_dead`](crate::RuntimeBuilder::take_over_when_dead): 1 while this replica's
/// fast takeover is on (its anchor is open, so its death is heard at once, and its watcher
/// watches the ring, so it hears others'), else 0.
pub const FAST_TAKEOVER: &str = "leader_fast_takeover";

/// The `# HELP` text of each metric: the meaning column above.
const DESCRIPTIONS: [(&str, Kind, Option<Unit>, &str); 13] = [
    (
        LAST_TICK_AGE_SECONDS,
        Kind::Gauge,
        Some(Unit::Seconds),
        "Age of the role's last completed tick, from leader_leases on the database clock; only set when known.",
    ),
    (
        LAST_TICK_UNKNOWN,
        Kind::Gauge,
        None,
        "1 while the age of the role's last completed tick is unknown for this reason (never_ran, read_failed), else 0.",
    ),
    (
        PAUSED,
        Kind::Gauge,
        None,
        "1 while an operator has paused the role.",
    ),
    (
        PAUSED_SECONDS,
        Kind::Gauge,
        Some(Unit::Seconds),
        "How long the role has been paused, on the database clock; 0 while not paused.",
    ),
    (
        INTERVAL_SECONDS,
        Kind::Gauge,
        Some(Unit::Seconds),
        "The role's interval: the least time between the ends of two completed ticks.",
    ),
    (
        LEASE_LOST_TOTAL,
        Kind::Counter,
        None,
        "Ticks that ended without their lease, by reason; reason=panicked starts at 0.",
    ),
    (
        TICK_DURATION_SECONDS,
        Kind::Histogram,
        Some(Unit::Seconds),
        "How long each tick ran, by outcome (completed, failed, panicked, shutdown, lost, anchor_lost).",
    ),
    (
        DATABASE_READ_ONLY,
        Kind::Gauge,
        None,
        "1 while this replica's ACQUIRE for the role is refused because the server is read-only.",
    ),
    (
        CLOCK_DRIFT_SECONDS,
        Kind::Gauge,
        Some(Unit::Seconds),
        "Database clock minus local clock, estimated from ACQUIRE and RENEW round trips; informational.",
    ),
    (
        SCHEDULE_START_DELAY_SECONDS,
        Kind::Histogram,
        Some(Unit::Seconds),
        "For a calendar role, how long after its scheduled instant each tick was granted, on the database clock.",
    ),
    (
        SCHEDULE_SKIPPED_INSTANTS_TOTAL,
        Kind::Counter,
        None,
        "Scheduled instants a tick skipped under the latest missed-instant policy.",
    ),
    (
        FAST_TAKEOVER,
        Kind::Gauge,
        None,
        "1 while this replica's fast takeover is on: its anchor open and its watcher watching the ring; else 0. Only with take_over_when_dead.",
    ),
    (
        SCHEDULE_OVERDUE_SECONDS,
        Kind::Gauge,
        Some(Unit::Seconds),
        "For a calendar role, how long its next instant is past on the database clock while unpaused; 0 when none is.",
    ),
];

#[derive(Clone, Copy)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// Describes every metric to the installed recorder. A recorder keeps the first description of
/// a name, so calling this again changes nothing.
pub(crate) fn describe() {
    for (name, kind, unit, help) in DESCRIPTIONS {
        match (kind, unit) {
            (Kind::Counter, Some(unit)) => metrics::describe_counter!(name, unit, help),
            (Kind::Counter, None) => metrics::describe_counter!(name, help),
            (Kind::Gauge, Some(unit)) => metrics::describe_gauge!(name, unit, help),
            (Kind::Gauge, None) => metrics::describe_gauge!(name, help),
            (Kind::Histogram, Some(unit)) => metrics::describe_histogram!(name, unit, help),
            (Kind::Histogram, None) => metrics::describe_histogram!(name, help),
        }
    }
}

/// Creates the series a role has from the start: its interval (or, on a calendar schedule, its
/// skipped instants at 0), and the panicked losses at 0.
pub(crate) fn register(role: Role, schedule: &leader_schedule::Schedule) {
    match schedule.interval() {
        Some(every) => {
            metrics::gauge!(INTERVAL_SECONDS, "role" => role.as_str()).set(every.as_secs_f64())
        }
        None => {
            metrics::counter!(SCHEDULE_SKIPPED_INSTANTS_TOTAL, "role" => role.as_str()).absolute(0)
        }
    }
    metrics::counter!(LEASE_LOST_TOTAL, "role" => role.as_str(), "reason" => "panicked")
        .absolute(0);
}

pub(crate) fn lease_lost(role: Role, reason: &'static str) {
    metrics::counter!(LEASE_LOST_TOTAL, "role" => role.as_str(), "reason" => reason).increment(1);
}

pub(crate) fn tick_finished(role: Role, outcome: &'static str, elapsed: Duration) {
    metrics::histogram!(TICK_DURATION_SECONDS, "role" => role.as_str(), "outcome" => outcome)
        .record(elapsed.as_secs_f64());
}

/// A calendar role's tick was granted `delay` after its instant, skipping `skipped` older ones.
pub(crate) fn scheduled_grant(role: Role, delay: Duration, skipped: u64) {
    metrics::histogram!(SCHEDULE_START_DELAY_SECONDS, "role" => role.as_str())
        .record(delay.as_secs_f64());
    if skipped > 0 {
        metrics::counter!(SCHEDULE_SKIPPED_INSTANTS_TOTAL, "role" => role.as_str())
            .increment(skipped);
    }
}

pub(crate) fn fast_takeover(on: bool) {
    metrics::gauge!(FAST_TAKEOVER).set(f64::from(u8::from(on)));
}

pub(crate) fn read_only(role: Role, read_only: bool) {
    metrics::gauge!(DATABASE_READ_ONLY, "role" => role.as_str())
        .set(f64::from(u8::from(read_only)));
}

/// Sets `leader_clock_drift_seconds` from one statement sent at `sent`, answered at `answered`,
/// that read the database clock as `db_now`.
pub(crate) fn clock_drift(db_now: DateTime<Utc>, sent: Instant, answered: Instant) {
    metrics::gauge!(CLOCK_DRIFT_SECONDS).set(clock_drift_seconds(db_now, sent, answered));
}

/// The database clock minus the local clock, estimated from one statement's round trip as the
/// difference between `db_now` and the local wall clock halfway through it. For the drift metric
/// only: nothing compares the two clocks for safety.
fn clock_drift_seconds(db_now: DateTime<Utc>, sent: Instant, answered: Instant) -> f64 {
    let half_trip = (answered - sent) / 2;
    let local_mid = SystemTime::now() - answered.elapsed() - half_trip;
    let local: DateTime<Utc> = local_mid.into();
    (db_now - local).num_microseconds().unwrap_or(0) as f64 / 1e6
}

/// The ages the table gives one role, on the database clock.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LeaseAges {
    pub role: String,
    pub last_tick_age_seconds: Option<f64>,
    /// How long the role has been paused; `None` while not paused.
    pub paused_seconds: Option<f64>,
    /// How long the next scheduled instant is past while unpaused; `None` for an interval role
    /// or before its first grant.
    pub overdue_seconds: Option<f64>,
}

/// The status read, named by its leading comment ([`leader_core::Statement::StatusRead`]).
///
/// One line per role: a sharded role reports its stalest shard (the oldest last tick, unknown
/// while any shard never completed one; the longest pause; the most overdue instant), so an
/// alert on the role fires when any one shard stalls, and the labels stay `role` alone.
const STATUS_READ: &str = "/* leader:status */ SELECT role,
                -- greatest() skips NULLs: a role that never completed, or is not paused, stays NULL.
                CASE WHEN bool_and(last_tick_ended_at IS NOT NULL)
                     THEN greatest(extract(epoch FROM now() - min(last_tick_ended_at)), 0)::float8
                END AS age,
                CASE WHEN bool_or(paused_at IS NOT NULL)
                     THEN greatest(extract(epoch FROM now() - min(paused_at)), 0)::float8
                END AS paused_for,
                CASE WHEN bool_or(next_instant IS NOT NULL)
                     THEN coalesce(max(CASE WHEN paused_at IS NULL
                               THEN greatest(extract(epoch FROM now() - next_instant), 0)::float8
                               END), 0)
                END AS overdue
           FROM leader_status
          GROUP BY role";

/// Reads the last completed tick's age and the pause age of every role from `leader_leases`.
pub(crate) async fn read_status(pool: &PgPool) -> Result<Vec<LeaseAges>, sqlx::Error> {
    // A simple query (no bind parameters), so it works through a transaction-mode pooler.
    let rows = sqlx::raw_sql(STATUS_READ).fetch_all(pool).await?;
    rows.iter()
        .map(|row| {
            Ok(LeaseAges {
                role: row.try_get("role")?,
                last_tick_age_seconds: row.try_get("age")?,
                paused_seconds: row.try_get("paused_for")?,
                overdue_seconds: row.try_get("overdue")?,
            })
        })
        .collect()
}

/// Publishes `status` (or the failure to read it) for `roles`.
pub(crate) fn publish_status(roles: &[Role], status: Result<&[LeaseAges], ()>) {
    for &role in roles {
        let name = role.as_str();
        let found = status
            .ok()
            .and_then(|all| all.iter().find(|s| s.role == name));
        let (never_ran, read_failed) = match (status, found) {
            (Err(()), _) | (Ok(_), None) => (0.0, 1.0),
            (Ok(_), Some(s)) => (f64::from(u8::from(s.last_tick_age_seconds.is_none())), 0.0),
        };
        metrics::gauge!(LAST_TICK_UNKNOWN, "role" => name, "reason" => "never_ran").set(never_ran);
        metrics::gauge!(LAST_TICK_UNKNOWN, "role" => name, "reason" => "read_failed")
            .set(read_failed);
        if let Some(found) = found {
            if let Some(age) = found.last_tick_age_seconds {
                metrics::gauge!(LAST_TICK_AGE_SECONDS, "role" => name).set(age);
            }
            let paused = found.paused_seconds;
            metrics::gauge!(PAUSED, "role" => name).set(f64::from(u8::from(paused.is_some())));
            metrics::gauge!(PAUSED_SECONDS, "role" => name).set(paused.unwrap_or(0.0));
            if let Some(overdue) = found.overdue_seconds {
                metrics::gauge!(SCHEDULE_OVERDUE_SECONDS, "role" => name).set(overdue);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use leader_core::Statement;

    /// This file's text: each constant's doc comment.
    const SOURCE: &str = include_str!("metrics.rs");
    /// The metrics table, written once, in the repository's docs.
    const TABLE: &str = include_str!("../../docs/metrics.md");

    /// The backticked words of `text`, in order.
    fn backticked(text: &str) -> Vec<&str> {
        text.split('`').skip(1).step_by(2).collect()
    }

    /// The docs table's rows: each metric's kind and the labels its row names.
    fn table() -> BTreeMap<&'static str, (&'static str, Vec<&'static str>)> {
        TABLE
            .lines()
            .filter(|line| line.starts_with("| `leader_"))
            .map(|row| {
                let cells: Vec<&str> = row.split('|').map(str::trim).collect();
                // The labels cell names each label, then its values in parentheses.
                let mut labels = Vec::new();
                let mut depth = 0;
                for (i, part) in cells[3].split('`').enumerate() {
                    depth += part.matches('(').count();
                    depth -= part.matches(')').count();
                    if i % 2 == 1 && depth == 0 {
                        labels.push(part);
                    }
                }
                (backticked(cells[1])[0], (cells[2], labels))
            })
            .collect()
    }

    /// Each public constant's value and doc comment.
    fn constants() -> BTreeMap<&'static str, String> {
        let lines: Vec<&str> = SOURCE.lines().collect();
        let mut found = BTreeMap::new();
        for (i, line) in lines.iter().enumerate() {
            let Some(value) = line
                .strip_prefix("pub const ")
                .and_then(|rest| rest.split('"').nth(1))
            else {
                continue;
            };
            let doc: Vec<&str> = lines[..i]
                .iter()
                .rev()
                .map_while(|l| l.strip_prefix("///"))
                .collect();
            found.insert(value, doc.into_iter().rev().collect::<Vec<_>>().join(" "));
        }
        found
    }

    #[test]
    fn every_metric_has_a_constant_a_table_row_and_a_description_of_the_same_kind() {
        let table = table();
        let constants = constants();
        let described: BTreeMap<&str, &str> = super::DESCRIPTIONS
            .iter()
            .map(|(name, kind, ..)| {
                let kind = match kind {
                    super::Kind::Counter => "counter",
                    super::Kind::Gauge => "gauge",
                    super::Kind::Histogram => "histogram",
                };
                (*name, kind)
            })
            .collect();
        assert_eq!(
            table.keys().collect::<Vec<_>>(),
            constants.keys().collect::<Vec<_>>(),
            "the table and the constants name the same metrics"
        );
        assert_eq!(
            table.keys().collect::<Vec<_>>(),
            described.keys().collect::<Vec<_>>(),
            "every metric in the table is described to the recorder"
        );
        for (name, (kind, labels)) in &table {
            assert_eq!(described[name], *kind, "{name}'s kind in DESCRIPTIONS");
            let doc = &constants[name];
            assert!(
                doc.contains(&format!("`{name}`")) && doc.to_lowercase().contains(kind),
                "{name}'s constant says its name and that it is a {kind}: {doc}"
            );
            for label in labels {
                assert!(
                    doc.contains(&format!("`{label}`")),
                    "{name}'s constant names its label `{label}`: {doc}"
                );
            }
            if labels.is_empty() {
                assert!(doc.contains("no labels"), "{name} has no labels: {doc}");
            }
        }
    }

    #[test]
    fn the_status_read_carries_its_name() {
        assert_eq!(
            Statement::of_sql(super::STATUS_READ),
            Some(Statement::StatusRead)
        );
    }
}
