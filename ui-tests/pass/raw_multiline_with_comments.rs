//! A raw multi-line claim with `--` comments; a non-async fn returning the query.
use leader_runtime::{Fence, fenced};
use sqlx::Postgres;
use sqlx::postgres::PgArguments;
use sqlx::query::Query;

#[fenced]
fn claim_query(fence: Fence) -> Query<'static, Postgres, PgArguments> {
    sqlx::query(
        r#"
        -- Claim the oldest pending webhooks for this leader.
        UPDATE "webhooks"
           SET status = 'sending'              -- taken
         WHERE id IN (
               SELECT id
                 FROM "webhooks"
                WHERE status = 'pending'
                  AND leader_fence($1, $2)     -- a stale leader locks nothing
                ORDER BY id
                LIMIT 100
                  FOR UPDATE SKIP LOCKED)
        "#,
    )
    .bind(fence.role())
    .bind(fence.token())
}

fn main() {
    let _ = claim_query;
}
