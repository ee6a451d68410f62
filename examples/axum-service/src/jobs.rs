//! The two leader jobs, in the two shapes a service's jobs take:
//!
//! * [`send_emails`] (`email_outbox`) is a **dispatcher**: one long tick that drains the outbox
//!   and waits for more until the tick is cancelled (a shutdown, a lost lease, a pause). Its
//!   replica leads the role for as long as it runs, so `/healthz` shows one leader at every
//!   moment, and a SIGTERM hands the role over at once (released with no cooldown, followers
//!   woken).
//! * [`write_report`] (`daily_report`) is **periodic**: one short tick every
//!   [`Config::report_every`](crate::Config::report_every). Between ticks nobody leads it; the
//!   next due tick goes to whichever replica asks first.
//!
//! Both take the application's state ([`State<App>`](leader_runtime::State)), the value axum's
//! handlers get, and claim through a `#[fenced]` funnel of [`Store`](crate::store::Store).

use std::time::Duration;

use leader_runtime::panic_guard::run_batch;
use leader_runtime::{JobError, Role, State, TickContext, leader_role};

use crate::App;

/// Emails claimed per batch at most.
const BATCH: i64 = 100;

/// The `daily_report` role. Registered with the builder, not `#[leader_role]`, because its
/// interval comes from the configuration (`#[leader_role]` takes a literal).
pub const DAILY_REPORT: Role = Role::from_static("daily_report");

/// Leads `email_outbox`: claims batches of unsent emails with the tick's fence and sends each
/// through its compare-and-set completion, until the tick is cancelled. When the outbox is
/// drained it waits [`App::outbox_idle`] (or for the cancellation) before claiming again.
///
/// `every = "1s"` only matters after a tick that ended on its own: a failed claim ends it with
/// an error (cooled down for a second, then led again by whichever replica asks first).
#[leader_role("email_outbox", every = "1s")]
pub async fn send_emails(tick: TickContext, State(app): State<App>) -> Result<(), JobError> {
    let fence = tick.fence();
    let store = app.store();
    while !tick.is_cancelled() {
        let claimed = store.claim_emails(fence, BATCH).await?;
        let drained = claimed.len() < usize::try_from(BATCH).unwrap_or(usize::MAX);
        let report = run_batch("email_outbox", claimed, |email| {
            let (store, replica) = (store.clone(), app.replica.clone());
            async move {
                if store.mark_sent(&email, fence, &replica).await? {
                    tracing::debug!(email = email.id, to = %email.recipient, subject = %email.subject, "sent");
                }
                Ok::<(), sqlx::Error>(())
            }
        })
        .await;
        for (email, error) in &report.failed {
            // Still unsent: the next claim of this tick (or of the next leader) takes it again.
            tracing::warn!(%email, %error, "email not sent; retried at the next claim");
        }
        if drained {
            tokio::select! {
                _ = tick.cancelled() => break,
                () = tokio::time::sleep(app.outbox_idle) => {}
            }
        }
    }
    Ok(())
}

/// Leads `daily_report`: writes the next report (every sent email not yet reported, counted once)
/// if the watermark it claimed has not moved, then ends the tick.
pub async fn write_report(tick: TickContext, State(app): State<App>) -> Result<(), JobError> {
    let fence = tick.fence();
    let store = app.store();
    let Some(written) = store.claim_report(fence).await? else {
        return Ok(());
    };
    match store.write_report(written, fence, &app.replica).await? {
        Some(sent) => tracing::info!(report = written + 1, emails_sent = sent, "report written"),
        None => tracing::info!(
            report = written + 1,
            "report already written by another tick"
        ),
    }
    Ok(())
}

/// How long [`send_emails`] waits after draining the outbox, by default.
pub const OUTBOX_IDLE: Duration = Duration::from_millis(250);
