//! `INSERT … VALUES` inserts whatever the fence says.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn enqueue(pool: &PgPool, fence: Fence) -> sqlx::Result<u64> {
    Ok(sqlx::query("INSERT INTO runs (role, token) VALUES ($1, $2)")
        .bind(fence.role())
        .bind(fence.token())
        .execute(pool)
        .await?
        .rows_affected())
}

fn main() {}
