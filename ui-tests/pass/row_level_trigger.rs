//! `row_audited` has a row-level trigger: PostgreSQL fires it only for the rows the UPDATE
//! changes, none for a superseded leader.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<()> {
    sqlx::query("UPDATE row_audited SET done = true WHERE NOT done AND leader_fence($1, $2)")
        .bind(fence.role())
        .bind(fence.token())
        .execute(pool)
        .await?;
    Ok(())
}

fn main() {
    let _ = claim;
}
