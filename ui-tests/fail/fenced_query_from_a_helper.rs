//! A query sent that a helper made: whatever the helper is given (a literal label here), it may
//! return a claim `#[fenced]` never sees.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

fn labelled(_label: &'static str) -> sqlx::query::Query<'static, sqlx::Postgres, sqlx::postgres::PgArguments> {
    sqlx::query("UPDATE jobs SET owner = 'me'")
}

#[fenced]
async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<()> {
    let _ = fence;
    labelled("nightly").execute(pool).await?;
    Ok(())
}

fn main() {}
