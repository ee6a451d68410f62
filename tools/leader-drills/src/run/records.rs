//! What a run reads and writes in its database, and how: the database clock, the fault log,
//! the ledger's leader, what a struck leader did once it resumed, the outage between two
//! recorded instants, and the operator's `psql`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgPool, Row};
use tokio::process::Command;
use tokio::time::Instant;

use super::{DrillError, Resumed};

/// Runs `sql` through `psql` as an operator would, on database `db` of the server on `port`.
pub(super) async fn psql(port: u16, db: &str, sql: &str) -> Result<(), DrillError> {
    psql_value(port, db, sql).await.map(drop)
}

/// Runs `sql` through `psql`; what it printed, trimmed.
pub(super) async fn psql_value(port: u16, db: &str, sql: &str) -> Result<String, DrillError> {
    let out = Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-U",
            "postgres",
            "-v",
            "ON_ERROR_STOP=1",
            "-qAt",
        ])
        .args(["-p", &port.to_string(), "-d", db, "-c", sql])
        .output()
        .await?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(format!("psql -c {sql:?}: {}", String::from_utf8_lossy(&out.stderr)).into())
    }
}

/// The database clock now.
pub(super) async fn db_now(admin: &PgPool) -> Result<DateTime<Utc>, DrillError> {
    Ok(sqlx::raw_sql("SELECT clock_timestamp()")
        .fetch_one(admin)
        .await?
        .try_get(0)?)
}

/// Waits for `admin` to answer again (after a server restart), up to `limit`.
pub(super) async fn db_now_when_back(
    admin: &PgPool,
    limit: Duration,
) -> Result<DateTime<Utc>, DrillError> {
    let until = Instant::now() + limit;
    loop {
        match db_now(admin).await {
            Ok(now) => return Ok(now),
            Err(error) if Instant::now() > until => return Err(error),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Records `what` in the fault log; when, on the database clock.
pub(super) async fn note_fault(admin: &PgPool, what: &str) -> Result<DateTime<Utc>, DrillError> {
    let mut tx = admin.begin().await?;
    let at: DateTime<Utc> =
        sqlx::query_scalar("INSERT INTO drill_faults (what) VALUES ($1) RETURNING at")
            .persistent(false)
            .bind(what)
            .fetch_one(&mut *tx)
            .await?;
    tx.commit().await?;
    Ok(at)
}

/// The ledger's holder and token now, once it has one.
pub(super) async fn ledger_holder(
    admin: &PgPool,
    limit: Duration,
) -> Result<(String, i64), DrillError> {
    leader_from(
        admin,
        "SELECT holder_id, holder_token FROM leader_leases
          WHERE role = 'drill_ledger' AND expires_at > now()",
        limit,
    )
    .await
}

/// The ledger's leader by advisory lock: the holder of the latest grant.
pub(super) async fn advisory_holder(
    admin: &PgPool,
    limit: Duration,
) -> Result<(String, i64), DrillError> {
    leader_from(
        admin,
        "SELECT holder, token FROM grants WHERE role = 'drill_ledger' ORDER BY id DESC LIMIT 1",
        limit,
    )
    .await
}

async fn leader_from(
    admin: &PgPool,
    sql: &'static str,
    limit: Duration,
) -> Result<(String, i64), DrillError> {
    let until = Instant::now() + limit;
    loop {
        let row = sqlx::raw_sql(sql).fetch_optional(admin).await?;
        if let Some(row) = row {
            return Ok((row.try_get(0)?, row.try_get(1)?));
        }
        if Instant::now() > until {
            return Err(format!("nobody led drill_ledger within {limit:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What the ledger's leader of `token` did after `healed_at`, the fault log's heal (see
/// [`Resumed`]).
pub(super) async fn resumed(
    admin: &PgPool,
    token: i64,
    healed_at: DateTime<Utc>,
) -> Result<Resumed, DrillError> {
    let (superseded, claims): (bool, i64) = sqlx::query_as(
        "SELECT EXISTS (SELECT 1 FROM grants
                         WHERE role = 'drill_ledger' AND token > $1 AND granted_at < $2),
                (SELECT count(*) FROM claims
                  WHERE role = 'drill_ledger' AND token = $1 AND claimed_at > $2)",
    )
    .persistent(false)
    .bind(token)
    .bind(healed_at)
    .fetch_one(admin)
    .await?;
    Ok(Resumed { superseded, claims })
}

/// Seconds between two optional database timestamps the query returns, polled until the second
/// exists or `limit` passes.
pub(super) async fn wait_outage(
    admin: &PgPool,
    sql: String,
    limit: Duration,
) -> Result<Option<Duration>, DrillError> {
    let until = Instant::now() + limit;
    loop {
        let row = sqlx::raw_sql(sqlx::AssertSqlSafe(sql.clone()))
            .fetch_one(admin)
            .await?;
        let (from, to): (Option<DateTime<Utc>>, Option<DateTime<Utc>>) =
            (row.try_get(0)?, row.try_get(1)?);
        if let (Some(from), Some(to)) = (from, to) {
            return Ok(Some((to - from).to_std().unwrap_or(Duration::ZERO)));
        }
        if Instant::now() > until {
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `at` as a SQL `timestamptz` literal.
pub(super) fn ts(at: DateTime<Utc>) -> String {
    format!("'{}'::timestamptz", at.to_rfc3339())
}
