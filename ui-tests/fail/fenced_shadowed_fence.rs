//! The fence parameter shadowed by another value: `fence.token()` is no longer the proof.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence, stale: Fence) -> sqlx::Result<u64> {
    let fence = if fence.token() > stale.token() { fence } else { stale };
    Ok(sqlx::query("DELETE FROM jobs WHERE done AND leader_fence($1, $2)")
        .bind(fence.role())
        .bind(fence.token())
        .execute(pool)
        .await?
        .rows_affected())
}

fn main() {}
