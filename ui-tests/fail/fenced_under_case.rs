//! The fence inside CASE.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar("SELECT id FROM jobs WHERE CASE WHEN urgent THEN true ELSE leader_fence($1, $2) END FOR UPDATE")
        .bind(fence.role())
        .bind(fence.token())
        .fetch_all(pool)
        .await
}

fn main() {}
