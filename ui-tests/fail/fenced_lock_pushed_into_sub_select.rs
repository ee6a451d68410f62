//! The locking clause applies to a sub-select PostgreSQL cannot flatten (it has a LIMIT): it
//! locks the rows it reads before the outer IN removes them.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "SELECT s.id FROM (SELECT id FROM jobs ORDER BY id LIMIT 8) s
          WHERE s.id IN (SELECT id FROM jobs WHERE leader_fence($1, $2))
            FOR UPDATE",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {}
