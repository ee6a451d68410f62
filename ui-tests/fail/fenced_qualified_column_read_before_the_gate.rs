//! `o.id` is read on every row of `outbox` while the join finds the fenced batch empty, and
//! PostgreSQL reads it as a call of a function `id(o)` if `outbox` has no column `id`.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "WITH batch AS (SELECT id FROM outbox WHERE leader_fence($1, $2) LIMIT 10 FOR UPDATE SKIP LOCKED)
         UPDATE outbox o SET status = 'sending' FROM batch WHERE o.id = batch.id RETURNING o.id",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {}
