//! The fence in the outer UPDATE only: as a top-level condition with bind parameters, PostgreSQL
//! evaluates it once (a One-Time Filter) before the UPDATE reads a row, so the row-locking
//! sub-select of a condition on the UPDATE's rows never runs for a superseded leader.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "UPDATE jobs SET taken = true
          WHERE leader_fence($1, $2)
            AND id IN (SELECT id FROM jobs WHERE NOT taken FOR UPDATE SKIP LOCKED)
      RETURNING id",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {
    let _ = claim;
}
