//! [`RuntimeBuilder`]: the roles, jobs, state and options of a [`Runtime`], checked all at once
//! by [`RuntimeBuilder::build`].

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use leader_core::pooler::DirectOptions;
use leader_core::{Role, Timings};
use leader_schedule::Schedule;
use sqlx::PgPool;
use sqlx::postgres::PgConnectOptions;

use crate::anchor::AnchorCell;
use crate::error::BuildError;
use crate::job::{Job, JobFn};
use crate::leadership::Leadership;
use crate::registry::{RegisteredJob, registered_jobs};
use crate::role_spec::RoleSpec;
use crate::runtime::{Runtime, read_status};
use crate::statements::PgStatements;

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

impl RuntimeBuilder<()> {
    /// The builder [`Runtime::builder`] returns, with the defaults its docs state.
    pub(crate) fn new(pool: PgPool) -> RuntimeBuilder<()> {
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
    ///     let mut tx = tick.pool().begin().await?;
    ///     let ids: Vec<i64> = sqlx::query_scalar(
    ///         "SELECT id FROM webhooks
    ///           WHERE delivered_at IS NULL
    ///             AND leader_fence($1, $2, $3, $4)
    ///             AND leader_shard_of(id, $3) = $2
    ///           ORDER BY id LIMIT 50 FOR UPDATE SKIP LOCKED",
    ///     )
    ///     .persistent(false)
    ///     .bind(fence.role())
    ///     .bind(fence.shard_index())
    ///     .bind(fence.shard_count())
    ///     .bind(fence.token())
    ///     .fetch_all(&mut *tx)
    ///     .await?;
    ///     // ... deliver them, recording each delivery in the transaction ...
    ///     tx.commit().await?;
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

    /// Wakes followers on release, instead of leaving them to their next poll, and running ticks
    /// on a pause, instead of at their next RENEW: one dedicated connection made with `options`
    /// (directly to PostgreSQL, not through a pooler: `LISTEN` needs a session of its own)
    /// listens on `leader_released` and `leader_paused`. Every RELEASE this runtime sends also
    /// notifies `leader_released`, and a release heard there makes this runtime poll at once for
    /// that role instead of at its next scheduled poll; a pause heard there (`leader_pause`
    /// notifies at its commit) makes every running tick of the role renew at once, and the
    /// RENEW's answer cancels it as paused, within milliseconds.
    ///
    /// Off by default: polling alone is correct, and stays the fallback. [`Runtime::run`] refuses
    /// to start when `options` reach a pooler (its startup options must reach PostgreSQL itself:
    /// see [`pooler`](crate::pooler)) with [`RunError::DirectConnection`](crate::RunError::DirectConnection).
    /// If the connection fails or is lost, this is logged once and polling carries on while it
    /// reconnects with backoff; leading never waits for it.
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
    /// false from then on. If this replica's own anchor ends while it runs
    /// (`pg_terminate_backend`, a network fault the server noticed, a server restart), its ticks
    /// under that anchor are cancelled at once (`CancelCause::AnchorLost`) and released as
    /// `anchor_lost`, with no cooldown, so any replica may lead the role again at once, and it
    /// anchors again. The watchers form a ring over the live replicas and send nothing while nobody joins or dies; the one that hears a death
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
            wake: self.wake.map(DirectOptions::new),
            anchor: self
                .take_over_when_dead
                .then(|| Arc::new(AnchorCell::default())),
            leadership: Leadership::default(),
            read_status,
            pauses: crate::pause::PauseNotices::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use leader_core::Role;
    use sqlx::postgres::PgPoolOptions;

    use crate::Runtime;
    use crate::error::BuildError;

    async fn quick(_: crate::TickContext) -> Result<(), crate::JobError> {
        Ok(())
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
}
