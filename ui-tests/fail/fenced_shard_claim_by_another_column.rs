//! The shard's fence and filter pick this shard's webhooks, but the claim takes every webhook of
//! their endpoints, other shards' included: two shards' live leaders claimed the same rows.
use leader_runtime::{ShardFence, fenced};
use sqlx::PgPool;

#[fenced]
async fn deliver_batch(pool: &PgPool, fence: ShardFence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "UPDATE webhook_queue SET taken_by = $4
          WHERE endpoint_id IN (SELECT endpoint_id FROM webhook_queue
                                 WHERE taken_by IS NULL
                                   AND leader_fence($1, $2, $3, $4)
                                   AND leader_shard_of(id, $3) = $2
                                 FOR UPDATE SKIP LOCKED)
         RETURNING id",
    )
    .bind(fence.role())
    .bind(fence.shard_index())
    .bind(fence.shard_count())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {}
