//! The runtime: leads every registered role until shutdown, polling for all of them with one
//! statement and running each role's ticks on its own task.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use leader_core::pooler::{DirectOptions, PoolPath, check_pool};
use leader_core::schema::ExpectedRole;
use leader_core::{Role, Timings};
use leader_schedule::Schedule;
use sqlx::PgPool;
use tokio::sync::mpsc;
use tokio::task::{Id, JoinSet};
use tokio_util::sync::CancellationToken;

use crate::RuntimeBuilder;
use crate::anchor::AnchorCell;
use crate::error::RunError;
use crate::leadership::Leadership;
use crate::metrics::LeaseAges;
use crate::pause::PauseNotices;
use crate::poll::{Polled, poll_roles};
use crate::role_spec::RoleSpec;
use crate::statements::LeaseStatements;
use crate::tick::TickEnv;
use crate::worker::work_lease;

/// Leads a set of roles on a PostgreSQL pool: polls for every role not in a tick with one ACQUIRE
/// ([`protocol::lease::acquire`](crate::protocol::lease::acquire)), runs the job on each granted
/// tick beside a heartbeat (the heartbeats of all its ticks renew in one statement), and releases
/// with the tick's outcome.
///
/// # Guarantees
///
/// * Each role is led independently: a slow, failing or panicking job does not delay another.
/// * A job's panic never reaches the process: it is caught, logged once with the role, message
///   and location, and the tick is released as panicked. This needs the default
///   `panic = "unwind"`: built with `panic = "abort"`, a job's panic kills the process and its
///   leases run out after their TTL (see [the crate docs](crate#panics-and-the-panic-hook), also
///   for the panic hook [`Runtime::run`] installs).
/// * After shutdown no ACQUIRE is sent; running ticks are cancelled with
///   [`CancelCause::Shutdown`](crate::CancelCause::Shutdown), given the grace period, and
///   released with no cooldown ([`ReleaseOutcome::Shutdown`](crate::protocol::ReleaseOutcome::Shutdown)),
///   so another replica leads at its next poll. Then, with sharded roles, one LEAVE deletes
///   this replica's presence ([`leave`](crate::protocol::lease::leave)), so the other replicas
///   take its shards at their next poll, not one TTL later.
/// * Start-up refuses a database whose schema or registered roles do not match the roles here
///   ([`schema::check_schema_ready`](crate::schema::check_schema_ready)), naming what to add.
/// * Every loop of the runtime is supervised: a lease's, the poller, the wake listener and the
///   status publisher. If one dies (it panics, or returns before the shutdown: a bug, as jobs'
///   panics are caught), it stops the others as a shutdown does and [`Runtime::run`] returns
///   [`RunError::LoopDied`] naming it: a process that no longer leads, or whose status metrics
///   no longer move, does not run on or exit 0.
///
/// It does not make a job's effects exactly-once: claims carry the fence, and completions land
/// through compare-and-set writes (see the README).
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use leader_runtime::{JobError, Role, Runtime, TickContext};
///
/// const OUTBOX: Role = Role::from_static("email_outbox");
///
/// async fn dispatch(tick: TickContext) -> Result<(), JobError> {
///     let fence = tick.fence();
///     let mut tx = tick.pool().begin().await?;
///     let ids: Vec<i64> = sqlx::query_scalar(
///         "SELECT id FROM email_outbox WHERE sent_at IS NULL AND leader_fence($1, $2)
///          ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED",
///     )
///     .persistent(false)
///     .bind(fence.role())
///     .bind(fence.token())
///     .fetch_all(&mut *tx)
///     .await?;
///     // ... send, then mark sent in the same transaction ...
///     tx.commit().await?;
///     Ok(())
/// }
///
/// # async fn main_() -> Result<(), Box<dyn std::error::Error>> {
/// let pool = sqlx::PgPool::connect("postgres://localhost/app").await?;
/// Runtime::builder(pool)
///     .role(OUTBOX, Duration::from_secs(5), dispatch)
///     .build()?
///     .run(leader_runtime::shutdown::signal())
///     .await?;
/// # Ok(()) }
/// ```
pub struct Runtime {
    pub(crate) pool: PgPool,
    pub(crate) timings: Timings,
    pub(crate) grace: Duration,
    pub(crate) status_every: Duration,
    pub(crate) roles: Vec<Arc<RoleSpec>>,
    pub(crate) statements: Arc<dyn LeaseStatements>,
    pub(crate) holder_id: String,
    /// The direct connection, with [`RuntimeBuilder::wake_on_release`].
    pub(crate) wake: Option<DirectOptions>,
    /// This replica's anchor, with [`RuntimeBuilder::take_over_when_dead`].
    pub(crate) anchor: Option<Arc<AnchorCell>>,
    pub(crate) leadership: Leadership,
    pub(crate) read_status: ReadStatus,
    /// The pauses the wake listener hears, for the ticks' heartbeats.
    pub(crate) pauses: PauseNotices,
}

/// How the status publisher reads the table: [`crate::metrics::read_status`], or a test's
/// stand-in that fails as a bug would.
pub(crate) type ReadStatus =
    for<'a> fn(&'a PgPool) -> BoxFuture<'a, Result<Vec<LeaseAges>, sqlx::Error>>;

pub(crate) fn read_status(pool: &PgPool) -> BoxFuture<'_, Result<Vec<LeaseAges>, sqlx::Error>> {
    Box::pin(crate::metrics::read_status(pool))
}

/// One job of a [`Runtime`], as [`Runtime::jobs`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobInfo {
    /// The role it leads.
    pub role: Role,
    /// When it runs.
    pub schedule: Schedule,
    /// The job's name: its function's path, for a `#[leader_role]` job.
    pub name: String,
    /// How many shards the role has, for a sharded role; `None` for an unsharded one.
    pub shard_count: Option<u32>,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("holder_id", &self.holder_id)
            .field("roles", &self.roles)
            .field("timings", &self.timings)
            .field("grace", &self.grace)
            .field("wake_on_release", &self.wake.is_some())
            .field("take_over_when_dead", &self.anchor.is_some())
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// A builder with the default [`Timings`], a 10 s shutdown grace period, no roles and no
    /// state.
    pub fn builder(pool: PgPool) -> RuntimeBuilder<()> {
        RuntimeBuilder::new(pool)
    }

    /// This runtime's holder id (`hostname:pid:8hex`), as written into the leases it holds.
    pub fn holder_id(&self) -> &str {
        &self.holder_id
    }

    /// A handle that says which roles this runtime leads at each moment while it runs (see
    /// [`Leadership`]); take it before [`Runtime::run`].
    pub fn leadership(&self) -> Leadership {
        self.leadership.clone()
    }

    /// The roles this runtime leads.
    pub fn roles(&self) -> Vec<Role> {
        self.roles.iter().map(|spec| spec.role).collect()
    }

    /// The jobs this runtime leads: each role, its schedule and the job's name.
    pub fn jobs(&self) -> Vec<JobInfo> {
        self.roles
            .iter()
            .map(|spec| JobInfo {
                role: spec.role,
                schedule: spec.schedule.clone(),
                name: spec.name.clone(),
                shard_count: spec.shard_count,
            })
            .collect()
    }

    /// Checks the schema, then leads every role until `shutdown` completes and every running
    /// tick has been released: the graceful shutdown of a rolling deploy (pass
    /// [`shutdown::signal()`](crate::shutdown::signal) for SIGTERM and Ctrl-C, or any future).
    ///
    /// The first call in a process installs the panic hook that gives a job's panic its
    /// location, chained in front of the hook set before it (see
    /// [the crate docs](crate#panics-and-the-panic-hook)).
    ///
    /// # Dropping the future
    ///
    /// Dropping (or aborting) the returned future, as a service's `select!` does when another
    /// branch ends first, stops everything `run` started, as dropping a `JoinSet` does: every
    /// loop, every tick's job and every task a job spawned through its tick
    /// ([`TickContext::spawn`](crate::TickContext::spawn)) is aborted (a job blocked in its
    /// thread ends when it next yields; work on the blocking pool cannot be aborted and runs to
    /// its end), and the direct connection of [`wake_on_release`](crate::RuntimeBuilder::wake_on_release),
    /// with its anchor, is closed. Nothing is released and the sharded roles are not left, as
    /// for a crashed process: its leases run out after their TTL, or, with
    /// [`take_over_when_dead`](crate::RuntimeBuilder::take_over_when_dead), are taken over as
    /// soon as the other replicas see its anchor gone. The other replicas' leases are not
    /// touched. For a graceful stop that releases every tick, complete `shutdown` instead and
    /// await the future.
    ///
    /// # Start-up checks
    ///
    /// Before it leads anything it checks, and refuses with the fix:
    ///
    /// * the schema and the roles ([`RunError::Schema`]);
    /// * the pool: when a transaction-mode pooler stands in front of it (two of its connections
    ///   answered by one server session), that sqlx's named prepared statements do not reach the
    ///   pooler's shared sessions as they are ([`RunError::Pool`]; PgBouncer before 1.21 with
    ///   the pool's statement cache on). Behind such a pooler, send every query that binds
    ///   parameters inside a transaction, non-persistent (`.persistent(false)`): the runtime logs
    ///   that once at INFO;
    /// * the direct connection, with [`wake_on_release`](crate::RuntimeBuilder::wake_on_release):
    ///   that it reaches PostgreSQL itself, not a pooler ([`RunError::DirectConnection`]). If the
    ///   server does not answer at all, that is logged and the connection retried in the
    ///   background, as a lost one is;
    /// * the tokio runtime: a current-thread runtime, or a multi-thread one with one worker,
    ///   cannot keep a job that blocks its thread from starving the heartbeat, which is logged
    ///   once, at WARN, with the fix.
    ///
    /// # Errors
    ///
    /// [`RunError::Schema`], [`RunError::Pool`] and [`RunError::DirectConnection`] from the
    /// start-up checks (nothing is led then), and [`RunError::LoopDied`] if one of the runtime's
    /// loops died (every other was then stopped, releasing its ticks, before this returns).
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), RunError> {
        crate::panic_capture::install();
        let expected: Vec<ExpectedRole> = self
            .roles
            .iter()
            .map(|spec| ExpectedRole::sharded(spec.role, spec.shard_count.unwrap_or(1)))
            .collect();
        leader_core::check_schema_ready(&self.pool, &expected).await?;
        self.check_connections().await?;
        crate::workers::warn_if_one_worker();
        self.lead(shutdown).await
    }

    /// The start-up checks of the pool and of the direct connection ([`Runtime::run`]).
    async fn check_connections(&self) -> Result<(), RunError> {
        if check_pool(&self.pool).await? == PoolPath::TransactionPooler {
            tracing::info!(
                "the pool goes through a transaction-mode pooler: send every query that binds parameters inside a transaction, with .persistent(false), or its Bind may reach another server session"
            );
        }
        if let Some(direct) = &self.wake {
            match direct.connect(crate::wake::CONNECT_TIMEOUT).await {
                Ok(session) => {
                    let _ = sqlx::Connection::close(session).await;
                }
                Err(error) if error.is_pooler() => return Err(error.into()),
                Err(error) => {
                    tracing::warn!(%error, "the direct connection (wake_on_release) failed at start-up; leading without it while it is retried");
                }
            }
        }
        Ok(())
    }

    /// [`Runtime::run`] until `token` is cancelled.
    ///
    /// # Errors
    ///
    /// As [`Runtime::run`].
    pub async fn run_until_cancelled(self, token: CancellationToken) -> Result<(), RunError> {
        self.run(token.cancelled_owned()).await
    }

    /// Leads every role until `shutdown` completes (the schema already checked).
    async fn lead(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), RunError> {
        let roles = self.roles();
        crate::metrics::describe();
        for spec in &self.roles {
            crate::metrics::register(spec.role, &spec.schedule);
        }
        if let Some(anchor) = &self.anchor {
            anchor.publish();
        }
        tracing::info!(holder_id = %self.holder_id, roles = ?roles, "leader runtime started");
        let this = Arc::new(self);
        let stop = CancellationToken::new();
        let mut loops = Loops::default();
        this.spawn_loops(&mut loops, &stop);
        let died = loops.wait(shutdown, &stop).await;
        this.leave().await;
        if let Some(anchor) = &this.anchor {
            anchor.close();
        }
        tracing::info!(holder_id = %this.holder_id, "leader runtime stopped");
        match died {
            Some(died) => Err(died),
            None => Ok(()),
        }
    }

    /// Once every loop has ended (every tick released), deletes this replica's presence for its
    /// sharded roles, so the other replicas take its shards at their next poll rather than one
    /// TTL later. If that fails, the presence runs out after one TTL, as a crashed replica's.
    async fn leave(&self) {
        let sharded: Vec<Role> = self
            .roles
            .iter()
            .filter(|spec| spec.shard_count.is_some())
            .map(|spec| spec.role)
            .collect();
        if sharded.is_empty() {
            return;
        }
        match self.statements.leave(sharded.clone()).await {
            Ok(left) => {
                tracing::debug!(holder_id = %self.holder_id, roles = ?sharded, left, "left the sharded roles");
            }
            Err(error) => {
                tracing::warn!(holder_id = %self.holder_id, roles = ?sharded, %error, "LEAVE failed; this replica's presence runs out after one TTL");
            }
        }
    }

    /// Starts a task per lease, the poller, the wake listener and the status publisher, each
    /// supervised by `loops`.
    fn spawn_loops(self: &Arc<Self>, loops: &mut Loops, stop: &CancellationToken) {
        let beat_grid = tokio::time::Instant::now();
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        let mut polled = Vec::with_capacity(self.roles.len());
        // Each lease's ticks (a role's, or each shard's) run on their own task, so a job that hogs
        // its thread delays no other.
        for spec in &self.roles {
            for key in spec.leases() {
                let (worker_tx, worker_rx) = mpsc::channel(1);
                polled.push(Polled::new(key, spec.schedule.clone(), worker_tx));
                let (this, stop) = (self.clone(), stop.clone());
                let (spec, done) = (spec.clone(), done_tx.clone());
                let what = match key.1 {
                    None => format!("the loop of role {}", spec.role),
                    Some(shard) => format!("the loop of role {} shard {shard}", spec.role),
                };
                loops.spawn(what, async move {
                    let env = this.tick_env(&stop, beat_grid);
                    work_lease(&env, spec, key, worker_rx, done).await;
                });
            }
        }
        drop(done_tx);
        let (wake_tx, wake_rx) = mpsc::unbounded_channel();
        if let Some(options) = self.wake.clone() {
            let anchoring = self.anchor.clone().map(|cell| crate::wake::Anchoring {
                cell,
                holder: self.holder_id.clone(),
                timings: self.timings,
                pool: self.pool.clone(),
            });
            if let Some(anchoring) = &anchoring {
                let watcher = crate::anchor::watch_ring(
                    anchoring.cell.clone(),
                    options.clone(),
                    self.holder_id.clone(),
                    self.timings,
                    stop.clone(),
                );
                loops.spawn("the anchor watcher".to_owned(), watcher);
            }
            let listener = crate::wake::listen(
                options,
                wake_tx,
                self.pauses.clone(),
                anchoring,
                stop.clone(),
            );
            loops.spawn("the wake listener".to_owned(), listener);
        } else {
            drop(wake_tx);
        }
        let (this, poller_stop) = (self.clone(), stop.clone());
        loops.spawn("the poller".to_owned(), async move {
            let env = this.tick_env(&poller_stop, beat_grid);
            poll_roles(&env, polled, done_rx, wake_rx).await;
        });
        // The status metrics are what alerts read: a publisher that died unseen would freeze
        // them while the roles run on, so it is supervised as the loops that lead are.
        let (this, stop) = (self.clone(), stop.clone());
        loops.spawn("the status publisher".to_owned(), async move {
            this.publish_status(stop).await;
        });
    }

    /// Reads `leader_leases` every `status_every` for the status metrics, until `stop` (a read
    /// under way when it comes is dropped, so a slow database does not hold up the shutdown).
    async fn publish_status(&self, stop: CancellationToken) {
        let roles = self.roles();
        loop {
            let read = tokio::select! {
                read = (self.read_status)(&self.pool) => read,
                () = stop.cancelled() => break,
            };
            if let Err(error) = &read {
                tracing::debug!(%error, "could not read leader_leases for the metrics");
            }
            crate::metrics::publish_status(&roles, read.as_deref().map_err(|_| ()));
            tokio::select! {
                () = tokio::time::sleep(self.status_every) => {}
                () = stop.cancelled() => break,
            }
        }
    }
}

/// The runtime's loops, each named for the error if it dies.
#[derive(Default)]
struct Loops {
    tasks: JoinSet<()>,
    names: Vec<(Id, String)>,
}

impl Loops {
    fn spawn(&mut self, what: String, task: impl Future<Output = ()> + Send + 'static) {
        let handle = self.tasks.spawn(task);
        self.names.push((handle.id(), what));
    }

    /// Waits until every loop has ended. `stop` is cancelled when `shutdown` completes or when
    /// a loop dies: panics, is cancelled, or returns while `stop` is not cancelled (every loop
    /// runs until the shutdown, so an early return is a bug too). The death is returned; a
    /// panic is preferred to an early return, since a loop whose inputs closed because another
    /// loop panicked returns early too, and the panic is the cause.
    async fn wait(
        mut self,
        shutdown: impl Future<Output = ()> + Send,
        stop: &CancellationToken,
    ) -> Option<RunError> {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut died: Option<(RunError, Death)> = None;
        loop {
            tokio::select! {
                () = &mut shutdown, if !stop.is_cancelled() => stop.cancel(),
                joined = self.tasks.join_next_with_id() => {
                    let (id, death, reason) = match joined {
                        None => return died.map(|(error, _)| error),
                        Some(Ok(_)) if stop.is_cancelled() => continue,
                        Some(Ok((id, ()))) => {
                            (id, Death::Returned, "it returned before the shutdown".to_owned())
                        }
                        Some(Err(error)) => {
                            let id = error.id();
                            match error.try_into_panic() {
                                Ok(panic) => (
                                    id,
                                    Death::Panicked,
                                    crate::panic_capture::message_of(panic.as_ref()),
                                ),
                                Err(error) => (id, Death::Panicked, error.to_string()),
                            }
                        }
                    };
                    let what = self
                        .names
                        .iter()
                        .find(|(known, _)| *known == id)
                        .map_or_else(|| "a loop".to_owned(), |(_, what)| what.clone());
                    tracing::error!(loop_ = %what, %reason, "a loop of the runtime died; stopping every role");
                    stop.cancel();
                    if died.as_ref().is_none_or(|(_, earlier)| death > *earlier) {
                        died = Some((RunError::LoopDied { what, reason }, death));
                    }
                }
            }
        }
    }
}

/// How a loop died, the more telling last: a panic (or an abort) names its cause, an early
/// return may only follow another loop's death.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Death {
    Returned,
    Panicked,
}

impl Runtime {
    fn tick_env<'a>(
        &'a self,
        shutdown: &'a CancellationToken,
        beat_grid: tokio::time::Instant,
    ) -> TickEnv<'a> {
        TickEnv {
            statements: self.statements.as_ref(),
            timings: &self.timings,
            grace: self.grace,
            shutdown,
            pool: &self.pool,
            holder: &self.holder_id,
            beat_grid,
            leadership: &self.leadership,
            anchor: self.anchor.as_deref(),
            pauses: &self.pauses,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::sync::Arc;
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use futures_util::future::BoxFuture;
    use leader_core::{Role, Timings};
    use sqlx::PgPool;
    use sqlx::postgres::PgPoolOptions;
    use tokio_util::sync::CancellationToken;

    use super::{Loops, Runtime};
    use crate::error::RunError;
    use crate::fake::{Call, FakeStatements};
    use crate::job::Job;
    use crate::leadership::Leadership;
    use crate::metrics::LeaseAges;
    use crate::pause::PauseNotices;
    use crate::role_spec::RoleSpec;

    async fn quick(_: crate::TickContext) -> Result<(), crate::JobError> {
        Ok(())
    }

    /// A runtime on `fake`, leading `alpha` with a job that returns at once.
    fn runtime(fake: FakeStatements) -> Runtime {
        runtime_of(Arc::new(fake), None)
    }

    /// A runtime on `fake`, leading `alpha` (in `shards` shards if given) with a job that returns
    /// at once.
    fn runtime_of(fake: Arc<FakeStatements>, shards: Option<u32>) -> Runtime {
        runtime_reading(fake, shards, super::read_status)
    }

    /// As [`runtime_of`], its status publisher reading with `read_status`.
    fn runtime_reading(
        fake: Arc<FakeStatements>,
        shards: Option<u32>,
        read_status: super::ReadStatus,
    ) -> Runtime {
        let pool = PgPoolOptions::new()
            .connect_lazy("postgres://unused@localhost:1/unused")
            .unwrap();
        Runtime {
            pool,
            timings: Timings::DEFAULT,
            grace: Duration::from_secs(1),
            status_every: Duration::from_secs(3600),
            roles: vec![Arc::new(RoleSpec {
                role: Role::from_static("alpha"),
                schedule: Duration::from_secs(60).into(),
                job: Job::<(), _>::into_job_fn(quick, ()),
                name: "quick".into(),
                shard_count: shards,
            })],
            statements: fake,
            holder_id: "test-holder".into(),
            wake: None,
            anchor: None,
            leadership: Leadership::default(),
            read_status,
            pauses: PauseNotices::default(),
        }
    }

    #[tokio::test]
    async fn a_role_loop_that_dies_stops_the_runtime_with_an_error_naming_the_role() {
        let fake = FakeStatements::acquiring(vec![Ok(leader_core::lease::Acquired::Granted(
            FakeStatements::grant("alpha"),
        ))]);
        fake.release_panics.store(true, Ordering::SeqCst);
        let ran = tokio::time::timeout(
            Duration::from_secs(60),
            runtime(fake).lead(std::future::pending()),
        )
        .await
        .expect("the runtime stops once a loop died, without a shutdown");
        match ran {
            Err(RunError::LoopDied { what, reason }) => {
                assert_eq!(what, "the loop of role alpha");
                assert!(reason.contains("a bug in the role loop"), "{reason}");
            }
            other => panic!("expected the loop's death, got {other:?}"),
        }
    }

    /// A status read that panics, as a bug in the publisher would.
    fn panicking_read(_: &PgPool) -> BoxFuture<'_, Result<Vec<LeaseAges>, sqlx::Error>> {
        Box::pin(async { panic!("a bug in the status publisher") })
    }

    #[tokio::test(start_paused = true)]
    async fn a_status_publisher_that_dies_stops_the_runtime_with_an_error_naming_it() {
        let fake = Arc::new(FakeStatements::acquiring(vec![]));
        // On the paused clock an hour passes only once nothing else can run: the bound fails
        // an unsupervised publisher, whose death would leave the runtime leading on.
        let ran = tokio::time::timeout(
            Duration::from_secs(3600),
            runtime_reading(fake, None, panicking_read).lead(std::future::pending()),
        )
        .await
        .expect("the runtime stops once its status publisher died, without a shutdown");
        match ran {
            Err(RunError::LoopDied { what, reason }) => {
                assert_eq!(what, "the status publisher");
                assert_eq!(reason, "a bug in the status publisher");
            }
            other => panic!("expected the publisher's death, got {other:?}"),
        }
    }

    /// Supervises an empty loop (it returns at once, a bug) and one that `then` runs once the
    /// loops are stopped; returns the death the loops report, as (which loop, reason).
    async fn first_death(then: impl Future<Output = ()> + Send + 'static) -> (String, String) {
        let stop = CancellationToken::new();
        let mut loops = Loops::default();
        loops.spawn("the early one".to_owned(), async {});
        let running = stop.clone();
        loops.spawn("the other one".to_owned(), async move {
            running.cancelled().await;
            then.await;
        });
        // On the paused clock an hour passes only once nothing else can run.
        let died = tokio::time::timeout(
            Duration::from_secs(3600),
            loops.wait(std::future::pending(), &stop),
        )
        .await
        .expect("the loops stop once one died, without a shutdown");
        match died {
            Some(RunError::LoopDied { what, reason }) => (what, reason),
            other => panic!("expected a loop's death, got {other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_loop_that_returns_before_the_shutdown_is_reported_as_dead() {
        let (what, reason) = first_death(async {}).await;
        assert_eq!(what, "the early one");
        assert_eq!(reason, "it returned before the shutdown");
    }

    #[tokio::test(start_paused = true)]
    async fn a_panic_is_reported_over_an_early_return_it_may_have_caused() {
        let (what, reason) = first_death(async { panic!("the cause") }).await;
        assert_eq!(what, "the other one");
        assert_eq!(reason, "the cause");
    }

    #[tokio::test]
    async fn a_shutdown_ends_the_runtime_cleanly() {
        let fake = FakeStatements::acquiring(vec![]);
        let ran = tokio::time::timeout(
            Duration::from_secs(60),
            runtime(fake).lead(std::future::ready(())),
        )
        .await
        .expect("the runtime stops after its shutdown");
        assert!(ran.is_ok(), "{ran:?}");
    }

    /// Runs a runtime leading `alpha` (in `shards` shards if given) until both of its first
    /// ACQUIRE's answers (grants) have been used, then shuts it down; returns the fake's calls.
    async fn granted_then_shut_down(shards: Option<u32>) -> Vec<Call> {
        let grant = || {
            Ok(leader_core::lease::Acquired::Granted(
                FakeStatements::grant("alpha"),
            ))
        };
        let fake = Arc::new(FakeStatements::acquiring(vec![grant(), grant()]));
        let shutdown = fake.acquires_done.clone().cancelled_owned();
        let ran = runtime_of(fake.clone(), shards).lead(shutdown).await;
        assert!(ran.is_ok(), "{ran:?}");
        fake.calls()
    }

    #[tokio::test(start_paused = true)]
    async fn a_clean_shutdown_leaves_the_sharded_roles_after_every_tick_is_released() {
        let calls = granted_then_shut_down(Some(2)).await;
        let releases = calls
            .iter()
            .filter(|call| matches!(call, Call::Release(..)))
            .count();
        assert_eq!(releases, 2, "{calls:?}");
        assert!(
            matches!(calls.last(), Some(Call::Leave(_, roles)) if *roles == [Role::from_static("alpha")]),
            "LEAVE, last, naming the sharded role: {calls:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_runtime_without_sharded_roles_sends_no_leave() {
        let calls = granted_then_shut_down(None).await;
        assert!(
            !calls.iter().any(|call| matches!(call, Call::Leave(..))),
            "{calls:?}"
        );
    }
}
