//! The outside world the jobs call: the mail provider `email_outbox` sends through, standing in
//! for an HTTP API that deduplicates by idempotency key.
//!
//! A send is its own statement on the `mailbox` table (see its migration), outside every
//! transaction of the job, as a real call to the outside world cannot join one: a replica killed
//! after it and before the email is stamped sent leaves an email the provider received and the
//! outbox still owes, which is what at-least-once means. How the job orders the send and the
//! stamp, and what each order guarantees, is in `docs/outbound.md`.
//!
//! For the demo's kills, a send can be held at a [`SendPoint`] ([`hold_next_send`]): the demo
//! then kills the replica whose send it is, so the kill lands exactly between the two writes
//! that at-least-once and at-most-once order differently. Nothing is held unless the demo asks,
//! so the jobs run unchanged anywhere else (the drills' replicas).

use std::sync::{Mutex, PoisonError};

use leader_runtime::Fence;
use sqlx::PgPool;
use tokio::sync::oneshot;

use crate::store::ClaimedEmail;

/// A point in a send where the demo can hold it for a kill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendPoint {
    /// The request is on its way: the provider has not accepted the email.
    BeforeAccepted,
    /// The provider accepted the email; its answer has not come back.
    AfterAccepted,
}

/// A send the demo asked to hold: on `database`, at `point`; `held` gets the sender's fence.
#[derive(Debug)]
struct Hold {
    database: String,
    point: SendPoint,
    held: oneshot::Sender<Fence>,
}

/// The holds not yet taken by a send.
static HOLDS: Mutex<Vec<Hold>> = Mutex::new(Vec::new());

/// Asks that the next email send on `database` to reach `point` stop there and never go on (until
/// its replica is killed); the receiver gets that send's fence. Dropping the receiver withdraws
/// the hold, if no send took it yet.
pub fn hold_next_send(database: &str, point: SendPoint) -> oneshot::Receiver<Fence> {
    let (held, receiver) = oneshot::channel();
    let mut holds = HOLDS.lock().unwrap_or_else(PoisonError::into_inner);
    holds.retain(|hold| !hold.held.is_closed());
    holds.push(Hold {
        database: database.to_owned(),
        point,
        held,
    });
    receiver
}

/// Stops here for good if the demo holds sends on this database at `point` (see
/// [`hold_next_send`]); returns at once otherwise.
async fn hold_point(pool: &PgPool, point: SendPoint, fence: Fence) {
    let database = pool
        .connect_options()
        .get_database()
        .unwrap_or_default()
        .to_owned();
    let taken = {
        let mut holds = HOLDS.lock().unwrap_or_else(PoisonError::into_inner);
        let position = holds
            .iter()
            .position(|h| h.point == point && h.database == database && !h.held.is_closed());
        position.map(|i| holds.remove(i))
    };
    if let Some(hold) = taken
        && hold.held.send(fence).is_ok()
    {
        std::future::pending::<()>().await;
    }
}

/// Sends `email` through the mail provider under `email.idempotency_key()`; returns once the
/// provider accepted it. The provider keeps one message per key, so a repeat of this call (by
/// this tick or by a later leader after a takeover) delivers nothing new.
///
/// # Errors
///
/// The provider's (here: the database's) error; the email was then not accepted, or its answer
/// was lost, and the job leaves it unsent for a later tick to send again under the same key.
pub async fn send_email(pool: &PgPool, email: &ClaimedEmail, fence: Fence) -> sqlx::Result<()> {
    hold_point(pool, SendPoint::BeforeAccepted, fence).await;
    // One round trip, as one HTTP request would be: a simple query with its values inlined
    // (two integers and the key, quoted), which needs no transaction behind a pooler.
    let accept = format!(
        "INSERT INTO mailbox (email_id, idempotency_key, token) VALUES ({}, '{}', {})",
        email.id,
        email.idempotency_key().replace('\'', "''"),
        fence.token()
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(accept))
        .execute(pool)
        .await?;
    hold_point(pool, SendPoint::AfterAccepted, fence).await;
    Ok(())
}
