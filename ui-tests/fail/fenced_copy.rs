//! `COPY` cannot be fenced: the error says so, why, and the fenced `INSERT … SELECT` that does
//! its work.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn load(pool: &PgPool, fence: Fence) -> sqlx::Result<()> {
    let _ = &fence;
    sqlx::raw_sql("COPY jobs (id) FROM STDIN").execute(pool).await?;
    Ok(())
}

fn main() {}
