//! `FOR UPDATE OF` several tables: PostgreSQL's own grammar, so it parses.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar(
        "SELECT j.id FROM jobs j JOIN tenants t ON t.id = j.tenant_id
          WHERE t.active AND leader_fence($1, $2)
          ORDER BY j.id LIMIT 10
            FOR UPDATE OF j, t SKIP LOCKED",
    )
    .bind(fence.role())
    .bind(fence.token())
    .fetch_all(pool)
    .await
}

fn main() {
    let _ = claim;
}
