//! A claim whose row-locking SELECT is a CTE, with the fence in its WHERE; the UPDATE that
//! stamps the batch carries it too, since `o.id` is read on its rows and could be a call.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "WITH c AS (SELECT id FROM outbox WHERE status = 'pending' AND leader_fence($1, $2) \
         ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED) \
         UPDATE outbox o SET status = 'sending' FROM c WHERE o.id = c.id AND leader_fence($1, $2) RETURNING o.id",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {
    let _ = claim;
}
