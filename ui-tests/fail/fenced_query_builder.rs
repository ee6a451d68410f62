//! `QueryBuilder` assembles SQL at run time.
use leader_runtime::{Fence, fenced};
use sqlx::{PgPool, Postgres, QueryBuilder};

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<u64> {
    let mut builder = QueryBuilder::<Postgres>::new("DELETE FROM jobs WHERE leader_fence(");
    builder.push_bind(fence.role()).push(", ").push_bind(fence.token()).push(")");
    Ok(builder.build().execute(pool).await?.rows_affected())
}

fn main() {}
