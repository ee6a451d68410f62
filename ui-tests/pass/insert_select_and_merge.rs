//! `INSERT … SELECT` and `MERGE … USING` a fenced source, with a query kept in a local and
//! bound at the level it is declared at. `MERGE`'s join condition names the target's column
//! unqualified: it is read on the target's rows whatever the source holds.
use leader_runtime::{Fence, fenced};
use sqlx::{Executor, PgPool};

#[fenced]
async fn schedule(pool: &PgPool, fence: &Fence, limit: i64) -> sqlx::Result<u64> {
    let mut tx = pool.begin().await?;
    let mut copy = sqlx::query(
        "INSERT INTO runs (job_id)
         SELECT id FROM jobs WHERE due <= now() AND leader_fence($1, $2)
          ORDER BY id LIMIT $3
            FOR UPDATE SKIP LOCKED",
    );
    copy = copy.bind(fence.role());
    let copy = copy.bind(fence.token()).bind(limit);
    let copied = tx.execute(copy).await?.rows_affected();
    let merged = sqlx::query(
        "MERGE INTO jobs j
         USING (SELECT job_id FROM runs WHERE started_at IS NULL AND leader_fence($1, $2)) r
            ON id = r.job_id
          WHEN MATCHED THEN UPDATE SET runs = j.runs + 1",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(&mut *tx)
    .await?
    .rows_affected();
    tx.commit().await?;
    Ok(copied + merged)
}

fn main() {
    let _ = schedule;
}
