//! The five leader jobs. Each claims through its fenced funnel, completes each item through a
//! compare-and-set, and guards each item (or billing step) so one panicking row does not stop the
//! rest. An effect in the database commits with its completion; the email, a call to the outside
//! world, is sent before its completion under an idempotency key (at least once).

use leader_runtime::panic_guard::{BatchReport, Steps, run_batch};
use leader_runtime::{JobError, TickContext, leader_role};

use crate::audit::Audit;
use crate::outbound::send_email;
use crate::store::Store;

/// Subscriptions billed per tick at most.
const BILLING_BATCH: i64 = 200;
/// Queue rows claimed per tick at most.
const QUEUE_BATCH: i64 = 100;

fn store(tick: &TickContext) -> Store {
    Store::new(tick.pool().clone())
}

/// The demo's audit trail (not part of the jobs' logic: see [`crate::audit`]). Records the grant.
async fn audit(tick: &TickContext) -> sqlx::Result<Audit> {
    let audit = Audit::new(tick.pool().clone());
    audit.grant(tick.fence(), tick.acquired_at()).await?;
    Ok(audit)
}

/// A deterministic stand-in for a card network: whether charge `attempt` of run `id` succeeds.
fn charge_succeeds(id: i64, attempt: i32) -> bool {
    (id + i64::from(attempt)) % 3 == 0
}

/// A deterministic stand-in for a webhook receiver: whether attempt `attempt` is accepted.
fn receiver_accepts(id: i64, attempt: i32) -> bool {
    (id * 7 + i64::from(attempt)) % 4 != 0
}

/// On the calendar: every second, each instant run once (`missed = "each"`: after an outage every
/// missed second is billed in turn, as a nightly billing run would bill every missed night).
#[leader_role("billing", cron = "* * * * * *", missed = "each")]
pub async fn bill(tick: TickContext) -> Result<(), JobError> {
    let store = store(&tick);
    let fence = tick.fence();
    let audit = audit(&tick).await?;
    let due = audit
        .claim(fence, store.due_subscriptions(fence, BILLING_BATCH))
        .await?;
    let mut steps = Steps::new("billing");
    for sub in due {
        if tick.is_cancelled() {
            break;
        }
        let step = format!("subscription {}", sub.id);
        let billed = steps
            .run(&step, async {
                if sub.panic_on_bill {
                    panic!("subscription {} has no price for its plan", sub.id);
                }
                store.close_period(&sub).await
            })
            .await;
        if let Some(Err(error)) = billed {
            tracing::warn!(subscription = sub.id, %error, "billing failed; retried next tick");
        }
    }
    steps.finish();
    audit.completed(fence).await?;
    Ok(())
}

#[leader_role("dunning", every = "1s")]
pub async fn dun(tick: TickContext) -> Result<(), JobError> {
    let store = store(&tick);
    let fence = tick.fence();
    let audit = audit(&tick).await?;
    let due = audit
        .claim(fence, store.due_dunning_runs(fence, QUEUE_BATCH))
        .await?;
    let report = run_batch("dunning", due, |run| {
        let store = store.clone();
        async move {
            let attempt = run.attempt_count + 1;
            let recovered = charge_succeeds(run.id, attempt);
            // Only an attempt recorded by compare-and-set charges the card.
            store.record_attempt(&run, recovered, fence).await.map(drop)
        }
    })
    .await;
    for (run, error) in &report.failed {
        tracing::warn!(run, %error, "dunning attempt failed; retried next tick");
    }
    audit.completed(fence).await?;
    Ok(())
}

#[leader_role("webhook_outbox", every = "200ms")]
pub async fn dispatch_webhooks(tick: TickContext) -> Result<(), JobError> {
    let store = store(&tick);
    let fence = tick.fence();
    let audit = audit(&tick).await?;
    let claimed = audit
        .claim(fence, store.claim_webhooks(fence, QUEUE_BATCH))
        .await?;
    let report = run_batch("webhook_outbox", claimed, |row| {
        let store = store.clone();
        async move { store.mark_dispatched(&row, fence.token()).await.map(drop) }
    })
    .await;
    left_for_the_next_tick("webhook_outbox", report);
    audit.completed(fence).await?;
    Ok(())
}

#[leader_role("email_outbox", every = "200ms")]
pub async fn send_emails(tick: TickContext) -> Result<(), JobError> {
    let store = store(&tick);
    let fence = tick.fence();
    let audit = audit(&tick).await?;
    let claimed = audit
        .claim(fence, store.claim_emails(&fence, QUEUE_BATCH))
        .await?;
    let report = run_batch("email_outbox", claimed, |email| {
        let store = store.clone();
        async move {
            // At least once: send first, then stamp it sent. A kill between the two leaves it
            // unsent, and the next leader sends it again under the same key.
            send_email(store.pool(), &email, fence).await?;
            store.mark_sent(&email, fence).await.map(drop)
        }
    })
    .await;
    left_for_the_next_tick("email_outbox", report);
    audit.completed(fence).await?;
    Ok(())
}

#[leader_role("webhook_delivery", every = "200ms", shards = 8)]
pub async fn deliver_webhooks(tick: TickContext) -> Result<(), JobError> {
    let store = store(&tick);
    let fence = tick.fence();
    let shard = tick
        .shard_fence()
        .ok_or("webhook_delivery is sharded: its tick holds a shard")?;
    let audit = audit(&tick).await?;
    let due = audit
        .claim(fence, store.due_deliveries(shard, QUEUE_BATCH))
        .await?;
    let report = run_batch("webhook_delivery", due, |delivery| {
        let store = store.clone();
        async move {
            let attempt = delivery.attempt + 1;
            let accepted = receiver_accepts(delivery.id, attempt);
            store
                .record_delivery(&delivery, accepted, fence)
                .await
                .map(drop)
        }
    })
    .await;
    left_for_the_next_tick("webhook_delivery", report);
    audit.completed(fence).await?;
    Ok(())
}

/// An item whose completion failed stays unfinished, so the next tick claims it again: logged,
/// one line per item, and the tick still counts as completed (the others were finished).
fn left_for_the_next_tick(queue: &str, report: BatchReport<sqlx::Error>) {
    for (item, error) in &report.failed {
        tracing::warn!(queue, %item, %error, "left for the next tick");
    }
}
