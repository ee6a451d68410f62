//! Claims `#[fenced]` judges by what PostgreSQL's catalog says after the migrations
//! (`leader-schema.json`), where reading their DDL would not tell: `score(integer)` made
//! IMMUTABLE by a hand-numbered migration that sorts first by name (`10_`) but runs last, a
//! partition's column renamed through its parent, a view's column PostgreSQL named `coalesce`,
//! a table of another schema, and `jobs` untouched by a `CREATE TABLE IF NOT EXISTS`.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<()> {
    // Evaluated once, before the fence: PostgreSQL may call it for a superseded leader, and the
    // schema says it is IMMUTABLE.
    sqlx::query("UPDATE jobs SET runs = runs + 1 WHERE score(5) > 0 AND leader_fence($1, $2)")
        .bind(fence.role())
        .bind(fence.token())
        .execute(pool)
        .await?;
    // Qualified names read on rows before the gate on rows: columns, as the catalog has them.
    sqlx::query(
        "UPDATE jobs j SET runs = 1 FROM job_due d, events_mail e, billing.invoices i
          WHERE j.id = d.id AND d.coalesce < now() AND e.category = 'mail' AND i.state = 'due'
            AND j.id IN (SELECT id FROM batch WHERE leader_fence($1, $2))",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(pool)
    .await?;
    Ok(())
}

fn main() {
    let _ = claim;
}
