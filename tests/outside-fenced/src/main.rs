//! A user's first `#[fenced]` claim, as the README's migration step writes it: the claim is
//! checked against the schema `leaderctl schema prepare` read from PostgreSQL after the crate's
//! migrations (`leader-schema.json`).

use leader_runtime::sqlx::{self, PgPool};
use leader_runtime::{Fence, fenced};

/// Takes every unowned job for the fence's holder, in one fenced statement.
#[fenced]
async fn take_jobs(pool: &PgPool, fence: &Fence) -> sqlx::Result<u64> {
    let mut tx = pool.begin().await?;
    let taken =
        sqlx::query("UPDATE jobs SET owner = $3 WHERE leader_fence($1, $2) AND owner IS NULL")
            .persistent(false)
            .bind(fence.role())
            .bind(fence.token())
            .bind(fence.token())
            .execute(&mut *tx)
            .await?
            .rows_affected();
    tx.commit().await?;
    Ok(taken)
}

fn main() {
    let _ = take_jobs;
}
