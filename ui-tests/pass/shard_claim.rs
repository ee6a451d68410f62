//! A shard's claim: the shard's fence and its filter, on the same placeholders, bound from the
//! `ShardFence`, so the claim selects only that shard's rows.
use leader_runtime::{ShardFence, fenced};
use sqlx::PgPool;

#[fenced]
async fn deliver_batch(pool: &PgPool, fence: ShardFence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "UPDATE webhook_queue SET taken_by = $4
          WHERE id IN (SELECT id FROM webhook_queue
                        WHERE taken_by IS NULL
                          AND leader_fence($1, $2, $3, $4)
                          AND leader_shard_of(id, $3) = $2
                        ORDER BY id LIMIT 50 FOR UPDATE SKIP LOCKED)
         RETURNING id",
    )
    .bind(fence.role())
    .bind(fence.shard_index())
    .bind(fence.shard_count())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {
    let _ = deliver_batch;
}
