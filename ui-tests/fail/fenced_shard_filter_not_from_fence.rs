//! A shard filter bound from elsewhere than the fence: its own placeholders, and a shard index
//! the job computed.
use leader_runtime::{ShardFence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: ShardFence, mine: i32) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "UPDATE webhook_queue SET taken_by = $4
          WHERE taken_by IS NULL AND leader_fence($1, $2, $3, $4)
            AND leader_shard_of(id, $3) = $5
         RETURNING id",
    )
    .bind(fence.role())
    .bind(fence.shard_index())
    .bind(fence.shard_count())
    .bind(fence.token())
    .bind(mine)
    .fetch_all(pool)
    .await
}

#[fenced]
async fn claim_index_from_elsewhere(
    pool: &PgPool,
    fence: ShardFence,
    mine: i32,
) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "UPDATE webhook_queue SET taken_by = $4
          WHERE taken_by IS NULL AND leader_fence($1, $2, $3, $4)
            AND leader_shard_of(id, $3) = $2
         RETURNING id",
    )
    .bind(fence.role())
    .bind(mine)
    .bind(fence.shard_count())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {}
