//! sqlx's `query_as` under another name given inside the function: followed, and checked.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn lock_tasks(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    use sqlx::query_as as rows_of;
    let rows: Vec<(i64,)> =
        rows_of("SELECT id FROM tasks WHERE id > 0 AND leader_fence($1, $2) FOR NO KEY UPDATE")
            .bind(fence.role())
            .bind(fence.token())
            .fetch_all(pool)
            .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

fn main() {
    let _ = lock_tasks;
}
