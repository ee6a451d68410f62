//! The claim's SQL in a const: `#[fenced]` cannot see it.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

const CLAIM: &str = "UPDATE jobs SET taken = true WHERE leader_fence($1, $2) RETURNING id";

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(CLAIM)
        .bind(fence.role())
        .bind(fence.token())
        .fetch_all(pool)
        .await
}

fn main() {}
