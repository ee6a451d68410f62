//! A send inside a macro whose arguments are not expressions.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<()> {
    let _ = fence.token();
    tokio::select! {
        done = sqlx::query("DELETE FROM jobs WHERE done").execute(pool) => { done?; }
    }
    Ok(())
}

fn main() {}
