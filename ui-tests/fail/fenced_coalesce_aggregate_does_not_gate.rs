//! `coalesce(max(..), 0)` is 0 from no rows, not NULL: the comparison is true for a superseded
//! leader.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn take(pool: &PgPool, fence: Fence) -> sqlx::Result<u64> {
    Ok(sqlx::query(
        "UPDATE queue SET taken_by = 1 \
         WHERE id > (SELECT coalesce(max(id), 0) FROM queue WHERE leader_fence($1, $2))",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(pool)
    .await?
    .rows_affected())
}

fn main() {}
