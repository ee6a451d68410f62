// What you write:
//
// #[fenced(migrations = "tests/fixtures/migrations")]
// async fn claim_batch(pool: &PgPool, fence: Fence, limit: i64) -> sqlx::Result<Vec<i64>> {
//     let mut tx = pool.begin().await?;
//     let ids = sqlx::query_scalar(
//         "UPDATE outbox SET status = 'sending'
//           WHERE id IN (SELECT id FROM outbox
//                         WHERE status = 'pending' AND leader_fence($2, $3)
//                         ORDER BY id LIMIT $1
//                         FOR UPDATE SKIP LOCKED)
//       RETURNING id",
//     )
//     .persistent(false)
//     .bind(limit)
//     .bind(fence.role())
//     .bind(fence.token())
//     .fetch_all(&mut *tx)
//     .await?;
//     tx.commit().await?;
//     Ok(ids)
// }
//
// What the macro emits in its place:

async fn claim_batch(pool: &PgPool, fence: Fence, limit: i64) -> sqlx::Result<Vec<i64>> {
    const _: &[u8] = ::core::include_bytes!("/path/to/crate/leader-schema.json");
    const _: &[u8] = ::core::include_bytes!(
        "/path/to/crate/tests/fixtures/migrations/0001_tables.sql"
    );
    ::leader_runtime::__private::assert_fence_parameter(&fence);
    let mut tx = pool.begin().await?;
    let ids = sqlx::query_scalar(
            "UPDATE outbox SET status = 'sending'
          WHERE id IN (SELECT id FROM outbox
                        WHERE status = 'pending' AND leader_fence($2, $3)
                        ORDER BY id LIMIT $1
                        FOR UPDATE SKIP LOCKED)
      RETURNING id",
        )
        .persistent(false)
        .bind(limit)
        .bind(fence.role())
        .bind(fence.token())
        .fetch_all(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(ids)
}
