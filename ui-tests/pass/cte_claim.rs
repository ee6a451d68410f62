//! A claim whose row-locking SELECT is a CTE, with the fence in its WHERE; the UPDATE that
//! stamps the batch carries it too, since `o.id` is read on its rows and could be a call.
//!
//! And one whose CTE has no fence of its own, read only by the UPDATE that carries the fence as
//! a top-level condition: PostgreSQL runs a CTE that only reads as far as a query reads it, and
//! the UPDATE's One-Time Filter keeps that query from reading a row, so a superseded leader
//! locks nothing.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "WITH c AS (SELECT id FROM outbox WHERE status = 'pending' AND leader_fence($1, $2) \
         ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED) \
         UPDATE outbox o SET status = 'sending' FROM c WHERE o.id = c.id AND leader_fence($1, $2) RETURNING o.id",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

#[fenced]
async fn claim_under_the_fence(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "WITH due AS (SELECT id FROM jobs WHERE NOT taken ORDER BY id LIMIT 3 FOR UPDATE SKIP LOCKED)
         UPDATE jobs j SET taken = true FROM due WHERE j.id = due.id AND leader_fence($1, $2)
         RETURNING j.id",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {
    let _ = (claim, claim_under_the_fence);
}
