//! A store method taking `&Fence` (by its full path), binding through `*`, `&` and parentheses,
//! with `query_as::<_, Row>` and two claims in one body.
use sqlx::PgPool;

struct Store {
    pool: PgPool,
}

impl Store {
    #[leader_runtime::fenced]
    async fn claim(&self, fence: &leader_runtime::Fence, limit: i64) -> sqlx::Result<Vec<(i64,)>> {
        let first = sqlx::query_as::<_, (i64,)>(
            "SELECT id FROM jobs WHERE leader_fence($1, $2) AND due <= now() \
             LIMIT $3 FOR UPDATE SKIP LOCKED",
        )
        .bind((*fence).role())
        .bind(&fence.token())
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        sqlx::query("DELETE FROM jobs WHERE done AND leader_fence($1, $2)")
            .bind(fence.role())
            .bind(fence.token())
            .execute(&self.pool)
            .await?;
        Ok(first)
    }
}

fn main() {
    let _ = Store::claim;
}
