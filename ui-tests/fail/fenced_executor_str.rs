//! SQL handed straight to an `Executor`: a literal is checked, anything else cannot be seen.
use leader_runtime::{Fence, fenced};
use sqlx::{Executor, PgPool};

#[fenced]
async fn claim(pool: &PgPool, fence: Fence, cleanup: &str) -> sqlx::Result<()> {
    let _ = fence.token();
    pool.execute("DELETE FROM jobs WHERE done").await?;
    pool.execute(cleanup).await?;
    Ok(())
}

fn main() {}
