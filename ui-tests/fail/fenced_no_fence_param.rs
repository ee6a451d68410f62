//! A fenced function without a `Fence` parameter.
use leader_runtime::fenced;
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, token: i64) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar("UPDATE jobs SET taken = true WHERE leader_fence($1, $2) RETURNING id")
        .bind("billing")
        .bind(token)
        .fetch_all(pool)
        .await
}

fn main() {}
