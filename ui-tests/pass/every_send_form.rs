//! A fenced claim through each way of sending that `#[fenced]` follows: a query's own
//! `Executor` methods, an `Executor` method of a pool, a connection, a transaction or a generic
//! executor (by method and by path), and a transaction begun with a literal statement.
use leader_runtime::{Fence, fenced};
use sqlx::{Executor, PgConnection, PgPool};

#[fenced]
async fn through_the_query(pool: &PgPool, fence: &Fence) -> sqlx::Result<()> {
    sqlx::query("UPDATE send_forms SET taken = true WHERE NOT taken AND leader_fence($1, $2)")
        .bind(fence.role())
        .bind(fence.token())
        .execute(pool)
        .await?;
    let _: Vec<(i64,)> =
        sqlx::query_as("SELECT id FROM send_forms WHERE leader_fence($1, $2) FOR UPDATE")
            .bind(fence.role())
            .bind(fence.token())
            .fetch_all(pool)
            .await?;
    let _: Option<i64> = sqlx::query_scalar(
        "DELETE FROM send_forms WHERE taken AND leader_fence($1, $2) RETURNING id",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_optional(pool)
    .await?;
    Ok(())
}

#[fenced]
async fn through_executors(
    pool: &PgPool,
    conn: &mut PgConnection,
    fence: &Fence,
) -> sqlx::Result<()> {
    pool.execute(
        sqlx::query("UPDATE send_forms SET taken = true WHERE NOT taken AND leader_fence($1, $2)")
            .bind(fence.role())
            .bind(fence.token()),
    )
    .await?;
    conn.fetch_optional(
        sqlx::query("DELETE FROM send_forms WHERE taken AND leader_fence($1, $2) RETURNING id")
            .bind(fence.role())
            .bind(fence.token()),
    )
    .await?;
    let mut tx = pool
        .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ")
        .await?;
    let q = sqlx::query("UPDATE send_forms SET taken = false WHERE taken AND leader_fence($1, $2)");
    let q = q.bind(fence.role()).bind(fence.token());
    sqlx::Executor::execute(&mut *tx, q).await?;
    tx.commit().await
}

#[fenced]
async fn through_a_generic_executor<'e, E: sqlx::PgExecutor<'e>>(
    ex: E,
    fence: &Fence,
) -> sqlx::Result<u64> {
    let done = E::execute(
        ex,
        sqlx::query("DELETE FROM send_forms WHERE taken AND leader_fence($1, $2)")
            .bind(fence.role())
            .bind(fence.token()),
    )
    .await?;
    Ok(done.rows_affected())
}

fn main() {
    let _ = (
        through_the_query,
        through_executors,
        through_a_generic_executor::<&PgPool>,
    );
}
