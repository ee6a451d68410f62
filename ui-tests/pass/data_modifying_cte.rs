//! A data-modifying WITH query whose own WHERE carries the fence.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "WITH claimed AS (
             UPDATE jobs SET owner_token = $2
              WHERE owner_token IS NULL AND leader_fence($1, $2)
             RETURNING id)
         SELECT id FROM claimed ORDER BY id",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {
    let _ = claim;
}
