//! A shard claim on `queue`, which declares no shard key: the message says how to declare it.
use leader_runtime::{ShardFence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: ShardFence) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE queue SET taken_by = $4
          WHERE leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2",
    )
    .bind(fence.role())
    .bind(fence.shard_index())
    .bind(fence.shard_count())
    .bind(fence.token())
    .execute(pool)
    .await?;
    Ok(())
}

fn main() {}
