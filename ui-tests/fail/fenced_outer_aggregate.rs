//! `max(j.id)` in a sub-select reads only the outer query's column, so it is the outer query's
//! aggregate: the outer SELECT returns a row from no rows, and the INSERT inserts it.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn snapshot(pool: &PgPool, fence: Fence) -> sqlx::Result<u64> {
    Ok(sqlx::query(
        "INSERT INTO marks (last_id)
         SELECT (SELECT max(j.id)) FROM jobs j WHERE leader_fence($1, $2)",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(pool)
    .await?
    .rows_affected())
}

fn main() {}
