//! A query handed to another function, which could bind anything to the fence.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;
use sqlx::postgres::PgArguments;
use sqlx::query::Query;

fn with_token(q: Query<'_, sqlx::Postgres, PgArguments>, token: i64) -> Query<'_, sqlx::Postgres, PgArguments> {
    q.bind("billing").bind(token)
}

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<u64> {
    let q = sqlx::query("DELETE FROM jobs WHERE done AND leader_fence($1, $2)");
    let q = with_token(q, fence.token() - 1);
    Ok(q.execute(pool).await?.rows_affected())
}

fn main() {}
