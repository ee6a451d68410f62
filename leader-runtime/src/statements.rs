//! The statement layer the runtime drives: the real one on PostgreSQL, or a fake in tests.

use std::time::Duration;

use futures_util::future::BoxFuture;
use leader_core::lease::{self, Acquired, Released, Renewed};
use leader_core::{Error, Fence, ReleaseOutcome, Role, Timings};
use sqlx::PgPool;

/// The three lease statements a runtime sends, behind a trait so the timer logic can be tested
/// under tokio's paused clock with injected latency and errors.
///
/// Each method is one bounded statement; see [`leader_core::lease`] for the contract of each.
/// An implementation must not retry on its own: the runtime decides what an error means (a
/// missed beat for RENEW, a skipped poll for ACQUIRE).
pub trait LeaseStatements: Send + Sync + 'static {
    /// ACQUIRE `role` for one tick, due every `interval`.
    fn acquire(&self, role: Role, interval: Duration) -> BoxFuture<'_, Result<Acquired, Error>>;
    /// RENEW the lease held by `fence`.
    fn renew(&self, fence: Fence) -> BoxFuture<'_, Result<Renewed, Error>>;
    /// RELEASE the lease held by `fence` with `outcome`.
    fn release(
        &self,
        fence: Fence,
        outcome: ReleaseOutcome,
        interval: Duration,
    ) -> BoxFuture<'_, Result<Released, Error>>;
}

/// [`LeaseStatements`] on a PostgreSQL pool, as `holder_id`, with `timings`.
#[derive(Debug, Clone)]
pub struct PgStatements {
    pool: PgPool,
    holder_id: String,
    timings: Timings,
}

impl PgStatements {
    /// Statements on `pool` for the holder `holder_id`.
    pub fn new(pool: PgPool, holder_id: String, timings: Timings) -> PgStatements {
        PgStatements {
            pool,
            holder_id,
            timings,
        }
    }
}

impl LeaseStatements for PgStatements {
    fn acquire(&self, role: Role, interval: Duration) -> BoxFuture<'_, Result<Acquired, Error>> {
        Box::pin(lease::acquire(
            &self.pool,
            role,
            &self.holder_id,
            interval,
            &self.timings,
        ))
    }

    fn renew(&self, fence: Fence) -> BoxFuture<'_, Result<Renewed, Error>> {
        Box::pin(lease::renew(&self.pool, fence, &self.timings))
    }

    fn release(
        &self,
        fence: Fence,
        outcome: ReleaseOutcome,
        interval: Duration,
    ) -> BoxFuture<'_, Result<Released, Error>> {
        Box::pin(lease::release(
            &self.pool,
            fence,
            outcome,
            interval,
            &self.timings,
        ))
    }
}
