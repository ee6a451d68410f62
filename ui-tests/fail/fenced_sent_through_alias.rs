//! sqlx's `query` under another name: the claim's SQL is checked wherever it is, but what is
//! bound to it cannot be followed.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;
use sqlx::query as sql;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<u64> {
    Ok(sql("UPDATE jobs SET taken = true WHERE leader_fence($1, $2)")
        .bind(fence.role())
        .bind(fence.token())
        .execute(pool)
        .await?
        .rows_affected())
}

fn main() {}
