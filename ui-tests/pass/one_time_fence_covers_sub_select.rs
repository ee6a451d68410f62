//! The fence in the outer UPDATE, not in the row-locking sub-select.
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

fn main() {}
