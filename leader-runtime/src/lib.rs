//! Run a background job on exactly one replica at a time, fenced, on PostgreSQL.
//!
//! Leadership of each role is a row in `leader_leases`, claimed for one tick by a single SQL
//! statement on the database clock, renewed while the tick runs and released when it ends. The
//! claim returns a [`Fence`]; every leader-only claim query proves it in its own WHERE with
//! `leader_fence(role, token)`, so a replaced or frozen leader claims nothing.
//!
//! # Getting started
//!
//! **1. Add the dependency.** `leader-runtime = "0.1"` (with the macros, the default: building
//! them needs a C compiler and libclang, for PostgreSQL's own SQL parser), or
//! `{ version = "0.1", default-features = false }` for the builder alone. It re-exports the
//! [`sqlx`] it is built with; use that one (or `sqlx = "0.9"`) for your pool.
//!
//! **2. Write and apply the migrations.** `leaderctl` writes the framework's migrations, your
//! roles and your login role's grant into your migrations folder, and applies them over a direct
//! connection:
//!
//! ```text
//! leaderctl migrations write migrations/ --role email_outbox --grant my_app
//! DATABASE_URL=postgres://owner@db:5432/app leaderctl migrate --dir migrations/
//! ```
//!
//! The framework's own migrations are also embedded here ([`schema::MIGRATOR`],
//! [`schema::MIGRATION_FILES`]).
//!
//! **3. Write a job that takes your application's state**, with its claim query fenced:
//!
//! ```no_run
//! use std::sync::Arc;
//! use leader_runtime::{Fence, JobError, State, TickContext, fenced, leader_role};
//! use leader_runtime::sqlx::{self, PgPool};
//!
//! #[derive(Clone)]
//! pub struct App {
//!     pool: PgPool,
//!     mailer: Arc<Mailer>,
//! }
//! # pub struct Mailer;
//! # impl Mailer { async fn send(&self, _id: i64) -> Result<(), JobError> { Ok(()) } }
//!
//! /// The claim: the fence is a top-level condition of the locking query's own WHERE.
//! #[fenced]
//! async fn claim(pool: &PgPool, fence: Fence) -> sqlx::Result<Vec<i64>> {
//!     let mut tx = pool.begin().await?;
//!     let ids = sqlx::query_scalar(
//!         "SELECT id FROM email_outbox WHERE sent_at IS NULL AND leader_fence($1, $2)
//!           ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED",
//!     )
//!     .persistent(false)
//!     .bind(fence.role())
//!     .bind(fence.token())
//!     .fetch_all(&mut *tx)
//!     .await?;
//!     tx.commit().await?;
//!     Ok(ids)
//! }
//!
//! #[leader_role("email_outbox", every = "5s")]
//! async fn send_emails(tick: TickContext, State(app): State<App>) -> Result<(), JobError> {
//!     for id in claim(&app.pool, tick.fence()).await? {
//!         if tick.is_cancelled() {
//!             break;
//!         }
//!         app.mailer.send(id).await?; // then mark it sent with a compare-and-set write
//!     }
//!     Ok(())
//! }
//! ```
//!
//! **4. Run the runtime, with a graceful shutdown:**
//!
//! ```no_run
//! # #[derive(Clone)] struct App;
//! # async fn main_(pool: leader_runtime::sqlx::PgPool, app: App) -> Result<(), Box<dyn std::error::Error>> {
//! leader_runtime::Runtime::builder(pool)
//!     .with_state(app)
//!     .registered_jobs() // every #[leader_role] in the binary
//!     .build()?
//!     .run(leader_runtime::shutdown::signal()) // SIGTERM / Ctrl-C: release and stop
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! On SIGTERM each running tick is cancelled and released with no cooldown, so another replica
//! leads at once. Without the macros, add jobs with [`RuntimeBuilder::role`].
//!
//! The repository's README follows the same path as a guide (calendar and sharded roles, jobs
//! that block, operating it), and links to where each reference lives: the protocol, the fence
//! rules, the metrics and `leaderctl`.
//!
//! # Panics, and the panic hook
//!
//! A job's panic is caught, logged once (an ERROR with the role, the message and the location)
//! and its tick released as panicked; it does not reach the process, and the runtime's other
//! roles run on. For the location, [`Runtime::run`] installs a process-wide panic hook
//! ([`std::panic::set_hook`]), once per process, chained in front of the hook set before it:
//!
//! * a panic raised while a job (or a [`panic_guard`] step) is being polled is recorded for that
//!   ERROR line and printed nothing, so it is reported once, with its role;
//! * every other panic goes to the previous hook unchanged (std's prints it to stderr; a crash
//!   reporter installed before `run` still sees it).
//!
//! A hook of your own set *before* `run` therefore keeps working, and sees no job panic (those
//! reach your logs as the runtime's ERROR line). One set *after* `run` started replaces this
//! one (a process has one hook): job panics are still caught and released as panicked, but your
//! hook prints them too, and the ERROR line loses their location. To keep both, chain: take the
//! current hook with [`std::panic::take_hook`] and call it from yours.
//!
//! **`panic = "abort"`** in the application's profile voids the promise above: nothing unwinds,
//! so nothing is caught, and a job's panic kills the whole process (the hooks run first, so the
//! panic is printed). No RELEASE is sent: the leases the process held run out after their TTL and
//! another replica takes over then, as after any crash. The fence holds as always (the dead
//! process claims nothing); what is lost is the panicked tick's cooldown and every role this
//! replica led until it is restarted. Keep the default `panic = "unwind"` in a binary that runs
//! jobs.
//!
//! # What is proven, and where
//!
//! * [`fenced`]'s check, stated in terms of what PostgreSQL does, is `leader-fence-check`'s; it
//!   is run against PostgreSQL on written and generated statements (`fence-differential`).
//! * The protocol (`leader-core`) is model-checked with Stateright (`tools/leader-model/`) and drilled on real
//!   processes (`tools/leader-drills/`); the repository's `docs/model.md` and `docs/benchmarks/` have the
//!   figures and how to reproduce them.
//!
//! # The crate
//!
//! * [`Runtime`] and [`RuntimeBuilder`]: lead roles; [`Leadership`]: which roles lead now.
//! * [`TickContext`]: what a job gets each tick (the fence, its cancellation and cause, the
//!   pool); [`State`]: the application's state.
//! * [`panic_guard`]: per-step, per-item and rotating-sweep panic guards for job authors.
//! * [`leader_role`], [`fenced`], [`unfenced`] (feature `macros`).
//! * [`schedule`]: calendar schedules (`#[leader_role("billing", cron = "0 2 * * *", tz =
//!   "Europe/Berlin")]`, or [`Schedule::cron`] with the builder): each instant completed at most
//!   once cluster-wide, never before it is due on the database clock;
//!   [`TickContext::tick_instant`] says which instant a tick serves.
//! * Sharded roles, for a job one replica cannot keep up with: `#[leader_role("webhook_delivery",
//!   every = "200ms", shards = 8)]` (or [`RuntimeBuilder::sharded_role`]) makes each of 8 shards
//!   its own lease, spread over the replicas running the role (no replica holds more than
//!   `ceil(shards / live replicas)` at once); a tick says which shard it holds
//!   ([`TickContext::shard`]) and claims that shard's rows with its [`ShardFence`]
//!   (`leader_fence($1, $2, $3, $4) AND leader_shard_of(id, $3) = $2`), which [`fenced`] checks.
//!   The database gets the count from `SELECT leader_reshard('role', n)` in a migration.
//! * [`schema`]: the framework's migrations and the start-up check.
//! * [`shutdown`], [`metrics`], `prometheus` (feature `prometheus`).
//! * [`protocol`]: the statements underneath, for a job's tests (feature `test-support`).
//!
//! # Features
//!
//! * `macros` (default): `#[leader_role]`, `#[fenced]`, `#[unfenced]`, and
//!   `assert_claims_fenced!`, the whole-crate audit for the crate's tests; needs a C compiler and
//!   libclang to build. Without it nothing of PostgreSQL's parser is built.
//! * `prometheus`: `prometheus::install(addr)` serves the metrics on `/metrics` at an address the
//!   application chooses (`metrics-exporter-prometheus`).
//! * `test-support`: [`protocol`], [`TickContext::from_grant`], `Fence::forge`, `Grant::forge`
//!   and `TickContext::cancel_for_test`, so a job's unit tests can build a [`TickContext`]
//!   from a real grant, or without a database granting the lease. Enable it only in `[dev-dependencies]`: a forged fence proves
//!   nothing to `leader_fence`.

#![warn(missing_docs)]

mod anchor;
mod backoff;
mod builder;
mod cancel;
mod context;
mod error;
mod fence_parameter;
mod heartbeat;
mod holder;
mod instants;
mod job;
mod leadership;
pub mod metrics;
mod panic_capture;
pub mod panic_guard;
mod pause;
mod poll;
#[cfg(feature = "prometheus")]
pub mod prometheus;
mod registry;
mod role_spec;
mod runtime;
pub mod shutdown;
mod state;
mod statements;
mod tick;
mod tick_tasks;
mod wake;
mod worker;
mod workers;

#[cfg(test)]
mod fake;

pub use builder::RuntimeBuilder;
pub use cancel::{CancelCause, TickCancellation};
pub use context::TickContext;
pub use error::{BuildError, RunError};
pub use job::Job;
pub use leader_core::{
    Fence, MAX_SHARDS, Role, RoleNameError, Shard, ShardError, ShardFence, TimingParts, Timings,
    TimingsError,
};
#[cfg(feature = "macros")]
pub use leader_macros::{assert_claims_fenced, fenced, leader_role, unfenced};
pub use leadership::{Lead, Leadership};
pub use registry::JobError;
pub use runtime::{JobInfo, Runtime};
pub use state::State;

/// The parts of a calendar schedule: [`CronSchedule`](schedule::CronSchedule) (the expression,
/// time zones and daylight saving time), [`Missed`](schedule::Missed) (instants that passed while
/// no tick ran) and their errors. [`Schedule`], at the crate root, is when a role runs.
///
/// It also holds the time types the crate hands out, so that naming them needs no other crate:
/// [`DateTime`](schedule::DateTime) (chrono's) in [`Tz`](schedule::Tz) for the instant a tick
/// serves ([`TickContext::tick_instant`]), and in [`Utc`](schedule::Utc) for database-clock
/// times such as [`TickContext::acquired_at`] and [`Planned`](schedule::Planned)'s instants.
///
/// ```
/// use leader_runtime::TickContext;
/// use leader_runtime::schedule::{DateTime, Tz, Utc};
///
/// /// The instant a tick serves (a calendar role's only), and when it was granted.
/// fn served(tick: &TickContext) -> (Option<DateTime<Tz>>, DateTime<Utc>) {
///     (tick.tick_instant(), tick.acquired_at())
/// }
/// ```
pub mod schedule {
    pub use chrono::{DateTime, Utc};
    pub use chrono_tz::Tz;
    pub use leader_schedule::{CronSchedule, Missed, Planned, ScheduleError};
}
pub use leader_schedule::Schedule;

/// The sqlx this crate is built with (0.9), so an application uses the same `PgPool` type:
/// depend on it through here, or on `sqlx = "0.9"`. A pool from another sqlx version is a
/// different type ("expected `Pool<Postgres>`, found a different `Pool<Postgres>`").
pub use sqlx;

/// What a transaction-mode pooler breaks, and the checks the runtime makes at start-up: that
/// the direct connection reaches PostgreSQL itself, and that the pool's statements survive the
/// pooler in front of it ([`Runtime::run`]'s start-up checks).
pub use leader_core::pooler;

/// The framework's migrations and the start-up check that the database matches the code.
pub mod schema {
    pub use leader_core::schema::*;
    pub use leader_core::{SchemaError, check_schema_ready};
}

/// The statements underneath the runtime, for a job's tests (feature `test-support`): a real
/// grant from [`lease::acquire_one`](protocol::lease::acquire_one) to build a [`TickContext`]
/// from ([`TickContext::from_grant`]), and the operator's statements to pause the role or clear
/// its cooldown around it. Enable the feature in `[dev-dependencies]` only: these statements
/// release, pause and grant any role, whoever leads it. An application's own code needs none of
/// it; tools (`leaderctl`, benchmarks) use `leader-core`, where these are defined.
#[cfg(any(feature = "test-support", doc))]
pub mod protocol {
    pub use leader_core::{
        ReleaseOutcome, Statement, StatementError, history, lease, operator, status,
    };
}

/// Paths used by the macros' expansions. Not a public API: it can change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::fence_parameter::{
        FenceParameter, ShardFenceParameter, assert_fence_parameter, assert_shard_fence_parameter,
    };
    pub use crate::job::call_with_state;
    pub use crate::registry::{
        JobFuture, JobRegistration, JobResult, RegisteredJob, RegisteredSchedule, registered_jobs,
    };
    pub use core::any::{Any, TypeId, type_name};
    pub use core::time::Duration;
    pub use inventory;
}

/// The crate README's example (`leader-runtime/README.md`, the registry page), compiled.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
