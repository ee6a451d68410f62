//! A function renamed by `use` that is not one of sqlx's: not taken for a send, so what is bound
//! to the claim is not followed.
use leader_runtime::{Fence, fenced};
use sqlx::PgPool;

mod store {
    pub fn prepare(
        sql: &'static str,
    ) -> sqlx::query::Query<'static, sqlx::Postgres, sqlx::postgres::PgArguments> {
        sqlx::query(sql)
    }
}

#[fenced]
async fn take(pool: &PgPool, fence: Fence) -> sqlx::Result<u64> {
    use crate::store::prepare as rows_of;
    Ok(
        rows_of("UPDATE jobs SET taken = true WHERE leader_fence($1, $2)")
            .bind(fence.role())
            .bind(fence.token())
            .execute(pool)
            .await?
            .rows_affected(),
    )
}

fn main() {}
