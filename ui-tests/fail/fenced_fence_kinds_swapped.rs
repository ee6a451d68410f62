//! A `Fence` cannot prove a shard, and a `ShardFence` cannot make the unsharded claim.
use leader_runtime::{Fence, ShardFence, fenced};
use sqlx::PgPool;

#[fenced]
async fn unsharded_fence_shard_claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "UPDATE webhook_queue SET taken_by = $2
          WHERE leader_fence($1, $3, $4, $2) AND leader_shard_of(id, $4) = $3
         RETURNING id",
    )
    .bind(fence.role())
    .bind(fence.token())
    .bind(0)
    .bind(8)
    .fetch_all(pool)
    .await
}

#[fenced]
async fn shard_fence_unsharded_claim(pool: &PgPool, fence: ShardFence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "UPDATE webhook_queue SET taken_by = $2 WHERE leader_fence($1, $2) RETURNING id",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {}
