//! A function a migration's `DO` block creates with `EXECUTE`: no reader of DDL text sees it,
//! the catalog does, VOLATILE.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<()> {
    sqlx::query("UPDATE jobs SET runs = 1 WHERE (SELECT made_by_do(7)) > 0 AND leader_fence($1, $2)")
        .bind(fence.role())
        .bind(fence.token())
        .execute(pool)
        .await?;
    Ok(())
}

fn main() {}
