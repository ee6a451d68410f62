//! Several broken claims in one function: all are reported.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<()> {
    sqlx::query("UPDATE jobs SET taken = true WHERE id = 1")
        .execute(pool)
        .await?;
    sqlx::query("DELETE FROM jobs WHERE done OR leader_fence($1, $2)")
        .bind(fence.role())
        .bind(fence.token())
        .execute(pool)
        .await?;
    Ok(())
}

fn main() {}
