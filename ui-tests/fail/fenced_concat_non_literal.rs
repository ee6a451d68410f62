//! `concat!` with an argument that is not a literal: what it makes cannot be read.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn take(pool: &PgPool, fence: Fence) -> sqlx::Result<u64> {
    Ok(sqlx::query(concat!(
        "UPDATE jobs SET taken = true WHERE ",
        stringify!(true)
    ))
    .bind(fence.role())
    .bind(fence.token())
    .execute(pool)
    .await?
    .rows_affected())
}

fn main() {}
