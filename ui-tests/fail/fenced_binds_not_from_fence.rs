//! The fence placeholders bound to values that do not come from the fence parameter.
use leader_runtime::{Fence, Role, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence, other: Fence) -> sqlx::Result<Vec<i64>> {
    let _ = fence;
    sqlx::query_scalar("UPDATE jobs SET taken = true WHERE leader_fence($1, $2) RETURNING id")
        .bind(Role::from_static("billing"))
        .bind(other.token())
        .fetch_all(pool)
        .await
}

fn main() {}
