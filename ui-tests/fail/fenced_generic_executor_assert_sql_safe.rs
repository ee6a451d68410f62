//! A generic executor called by path, given SQL made at run time and wrapped for sqlx: the
//! macro cannot read it, so the call is refused (it deleted rows when it was not).
use leader_runtime::{Fence, fenced};

#[fenced]
async fn purge<'e, E: sqlx::PgExecutor<'e>>(ex: E, fence: Fence, table: &str) -> sqlx::Result<u64> {
    let _ = &fence;
    let sql = sqlx::AssertSqlSafe(format!("DELETE FROM {table} WHERE done"));
    Ok(E::execute(ex, sql).await?.rows_affected())
}

#[fenced]
async fn purge_inline<'e, E: sqlx::PgExecutor<'e>>(
    ex: E,
    fence: Fence,
    table: &str,
) -> sqlx::Result<u64> {
    let _ = &fence;
    Ok(E::execute(
        ex,
        sqlx::AssertSqlSafe(format!("DELETE FROM {table} WHERE id = 1")),
    )
    .await?
    .rows_affected())
}

fn main() {}
