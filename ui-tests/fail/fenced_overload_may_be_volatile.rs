//! `score('7')`: a string literal's type PostgreSQL picks among the overloads, and
//! `score(text)` is VOLATILE, so the call counts as VOLATILE, evaluated before the fence
//! (in a sub-select of a condition that reads no column).
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<()> {
    sqlx::query("UPDATE jobs SET runs = runs + 1 WHERE (SELECT score('7')) > 0 AND leader_fence($1, $2)")
        .bind(fence.role())
        .bind(fence.token())
        .execute(pool)
        .await?;
    Ok(())
}

fn main() {}
