//! The demo's audit trail, kept beside the store rather than inside it: every grant a job saw,
//! every claim it made (with the rows), and every tick it completed, each on the database clock.
//! [`crate::checks`] reads these records; an application would not keep them.
//!
//! Each record is its own short transaction with its values bound (`.persistent(false)`, inside a
//! transaction), so it works behind a transaction-mode pooler like the rest of the demo.
//!
//! A claim is timed *before* its funnel runs: the funnel's claim statement starts later, so a
//! claim recorded at `at` really ran at `at` or after. The check "no claim returned rows after a
//! newer grant" therefore never blames a claim that ran before the grant, however long the
//! process stalls between the claim and its record.
//!
//! ```no_run
//! # async fn tick(audit: billing_demo::audit::Audit, store: billing_demo::store::Store,
//! #               fence: leader_runtime::Fence) -> sqlx::Result<()> {
//! let emails = audit.claim(fence, store.claim_emails(&fence, 100)).await?;
//! # Ok(()) }
//! ```

use std::future::Future;

use chrono::{DateTime, Utc};
use leader_runtime::Fence;
use sqlx::PgPool;

use crate::store::{ClaimedEmail, ClaimedWebhook, DueDelivery, DueDunningRun, DueSubscription};

/// A claimed row: what the audit records of it.
pub trait Claimed {
    /// The row's primary key.
    fn row_id(&self) -> i64;
}

macro_rules! claimed_by_id {
    ($($t:ty),*) => { $(impl Claimed for $t { fn row_id(&self) -> i64 { self.id } })* };
}
claimed_by_id!(
    DueSubscription,
    DueDunningRun,
    ClaimedWebhook,
    ClaimedEmail,
    DueDelivery
);

/// Writes the audit records, over the application's pool.
#[derive(Debug, Clone)]
pub struct Audit {
    pool: PgPool,
}

impl Audit {
    pub fn new(pool: PgPool) -> Audit {
        Audit { pool }
    }

    /// Records the grant of a tick: its token, the holder the lease row names for that token,
    /// and `granted_at`, the database clock of the ACQUIRE.
    pub async fn grant(&self, fence: Fence, granted_at: DateTime<Utc>) -> sqlx::Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "INSERT INTO grants (role, token, holder, granted_at, shard_index, shard_count)
             VALUES ($1, $2, (SELECT holder_id FROM leader_leases
                               WHERE role = $1 AND holder_token = $2), $3, $4, $5)",
        )
        .persistent(false)
        .bind(fence.role())
        .bind(fence.token())
        .bind(granted_at)
        .bind(shard_index(fence))
        .bind(shard_count(fence))
        .execute(&mut *tx)
        .await?;
        tx.commit().await
    }

    /// Runs `funnel` (a claim made with `fence`) and records what it returned, timed on the
    /// database clock just before it ran. Nothing is recorded for an empty claim.
    pub async fn claim<T: Claimed>(
        &self,
        fence: Fence,
        funnel: impl Future<Output = sqlx::Result<Vec<T>>>,
    ) -> sqlx::Result<Vec<T>> {
        let at: DateTime<Utc> = sqlx::raw_sql("SELECT clock_timestamp()")
            .fetch_one(&self.pool)
            .await
            .and_then(|row| sqlx::Row::try_get(&row, 0))?;
        let claimed = funnel.await?;
        if !claimed.is_empty() {
            let ids: Vec<i64> = claimed.iter().map(Claimed::row_id).collect();
            let mut tx = self.pool.begin().await?;
            sqlx::query(
                "INSERT INTO claims (role, token, row_ids, claimed_at, shard_index, shard_count)
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .persistent(false)
            .bind(fence.role())
            .bind(fence.token())
            .bind(&ids)
            .bind(at)
            .bind(shard_index(fence))
            .bind(shard_count(fence))
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
        }
        Ok(claimed)
    }

    /// Records that the tick of `fence` ran to completion (its job is about to return `Ok`).
    /// A lease stamped completed for a token without this record is a safety violation.
    pub async fn completed(&self, fence: Fence) -> sqlx::Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("INSERT INTO completions (role, token) VALUES ($1, $2)")
            .persistent(false)
            .bind(fence.role())
            .bind(fence.token())
            .execute(&mut *tx)
            .await?;
        tx.commit().await
    }
}

/// The fence's shard index, 0 for an unsharded role's one row.
fn shard_index(fence: Fence) -> i64 {
    fence.shard().map_or(0, |shard| i64::from(shard.index()))
}

/// The fence's shard count, 1 for an unsharded role.
fn shard_count(fence: Fence) -> i64 {
    fence.shard().map_or(1, |shard| i64::from(shard.count()))
}
