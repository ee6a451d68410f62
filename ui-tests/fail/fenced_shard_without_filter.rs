//! A shard's claim that forgets the shard filter: it would claim every shard's rows.
use leader_runtime::{ShardFence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: ShardFence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "UPDATE webhook_queue SET taken_by = $4
          WHERE taken_by IS NULL AND leader_fence($1, $2, $3, $4)
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
