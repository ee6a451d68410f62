//! A type of the application's own named `Fence`, with `role()` and `token()`: it may hold a
//! token read from `leader_status`, which proves nothing.
use leader_runtime::fenced;
use sqlx::PgPool;

pub struct Fence {
    role: String,
    token: i64,
}

impl Fence {
    pub fn role(&self) -> &str {
        &self.role
    }
    pub fn token(&self) -> i64 {
        self.token
    }
}

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar("SELECT id FROM jobs WHERE leader_fence($1, $2) FOR UPDATE SKIP LOCKED")
        .bind(fence.role())
        .bind(fence.token())
        .fetch_all(pool)
        .await
}

fn main() {}
