//! SQL built with format!.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(&format!(
        "UPDATE {} SET taken = true WHERE leader_fence($1, $2) RETURNING id",
        "jobs"
    ))
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {}
