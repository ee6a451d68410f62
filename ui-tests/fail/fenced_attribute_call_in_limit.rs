//! `q.take_budget` is a call of `take_budget(q)` when `queue` has no such column, and a LIMIT is
//! evaluated before the fence of the query it limits.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "SELECT id FROM jobs WHERE leader_fence($1, $2)
          LIMIT (SELECT q.take_budget FROM queue q LIMIT 1)
            FOR UPDATE SKIP LOCKED",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {}
