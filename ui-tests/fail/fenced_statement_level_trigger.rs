//! `audited` has a statement-level trigger: PostgreSQL fires it for the UPDATE even when the
//! fence keeps it from changing a row, so a superseded leader's claim would run it.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<()> {
    sqlx::query("UPDATE audited SET done = true WHERE NOT done AND leader_fence($1, $2)")
        .bind(fence.role())
        .bind(fence.token())
        .execute(pool)
        .await?;
    Ok(())
}

fn main() {}
