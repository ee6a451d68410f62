//! A scalar sub-select of an aggregate that returns NULL from no rows gates a comparison: for a
//! superseded leader the fenced sub-select reads no row, `max(..)` is NULL, and `id <= NULL` is
//! not true. `bool_and(..)` alone in WHERE is NULL the same way.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn take_all(pool: &PgPool, fence: Fence) -> sqlx::Result<u64> {
    Ok(sqlx::query(
        "UPDATE queue SET taken_by = 1 WHERE taken_by IS NULL \
         AND id <= (SELECT max(id) FROM queue WHERE leader_fence($1, $2))",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(pool)
    .await?
    .rows_affected())
}

#[fenced]
async fn clear_tasks(pool: &PgPool, fence: Fence) -> sqlx::Result<u64> {
    Ok(sqlx::query(
        "DELETE FROM tasks WHERE (SELECT bool_and(id > 0) FROM tasks WHERE leader_fence($1, $2))",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(pool)
    .await?
    .rows_affected())
}

fn main() {
    let _ = (take_all, clear_tasks);
}
