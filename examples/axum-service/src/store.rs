//! The service's store: what the HTTP handlers write and read, the two fenced claim funnels the
//! leader jobs claim their work through, and the compare-and-set writes that complete it.
//!
//! | role | claim funnel (`#[fenced]`) | completion (compare-and-set) | effect, in the same transaction |
//! |---|---|---|---|
//! | `email_outbox` | [`Store::claim_emails`]: stamps a batch of unsent emails with the token | [`Store::mark_sent`]: claimed by this token and unsent → sent | the delivery (`email_deliveries`) |
//! | `daily_report` | [`Store::claim_report`]: reads and locks the report watermark | [`Store::write_report`]: the watermark still where it was read → moved one on | the report, and each sent email stamped with it |
//!
//! The fence stops a superseded leader from claiming; the compare-and-set stops work it had
//! already claimed from completing twice. Every statement with bind parameters runs inside a
//! transaction with `.persistent(false)`, so the pool may go through a transaction-mode pooler
//! (PgBouncer before 1.21: see `docs/production.md`, "Behind a transaction-mode pooler").

use chrono::{DateTime, Utc};
use leader_runtime::{Fence, fenced};
use serde::Serialize;
use sqlx::PgPool;

/// An email as `POST /emails` takes it.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct NewEmail {
    /// Who it goes to.
    pub to: String,
    /// Its subject line.
    pub subject: String,
    /// Its text.
    #[serde(default)]
    pub body: String,
}

/// An email as `GET /emails/{id}` shows it.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct EmailStatus {
    /// Its id, as `POST /emails` returned it.
    pub id: i64,
    /// Who it goes to.
    pub to: String,
    /// Its subject line.
    pub subject: String,
    /// When it was enqueued (database clock).
    pub enqueued_at: DateTime<Utc>,
    /// When it was sent, once it was.
    pub sent_at: Option<DateTime<Utc>>,
    /// The replica whose `email_outbox` tick sent it.
    pub sent_by: Option<String>,
}

/// An email claimed by an `email_outbox` tick.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ClaimedEmail {
    /// Its id.
    pub id: i64,
    /// Who it goes to.
    pub recipient: String,
    /// Its subject line.
    pub subject: String,
}

/// The store, over the application's pool (the one the runtime uses too).
#[derive(Debug, Clone)]
pub struct Store {
    pool: PgPool,
}

impl Store {
    /// The store on `pool`.
    pub fn new(pool: PgPool) -> Store {
        Store { pool }
    }

    /// Adds `email` to the outbox and returns its id. Any replica can enqueue: whichever leads
    /// `email_outbox` sends it.
    pub async fn enqueue(&self, email: &NewEmail) -> sqlx::Result<i64> {
        let mut tx = self.pool.begin().await?;
        let id = sqlx::query_scalar(
            "INSERT INTO emails (recipient, subject, body) VALUES ($1, $2, $3) RETURNING id",
        )
        .persistent(false)
        .bind(&email.to)
        .bind(&email.subject)
        .bind(&email.body)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(id)
    }

    /// The email with this id, if there is one.
    pub async fn email(&self, id: i64) -> sqlx::Result<Option<EmailStatus>> {
        let mut tx = self.pool.begin().await?;
        let email = sqlx::query_as(
            r#"SELECT id, recipient AS "to", subject, enqueued_at, sent_at, sent_by
                 FROM emails WHERE id = $1"#,
        )
        .persistent(false)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(email)
    }

    /// Claim funnel of `email_outbox`: stamps up to `limit` unsent emails with the tick's token
    /// and returns them. The batch is locked by a query whose one-time fence stops a superseded
    /// leader from reading (so from locking) any row; the UPDATE changes only rows in that batch.
    #[fenced]
    pub async fn claim_emails(&self, fence: Fence, limit: i64) -> sqlx::Result<Vec<ClaimedEmail>> {
        let mut tx = self.pool.begin().await?;
        let claimed = sqlx::query_as(
            "UPDATE emails SET claimed_token = $2
              WHERE id IN (SELECT id FROM emails
                            WHERE sent_at IS NULL AND leader_fence($1, $2)
                            ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)
             RETURNING id, recipient, subject",
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

    /// Completion of `email_outbox`: claimed by this token and unsent → sent by `replica`, and
    /// in the same transaction the delivery it allows. False if another token claimed the email
    /// since, or it was sent: then nothing is delivered.
    ///
    /// The delivery row stands in for the mail provider. A real provider cannot join the
    /// transaction: call it after the commit, with the email's id as its idempotency key, so a
    /// replica that dies between the commit and the call is retried without a second email.
    pub async fn mark_sent(
        &self,
        email: &ClaimedEmail,
        fence: Fence,
        replica: &str,
    ) -> sqlx::Result<bool> {
        let mut tx = self.pool.begin().await?;
        let applied = sqlx::query(
            "UPDATE emails SET sent_at = now(), sent_by = $3
              WHERE id = $1 AND claimed_token = $2 AND sent_at IS NULL",
        )
        .persistent(false)
        .bind(email.id)
        .bind(fence.token())
        .bind(replica)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        if applied {
            sqlx::query(
                "INSERT INTO email_deliveries (email_id, token, sent_by) VALUES ($1, $2, $3)",
            )
            .persistent(false)
            .bind(email.id)
            .bind(fence.token())
            .bind(replica)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(applied)
    }

    /// Claim funnel of `daily_report`: the number of reports written so far (the watermark),
    /// read under a row lock that a superseded leader never takes. `None` when the row is locked
    /// by another transaction (a report being written): nothing to do this tick.
    #[fenced]
    pub async fn claim_report(&self, fence: Fence) -> sqlx::Result<Option<i64>> {
        let mut tx = self.pool.begin().await?;
        let written = sqlx::query_scalar(
            "SELECT reports_written FROM report_state
              WHERE id = 1 AND leader_fence($1, $2)
                FOR UPDATE SKIP LOCKED",
        )
        .persistent(false)
        .bind(fence.role())
        .bind(fence.token())
        .fetch_optional(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(written)
    }

    /// Completion of `daily_report`: if the watermark is still `written` (as
    /// [`Store::claim_report`] read it), moves it to `written + 1` and, in the same transaction,
    /// stamps every sent email not yet reported with that report and writes the report with
    /// their count. Returns the count, or `None` if the watermark had moved (another tick wrote
    /// that report; nothing was written).
    ///
    /// Stamping the emails, rather than counting a time window, counts each sent email in
    /// exactly one report even when its send commits after a report that began later.
    pub async fn write_report(
        &self,
        written: i64,
        fence: Fence,
        replica: &str,
    ) -> sqlx::Result<Option<u64>> {
        let seq = written + 1;
        let mut tx = self.pool.begin().await?;
        let moved = sqlx::query(
            "UPDATE report_state SET reports_written = $2 WHERE id = 1 AND reports_written = $1",
        )
        .persistent(false)
        .bind(written)
        .bind(seq)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if moved == 0 {
            return Ok(None);
        }
        let counted = sqlx::query(
            "UPDATE emails SET reported_in = $1 WHERE sent_at IS NOT NULL AND reported_in IS NULL",
        )
        .persistent(false)
        .bind(seq)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        sqlx::query(
            "INSERT INTO email_reports (seq, emails_sent, token, written_by)
             VALUES ($1, $2, $3, $4)",
        )
        .persistent(false)
        .bind(seq)
        .bind(i64::try_from(counted).unwrap_or(i64::MAX))
        .bind(fence.token())
        .bind(replica)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(counted))
    }
}
