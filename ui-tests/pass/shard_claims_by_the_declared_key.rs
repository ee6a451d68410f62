//! Everyday shard claims, each selecting its rows by the declared shard key of the table it
//! claims: a join locked `FOR UPDATE OF` the claimed table only, a fenced batch in a `WITH`
//! query joined back to the table on its key, child rows deleted `USING` the shard's parent rows,
//! and rows keyed by a parent's id through a join.
use leader_runtime::{ShardFence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claims(pool: &PgPool, fence: ShardFence) -> sqlx::Result<()> {
    sqlx::query(
        "SELECT w.id FROM webhook_queue w JOIN endpoints e ON e.id = w.endpoint_id
          WHERE NOT e.paused AND leader_fence($1, $2, $3, $4) AND leader_shard_of(w.id, $3) = $2
          ORDER BY w.id LIMIT 10 FOR UPDATE OF w SKIP LOCKED",
    )
    .bind(fence.role())
    .bind(fence.shard_index())
    .bind(fence.shard_count())
    .bind(fence.token())
    .execute(pool)
    .await?;
    sqlx::query(
        "WITH batch AS (SELECT id FROM webhook_queue
                         WHERE taken_by IS NULL AND leader_fence($1, $2, $3, $4)
                           AND leader_shard_of(id, $3) = $2
                         ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED)
         UPDATE webhook_queue w SET taken_by = $4 FROM batch b WHERE w.id = b.id",
    )
    .bind(fence.role())
    .bind(fence.shard_index())
    .bind(fence.shard_count())
    .bind(fence.token())
    .execute(pool)
    .await?;
    sqlx::query(
        "DELETE FROM webhook_attempts a USING webhook_queue w
          WHERE a.webhook_id = w.id AND w.taken_by IS NOT NULL
            AND leader_fence($1, $2, $3, $4) AND leader_shard_of(w.id, $3) = $2",
    )
    .bind(fence.role())
    .bind(fence.shard_index())
    .bind(fence.shard_count())
    .bind(fence.token())
    .execute(pool)
    .await?;
    sqlx::query(
        "UPDATE webhook_attempts a SET attempt = attempt + 1 FROM webhook_queue w
          WHERE w.id = a.webhook_id AND leader_shard_of(w.id, $3) = $2
            AND leader_fence($1, $2, $3, $4)",
    )
    .bind(fence.role())
    .bind(fence.shard_index())
    .bind(fence.shard_count())
    .bind(fence.token())
    .execute(pool)
    .await?;
    Ok(())
}

fn main() {
    let _ = claims;
}
