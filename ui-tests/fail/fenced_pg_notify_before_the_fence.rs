//! `pg_notify` in a condition that reads no column: PostgreSQL may evaluate it once up front,
//! beside the fence, for a superseded leader too.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE jobs SET runs = 0 WHERE leader_fence($1, $2) AND pg_notify('claimed', 'x') IS NULL",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(pool)
    .await?;
    Ok(())
}

fn main() {}
