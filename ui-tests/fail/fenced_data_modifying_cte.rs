//! A data-modifying WITH query gated only by the outer query: PostgreSQL runs it to completion.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "WITH claimed AS (UPDATE jobs SET owner_token = $2 WHERE owner_token IS NULL RETURNING id)
         SELECT id FROM claimed WHERE leader_fence($1, $2)",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {}
