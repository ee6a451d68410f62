//! `UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED)`, with another parameter (`$1`, the
//! limit) before the fence's (`$2`, `$3`).
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence, limit: i64) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "UPDATE outbox SET status = 'sending' WHERE id IN (SELECT id FROM outbox \
         WHERE status = 'pending' AND leader_fence($2, $3) ORDER BY id LIMIT $1 \
         FOR NO KEY UPDATE SKIP LOCKED) RETURNING id",
    )
    .bind(limit)
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {
    let _ = claim;
}
