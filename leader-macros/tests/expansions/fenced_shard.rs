// What you write:
//
// #[fenced(migrations = "tests/fixtures/migrations")]
// async fn claim_webhooks(pool: &PgPool, fence: ShardFence) -> sqlx::Result<Vec<i64>> {
//     let mut tx = pool.begin().await?;
//     let ids = sqlx::query_scalar(
//         "UPDATE webhooks SET claimed_token = $4 WHERE id IN (SELECT id FROM webhooks
//           WHERE delivered_at IS NULL AND leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2
//           ORDER BY id LIMIT 50 FOR UPDATE SKIP LOCKED) RETURNING id",
//     )
//     .persistent(false)
//     .bind(fence.role())
//     .bind(fence.shard_index())
//     .bind(fence.shard_count())
//     .bind(fence.token())
//     .fetch_all(&mut *tx)
//     .await?;
//     tx.commit().await?;
//     Ok(ids)
// }
//
// What the macro emits in its place:

async fn claim_webhooks(pool: &PgPool, fence: ShardFence) -> sqlx::Result<Vec<i64>> {
    const _: &[u8] = ::core::include_bytes!("/path/to/crate/leader-schema.json");
    const _: &[u8] = ::core::include_bytes!(
        "/path/to/crate/tests/fixtures/migrations/0001_tables.sql"
    );
    ::leader_runtime::__private::assert_shard_fence_parameter(&fence);
    let mut tx = pool.begin().await?;
    let ids = sqlx::query_scalar(
            "UPDATE webhooks SET claimed_token = $4 WHERE id IN (SELECT id FROM webhooks
          WHERE delivered_at IS NULL AND leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2
          ORDER BY id LIMIT 50 FOR UPDATE SKIP LOCKED) RETURNING id",
        )
        .persistent(false)
        .bind(fence.role())
        .bind(fence.shard_index())
        .bind(fence.shard_count())
        .bind(fence.token())
        .fetch_all(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(ids)
}
