//! `j.take_budget` is no column of `jobs` as the migrations leave it, so PostgreSQL calls a
//! function `take_budget(j)`, on every row of `jobs` while the join finds the fenced batch empty.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<u64> {
    sqlx::query(
        "UPDATE jobs j SET owner = 'me'
           FROM (SELECT id FROM batch WHERE leader_fence($1, $2)) b
          WHERE j.take_budget = b.id",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(pool)
    .await
    .map(|done| done.rows_affected())
}

fn main() {}
