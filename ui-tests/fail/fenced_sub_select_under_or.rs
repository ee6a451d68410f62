//! A fenced sub-select under OR: the other arm claims rows without the fence.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "UPDATE jobs SET owner_token = $2
          WHERE (status = 'failed' AND attempts < 5)
             OR id IN (SELECT id FROM jobs
                        WHERE status = 'pending' AND leader_fence($1, $2)
                          FOR UPDATE SKIP LOCKED)
      RETURNING id",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {}
