//! An `Executor` under a generic name, given unfenced SQL.
use leader_runtime::{Fence, fenced};

#[fenced]
async fn claim<'e, E: sqlx::PgExecutor<'e>>(ex: E, fence: Fence) -> sqlx::Result<u64> {
    let _ = fence;
    Ok(E::execute(ex, "UPDATE jobs SET taken = true WHERE NOT taken")
        .await?
        .rows_affected())
}

fn main() {}
