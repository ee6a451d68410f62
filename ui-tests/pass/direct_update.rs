//! A claim with no row-locking SELECT: the UPDATE's own WHERE carries the fence.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim_one(pool: &PgPool, fence: Fence) -> sqlx::Result<Option<i64>> {
    let row: Option<(i64,)> = sqlx::query_as(
        "UPDATE invoices SET state = 'billing' \
         WHERE state = 'due' AND leader_fence($1, $2) RETURNING id",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|(id,)| id))
}

fn main() {
    let _ = claim_one;
}
