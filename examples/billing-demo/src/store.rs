//! The billing service's store: five fenced claim funnels, and the compare-and-set writes that
//! complete the claimed work.
//!
//! | role | claim funnel (`#[fenced]`) | completion (compare-and-set) | effect |
//! |---|---|---|---|
//! | `billing` | [`Store::due_subscriptions`] | [`Store::close_period`]: the period watermark | invoice, `invoice.finalized` webhook, receipt email (same transaction) |
//! | `dunning` | [`Store::due_dunning_runs`] | [`Store::record_attempt`]: the attempt count | card charge attempt (same transaction) |
//! | `webhook_outbox` | [`Store::claim_webhooks`] | [`Store::mark_dispatched`]: claimed → dispatched | the delivery row (same transaction) |
//! | `email_outbox` | [`Store::claim_emails`] | [`Store::mark_sent`]: claimed by this token → sent | the email, sent *before* the completion under [`ClaimedEmail::idempotency_key`] ([`crate::outbound`]) |
//! | `webhook_delivery` | [`Store::due_deliveries`] | [`Store::record_delivery`]: the attempt count | the HTTP attempt (same transaction) |
//!
//! The fence stops a superseded leader from claiming; the compare-and-set stops work it had
//! already claimed from completing twice. An effect that is a row of this database (an invoice,
//! a delivery row) commits with its completion, so it happens exactly once. The email is a call
//! to the outside world, which no transaction can include: it is sent first and stamped sent
//! after, so it is delivered at least once, and its key lets the provider drop the repeats
//! (`docs/outbound.md`). The card charge and the HTTP attempt are recorded in their completion's
//! transaction as stand-ins; real ones would follow the email's order, keyed by the row's id and
//! attempt number (the `effects` keys). Every statement with bind parameters runs inside a
//! transaction with `.persistent(false)`, as the README asks of code behind a transaction-mode
//! pooler before PgBouncer 1.21. The demo's audit of grants and claims is kept apart, in
//! [`crate::audit`]: these funnels are what an application would write.

use chrono::{DateTime, Utc};
use leader_runtime::{Fence, ShardFence, fenced};
use sqlx::postgres::PgArguments;
use sqlx::query::Query;
use sqlx::{PgPool, Postgres};

/// A subscription whose current period has ended.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DueSubscription {
    pub id: i64,
    pub customer: String,
    pub amount_cents: i32,
    pub period_secs: i32,
    pub billed_until: DateTime<Utc>,
    pub card_declines: bool,
    pub panic_on_bill: bool,
}

/// A dunning run due for its next charge attempt.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DueDunningRun {
    pub id: i64,
    pub invoice_id: i64,
    pub attempt_count: i32,
}

/// A claimed webhook outbox row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ClaimedWebhook {
    pub id: i64,
    pub event: String,
}

/// A claimed email.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ClaimedEmail {
    pub id: i64,
    pub recipient: String,
}

impl ClaimedEmail {
    /// The key the mail provider deduplicates this email by: the outbox row's id, the same for
    /// every send of it, whoever sends it. (A key with the claim's token would differ after a
    /// takeover, and the provider would deliver the new leader's repeat a second time.)
    pub fn idempotency_key(&self) -> String {
        format!("email-{}", self.id)
    }
}

/// A webhook delivery due for an attempt.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DueDelivery {
    pub id: i64,
    pub outbox_id: i64,
    pub attempt: i32,
}

/// The store, over the application's pool.
#[derive(Debug, Clone)]
pub struct Store {
    pool: PgPool,
}

/// How many attempts a dunning run or a webhook delivery gets.
pub const MAX_ATTEMPTS: i32 = 4;

impl Store {
    pub fn new(pool: PgPool) -> Store {
        Store { pool }
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Completes one claimed item: runs the compare-and-set `cas` in a transaction of its own
    /// and, only if it changed exactly one row, records `effect` (its kind and key) and runs
    /// `also` in the same transaction. Returns whether the write applied.
    ///
    /// The effect record commits with the write that allows it, so a replica that dies between
    /// the two leaves neither. A real call to the outside world cannot join the transaction, and
    /// going after the commit would lose it to a kill between the two: it goes before this
    /// write, keyed by the row so the provider can drop a repeat, as `email_outbox` sends.
    async fn complete(
        &self,
        cas: Query<'_, Postgres, PgArguments>,
        effect: Option<(&str, String, Fence)>,
        also: Option<Query<'_, Postgres, PgArguments>>,
    ) -> sqlx::Result<bool> {
        let mut tx = self.pool.begin().await?;
        let applied = cas
            .persistent(false)
            .execute(&mut *tx)
            .await?
            .rows_affected()
            == 1;
        if applied {
            if let Some((kind, key, fence)) = effect {
                sqlx::query("INSERT INTO effects (kind, key, role, token) VALUES ($1, $2, $3, $4)")
                    .persistent(false)
                    .bind(kind)
                    .bind(key)
                    .bind(fence.role())
                    .bind(fence.token())
                    .execute(&mut *tx)
                    .await?;
            }
            if let Some(also) = also {
                also.persistent(false).execute(&mut *tx).await?;
            }
        }
        tx.commit().await?;
        Ok(applied)
    }

    /// Claim funnel of `billing`: subscriptions whose current period has ended.
    #[fenced]
    pub async fn due_subscriptions(
        &self,
        fence: Fence,
        limit: i64,
    ) -> sqlx::Result<Vec<DueSubscription>> {
        let mut tx = self.pool.begin().await?;
        let due = sqlx::query_as::<_, DueSubscription>(
            "SELECT id, customer, amount_cents, period_secs, billed_until, card_declines, panic_on_bill
               FROM subscriptions
              WHERE billed_until + period_secs * interval '1 second' <= now()
                AND leader_fence($2, $3)
              ORDER BY billed_until
              LIMIT $1
                FOR UPDATE SKIP LOCKED",
        )
        .persistent(false)
        .bind(limit)
        .bind(fence.role())
        .bind(fence.token())
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(due)
    }

    /// Completion of `billing`: closes the period the caller read, if the watermark is still
    /// where it read it, and in the same transaction writes the invoice, its webhook, its email
    /// and (for a declining card) a dunning run. Returns false if the watermark had moved: the
    /// period was billed by someone else, and nothing was written.
    pub async fn close_period(&self, sub: &DueSubscription) -> sqlx::Result<bool> {
        let mut tx = self.pool.begin().await?;
        let moved = sqlx::query(
            "UPDATE subscriptions
                SET billed_until = billed_until + period_secs * interval '1 second'
              WHERE id = $1 AND billed_until = $2",
        )
        .persistent(false)
        .bind(sub.id)
        .bind(sub.billed_until)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if moved == 0 {
            return Ok(false);
        }
        let invoice: i64 = sqlx::query_scalar(
            "INSERT INTO invoices (subscription_id, period_start, period_end, amount_cents, paid)
             VALUES ($1, $2, $2 + $3 * interval '1 second', $4, NOT $5)
             RETURNING id",
        )
        .persistent(false)
        .bind(sub.id)
        .bind(sub.billed_until)
        .bind(sub.period_secs)
        .bind(sub.amount_cents)
        .bind(sub.card_declines)
        .fetch_one(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO webhook_outbox (event, payload) VALUES ('invoice.finalized', $1::text);
             ",
        )
        .persistent(false)
        .bind(invoice.to_string())
        .execute(&mut *tx)
        .await?;
        sqlx::query("INSERT INTO email_outbox (recipient, subject) VALUES ($1, $2)")
            .persistent(false)
            .bind(&sub.customer)
            .bind(format!("Invoice {invoice}"))
            .execute(&mut *tx)
            .await?;
        if sub.card_declines {
            sqlx::query("INSERT INTO dunning_runs (invoice_id) VALUES ($1)")
                .persistent(false)
                .bind(invoice)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Claim funnel of `dunning`: open runs due for an attempt.
    #[fenced]
    pub async fn due_dunning_runs(
        &self,
        fence: Fence,
        limit: i64,
    ) -> sqlx::Result<Vec<DueDunningRun>> {
        let mut tx = self.pool.begin().await?;
        let due = sqlx::query_as::<_, DueDunningRun>(
            "SELECT id, invoice_id, attempt_count
               FROM dunning_runs
              WHERE status = 'open' AND next_attempt_at <= now()
                AND leader_fence($1, $2)
              ORDER BY next_attempt_at
              LIMIT $3
                FOR UPDATE SKIP LOCKED",
        )
        .persistent(false)
        .bind(fence.role())
        .bind(fence.token())
        .bind(limit)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(due)
    }

    /// Completion of `dunning`: records attempt `run.attempt_count + 1` if the count is still
    /// the one the caller read, and in the same transaction the charge it allows (and the
    /// invoice paid, if it was recovered). Returns whether the attempt was recorded; a superseded
    /// or repeated attempt records and charges nothing.
    pub async fn record_attempt(
        &self,
        run: &DueDunningRun,
        recovered: bool,
        fence: Fence,
    ) -> sqlx::Result<bool> {
        let cas = sqlx::query(
            "UPDATE dunning_runs
                SET attempt_count = attempt_count + 1,
                    next_attempt_at = now() + interval '2 seconds',
                    status = CASE WHEN $3 THEN 'recovered'
                                  WHEN attempt_count + 1 >= $4 THEN 'exhausted'
                                  ELSE 'open' END
              WHERE id = $1 AND attempt_count = $2 AND status = 'open'",
        )
        .bind(run.id)
        .bind(run.attempt_count)
        .bind(recovered)
        .bind(MAX_ATTEMPTS);
        let charge = format!("{}:{}", run.id, run.attempt_count + 1);
        let paid = recovered.then(|| {
            sqlx::query("UPDATE invoices SET paid = true WHERE id = $1").bind(run.invoice_id)
        });
        self.complete(cas, Some(("charge", charge, fence)), paid)
            .await
    }

    /// Claim funnel of `webhook_outbox`: stamps a batch of undispatched rows with the token.
    ///
    /// The fence is in the UPDATE too: its join reads `o.id` on outbox rows before it finds the
    /// batch empty, and `#[fenced]` cannot tell from the SQL alone that `o.id` is a column and
    /// not a call of a function `id(o)`; as a one-time filter it stops the UPDATE reading any
    /// row for a superseded leader.
    #[fenced]
    pub async fn claim_webhooks(
        &self,
        fence: Fence,
        limit: i64,
    ) -> sqlx::Result<Vec<ClaimedWebhook>> {
        let mut tx = self.pool.begin().await?;
        let claimed = sqlx::query_as::<_, ClaimedWebhook>(
            "WITH batch AS (
                 SELECT id FROM webhook_outbox
                  WHERE dispatched_at IS NULL
                    AND leader_fence($1, $2)
                  ORDER BY id
                  LIMIT $3
                    FOR UPDATE SKIP LOCKED
             )
             UPDATE webhook_outbox o
                SET claimed_token = $2
               FROM batch
              WHERE o.id = batch.id
                AND leader_fence($1, $2)
             RETURNING o.id, o.event",
        )
        .persistent(false)
        .bind(fence.role())
        .bind(fence.token())
        .bind(limit)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(claimed)
    }

    /// Completion of `webhook_outbox`: claimed by this token → dispatched, and the delivery
    /// created, in one transaction. False if another token claimed it since, or it was
    /// dispatched already.
    pub async fn mark_dispatched(&self, row: &ClaimedWebhook, token: i64) -> sqlx::Result<bool> {
        let cas = sqlx::query(
            "UPDATE webhook_outbox SET dispatched_at = now()
              WHERE id = $1 AND claimed_token = $2 AND dispatched_at IS NULL",
        )
        .bind(row.id)
        .bind(token);
        let delivery =
            sqlx::query("INSERT INTO webhook_deliveries (outbox_id) VALUES ($1)").bind(row.id);
        self.complete(cas, None, Some(delivery)).await
    }

    /// Claim funnel of `email_outbox`: stamps a batch of unsent emails with the token.
    #[fenced]
    pub async fn claim_emails(&self, fence: &Fence, limit: i64) -> sqlx::Result<Vec<ClaimedEmail>> {
        let mut tx = self.pool.begin().await?;
        let claimed = sqlx::query_as::<_, ClaimedEmail>(
            r#"
            -- Lock a batch first (a superseded leader must not even lock), then stamp it.
            UPDATE email_outbox
               SET claimed_token = $3
             WHERE id IN (SELECT id
                            FROM email_outbox
                           WHERE sent_at IS NULL
                             AND leader_fence($2, $3)
                           ORDER BY id
                           LIMIT $1
                             FOR UPDATE SKIP LOCKED)
            RETURNING id, recipient
            "#,
        )
        .persistent(false)
        .bind(limit)
        .bind(fence.role())
        .bind(fence.token())
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(claimed)
    }

    /// Completion of `email_outbox`: claimed by this token and unsent → sent. Called only after
    /// the provider accepted the email, so an email is stamped sent only once it left. False if
    /// another token claimed the email since (its sends carry the same key), or it was sent.
    pub async fn mark_sent(&self, email: &ClaimedEmail, fence: Fence) -> sqlx::Result<bool> {
        let cas = sqlx::query(
            "UPDATE email_outbox SET sent_at = now()
              WHERE id = $1 AND claimed_token = $2 AND sent_at IS NULL",
        )
        .bind(email.id)
        .bind(fence.token());
        self.complete(cas, None, None).await
    }

    /// Claim funnel of `webhook_delivery`, a sharded role: the pending deliveries of the
    /// fence's shard whose retry time has come.
    #[fenced]
    pub async fn due_deliveries(
        &self,
        fence: ShardFence,
        limit: i64,
    ) -> sqlx::Result<Vec<DueDelivery>> {
        let mut tx = self.pool.begin().await?;
        let due = sqlx::query_as::<_, DueDelivery>(
            "SELECT id, outbox_id, attempt
               FROM webhook_deliveries
              WHERE status = 'pending' AND next_retry_at <= now()
                AND leader_fence($1, $2, $3, $4)
                AND leader_shard_of(id, $3) = $2
              ORDER BY next_retry_at
              LIMIT $5
                FOR UPDATE SKIP LOCKED",
        )
        .persistent(false)
        .bind(fence.role())
        .bind(fence.shard_index())
        .bind(fence.shard_count())
        .bind(fence.token())
        .bind(limit)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(due)
    }

    /// Completion of `webhook_delivery`: records attempt `delivery.attempt + 1` and its result
    /// if the attempt count is still the one read, and in the same transaction the HTTP attempt
    /// it allows. Returns whether the attempt was recorded.
    pub async fn record_delivery(
        &self,
        delivery: &DueDelivery,
        delivered: bool,
        fence: Fence,
    ) -> sqlx::Result<bool> {
        let cas = sqlx::query(
            "UPDATE webhook_deliveries
                SET attempt = attempt + 1,
                    next_retry_at = now() + (attempt + 1) * interval '500 milliseconds',
                    status = CASE WHEN $3 THEN 'delivered'
                                  WHEN attempt + 1 >= $4 THEN 'failed'
                                  ELSE 'pending' END
              WHERE id = $1 AND attempt = $2 AND status = 'pending'",
        )
        .bind(delivery.id)
        .bind(delivery.attempt)
        .bind(delivered)
        .bind(MAX_ATTEMPTS);
        let attempt = format!("{}:{}", delivery.id, delivery.attempt + 1);
        self.complete(cas, Some(("delivery", attempt, fence)), None)
            .await
    }
}
