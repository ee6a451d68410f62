//! A transaction-level advisory lock and a plain read beside the claim: neither changes nor
//! locks a row, so neither is a claim.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(7_i64)
        .execute(&mut *tx)
        .await?;
    let limit: i64 = sqlx::query_scalar("SELECT batch_size FROM settings")
        .fetch_one(&mut *tx)
        .await?;
    let ids = sqlx::query_scalar(
        "SELECT id FROM tasks WHERE leader_fence($1, $2) LIMIT $3 FOR UPDATE SKIP LOCKED",
    )
    .bind(fence.role())
    .bind(fence.token())
    .bind(limit)
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(ids)
}

fn main() {
    let _ = claim;
}
