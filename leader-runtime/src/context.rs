//! What a job receives for one tick.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use leader_core::{Fence, Role, Shard, ShardFence};
use sqlx::PgPool;

use crate::cancel::{CancelCause, TickCancellation};
use crate::tick_tasks::TickTasks;

/// One granted tick of a role, handed to its job.
///
/// It carries the [`Fence`] the job's claim queries must prove, the tick's cancellation (with
/// its [`CancelCause`]), when the lease was granted (database clock), and the runtime's pool.
/// The application's own state comes as the job's second parameter, [`State`](crate::State).
///
/// # Contract
///
/// * The fence was granted by ACQUIRE for this tick and is the only one this tick may use.
/// * Once [`TickContext::cancelled`] fires, the tick no longer leads (or is shutting down): stop
///   claiming work and return. Claims carrying the fence already return nothing once the lease is
///   lost; cancellation is how the job learns to stop early.
/// * Nothing here compares the database clock with the local clock for safety.
#[derive(Debug, Clone)]
pub struct TickContext {
    fence: Fence,
    cancellation: TickCancellation,
    acquired_at: DateTime<Utc>,
    tick_instant: Option<DateTime<Tz>>,
    pool: PgPool,
    tasks: TickTasks,
}

impl TickContext {
    pub(crate) fn new(
        fence: Fence,
        cancellation: TickCancellation,
        acquired_at: DateTime<Utc>,
        pool: PgPool,
        tasks: TickTasks,
    ) -> TickContext {
        TickContext {
            fence,
            cancellation,
            acquired_at,
            tick_instant: None,
            pool,
            tasks,
        }
    }

    /// This context, serving the scheduled instant `instant`.
    pub(crate) fn serving(mut self, instant: Option<DateTime<Tz>>) -> TickContext {
        self.tick_instant = instant;
        self
    }

    /// The context the runtime would hand a job for `grant`, for calling a job directly in its
    /// tests. Only with the `test-support` feature, which also brings
    /// [`protocol`](crate::protocol) (the statements a test takes its grant from) and
    /// `TickContext::cancel_for_test` (cancels the context, to test how the job stops). Its
    /// cancellation starts uncancelled.
    ///
    /// The grant comes from a real ACQUIRE ([`protocol::lease::acquire_one`]: the job's claims
    /// then pass `leader_fence`), or is built with `Grant::forge` around a fence from
    /// `Fence::forge` with the `test-support` feature (its claims are then refused, as a replaced
    /// leader's are). Nothing leads the role while the test runs the job: no heartbeat renews
    /// the lease, and nothing releases it.
    ///
    /// [`protocol::lease::acquire_one`]: crate::protocol::lease::acquire_one
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use leader_runtime::protocol::lease::{self, Acquired};
    /// use leader_runtime::{JobError, Role, TickContext, Timings};
    ///
    /// async fn dispatch(tick: TickContext) -> Result<(), JobError> {
    ///     // ... the job under test ...
    /// #   Ok(())
    /// }
    ///
    /// # async fn test(pool: sqlx::PgPool) -> Result<(), JobError> {
    /// let role = Role::from_static("email_outbox");
    /// let every = Duration::from_secs(5);
    /// let Acquired::Granted(grant) =
    ///     lease::acquire_one(&pool, role, "job-test", every, &Timings::DEFAULT).await?
    /// else {
    ///     panic!("the role is free in a fresh test database");
    /// };
    /// dispatch(TickContext::from_grant(grant, pool.clone())).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// A grant of a calendar role's instant gives [`TickContext::tick_instant`] that instant, in
    /// UTC (the grant does not carry the schedule's time zone). Tasks the job starts with
    /// [`TickContext::spawn`] are not ended for it: no tick ends.
    #[cfg(any(feature = "test-support", doc))]
    pub fn from_grant(grant: leader_core::lease::Grant, pool: PgPool) -> TickContext {
        TickContext::new(
            grant.fence,
            TickCancellation::new(),
            grant.acquired_at,
            pool,
            TickTasks::new(tracing::Span::current()),
        )
        .serving(
            grant
                .tick_instant
                .map(|instant| instant.with_timezone(&Tz::UTC)),
        )
    }

    /// Cancels this context's tick with `cause`, as the runtime would, to test how a job stops.
    /// Only with the `test-support` feature: in a running tick only the runtime cancels, with
    /// the cause it observed.
    #[cfg(feature = "test-support")]
    pub fn cancel_for_test(&self, cause: CancelCause) {
        self.cancellation.cancel(cause);
    }

    /// The fence to bind into this tick's claim queries.
    pub fn fence(&self) -> Fence {
        self.fence
    }

    /// The role this tick leads.
    pub fn role(&self) -> Role {
        self.fence.role()
    }

    /// Which shard of a sharded role this tick leads (index and count); `None` for an unsharded
    /// role.
    pub fn shard(&self) -> Option<Shard> {
        self.fence.shard()
    }

    /// The fence a sharded role's claims prove, with the four-argument `leader_fence` beside
    /// `leader_shard_of(key, $3) = $2` (see [`ShardFence`]); `None` for an unsharded role, whose
    /// claims bind [`TickContext::fence`].
    pub fn shard_fence(&self) -> Option<ShardFence> {
        self.fence.shard_fence()
    }

    /// When the lease was granted (database clock).
    pub fn acquired_at(&self) -> DateTime<Utc> {
        self.acquired_at
    }

    /// The scheduled instant this tick serves, in the schedule's time zone, for a role on a
    /// calendar schedule ([`Schedule::Cron`](crate::Schedule::Cron)); `None` for an interval
    /// role.
    ///
    /// The instant is the one the lease row records for this grant, in the column of the same name
    /// (`leader_leases.tick_instant`; [`Grant::tick_instant`] in UTC): no other tick completes
    /// it (each instant is completed at most once cluster-wide), and it was due on the database
    /// clock when granted. A job that bills "the period that ended at this instant", rather than
    /// at "now", bills the same period whichever replica runs it and however late it starts.
    ///
    /// [`Grant::tick_instant`]: leader_core::lease::Grant::tick_instant
    pub fn tick_instant(&self) -> Option<DateTime<Tz>> {
        self.tick_instant
    }

    /// The runtime's pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The tick's cancellation, read-only, to hand to helpers (which can take a child token
    /// from it).
    pub fn cancellation(&self) -> &TickCancellation {
        &self.cancellation
    }

    /// True once the tick has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation.is_cancelled()
    }

    /// Why the tick was cancelled, once it was.
    pub fn cancel_cause(&self) -> Option<CancelCause> {
        self.cancellation.cause()
    }

    /// Waits until the tick is cancelled and returns why. Cancellation safe, so it can race the
    /// work in `tokio::select!`.
    pub async fn cancelled(&self) -> CancelCause {
        self.cancellation.cancelled().await
    }

    /// Spawns `task` as part of this tick, like [`tokio::spawn`], in the tick's span.
    ///
    /// # Contract
    ///
    /// * The task ends with the tick: once the job has returned (or panicked, or was dropped
    ///   after the grace period), the runtime aborts the tick's tasks that are still running, and
    ///   sends RELEASE only after they have ended. A task spawned after that is aborted before it
    ///   runs. Nothing the tick spawned this way runs on after the lease is released.
    /// * Until then the task runs concurrently with the job and the heartbeat, so the job can
    ///   fan out its work; its claims still prove [`TickContext::fence`], like the job's.
    /// * Its output and its panic come through the returned [`JoinHandle`], as with
    ///   [`tokio::spawn`]; a task aborted at the tick's end yields a cancelled `JoinError`.
    ///
    /// A task started with plain [`tokio::spawn`] is not the tick's: it outlives the tick and its
    /// lease, and its claims are refused by the fence once the tick has been released.
    ///
    /// ```no_run
    /// # use leader_runtime::{JobError, TickContext};
    /// async fn deliver(tick: TickContext) -> Result<(), JobError> {
    ///     let fence = tick.fence();
    ///     let pool = tick.pool().clone();
    ///     let batch = tick.spawn(async move {
    ///         // ... a fenced claim with `fence`, then the sends ...
    ///         # let _ = (fence, pool);
    ///     });
    ///     batch.await?;
    ///     Ok(())
    /// }
    /// ```
    ///
    /// [`JoinHandle`]: tokio::task::JoinHandle
    pub fn spawn<F>(&self, task: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tasks.spawn(task)
    }

    /// Runs blocking `work` on tokio's blocking pool as part of this tick, in the tick's span:
    /// the place for a synchronous client, a long computation or file I/O.
    ///
    /// The job itself runs on a task of its own, so a job that blocks its thread does not stop
    /// the heartbeat on a multi-thread runtime; but it occupies one of the runtime's worker
    /// threads for as long as it blocks, and a task it woke just before blocking can wait on
    /// that thread (tokio's per-worker LIFO slot is not stolen by other workers). Blocking work
    /// belongs here.
    ///
    /// # Contract
    ///
    /// * The runtime waits for `work` to return before it sends the tick's RELEASE, but at most
    ///   the grace period after the job has ended or the tick was cancelled: blocking code cannot
    ///   be aborted, so past that it is left to finish on its own, as an abandoned job is. Check
    ///   [`TickCancellation::is_cancelled`] inside long work to stop in time.
    /// * Called after the tick has ended, `work` does not run; the handle yields a cancelled
    ///   `JoinError`.
    ///
    /// ```no_run
    /// # use leader_runtime::{JobError, TickContext};
    /// async fn export(tick: TickContext) -> Result<(), JobError> {
    ///     let cancellation = tick.cancellation().clone();
    ///     let written = tick
    ///         .spawn_blocking(move || {
    ///             let mut rows = 0;
    ///             while rows < 10_000 && !cancellation.is_cancelled() {
    ///                 rows += 1; // ... a synchronous write ...
    ///             }
    ///             rows
    ///         })
    ///         .await?;
    ///     tracing::info!(written, "exported");
    ///     Ok(())
    /// }
    /// ```
    pub fn spawn_blocking<F, R>(&self, work: F) -> tokio::task::JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.tasks.spawn_blocking(work)
    }
}
