//! SQL wrapped in AssertSqlSafe.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(sqlx::AssertSqlSafe(String::from(
        "UPDATE jobs SET taken = true WHERE leader_fence($1, $2) RETURNING id",
    )))
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {}
