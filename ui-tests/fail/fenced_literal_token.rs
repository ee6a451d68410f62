//! A literal token instead of a placeholder.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "UPDATE jobs SET taken = true WHERE NOT taken AND leader_fence($1, 42) RETURNING id",
    )
    .bind(fence.role())
    .fetch_all(pool)
    .await
}

fn main() {}
