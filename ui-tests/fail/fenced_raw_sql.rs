//! `raw_sql` sends several statements and no binds: each is checked, and none can be fenced.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<()> {
    let _ = fence.token();
    sqlx::raw_sql(
        "UPDATE jobs SET taken = true WHERE leader_fence($1, $2);
         DELETE FROM jobs WHERE done",
    )
    .execute(pool)
    .await?;
    Ok(())
}

fn main() {}
