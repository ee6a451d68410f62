//! What the schema (`migrations/0004_tables.sql`) says of functions and tables: a VOLATILE
//! function of the migrations stands on the rows of a fenced query, which PostgreSQL never
//! evaluates for a superseded leader; a lock on a table lands on the rows the query returns, so
//! a fenced semi-join empties it in time; a fenced join condition leaves `WHEN MATCHED` nothing
//! to act on. Without the schema each of these is refused.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn start(pool: &PgPool, fence: &Fence) -> sqlx::Result<Vec<i64>> {
    let mut tx = pool.begin().await?;
    let mut noted: Vec<i64> = sqlx::query_scalar(
        "UPDATE jobs SET runs = runs + 1 WHERE leader_fence($1, $2) AND due <= now()
         RETURNING note_claimed(id)",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(&mut *tx)
    .await?;
    // In a condition that reads no column: the VOLATILE call keeps PostgreSQL from evaluating
    // the condition up front, so it filters the rows below the fence's One-Time Filter.
    noted.extend(
        sqlx::query_scalar::<_, i64>(
            "UPDATE jobs SET runs = runs + 1 WHERE leader_fence($1, $2) AND note_claimed(0) = 0
             RETURNING id",
        )
        .bind(fence.role())
        .bind(fence.token())
        .fetch_all(&mut *tx)
        .await?,
    );
    noted.extend(
        sqlx::query_scalar::<_, i64>(
            "SELECT id FROM jobs
              WHERE id IN (SELECT job_id FROM runs WHERE started_at IS NULL AND leader_fence($1, $2))
                FOR UPDATE SKIP LOCKED",
        )
        .bind(fence.role())
        .bind(fence.token())
        .fetch_all(&mut *tx)
        .await?,
    );
    sqlx::query(
        "MERGE INTO jobs AS target USING runs r ON target.id = r.job_id AND leader_fence($1, $2)
          WHEN MATCHED THEN UPDATE SET runs = target.runs + 1
          WHEN NOT MATCHED THEN DO NOTHING",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(noted)
}

fn main() {
    let _ = start;
}
