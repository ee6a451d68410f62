//! The runtime: leads every registered role until shutdown, polling for all of them with one
//! statement and running each role's ticks on its own task.

use std::any::{Any, TypeId};
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use leader_core::schema::ExpectedRole;
use leader_core::{Role, Timings};
use sqlx::PgPool;
use sqlx::postgres::PgConnectOptions;
use tokio::sync::mpsc;
use tokio::task::{Id, JoinSet};
use tokio_util::sync::CancellationToken;

use crate::anchor::AnchorCell;
use crate::error::{BuildError, RunError};
use crate::job::{Job, JobFn};
use crate::leadership::Leadership;
use crate::metrics::LeaseAges;
use crate::poll::{Polled, poll_roles, work_lease};
use crate::registry::{RegisteredJob, registered_jobs};
use crate::role_spec::RoleSpec;
use crate::statements::{LeaseStatements, PgStatements};
use crate::tick::TickEnv;
use leader_schedule::Schedule;

/// Builds a [`Runtime`]; see [`Runtime::builder`]. `S` is the application's state, given with
/// [`RuntimeBuilder::with_state`] and handed to the jobs that take [`State<S>`](crate::State).
#[must_use = "a builder does nothing until `.build()` and `Runtime::run`"]
pub struct RuntimeBuilder<S = ()> {
    pool: PgPool,
    timings: Timings,
    grace: Duration,
    status_every: Duration,
    holder_id: Option<String>,
    roles: Vec<RoleSpec>,
    wake: Option<PgConnectOptions>,
    take_over_when_dead: bool,
    state: S,
    /// Every mistake found so far, for [`RuntimeBuilder::build`] to report at once.
    errors: Vec<BuildError>,
}

impl<S: fmt::Debug> fmt::Debug for RuntimeBuilder<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeBuilder")
            .field("timings", &self.timings)
            .field("grace", &self.grace)
            .field("status_every", &self.status_every)
            .field("holder_id", &self.holder_id)
            .field("roles", &self.roles)
            .field("wake_on_release", &self.wake.is_some())
            .field("take_over_when_dead", &self.take_over_when_dead)
            .field("state", &self.state)
            .field("errors", &self.errors)
            .finish_non_exhaustive()
    }
}

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
    pool: PgPool,
    timings: Timings,
    grace: Duration,
    status_every: Duration,
    roles: Vec<Arc<RoleSpec>>,
    statements: Arc<dyn LeaseStatements>,
    holder_id: String,
    wake: Option<PgConnectOptions>,
    /// This replica's anchor, with [`RuntimeBuilder::take_over_when_dead`].
    anchor: Option<Arc<AnchorCell>>,
    leadership: Leadership,
    read_status: ReadStatus,
}

/// How the status publisher reads the table: [`crate::metrics::read_status`], or a test's
/// stand-in that fails as a bug would.
type ReadStatus = for<'a> fn(&'a PgPool) -> BoxFuture<'a, Result<Vec<LeaseAges>, sqlx::Error>>;

fn read_status(pool: &PgPool) -> BoxFuture<'_, Result<Vec<LeaseAges>, sqlx::Error>> {
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
        RuntimeBuilder {
            pool,
            timings: Timings::DEFAULT,
            grace: Duration::from_secs(10),
            status_every: Duration::from_secs(15),
            holder_id: None,
            roles: Vec::new(),
            wake: None,
            take_over_when_dead: false,
            state: (),
            errors: Vec::new(),
        }
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
    /// Dropping (or aborting) the returned future stops every role at once *without* releasing,
    /// as a crashed process would: the leases then run out after their TTL.
    ///
    /// # Errors
    ///
    /// [`RunError::Schema`] from the start-up check (nothing is led then), and
    /// [`RunError::LoopDied`] if one of the runtime's loops died (every other was then stopped,
    /// releasing its ticks, before this returns).
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), RunError> {
        crate::panic_capture::install();
        let expected: Vec<ExpectedRole> = self
            .roles
            .iter()
            .map(|spec| ExpectedRole::sharded(spec.role, spec.shard_count.unwrap_or(1)))
            .collect();
        leader_core::check_schema_ready(&self.pool, &expected).await?;
        self.lead(shutdown).await
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
            let listener = crate::wake::listen(options, wake_tx, anchoring, stop.clone());
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
        }
    }
}

impl RuntimeBuilder<()> {
    /// Gives the runtime the application's state: jobs that take [`State<S>`](crate::State)
    /// as their second parameter get a clone of it each tick (make it cheap to clone: an `Arc`,
    /// a pool, a client handle), as axum's `Router::with_state` does for handlers.
    ///
    /// Jobs added before keep working; call it before adding jobs that take the state.
    pub fn with_state<S>(self, state: S) -> RuntimeBuilder<S>
    where
        S: Clone + Send + Sync + 'static,
    {
        RuntimeBuilder {
            pool: self.pool,
            timings: self.timings,
            grace: self.grace,
            status_every: self.status_every,
            holder_id: self.holder_id,
            roles: self.roles,
            wake: self.wake,
            take_over_when_dead: self.take_over_when_dead,
            state,
            errors: self.errors,
        }
    }
}

impl<S: Clone + Send + Sync + 'static> RuntimeBuilder<S> {
    /// Adds `role`, led by `job` on `schedule`: a [`Duration`] runs it at most once every
    /// interval (the least time between the ends of two completed ticks), a
    /// [`Schedule::Cron`](crate::Schedule::Cron) once for each instant of a cron expression in a
    /// time zone. `job` is `async fn(TickContext) -> Result<(), E>`, or
    /// `async fn(TickContext, State<S>) -> Result<(), E>` to receive the builder's state: a job
    /// that takes another state does not compile here.
    ///
    /// A bad interval or a second job for the same role is reported by [`RuntimeBuilder::build`];
    /// a bad cron expression or time zone by [`Schedule::cron`](crate::Schedule::cron).
    ///
    /// ```no_run
    /// use leader_runtime::{JobError, Role, Runtime, Schedule, TickContext};
    ///
    /// const BILLING: Role = Role::from_static("billing");
    ///
    /// async fn bill(tick: TickContext) -> Result<(), JobError> {
    ///     // Bill the period that ended at the scheduled instant, not at "now".
    ///     let period_end = tick.tick_instant().expect("a calendar role's tick has an instant");
    ///     # let _ = period_end;
    ///     Ok(())
    /// }
    ///
    /// # fn build(pool: sqlx::PgPool) -> Result<(), Box<dyn std::error::Error>> {
    /// let runtime = Runtime::builder(pool)
    ///     .role(BILLING, Schedule::cron("0 2 * * *", "Europe/Berlin")?, bill)
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn role<J, Args>(
        self,
        role: Role,
        schedule: impl Into<Schedule>,
        job: J,
    ) -> RuntimeBuilder<S>
    where
        J: Job<S, Args>,
    {
        self.add_job(role, schedule.into(), None, job)
    }

    /// Adds `role` as a sharded role of `shard_count` shards, led by `job` on `schedule` as
    /// [`RuntimeBuilder::role`] leads a role: each shard is its own lease, ticked on its own (a
    /// shard's tick says which it is, [`TickContext::shard`](crate::TickContext::shard), and
    /// claims that shard's rows with [`TickContext::shard_fence`](crate::TickContext::shard_fence)),
    /// and the replicas running the role spread its shards among them: no replica is granted more
    /// than `ceil(shard_count / live replicas)` at a time.
    ///
    /// The database must give the role the same count (`SELECT leader_reshard('role', count)` in
    /// a migration; `leaderctl roles reshard` writes it): start-up refuses otherwise, naming that
    /// migration. A count of 0 or above [`MAX_SHARDS`](crate::MAX_SHARDS) is reported by
    /// [`RuntimeBuilder::build`].
    ///
    /// ```no_run
    /// use leader_runtime::{JobError, Role, Runtime, TickContext};
    /// use std::time::Duration;
    ///
    /// const WEBHOOKS: Role = Role::from_static("webhook_delivery");
    ///
    /// async fn deliver(tick: TickContext) -> Result<(), JobError> {
    ///     let fence = tick.shard_fence().expect("a sharded role's tick holds a shard");
    ///     let ids: Vec<i64> = sqlx::query_scalar(
    ///         "SELECT id FROM webhooks
    ///           WHERE delivered_at IS NULL
    ///             AND leader_fence($1, $2, $3, $4)
    ///             AND leader_shard_of(id, $3) = $2
    ///           ORDER BY id LIMIT 50 FOR UPDATE SKIP LOCKED",
    ///     )
    ///     .bind(fence.role())
    ///     .bind(fence.shard_index())
    ///     .bind(fence.shard_count())
    ///     .bind(fence.token())
    ///     .fetch_all(tick.pool())
    ///     .await?;
    ///     # let _ = ids;
    ///     Ok(())
    /// }
    ///
    /// # fn build(pool: sqlx::PgPool) -> Result<(), Box<dyn std::error::Error>> {
    /// let runtime = Runtime::builder(pool)
    ///     .sharded_role(WEBHOOKS, Duration::from_millis(200), 8, deliver)
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn sharded_role<J, Args>(
        self,
        role: Role,
        schedule: impl Into<Schedule>,
        shard_count: u32,
        job: J,
    ) -> RuntimeBuilder<S>
    where
        J: Job<S, Args>,
    {
        self.add_job(role, schedule.into(), Some(shard_count), job)
    }

    /// Adds `job` for `role`, named by its type.
    fn add_job<J, Args>(
        self,
        role: Role,
        schedule: Schedule,
        shard_count: Option<u32>,
        job: J,
    ) -> RuntimeBuilder<S>
    where
        J: Job<S, Args>,
    {
        let name = std::any::type_name::<J>().to_owned();
        let job = job.into_job_fn(self.state.clone());
        self.add(RoleSpec {
            role,
            schedule,
            job,
            name,
            shard_count,
        })
    }

    /// Adds every job registered with `#[leader_role]` in this binary. A job that takes
    /// [`State<T>`](crate::State) needs this builder's state to be a `T`; otherwise
    /// [`RuntimeBuilder::build`] refuses, naming the job and the `with_state` call to add.
    pub fn registered_jobs(mut self) -> RuntimeBuilder<S> {
        let mut jobs: Vec<_> = registered_jobs().collect();
        jobs.sort_by_key(|job| (job.role, job.name));
        for job in jobs {
            let run: JobFn = match job.job {
                RegisteredJob::TickOnly(call) => Arc::new(call),
                RegisteredJob::WithState {
                    state,
                    state_name,
                    call,
                } => {
                    if state() != TypeId::of::<S>() {
                        self.errors.push(BuildError::StateType {
                            job: job.name.to_owned(),
                            role: job.role,
                            wanted: state_name(),
                            given: std::any::type_name::<S>(),
                        });
                        continue;
                    }
                    let state: Arc<dyn Any + Send + Sync> = Arc::new(self.state.clone());
                    Arc::new(move |tick| call(tick, state.as_ref()))
                }
            };
            let schedule = match job.schedule.build() {
                Ok(schedule) => schedule,
                Err(source) => {
                    self.errors.push(BuildError::Schedule {
                        job: job.name.to_owned(),
                        role: job.role,
                        source,
                    });
                    continue;
                }
            };
            self = self.add(RoleSpec {
                role: job.role,
                schedule,
                job: run,
                name: job.name.to_owned(),
                shard_count: job.shard_count,
            });
        }
        self
    }

    /// Adds `spec`, noting each of its mistakes (it is added anyway, unless its role is taken,
    /// so that a later job for the same role is reported too).
    fn add(mut self, spec: RoleSpec) -> RuntimeBuilder<S> {
        if let Some(interval) = spec
            .schedule
            .interval()
            .filter(|interval| *interval < Duration::from_millis(1))
        {
            self.errors.push(BuildError::Interval {
                role: spec.role,
                interval,
            });
        }
        if let Some(count) = spec
            .shard_count
            .filter(|&count| count == 0 || count > leader_core::MAX_SHARDS)
        {
            self.errors.push(BuildError::ShardCount {
                role: spec.role,
                shard_count: count,
            });
        }
        if let Some(first) = self.roles.iter().find(|r| r.role == spec.role) {
            self.errors.push(BuildError::DuplicateRole {
                role: spec.role,
                first: first.name.clone(),
                second: spec.name,
            });
        } else {
            self.roles.push(spec);
        }
        self
    }

    /// Sets the lease timings (default [`Timings::DEFAULT`]).
    pub fn timings(mut self, timings: Timings) -> RuntimeBuilder<S> {
        self.timings = timings;
        self
    }

    /// Sets how long a cancelled tick may take to return before it is dropped and released
    /// (default 10 s).
    pub fn shutdown_grace(mut self, grace: Duration) -> RuntimeBuilder<S> {
        self.grace = grace;
        self
    }

    /// Sets how often the status metrics are read from the table (default 15 s).
    pub fn status_every(mut self, every: Duration) -> RuntimeBuilder<S> {
        self.status_every = every;
        self
    }

    /// Wakes followers on release, instead of leaving them to their next poll: one dedicated
    /// connection made with `options` (directly to
    /// PostgreSQL, not through a transaction-mode pooler: `LISTEN` needs a session) listens on
    /// `leader_released`, every RELEASE this runtime sends also notifies it, and a release heard
    /// there makes this runtime poll at once for that role instead of at its next scheduled poll.
    ///
    /// Off by default: polling alone is correct, and stays the fallback. If the wake connection
    /// fails or is lost, this is logged once and polling carries on while it reconnects with
    /// backoff; leading never waits for it.
    ///
    /// ```no_run
    /// # async fn main_() -> Result<(), Box<dyn std::error::Error>> {
    /// use sqlx::postgres::PgConnectOptions;
    /// // The pool may go through PgBouncer; the wake connection goes to PostgreSQL itself.
    /// let pool = sqlx::PgPool::connect("postgres://app@pgbouncer:6432/app").await?;
    /// let direct: PgConnectOptions = "postgres://app@db:5432/app".parse()?;
    /// let runtime = leader_runtime::Runtime::builder(pool).wake_on_release(direct).build()?;
    /// # Ok(()) }
    /// ```
    pub fn wake_on_release(mut self, options: PgConnectOptions) -> RuntimeBuilder<S> {
        self.wake = Some(options);
        self
    }

    /// Takes over a dead replica's leases at once, rather than at their expiry: when a
    /// replica's process dies (SIGKILL, an OOM kill, a crash, a pod deleted without grace),
    /// every role and shard it led is granted to a live replica in a fraction of a second,
    /// whatever the TTL. Needs [`wake_on_release`](RuntimeBuilder::wake_on_release): its direct
    /// connection becomes this replica's **anchor**, and the runtime opens one more direct
    /// connection, its **watcher**.
    ///
    /// Each grant records the anchor session's identity (`pg_backend_pid()` and
    /// `backend_start`). When, in its own statement, the server shows that a holder's anchor
    /// session no longer exists, ACQUIRE ends that lease early, and the next ACQUIRE (sent at
    /// once) grants it as any expired lease, with a new, larger token: the old holder's fence is
    /// false from then on. If this replica's own anchor ends while it runs (`pg_terminate_backend`, a network
    /// fault the server noticed, a server restart), its ticks under that anchor are cancelled at
    /// once (`CancelCause::AnchorLost`) and it anchors again. The watchers form a ring over the
    /// live replicas and send nothing while nobody joins or dies; the one that hears a death
    /// wakes every replica. Where the server still has the session (a frozen process, a
    /// partition the server has not noticed), leases move at their expiry, as without it. The
    /// direct connections must log in as the same database role as `pool`, or the runtime says
    /// so and runs without an anchor. Design: `docs/design/dead-holder-takeover.md`.
    ///
    /// ```no_run
    /// # async fn main_() -> Result<(), Box<dyn std::error::Error>> {
    /// use sqlx::postgres::PgConnectOptions;
    /// let pool = sqlx::PgPool::connect("postgres://app@pgbouncer:6432/app").await?;
    /// let direct: PgConnectOptions = "postgres://app@db:5432/app".parse()?;
    /// let runtime = leader_runtime::Runtime::builder(pool)
    ///     .wake_on_release(direct)
    ///     .take_over_when_dead()
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn take_over_when_dead(mut self) -> RuntimeBuilder<S> {
        self.take_over_when_dead = true;
        self
    }

    /// Sets the holder id (default `hostname:pid:8hex`).
    pub fn holder_id(mut self, holder_id: impl Into<String>) -> RuntimeBuilder<S> {
        self.holder_id = Some(holder_id.into());
        self
    }

    /// Checks the roles and builds the runtime. The database is checked later, by
    /// [`Runtime::run`].
    ///
    /// # Errors
    ///
    /// Every mistake in the roles at once: one as its own variant, several as
    /// [`BuildError::Several`]. [`BuildError::Interval`] for an interval below 1 ms,
    /// [`BuildError::ShardCount`] for a shard count out of range, [`BuildError::DuplicateRole`]
    /// naming both jobs of a role registered twice, [`BuildError::StateType`] for a
    /// `#[leader_role]` job whose state this builder was not given, [`BuildError::Schedule`]
    /// for a registered schedule that does not build.
    pub fn build(mut self) -> Result<Runtime, BuildError> {
        if self.take_over_when_dead && self.wake.is_none() {
            self.errors.push(BuildError::TakeoverWithoutWake);
        }
        if let Some(error) = BuildError::of(self.errors) {
            return Err(error);
        }
        let holder_id = self.holder_id.unwrap_or_else(crate::holder::holder_id);
        let mut statements = PgStatements::new(self.pool.clone(), holder_id.clone(), self.timings);
        if self.wake.is_some() {
            statements = statements.waking();
        }
        let statements = Arc::new(statements);
        Ok(Runtime {
            pool: self.pool,
            timings: self.timings,
            grace: self.grace,
            status_every: self.status_every,
            roles: self.roles.into_iter().map(Arc::new).collect(),
            statements,
            holder_id,
            wake: self.wake,
            anchor: self
                .take_over_when_dead
                .then(|| Arc::new(AnchorCell::default())),
            leadership: Leadership::default(),
            read_status,
        })
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
    use crate::error::{BuildError, RunError};
    use crate::fake::{Call, FakeStatements};
    use crate::job::Job;
    use crate::leadership::Leadership;
    use crate::metrics::LeaseAges;
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
    async fn build_reports_every_mistake_at_once() {
        let pool = PgPoolOptions::new()
            .connect_lazy("postgres://unused@localhost:1/unused")
            .unwrap();
        let (alpha, beta) = (Role::from_static("alpha"), Role::from_static("beta"));
        let error = Runtime::builder(pool)
            .role(alpha, Duration::ZERO, quick)
            .sharded_role(beta, Duration::from_secs(1), 0, quick)
            .role(alpha, Duration::from_secs(1), quick)
            .build()
            .unwrap_err();
        let quick = std::any::type_name_of_val(&quick).to_owned();
        assert_eq!(
            error.errors(),
            [
                BuildError::Interval {
                    role: alpha,
                    interval: Duration::ZERO,
                },
                BuildError::ShardCount {
                    role: beta,
                    shard_count: 0,
                },
                BuildError::DuplicateRole {
                    role: alpha,
                    first: quick.clone(),
                    second: quick,
                },
            ],
            "{error}"
        );
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
