//! The statement layer the runtime drives: the real one on PostgreSQL, or a fake in tests.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use leader_core::lease::{self, Acquired, Released, Renewed, Wanted};
use leader_core::{Fence, ReleaseOutcome, Statement, StatementError, Timings};
use sqlx::PgPool;
use tokio::sync::oneshot;

/// The lease statements a runtime sends, behind a trait so the timer logic can be tested
/// under tokio's paused clock with injected latency and errors.
///
/// Each method is one bounded statement; see [`leader_core::lease`] for the contract of each. An implementation must not retry on its own: the runtime decides
/// what an error means (a missed beat for RENEW, a skipped poll for ACQUIRE).
pub trait LeaseStatements: Send + Sync + 'static {
    /// ACQUIRE each of `roles` in one statement; one answer per role, in order.
    fn acquire_many(
        &self,
        roles: Vec<Wanted>,
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
}

/// How long a RENEW waits for others to join its statement. The runtime's heartbeats all beat on
/// one grid (see `heartbeat`), so the RENEWs of every lease a replica holds arrive together.
const COALESCE: Duration = Duration::from_millis(5);

/// At most this many roles are granted to a replica by one poll (besides the even share).
pub(crate) const MAX_GRANTS_PER_POLL: usize = 16;

type PendingRenew = (Fence, oneshot::Sender<Result<Renewed, StatementError>>);

/// [`LeaseStatements`] on a PostgreSQL pool, as `holder_id`, with `timings`.
///
/// RENEWs requested within a few milliseconds of each other are sent as one [`lease::renew`];
/// polls are one [`lease::acquire`].
#[derive(Debug, Clone)]
pub struct PgStatements {
    pool: PgPool,
    holder_id: String,
    timings: Timings,
    pending: Arc<Mutex<Vec<PendingRenew>>>,
    wake: bool,
}

impl PgStatements {
    /// Statements on `pool` for the holder `holder_id`.
    pub fn new(pool: PgPool, holder_id: String, timings: Timings) -> PgStatements {
        PgStatements {
            pool,
            holder_id,
            timings,
            pending: Arc::new(Mutex::new(Vec::new())),
            wake: false,
        }
    }

    /// These statements, with each RELEASE also notifying followers
    /// ([`lease::release_waking`]).
    pub fn waking(mut self) -> PgStatements {
        self.wake = true;
        self
    }

    async fn flush_renews(pool: PgPool, timings: Timings, pending: Arc<Mutex<Vec<PendingRenew>>>) {
        tokio::time::sleep(COALESCE).await;
        let waiting = std::mem::take(&mut *pending.lock().unwrap_or_else(|e| e.into_inner()));
        let fences: Vec<Fence> = waiting.iter().map(|(fence, _)| *fence).collect();
        match lease::renew(&pool, &fences, &timings).await {
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
}

impl LeaseStatements for PgStatements {
    fn acquire_many(
        &self,
        roles: Vec<Wanted>,
    ) -> BoxFuture<'_, Result<Vec<Acquired>, StatementError>> {
        Box::pin(async move {
            lease::acquire(
                &self.pool,
                &roles,
                &self.holder_id,
                MAX_GRANTS_PER_POLL,
                &self.timings,
            )
            .await
        })
    }

    fn renew(&self, fence: Fence) -> BoxFuture<'_, Result<Renewed, StatementError>> {
        let (reply, answer) = oneshot::channel();
        let first = {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            pending.push((fence, reply));
            pending.len() == 1
        };
        if first {
            tokio::spawn(PgStatements::flush_renews(
                self.pool.clone(),
                self.timings,
                self.pending.clone(),
            ));
        }
        Box::pin(async move {
            answer.await.unwrap_or_else(|_| {
                Err(StatementError::Database {
                    statement: Statement::Renew,
                    source: Arc::new(sqlx::Error::WorkerCrashed),
                })
            })
        })
    }

    fn release(
        &self,
        fence: Fence,
        outcome: ReleaseOutcome,
        interval: Duration,
    ) -> BoxFuture<'_, Result<Released, StatementError>> {
        if self.wake {
            Box::pin(lease::release_waking(
                &self.pool,
                fence,
                outcome,
                interval,
                &self.timings,
            ))
        } else {
            Box::pin(lease::release(
                &self.pool,
                fence,
                outcome,
                interval,
                &self.timings,
            ))
        }
    }
}
