//! Gates the rules take from how PostgreSQL evaluates a condition for a superseded leader:
//! a `CASE` whose every arm is the fence or `false`; `<> ALL` over the one NULL row of `max(..)`
//! (a comparison with NULL is null, and so is `ALL` of it); and a `HAVING count(*) > 0` that
//! removes the one group an aggregate forms from no rows.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn take_untaken(pool: &PgPool, fence: Fence) -> sqlx::Result<u64> {
    Ok(sqlx::query(
        "UPDATE queue SET taken_by = 1 \
         WHERE CASE WHEN taken_by IS NULL THEN leader_fence($1, $2) ELSE false END",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(pool)
    .await?
    .rows_affected())
}

#[fenced]
async fn take_all_but_newest(pool: &PgPool, fence: Fence) -> sqlx::Result<u64> {
    Ok(sqlx::query(
        "UPDATE queue SET taken_by = 2 \
         WHERE id <> ALL (SELECT max(id) AS newest FROM queue WHERE leader_fence($1, $2))",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(pool)
    .await?
    .rows_affected())
}

#[fenced]
async fn record_batch(pool: &PgPool, fence: Fence) -> sqlx::Result<u64> {
    Ok(sqlx::query(
        "INSERT INTO batches (size) SELECT count(*) FROM queue \
         WHERE taken_by IS NULL AND leader_fence($1, $2) HAVING count(*) > 0",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(pool)
    .await?
    .rows_affected())
}

fn main() {
    let _ = (take_untaken, take_all_but_newest, record_batch);
}
