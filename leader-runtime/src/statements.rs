//! The statement layer the runtime drives: the real one on PostgreSQL, or a fake in tests.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use leader_core::lease::{self, Acquired, Anchor, LeaseEnd, Released, Renewed, Wanted};
use leader_core::{Fence, ReleaseOutcome, Role, Statement, StatementError, Timings};
use sqlx::PgPool;
use tokio::sync::oneshot;

/// The lease statements a runtime sends, behind a trait so the timer logic can be tested
/// under tokio's paused clock with injected latency and errors.
///
/// Each method is one bounded statement; see [`leader_core::lease`] for the contract of each. An implementation must not retry on its own: the runtime decides
/// what an error means (a missed beat for RENEW, a skipped poll for ACQUIRE).
pub trait LeaseStatements: Send + Sync + 'static {
    /// ACQUIRE each of `roles` in one statement, naming `anchor` ([`lease::acquire_anchored`]);
    /// one answer per role, in order.
    fn acquire_many(
        &self,
        roles: Vec<Wanted>,
        anchor: Option<Anchor>,
    ) -> BoxFuture<'_, Result<Vec<Acquired>, StatementError>>;
    /// RENEW the lease held by `fence`.
    fn renew(&self, fence: Fence) -> BoxFuture<'_, Result<Renewed, StatementError>>;
    /// RELEASE the lease held by `fence` with `outcome`.
    fn release(
        &self,
        fence: Fence,
        outcome: ReleaseOutcome,
        interval: Duration,
    ) -> BoxFuture<'_, Result<Released, StatementError>>;
    /// LEAVE: this replica no longer runs `roles` (its sharded roles); it stops.
    fn leave(&self, roles: Vec<Role>) -> BoxFuture<'_, Result<u64, StatementError>>;
}

/// How long a RENEW or RELEASE waits for others to join its statement. The runtime's heartbeats
/// all beat on one grid (see `heartbeat`), so the RENEWs of every lease a replica holds arrive
/// together; the shards of a role that one ACQUIRE granted tick together, and so release together.
const COALESCE: Duration = Duration::from_millis(5);

/// At most this many roles are granted to a replica by one poll (besides the even share).
pub(crate) const MAX_GRANTS_PER_POLL: usize = 16;

type PendingRenew = (Fence, oneshot::Sender<Result<Renewed, StatementError>>);
type PendingRelease = (LeaseEnd, oneshot::Sender<Result<Released, StatementError>>);

/// [`LeaseStatements`] on a PostgreSQL pool, as `holder_id`, with `timings`.
///
/// RENEWs requested within a few milliseconds of each other are sent as one [`lease::renew`],
/// and RELEASEs as one [`lease::release_many`]; polls are one [`lease::acquire`].
#[derive(Debug, Clone)]
pub struct PgStatements {
    pool: PgPool,
    holder_id: String,
    timings: Timings,
    renewing: Arc<Mutex<Vec<PendingRenew>>>,
    releasing: Arc<Mutex<Vec<PendingRelease>>>,
    wake: bool,
}

impl PgStatements {
    /// Statements on `pool` for the holder `holder_id`.
    pub fn new(pool: PgPool, holder_id: String, timings: Timings) -> PgStatements {
        PgStatements {
            pool,
            holder_id,
            timings,
            renewing: Arc::new(Mutex::new(Vec::new())),
            releasing: Arc::new(Mutex::new(Vec::new())),
            wake: false,
        }
    }

    /// These statements, with each RELEASE also notifying followers
    /// ([`lease::release_waking`]).
    pub fn waking(mut self) -> PgStatements {
        self.wake = true;
        self
    }

    async fn flush_renews(pool: PgPool, timings: Timings, renewing: Arc<Mutex<Vec<PendingRenew>>>) {
        tokio::time::sleep(COALESCE).await;
        let waiting = take(&renewing);
        let fences: Vec<Fence> = waiting.iter().map(|(fence, _)| *fence).collect();
        reply_each(waiting, lease::renew(&pool, &fences, &timings).await);
    }

    async fn flush_releases(
        pool: PgPool,
        timings: Timings,
        releasing: Arc<Mutex<Vec<PendingRelease>>>,
        notify: bool,
    ) {
        tokio::time::sleep(COALESCE).await;
        let waiting = take(&releasing);
        let ends: Vec<LeaseEnd> = waiting.iter().map(|(end, _)| *end).collect();
        reply_each(
            waiting,
            lease::release_many(&pool, &ends, &timings, notify).await,
        );
    }
}

/// Empties `pending`, returning what it held.
fn take<T>(pending: &Mutex<Vec<T>>) -> Vec<T> {
    std::mem::take(&mut *pending.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Adds `entry` to `pending`; true if it is the first, whose caller starts the flush.
fn join<T>(pending: &Mutex<Vec<T>>, entry: T) -> bool {
    let mut pending = pending.lock().unwrap_or_else(|e| e.into_inner());
    pending.push(entry);
    pending.len() == 1
}

/// Answers each caller in `waiting` with its own answer, or every one of them with the
/// statement's error.
fn reply_each<A, R>(
    waiting: Vec<(A, oneshot::Sender<Result<R, StatementError>>)>,
    answers: Result<Vec<R>, StatementError>,
) {
    match answers {
        Ok(answers) => {
            for ((_, reply), answer) in waiting.into_iter().zip(answers) {
                let _ = reply.send(Ok(answer));
            }
        }
        Err(error) => {
            for (_, reply) in waiting {
                let _ = reply.send(Err(error.clone()));
            }
        }
    }
}

/// The answer a flush sends, or `statement`'s error if the flush is gone.
async fn answer<R>(
    answer: oneshot::Receiver<Result<R, StatementError>>,
    statement: Statement,
) -> Result<R, StatementError> {
    answer.await.unwrap_or_else(|_| {
        Err(StatementError::Database {
            statement,
            source: Arc::new(sqlx::Error::WorkerCrashed),
        })
    })
}

impl LeaseStatements for PgStatements {
    fn acquire_many(
        &self,
        roles: Vec<Wanted>,
        anchor: Option<Anchor>,
    ) -> BoxFuture<'_, Result<Vec<Acquired>, StatementError>> {
        Box::pin(async move {
            lease::acquire_anchored(
                &self.pool,
                &roles,
                &self.holder_id,
                anchor.as_ref(),
                MAX_GRANTS_PER_POLL,
                &self.timings,
            )
            .await
        })
    }

    fn renew(&self, fence: Fence) -> BoxFuture<'_, Result<Renewed, StatementError>> {
        let (reply, waiting) = oneshot::channel();
        if join(&self.renewing, (fence, reply)) {
            tokio::spawn(PgStatements::flush_renews(
                self.pool.clone(),
                self.timings,
                self.renewing.clone(),
            ));
        }
        Box::pin(answer(waiting, Statement::Renew))
    }

    fn release(
        &self,
        fence: Fence,
        outcome: ReleaseOutcome,
        interval: Duration,
    ) -> BoxFuture<'_, Result<Released, StatementError>> {
        let (reply, waiting) = oneshot::channel();
        let end = LeaseEnd::new(fence, outcome, interval);
        if join(&self.releasing, (end, reply)) {
            tokio::spawn(PgStatements::flush_releases(
                self.pool.clone(),
                self.timings,
                self.releasing.clone(),
                self.wake,
            ));
        }
        Box::pin(answer(waiting, Statement::Release))
    }

    fn leave(&self, roles: Vec<Role>) -> BoxFuture<'_, Result<u64, StatementError>> {
        Box::pin(
            async move { lease::leave(&self.pool, &self.holder_id, &roles, &self.timings).await },
        )
    }
}
