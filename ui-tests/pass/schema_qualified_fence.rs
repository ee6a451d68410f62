//! The fence called with the schema the framework's migrations were applied to.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "SELECT id FROM tasks WHERE public.leader_fence($1, $2) FOR UPDATE SKIP LOCKED",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {
    let _ = claim;
}
