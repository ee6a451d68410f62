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

use std::time::Duration;

use leader_core::Role;
use sqlx::{PgPool, Row};

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

pub(crate) fn clock_drift(seconds: f64) {
    metrics::gauge!("leader_clock_drift_seconds").set(seconds);
}

/// What the table says about one role, on the database clock.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RoleStatus {
    pub role: String,
    pub last_tick_age_seconds: Option<f64>,
    pub paused: bool,
}

/// Reads the last completed tick's age and the pause flag of every role from `leader_leases`.
pub(crate) async fn read_status(pool: &PgPool) -> Result<Vec<RoleStatus>, sqlx::Error> {
    // A simple query (no bind parameters), so it works through a transaction-mode pooler.
    let rows = sqlx::raw_sql(
        "SELECT role,
                -- greatest() skips NULLs, so a role that never completed must stay NULL here.
                CASE WHEN last_tick_ended_at IS NOT NULL
                     THEN greatest(extract(epoch FROM now() - last_tick_ended_at), 0)::float8
                END AS age,
                paused_at IS NOT NULL AS paused
           FROM leader_leases",
    )
    .fetch_all(pool)
    .await?;
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
