//! A claim kept in a `const` declared in the function's body is read as its SQL, and checked.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn touch(pool: &PgPool, fence: Fence) -> sqlx::Result<u64> {
    const TOUCH: &str = "UPDATE tasks SET id = id WHERE id > 0 AND leader_fence($1, $2)";
    Ok(sqlx::query(TOUCH)
        .bind(fence.role())
        .bind(fence.token())
        .execute(pool)
        .await?
        .rows_affected())
}

fn main() {
    let _ = touch;
}
