//! `pg_notify` in a sub-select of a condition that reads no column: PostgreSQL may evaluate it
//! once up front, beside the fence, for a superseded leader too. (Written in the condition
//! itself, a VOLATILE call keeps PostgreSQL from evaluating the condition up front.)
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE jobs SET runs = 0 WHERE leader_fence($1, $2) AND (SELECT pg_notify('claimed', 'x')) IS NULL",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(pool)
    .await?;
    Ok(())
}

fn main() {}
