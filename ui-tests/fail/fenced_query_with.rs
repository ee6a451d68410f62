//! Binds passed as `PgArguments`: the macro cannot see what is bound to the fence.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;
use sqlx::postgres::PgArguments;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence, args: PgArguments) -> sqlx::Result<u64> {
    let _ = fence;
    Ok(sqlx::query_with("DELETE FROM jobs WHERE done AND leader_fence($1, $2)", args)
        .execute(pool)
        .await?
        .rows_affected())
}

fn main() {}
