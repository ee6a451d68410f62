//! Claims whose own columns PostgreSQL names: a sub-select's cast column after its column and
//! `coalesce(..)` as `coalesce`; a recursive `WITH` query's by its column list, empty when its
//! fenced first arm is; a range whose bound is a fenced aggregate of no rows (NULL); and
//! `pg_notify`, called only on the rows of a level the fence gates once.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claims(pool: &PgPool, fence: Fence) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE jobs j SET runs = 1
           FROM (SELECT id::bigint, coalesce(id, 0) FROM batch WHERE leader_fence($1, $2)) b
          WHERE j.id = b.id AND b.coalesce > 0",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(pool)
    .await?;
    sqlx::query(
        "WITH RECURSIVE chain (job, depth) AS (
             SELECT id, 0 FROM batch WHERE leader_fence($1, $2)
             UNION ALL SELECT c.job, c.depth + 1 FROM chain c WHERE c.depth < 3)
         UPDATE jobs j SET runs = c.depth FROM chain c WHERE j.id = c.job",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(pool)
    .await?;
    sqlx::query(
        "UPDATE jobs SET runs = 0
          WHERE due BETWEEN now() - interval '1 day'
                        AND (SELECT max(due) FROM jobs WHERE leader_fence($1, $2))",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(pool)
    .await?;
    sqlx::query(
        "SELECT pg_notify('claimed', id::text) FROM jobs
          WHERE due < now() AND leader_fence($1, $2) FOR UPDATE SKIP LOCKED",
    )
    .bind(fence.role())
    .bind(fence.token())
    .execute(pool)
    .await?;
    Ok(())
}

fn main() {
    let _ = claims;
}
