//! A function the macro cannot see into: it could change or lock rows.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "SELECT id FROM jobs
          WHERE leader_fence($1, $2)
            AND take_job(id)
            FOR UPDATE SKIP LOCKED",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {}
