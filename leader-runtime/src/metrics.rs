//! The runtime's metrics, through the `metrics` facade.
//!
//! | metric | kind | labels | meaning |
//! |---|---|---|---|
//! | `leader_last_tick_age_seconds` | gauge | `role` | age of the last *completed* tick, from the table on the database clock; only set when known |
//! | `leader_last_tick_unknown` | gauge | `role`, `reason` (`never_ran`, `read_failed`) | 1 while the age is unknown for that reason, else 0; never a negative age |
//! | `leader_paused` | gauge | `role` | 1 while an operator has paused the role |
//! | `leader_lease_lost_total` | counter | `role`, `reason` (`taken_over`, `paused`, `released`, `expired`, `heartbeat_timeout`, `panicked`) | ticks that ended without their lease; `panicked` is created at 0 at start so its first increase alerts |
//! | `leader_tick_duration_seconds` | histogram | `role`, `outcome` (`completed`, `failed`, `panicked`, `interrupted`, `lost`) | how long each tick ran |
//! | `leader_database_read_only` | gauge | `role` | 1 while this replica's ACQUIRE for the role is refused because the server is read-only (a standby, a demoted primary), else 0 |
//! | `leader_clock_drift_seconds` | gauge | — | database clock minus local clock, estimated from each ACQUIRE and RENEW; informational |
//!
//! The age, unknown and paused gauges are refreshed by every runtime from the table, so any
//! replica reports the cluster's facts, not only the leader.

use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use leader_core::Role;
use sqlx::{PgPool, Row};
use tokio::time::Instant;

pub(crate) fn register(role: Role) {
    metrics::counter!("leader_lease_lost_total", "role" => role.as_str(), "reason" => "panicked")
        .absolute(0);
}

pub(crate) fn lease_lost(role: Role, reason: &'static str) {
    metrics::counter!("leader_lease_lost_total", "role" => role.as_str(), "reason" => reason)
        .increment(1);
}

pub(crate) fn tick_finished(role: Role, outcome: &'static str, elapsed: Duration) {
    metrics::histogram!("leader_tick_duration_seconds", "role" => role.as_str(), "outcome" => outcome)
        .record(elapsed.as_secs_f64());
}

pub(crate) fn read_only(role: Role, read_only: bool) {
    metrics::gauge!("leader_database_read_only", "role" => role.as_str())
        .set(f64::from(u8::from(read_only)));
}

/// Sets `leader_clock_drift_seconds` from one statement sent at `sent`, answered at `answered`,
/// that read the database clock as `db_now`.
pub(crate) fn clock_drift(db_now: DateTime<Utc>, sent: Instant, answered: Instant) {
    metrics::gauge!("leader_clock_drift_seconds").set(clock_drift_seconds(db_now, sent, answered));
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

/// What the table says about one role, on the database clock.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RoleStatus {
    pub role: String,
    pub last_tick_age_seconds: Option<f64>,
    pub paused: bool,
}

/// The status read, named by its leading comment ([`leader_core::Statement::StatusRead`]).
const STATUS_READ: &str = "/* leader:status */ SELECT role,
                -- greatest() skips NULLs, so a role that never completed must stay NULL here.
                CASE WHEN last_tick_ended_at IS NOT NULL
                     THEN greatest(extract(epoch FROM now() - last_tick_ended_at), 0)::float8
                END AS age,
                paused_at IS NOT NULL AS paused
           FROM leader_leases";

/// Reads the last completed tick's age and the pause flag of every role from `leader_leases`.
pub(crate) async fn read_status(pool: &PgPool) -> Result<Vec<RoleStatus>, sqlx::Error> {
    // A simple query (no bind parameters), so it works through a transaction-mode pooler.
    let rows = sqlx::raw_sql(STATUS_READ).fetch_all(pool).await?;
    rows.iter()
        .map(|row| {
            Ok(RoleStatus {
                role: row.try_get("role")?,
                last_tick_age_seconds: row.try_get("age")?,
                paused: row.try_get("paused")?,
            })
        })
        .collect()
}

/// Publishes `status` (or the failure to read it) for `roles`.
pub(crate) fn publish_status(roles: &[Role], status: Result<&[RoleStatus], ()>) {
    for &role in roles {
        let name = role.as_str();
        let found = status
            .ok()
            .and_then(|all| all.iter().find(|s| s.role == name));
        let (never_ran, read_failed) = match (status, found) {
            (Err(()), _) | (Ok(_), None) => (0.0, 1.0),
            (Ok(_), Some(s)) => (f64::from(u8::from(s.last_tick_age_seconds.is_none())), 0.0),
        };
        metrics::gauge!("leader_last_tick_unknown", "role" => name, "reason" => "never_ran")
            .set(never_ran);
        metrics::gauge!("leader_last_tick_unknown", "role" => name, "reason" => "read_failed")
            .set(read_failed);
        if let Some(found) = found {
            if let Some(age) = found.last_tick_age_seconds {
                metrics::gauge!("leader_last_tick_age_seconds", "role" => name).set(age);
            }
            metrics::gauge!("leader_paused", "role" => name).set(f64::from(u8::from(found.paused)));
        }
    }
}

#[cfg(test)]
mod tests {
    use leader_core::Statement;

    #[test]
    fn the_status_read_carries_its_name() {
        assert_eq!(
            Statement::of_sql(super::STATUS_READ),
            Some(Statement::StatusRead)
        );
    }
}
