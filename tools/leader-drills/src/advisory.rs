//! The comparison: `drill_ledger` led by a session advisory lock (`pg_try_advisory_lock`), the
//! usual tool this framework replaces, instead of a lease. The leader takes the lock on a
//! connection it keeps checked out, then claims and completes ledger items as the lease-led
//! ledger does, but without a fence (an advisory lock has none). It records its grants and
//! claims in the same tables, so the same checker judges it.

use std::time::Duration;

use sqlx::{PgPool, Row};
use tokio_util::sync::CancellationToken;

use crate::ledger::STEP;

/// The lock key.
const KEY: i64 = 4242;

/// Leads `drill_ledger` by advisory lock until `shutdown`: tries the lock every half second, and
/// once it has it, works the ledger until the session fails or shutdown comes.
pub async fn lead(pool: PgPool, holder: String, shutdown: CancellationToken) {
    while !shutdown.is_cancelled() {
        if let Err(error) = round(&pool, &holder, &shutdown).await {
            tracing::warn!(%error, "advisory-lock ledger: round failed; trying again");
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(500)) => {}
            () = shutdown.cancelled() => break,
        }
    }
}

async fn round(pool: &PgPool, holder: &str, shutdown: &CancellationToken) -> sqlx::Result<()> {
    let mut session = pool.acquire().await?;
    let locked: bool = sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "SELECT pg_try_advisory_lock({KEY})"
    )))
    .fetch_one(&mut *session)
    .await?
    .try_get(0)?;
    if !locked {
        return Ok(());
    }
    // A token for the records: the clock in ms when the lock was taken.
    let mut tx = pool.begin().await?;
    let token: i64 = sqlx::query_scalar(
        "INSERT INTO grants (role, token, holder, granted_at)
         VALUES ('drill_ledger', (extract(epoch FROM clock_timestamp()) * 1000)::bigint, $1,
                 clock_timestamp())
         RETURNING token",
    )
    .persistent(false)
    .bind(holder)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    tracing::info!(token, "advisory-lock ledger: leading");
    while !shutdown.is_cancelled() {
        let at: chrono::DateTime<chrono::Utc> = sqlx::raw_sql("SELECT clock_timestamp()")
            .fetch_one(pool)
            .await?
            .try_get(0)?;
        let mut tx = pool.begin().await?;
        let ids: Vec<i64> = sqlx::query_scalar(
            "UPDATE drill_work SET claimed_token = $1
              WHERE id IN (SELECT id FROM drill_work WHERE done_at IS NULL
                            ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
             RETURNING id",
        )
        .persistent(false)
        .bind(token)
        .fetch_all(&mut *tx)
        .await?;
        if !ids.is_empty() {
            sqlx::query(
                "INSERT INTO claims (role, token, row_ids, claimed_at)
                 VALUES ('drill_ledger', $1, $2, $3)",
            )
            .persistent(false)
            .bind(token)
            .bind(&ids)
            .bind(at)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        tokio::time::sleep(STEP).await;
        for id in ids {
            let mut tx = pool.begin().await?;
            let applied = sqlx::query(
                "UPDATE drill_work SET done_at = now()
                  WHERE id = $1 AND claimed_token = $2 AND done_at IS NULL",
            )
            .persistent(false)
            .bind(id)
            .bind(token)
            .execute(&mut *tx)
            .await?
            .rows_affected()
                == 1;
            if applied {
                sqlx::query(
                    "INSERT INTO effects (kind, key, role, token)
                     VALUES ('ledger', $1, 'drill_ledger', $2)",
                )
                .persistent(false)
                .bind(id.to_string())
                .bind(token)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
        }
    }
    drop(session);
    Ok(())
}
