//! The runtime: leads every registered role until shutdown, polling for all of them with one
//! statement and running each role's ticks on its own task.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use leader_core::{Error, Role, Timings};
use sqlx::PgPool;
use sqlx::postgres::PgConnectOptions;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::context::TickContext;
use crate::poll::{Polled, poll_roles, work_role};
use crate::registry::{JobError, registered_jobs};
use crate::role_spec::RoleSpec;
use crate::statements::{LeaseStatements, PgStatements};
use crate::tick::TickEnv;

/// Builds a [`Runtime`]; see [`Runtime::builder`].
#[must_use]
pub struct RuntimeBuilder {
    pool: PgPool,
    timings: Timings,
    grace: Duration,
    status_every: Duration,
    holder_id: Option<String>,
    roles: Vec<RoleSpec>,
    wake: Option<PgConnectOptions>,
    error: Option<Error>,
}

/// Leads a set of roles on a PostgreSQL pool: polls for every role not in a tick with one ACQUIRE
/// ([`batch::acquire_many`](crate::batch::acquire_many)), runs the job on each granted tick beside
/// a heartbeat (the heartbeats of all its ticks renew in one statement), and releases with the
/// tick's outcome.
///
/// # Guarantees
///
/// * Each role is led independently: a slow, failing or panicking job does not delay another.
/// * A job's panic never reaches the process: it is caught, logged once with the role, message
///   and location, and the tick is released as panicked.
/// * After shutdown no ACQUIRE is sent; running ticks are cancelled with
///   [`CancelCause::Shutdown`](crate::CancelCause::Shutdown), given the grace period, and
///   released with no cooldown ([`ReleaseOutcome::Shutdown`](crate::ReleaseOutcome::Shutdown)),
///   so another replica leads at its next poll.
/// * Start-up refuses a database whose schema or registered roles do not match the roles here
///   ([`check_schema_ready`](crate::check_schema_ready)), naming what to add.
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
///     .run(leader_runtime::shutdown::on_signal())
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
}

impl Runtime {
    /// A builder with the default [`Timings`], a 10 s shutdown grace period and no roles.
    pub fn builder(pool: PgPool) -> RuntimeBuilder {
        RuntimeBuilder {
            pool,
            timings: Timings::DEFAULT,
            grace: Duration::from_secs(10),
            status_every: Duration::from_secs(15),
            holder_id: None,
            roles: Vec::new(),
            wake: None,
            error: None,
        }
    }

    /// This runtime's holder id (`hostname:pid:8hex`), as written into the leases it holds.
    pub fn holder_id(&self) -> &str {
        &self.holder_id
    }

    /// The roles this runtime leads.
    pub fn roles(&self) -> Vec<Role> {
        self.roles.iter().map(|spec| spec.role).collect()
    }

    /// Checks the schema, then leads every role until `shutdown` is cancelled and every running
    /// tick has been released.
    ///
    /// Dropping (or aborting) the returned future stops every role at once *without* releasing,
    /// as a crashed process would: the leases then run out after their TTL.
    ///
    /// # Errors
    ///
    /// [`Error::SchemaNotReady`] (or [`Error::Database`]) from the start-up check; nothing is
    /// led then.
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), Error> {
        crate::panic_capture::install();
        let roles = self.roles();
        leader_core::check_schema_ready(&self.pool, &roles).await?;
        crate::metrics::describe();
        for spec in &self.roles {
            crate::metrics::register(spec.role, spec.every);
        }
        tracing::info!(holder = %self.holder_id, roles = ?roles, "leader runtime started");
        let this = Arc::new(self);
        let beat_grid = tokio::time::Instant::now();
        let mut tasks = JoinSet::new();
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        let mut polled = Vec::with_capacity(this.roles.len());
        // Each role's ticks run on their own task, so a job that hogs its thread delays no other.
        for spec in &this.roles {
            let (worker_tx, worker_rx) = mpsc::channel(1);
            polled.push(Polled {
                role: spec.role,
                every: spec.every,
                worker: worker_tx,
            });
            let (this, shutdown) = (this.clone(), shutdown.clone());
            let (spec, done) = (spec.clone(), done_tx.clone());
            tasks.spawn(async move {
                let env = this.tick_env(&shutdown, beat_grid);
                work_role(&env, spec, worker_rx, done).await;
            });
        }
        drop(done_tx);
        let (wake_tx, wake_rx) = mpsc::unbounded_channel();
        if let Some(options) = this.wake.clone() {
            tasks.spawn(crate::wake::listen(options, wake_tx, shutdown.clone()));
        } else {
            drop(wake_tx);
        }
        {
            let (this, shutdown) = (this.clone(), shutdown.clone());
            tasks.spawn(async move {
                let env = this.tick_env(&shutdown, beat_grid);
                poll_roles(&env, polled, done_rx, wake_rx).await;
            });
        }
        let status = {
            let (this, shutdown) = (this.clone(), shutdown.clone());
            tokio::spawn(async move {
                loop {
                    let read = crate::metrics::read_status(&this.pool).await;
                    if let Err(error) = &read {
                        tracing::debug!(%error, "could not read leader_leases for the metrics");
                    }
                    crate::metrics::publish_status(&roles, read.as_deref().map_err(|_| ()));
                    tokio::select! {
                        () = tokio::time::sleep(this.status_every) => {}
                        () = shutdown.cancelled() => break,
                    }
                }
            })
        };
        let _abort_status_on_drop = AbortOnDrop(status);
        while let Some(joined) = tasks.join_next().await {
            if let Err(error) = joined {
                tracing::error!(%error, "a role loop ended abnormally");
            }
        }
        tracing::info!(holder = %this.holder_id, "leader runtime stopped");
        Ok(())
    }
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
        }
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl RuntimeBuilder {
    /// Adds `role`, led by `job` at most once every `every` (the least time between the ends of
    /// two completed ticks).
    ///
    /// A bad interval or a second job for the same role is reported by [`RuntimeBuilder::build`].
    pub fn role<F, Fut, E>(self, role: Role, every: Duration, job: F) -> RuntimeBuilder
    where
        F: Fn(TickContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Into<JobError> + 'static,
    {
        let name = std::any::type_name::<F>().to_owned();
        let job = Arc::new(move |tick: TickContext| -> crate::registry::JobFuture {
            let fut = job(tick);
            Box::pin(async move { fut.await.map_err(Into::into) })
        });
        self.add(RoleSpec {
            role,
            every,
            job,
            name,
        })
    }

    /// Adds every job registered with `#[leader_role]` in this binary.
    pub fn registered_jobs(mut self) -> RuntimeBuilder {
        let mut jobs: Vec<_> = registered_jobs().collect();
        jobs.sort_by_key(|job| (job.role, job.name));
        for job in jobs {
            let run = job.job;
            self = self.add(RoleSpec {
                role: job.role,
                every: job.every,
                job: Arc::new(run),
                name: job.name.to_owned(),
            });
        }
        self
    }

    fn add(mut self, spec: RoleSpec) -> RuntimeBuilder {
        if self.error.is_some() {
            return self;
        }
        if let Err(error) = leader_core::lease::check_interval(spec.role, spec.every) {
            self.error = Some(error);
        } else if let Some(first) = self.roles.iter().find(|r| r.role == spec.role) {
            self.error = Some(Error::DuplicateRole {
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
    pub fn timings(mut self, timings: Timings) -> RuntimeBuilder {
        self.timings = timings;
        self
    }

    /// Sets how long a cancelled tick may take to return before it is dropped and released
    /// (default 10 s).
    pub fn shutdown_grace(mut self, grace: Duration) -> RuntimeBuilder {
        self.grace = grace;
        self
    }

    /// Sets how often the status metrics are read from the table (default 15 s).
    pub fn status_every(mut self, every: Duration) -> RuntimeBuilder {
        self.status_every = every;
        self
    }

    /// Turns on the wake channel: one dedicated connection made with `options` (directly to
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
    /// let runtime = leader_runtime::Runtime::builder(pool).wake(direct).build()?;
    /// # Ok(()) }
    /// ```
    pub fn wake(mut self, options: PgConnectOptions) -> RuntimeBuilder {
        self.wake = Some(options);
        self
    }

    /// Sets the holder id (default `hostname:pid:8hex`).
    pub fn holder_id(mut self, holder_id: impl Into<String>) -> RuntimeBuilder {
        self.holder_id = Some(holder_id.into());
        self
    }

    /// Checks the roles and builds the runtime.
    ///
    /// # Errors
    ///
    /// [`Error::Interval`] for an interval below 1 ms, [`Error::DuplicateRole`] naming both
    /// jobs of a role registered twice.
    pub fn build(self) -> Result<Runtime, Error> {
        if let Some(error) = self.error {
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
        })
    }
}
