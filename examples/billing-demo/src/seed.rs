//! Demo data.

use sqlx::PgPool;

/// How much demo data to create.
#[derive(Debug, Clone, Copy)]
pub struct SeedSize {
    pub subscriptions: i64,
    pub webhooks: i64,
    pub emails: i64,
}

/// Creates `size.subscriptions` subscriptions with periods of 3 to 8 seconds, due over their first
/// period (one in ten with a card that declines), and pre-filled outboxes.
pub async fn seed(pool: &PgPool, size: SeedSize) -> sqlx::Result<()> {
    let mut tx = pool.begin().await?;
    sqlx::query(
        "INSERT INTO subscriptions (customer, amount_cents, period_secs, billed_until, card_declines)
         SELECT 'customer-' || n || '@example.com', 500 + (n * 37) % 5000, 3 + n % 6,
                now() - ((n * 7919) % 1000) * (3 + n % 6) * interval '1 millisecond',
                n % 10 = 0
           FROM generate_series(1, $1) AS n",
    )
    .persistent(false)
    .bind(size.subscriptions)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO webhook_outbox (event, payload)
         SELECT 'customer.updated', n::text FROM generate_series(1, $1) AS n",
    )
    .persistent(false)
    .bind(size.webhooks)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO email_outbox (recipient, subject)
         SELECT 'customer-' || n || '@example.com', 'Welcome' FROM generate_series(1, $1) AS n",
    )
    .persistent(false)
    .bind(size.emails)
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}
