//! An axum HTTP service whose replicas also lead background jobs: what most users of
//! `leader-runtime` run.
//!
//! Every replica serves the same HTTP API, and every replica runs the same
//! [`Runtime`]; the database decides which replica leads each role
//! at each moment. Both halves share **one pool and one state**: [`App`] is handed to axum's
//! `Router::with_state` and to [`RuntimeBuilder::with_state`](leader_runtime::RuntimeBuilder::with_state),
//! so a handler and a job reach the database (and any client you add to [`App`]) the same way.
//!
//! ```text
//!            POST /emails ──► emails (outbox) ◄── email_outbox: a dispatcher, one long tick,
//!   any replica                                    claims with its fence, sends by compare-and-set
//!            GET /healthz ──► holder id, roles, the roles led now (Runtime::leadership)
//!                              daily_report: a periodic tick, counts the sent emails once
//!   --metrics-addr /metrics ─► the runtime's Prometheus exporter (and emails_enqueued_total)
//! ```
//!
//! # The pieces
//!
//! * [`jobs`]: `email_outbox`, a `#[leader_role]` **dispatcher** (one tick that runs until it is
//!   cancelled, so its replica leads the role for as long as it lives) and `daily_report`, a
//!   **periodic** job registered with the builder because its interval is configuration. Both
//!   take [`State<App>`](leader_runtime::State).
//! * [`store`]: the `#[fenced]` claim funnels and the compare-and-set completions, with the
//!   effect of each completion written in its transaction.
//! * [`http`]: `POST /emails`, `GET /emails/{id}`, `GET /healthz`.
//! * [`serve`]: one shutdown for both halves. A [`CancellationToken`] is cancelled by one task
//!   that awaits [`leader_runtime::shutdown::signal`] (a future that can be awaited once);
//!   axum's `with_graceful_shutdown` and [`Runtime::run_until_cancelled`](leader_runtime::Runtime::run_until_cancelled)
//!   both wait on it, and either half ending (an error at start-up, say) cancels it for the
//!   other. On SIGTERM the runtime cancels its ticks and releases them with no cooldown, and
//!   the wake channel ([`RuntimeBuilder::wake_on_release`](leader_runtime::RuntimeBuilder::wake_on_release),
//!   on a direct connection) tells the other replicas at once: one of them leads within a round
//!   trip instead of at its next poll.
//!
//! # Metrics
//!
//! `/metrics` is the runtime's own exporter (`leader_runtime::prometheus::install`, feature
//! `prometheus`) on its own address, `--metrics-addr`. It is the simplest option that exports
//! what the runtime means to export: `install` sets the tick-duration histogram's buckets (5 ms
//! to an hour) and the `# HELP` lines. Rendering a `metrics-exporter-prometheus` handle in an
//! axum route would put `/metrics` on the API's port, but the runtime keeps its bucket list to
//! itself, so that route would export the tick durations as a summary (the exporter's default),
//! not as the histogram the runtime documents. A separate scrape port is also the usual Prometheus layout. The service's
//! own `emails_enqueued_total` goes to the same exporter.
//!
//! # Configuration
//!
//! | flag | environment | default | |
//! |---|---|---|---|
//! | `--database-url` | `DATABASE_URL` | required | the pool (HTTP handlers, jobs, the runtime's statements); may go through a transaction-mode pooler |
//! | `--direct-database-url` | `DIRECT_DATABASE_URL` | `DATABASE_URL` | a session connection to PostgreSQL itself: the wake listener's `LISTEN`, and `--migrate` |
//! | `--listen` | `LISTEN_ADDR` | `127.0.0.1:8080` | the HTTP API (`:0` picks a free port; the log says which) |
//! | `--metrics-addr` | `METRICS_ADDR` | none | serve `/metrics` here |
//! | `--replica` | `REPLICA_NAME` | `hostname:pid` | the holder id written into the leases it holds: make it unique (a pod name) |
//! | `--migrate` | | off | apply [`MIGRATOR`] over the direct connection before starting |
//! | `--report-every-secs` | `REPORT_EVERY_SECS` | 30 | `daily_report`'s interval (a real one: 86400) |
//! | `--lease-ttl-ms` | `LEASE_TTL_MS` | 10000 | the lease TTL; the other timings scale with it ([`Timings::scaled_to_ttl`](leader_runtime::Timings::scaled_to_ttl)) |
//! | `--max-poll-ms` | `MAX_POLL_MS` | half the TTL | the longest wait between a follower's polls |
//! | `--pool-size` | `POOL_SIZE` | 10 | the pool's connections, shared by HTTP and the runtime |
//!
//! # Migrations
//!
//! `migrations/` holds every migration the database needs, in one folder: the framework's files
//! copied as `leaderctl migrations write migrations/` writes them (a test checks they are still
//! byte for byte [`leader_runtime::schema::MIGRATION_FILES`]), the roles migration in the shape
//! `leaderctl roles add email_outbox daily_report --dir migrations/` writes (which
//! `#[leader_role]` reads at compile time), and the service's tables. [`MIGRATOR`] embeds them;
//! `--migrate` applies them over the direct connection (sqlx takes an advisory lock, which a
//! transaction-mode pooler would not keep), so several replicas started with it apply them
//! once. In production, run `--migrate` from one deploy step, or `sqlx migrate run` on the
//! folder. A service that logs in as a role of its own adds `SELECT
//! leader_grant_app_role('my_app');` to a migration.
//!
//! # Running it
//!
//! Two replicas on a PostgreSQL of yours, one command per terminal. The first applies the
//! migrations before it serves; start the second once it serves (or give it `--migrate` too:
//! sqlx's advisory lock makes the second run find them applied).
//!
//! ```sh
//! export DATABASE_URL=postgres://postgres@localhost/app
//! cargo run -p axum-service -- --migrate --listen 127.0.0.1:8080 --replica web-1 --metrics-addr 127.0.0.1:9464
//! cargo run -p axum-service -- --listen 127.0.0.1:8081 --replica web-2
//! ```
//!
//! Without a server, `cargo run -q -p leader-testkit --bin with-postgres -- bash` opens a shell
//! with `DATABASE_URL` set to a throwaway cluster, removed when the shell exits. Then:
//!
//! ```sh
//! curl -s localhost:8080/healthz   # {"holder_id":"web-1","roles":[...],"leading":[{"role":"email_outbox","token":...}]}
//! curl -s localhost:8081/emails -H 'content-type: application/json' \
//!      -d '{"to": "ada@example.com", "subject": "hello"}'        # {"id":1}, sent by web-1
//! curl -s localhost:8081/emails/1                                 # "sent_by":"web-1"
//! kill -TERM <web-1's pid>   # web-1 releases and exits 0; web-2 leads email_outbox at once
//! ```
//!
//! # Pool sizing
//!
//! The runtime's RENEW waits for a connection from the same pool as the handlers. Size the pool
//! so that a burst of requests cannot hold every connection for longer than the heartbeat's
//! slack (`abandon_after - heartbeat`, 3 s at the default timings), or the leader abandons its
//! tick (safely: it stops before its lease can be granted elsewhere, then leads again).

#![warn(missing_docs)]

pub mod http;
pub mod jobs;
pub mod store;

use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use leader_runtime::{BuildError, RunError, Runtime, Timings, TimingsError};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, PgPool};
use tokio_util::sync::CancellationToken;

use crate::http::Health;
use crate::store::Store;

/// Every migration of the service: the framework's, its roles, its tables (`migrations/`).
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// The application's state, shared by the HTTP handlers and the leader jobs. Cheap to clone:
/// each handler and each tick gets a clone.
#[derive(Debug, Clone)]
pub struct App {
    /// The one pool of the replica (the runtime's statements use it too).
    pub pool: PgPool,
    /// This replica's name, which is also its holder id in `leader_leases`.
    pub replica: Arc<str>,
    /// How long the outbox dispatcher waits after draining the outbox before claiming again.
    pub outbox_idle: Duration,
}

impl App {
    /// The store over the pool.
    pub fn store(&self) -> Store {
        Store::new(self.pool.clone())
    }
}

/// The service's configuration, from flags or the environment (see the crate docs' table).
#[derive(Debug, Clone, clap::Parser)]
#[command(version, about)]
pub struct Config {
    /// The application pool's URL; it may go through a transaction-mode pooler.
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: String,
    /// A direct (session) connection to PostgreSQL, for the wake listener's LISTEN and for
    /// --migrate. Defaults to DATABASE_URL; set it when DATABASE_URL goes through a pooler.
    #[arg(long, env = "DIRECT_DATABASE_URL")]
    pub direct_database_url: Option<String>,
    /// Where the HTTP API listens (port 0 picks a free port; the log line says which).
    #[arg(long, env = "LISTEN_ADDR", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Serve the Prometheus metrics on http://ADDR/metrics.
    #[arg(long, env = "METRICS_ADDR", value_name = "ADDR")]
    pub metrics_addr: Option<SocketAddr>,
    /// This replica's name, written as the holder id of the leases it holds: unique per replica
    /// (a pod name). Defaults to hostname:pid.
    #[arg(long, env = "REPLICA_NAME")]
    pub replica: Option<String>,
    /// Apply the migrations over the direct connection before starting.
    #[arg(long)]
    pub migrate: bool,
    /// Seconds between the ends of two `daily_report` ticks.
    #[arg(long, env = "REPORT_EVERY_SECS", default_value_t = 30)]
    pub report_every_secs: u64,
    /// The lease TTL in milliseconds; the heartbeat, statement timeout and abandon point scale
    /// with it (30 %, 20 %, 60 %).
    #[arg(long, env = "LEASE_TTL_MS", default_value_t = 10_000)]
    pub lease_ttl_ms: u64,
    /// The longest wait between two polls of a follower, in milliseconds (default: half the TTL).
    #[arg(long, env = "MAX_POLL_MS")]
    pub max_poll_ms: Option<u64>,
    /// Connections of the pool, shared by the HTTP handlers and the runtime.
    #[arg(long, env = "POOL_SIZE", default_value_t = 10)]
    pub pool_size: u32,
}

impl Config {
    /// The lease timings the flags give.
    ///
    /// # Errors
    ///
    /// [`TimingsError`] naming the rule a combination breaks.
    pub fn timings(&self) -> Result<Timings, TimingsError> {
        let scaled = Timings::scaled_to_ttl(Duration::from_millis(self.lease_ttl_ms))?;
        match self.max_poll_ms {
            None => Ok(scaled),
            Some(ms) => Timings::new(leader_runtime::TimingParts {
                max_poll: Duration::from_millis(ms),
                ..scaled.parts()
            }),
        }
    }

    /// `daily_report`'s interval.
    pub fn report_every(&self) -> Duration {
        Duration::from_secs(self.report_every_secs)
    }

    /// This replica's name: `--replica`, or `hostname:pid`.
    pub fn replica(&self) -> String {
        self.replica.clone().unwrap_or_else(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .or_else(|| std::env::var("HOSTNAME").ok())
                .map(|host| host.trim().to_owned())
                .filter(|host| !host.is_empty())
                .unwrap_or_else(|| "localhost".to_owned());
            format!("{host}:{}", std::process::id())
        })
    }
}

/// Why [`serve`] stopped with an error; each says what to fix in one line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The lease timings break a rule.
    #[error("--lease-ttl-ms / --max-poll-ms: {0}")]
    Timings(#[from] TimingsError),
    /// A database URL does not parse.
    #[error("{which} is not a PostgreSQL URL: {source}")]
    Url {
        /// Which setting.
        which: &'static str,
        /// sqlx's reason.
        source: sqlx::Error,
    },
    /// The database cannot be reached.
    #[error("cannot connect to {which}: {source}")]
    Connect {
        /// Which setting.
        which: &'static str,
        /// sqlx's reason.
        source: sqlx::Error,
    },
    /// A migration failed.
    #[error("--migrate: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The runtime refused its jobs.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// `/metrics` cannot be served.
    #[error(transparent)]
    Metrics(#[from] leader_runtime::prometheus::ExporterError),
    /// The HTTP address cannot be listened on.
    #[error("cannot listen on {addr}: {source}; choose a free address with --listen")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The runtime stopped with an error (the schema check at start-up, or a loop that died).
    #[error(transparent)]
    Run(#[from] RunError),
    /// The HTTP server failed.
    #[error("the HTTP server failed: {0}")]
    Http(std::io::Error),
}

/// Runs one replica until `shutdown` is cancelled: the HTTP API and the leader runtime on one
/// pool and one [`App`], both stopping on `shutdown` (the runtime releasing its ticks, axum
/// finishing the requests in flight). Either half stopping on its own cancels `shutdown` for
/// the other.
///
/// # Errors
///
/// [`ServeError`]: a setting that cannot work, a database that cannot be reached or lacks a
/// migration (the runtime's start-up check names it), or a half that failed while running.
pub async fn serve(config: Config, shutdown: CancellationToken) -> Result<(), ServeError> {
    let timings = config.timings()?;
    let direct_url = config
        .direct_database_url
        .as_deref()
        .unwrap_or(&config.database_url);
    let direct = PgConnectOptions::from_str(direct_url).map_err(|source| ServeError::Url {
        which: "DIRECT_DATABASE_URL",
        source,
    })?;
    if config.migrate {
        let mut connection = direct
            .connect()
            .await
            .map_err(|source| ServeError::Connect {
                which: "DIRECT_DATABASE_URL",
                source,
            })?;
        MIGRATOR.run(&mut connection).await?;
        tracing::info!("migrations applied");
    }
    // The pool may go through a transaction-mode pooler (PgBouncer before 1.21), whose shared
    // server sessions would mix sqlx's named statements: no statement cache (the runtime refuses
    // a pool with one behind such a pooler), and every bound query in a transaction (store.rs).
    let options = PgConnectOptions::from_str(&config.database_url)
        .map_err(|source| ServeError::Url {
            which: "DATABASE_URL",
            source,
        })?
        .statement_cache_capacity(0);
    let pool = PgPoolOptions::new()
        .max_connections(config.pool_size)
        .connect_with(options)
        .await
        .map_err(|source| ServeError::Connect {
            which: "DATABASE_URL",
            source,
        })?;

    let replica = config.replica();
    let app = App {
        pool: pool.clone(),
        replica: replica.as_str().into(),
        outbox_idle: jobs::OUTBOX_IDLE,
    };
    let runtime = Runtime::builder(pool)
        .with_state(app.clone())
        .registered_jobs()
        .role(
            jobs::DAILY_REPORT,
            config.report_every(),
            jobs::write_report,
        )
        .timings(timings)
        .holder_id(replica)
        .wake_on_release(direct)
        .build()?;
    let health = Health::of(&runtime);

    if let Some(addr) = config.metrics_addr {
        leader_runtime::prometheus::install(addr)?;
        metrics::describe_counter!(
            "emails_enqueued_total",
            "Emails accepted by POST /emails on this replica."
        );
        metrics::counter!("emails_enqueued_total").increment(0);
    }
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServeError::Listen {
            addr: config.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(ServeError::Http)?;
    tracing::info!(holder = %app.replica, "listening on http://{addr}");

    let http = axum::serve(listener, http::router(app, health))
        .with_graceful_shutdown(shutdown.clone().cancelled_owned());
    let http = async {
        let served = http.await;
        shutdown.cancel();
        served
    };
    let lead = async {
        let led = runtime.run_until_cancelled(shutdown.clone()).await;
        shutdown.cancel();
        led
    };
    let (served, led) = tokio::join!(http, lead);
    led?;
    served.map_err(ServeError::Http)
}
