//! Qualified columns read before the gate are columns where the schema says so: `jobs`, `batch`
//! and `runs` come from the crate's migrations (`migrations/0004_tables.sql`), `audit.events`
//! from `leader-tables.sql`, which declares tables the migrations do not create. Without the
//! schema each `t.f` may be a call `f(t)` and is refused.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn settle(pool: &PgPool, fence: &Fence) -> sqlx::Result<u64> {
    let mut tx = pool.begin().await?;
    let mut changed = sqlx::query(
        "UPDATE jobs j SET runs = $3
           FROM (SELECT id FROM batch WHERE leader_fence($1, $2)) b
          WHERE j.id = b.id",
    )
    .bind(fence.role())
    .bind(fence.token())
    .bind(7_i32)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    changed += sqlx::query(
        "MERGE INTO jobs t USING runs r ON t.id = r.job_id
          WHEN MATCHED AND leader_fence($1, $2) THEN UPDATE SET runs = t.runs + 1",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(&mut *tx)
    .await?
    .rows_affected();
    changed += sqlx::query(
        "UPDATE audit.events e SET seen = true
           FROM (SELECT id FROM batch WHERE leader_fence($1, $2)) b
          WHERE e.id = b.id",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(&mut *tx)
    .await?
    .rows_affected();
    tx.commit().await?;
    Ok(changed)
}

fn main() {
    let _ = settle;
}
