//! A fenced method of an `#[async_trait]` impl taking the fence by value: async-trait rewrites
//! the body to start with `let fence = fence;`, which keeps the fence.
use async_trait::async_trait;
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[async_trait]
trait Claims {
    async fn claim(&self, fence: Fence) -> sqlx::Result<Vec<i64>>;
}

struct Store {
    pool: PgPool,
}

#[async_trait]
impl Claims for Store {
    #[fenced]
    async fn claim(&self, fence: Fence) -> sqlx::Result<Vec<i64>> {
        sqlx::query_scalar(
            "SELECT id FROM tasks WHERE leader_fence($1, $2) FOR UPDATE SKIP LOCKED",
        )
        .bind(fence.role())
        .bind(fence.token())
        .fetch_all(&self.pool)
        .await
    }
}

fn main() {
    let _ = Store::claim;
}
