//! Sharded roles: `shards = N` (1 to 1024) beside either schedule; each tick holds one shard and
//! claims that shard's rows with its `ShardFence`, and the registration carries the count.
use leader_runtime::{JobError, ShardFence, TickContext, fenced, leader_role};
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

#[leader_role("webhook_outbox", every = "200ms", shards = 8)]
async fn deliver(tick: TickContext) -> Result<(), JobError> {
    let shard = tick.shard().expect("a sharded role's tick holds a shard");
    assert_eq!(shard.count(), 8);
    let fence = tick.shard_fence().expect("and its fence");
    deliver_batch(tick.pool(), fence).await?;
    Ok(())
}

/// Led with the shard count its rows have in the database (`ui-tests/migrations/11_fanout.sql`).
#[leader_role("fanout", every = "1h", shards = 4)]
async fn fan_out(tick: TickContext) -> Result<(), JobError> {
    let _ = tick.shard();
    Ok(())
}

#[leader_role("billing", cron = "0 2 * * *", tz = "Europe/Berlin", shards = 1024)]
async fn bill(tick: TickContext) -> Result<(), JobError> {
    let _ = tick.tick_instant();
    Ok(())
}

fn main() {
    let _ = (deliver, fan_out, bill, WEBHOOK_OUTBOX, FANOUT, BILLING);
}
