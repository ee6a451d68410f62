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

/// A fenced sub-select that reads no column of the query around it is evaluated once too: an
/// init plan in the One-Time Filter, before the locking sub-select in FROM reads a row.
#[fenced]
async fn claim_behind_a_gate(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "SELECT b.id FROM (SELECT id FROM tasks ORDER BY id LIMIT 3 FOR UPDATE SKIP LOCKED) b
          WHERE EXISTS (SELECT 1 FROM tasks g WHERE leader_fence($1, $2))",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {
    let _ = (claim, claim_behind_a_gate);
}
