//! A claim written as `concat!` of literals is read as the SQL it makes, and checked.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn touch(pool: &PgPool, fence: Fence) -> sqlx::Result<u64> {
    Ok(sqlx::query(concat!(
        "UPDATE tasks SET id = id ",
        concat!("WHERE id > ", 0, " "),
        "AND leader_fence($1, $2)"
    ))
    .bind(fence.role())
    .bind(fence.token())
    .execute(pool)
    .await?
    .rows_affected())
}

fn main() {
    let _ = touch;
}
