//! `GROUP BY ROLLUP` includes the empty grouping set, which makes a row from no rows: the
//! INSERT inserts it for a superseded leader.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn snapshot(pool: &PgPool, fence: Fence) -> sqlx::Result<u64> {
    Ok(sqlx::query(
        "INSERT INTO totals (status, n)
         SELECT status, count(*) FROM jobs WHERE leader_fence($1, $2) GROUP BY ROLLUP (status)",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(pool)
    .await?
    .rows_affected())
}

fn main() {}
