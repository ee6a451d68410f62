//! The standard queue pop: a scalar sub-select that locks one row, fenced in its own WHERE. For
//! a superseded leader it is empty, so null, and `id = null` matches no row.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn pop(pool: &PgPool, fence: Fence) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar(
        "UPDATE queue SET taken_by = $2
          WHERE id = (SELECT id FROM queue
                       WHERE taken_by IS NULL AND leader_fence($1, $2)
                       ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
         RETURNING id",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_optional(pool)
    .await
}

fn main() {
    let _ = pop;
}
