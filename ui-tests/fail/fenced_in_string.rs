//! The fence only in a string.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "UPDATE jobs SET note = 'AND leader_fence($1, $2)' WHERE NOT taken RETURNING id",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {}
