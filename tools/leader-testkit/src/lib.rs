//! Throwaway PostgreSQL for leader-runtime's tests and examples.
//!
//! * [`Cluster`]: a private cluster from the machine's PostgreSQL binaries, on a free port,
//!   removed when its owner goes away (works as root, through `runuser -u postgres`): the
//!   published `leader-throwaway-pg` crate's, which `leaderctl schema prepare` uses too.
//! * [`Pooler`]: PgBouncer in transaction mode in front of a server.
//! * [`get_metrics`]: a process's `/metrics` page, for checks of what a runtime exports.
//! * [`TestDb`]: a fresh database per test on `DATABASE_URL`, or on a private cluster started for
//!   the process when it is unset.
//! * The `with-postgres` binary runs a command with `DATABASE_URL` (and `LEADER_POOLER_URL`,
//!   when PgBouncer is installed) pointing at a throwaway cluster: the test command uses it so a
//!   whole test run shares one cluster.
//!
//! Why not an existing crate: `pgtemp` runs `initdb` as the current user, which PostgreSQL
//! refuses when that is root (as on CI here), and `#[sqlx::test]` needs a server already running
//! (`DATABASE_URL`) and gives no way to route a test's pool through a pooler. This crate starts
//! the server itself (`leader-throwaway-pg`), and hands out both pools.

#![warn(missing_docs)]

mod metrics_page;
mod pooler;
mod testdb;

pub use leader_throwaway_pg::Cluster;
pub use metrics_page::get_metrics;
pub use pooler::{POOLER_USERS, Pooler, PoolerSettings, pgbouncer_binary};
pub use testdb::{DATABASE_URL, POOLER_URL, TestDb, VIA_POOLER, via_pooler};

/// Why a throwaway server could not be provided.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The throwaway cluster could not be started or driven (no server binaries among them).
    #[error(transparent)]
    Cluster(#[from] leader_throwaway_pg::ClusterError),
    /// PgBouncer is not installed.
    #[error(
        "pgbouncer is not installed: apt-get install -y pgbouncer (or unset LEADER_REQUIRE_POOLER)"
    )]
    NoPgBouncer,
    /// `LEADER_TEST_VIA_POOLER=1` without `LEADER_POOLER_URL`.
    #[error("LEADER_TEST_VIA_POOLER=1 needs LEADER_POOLER_URL: run the tests through scripts/test")]
    PoolerUnset,
    /// A file or process operation failed.
    #[error("could not {what}: {source}")]
    Io {
        /// The step.
        what: &'static str,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A server command failed.
    #[error("{what} failed:\n{output}")]
    Command {
        /// The step.
        what: &'static str,
        /// What the command printed.
        output: String,
    },
    /// The server refused a connection or a setup statement.
    #[error("could not set up the test database: {0}")]
    Connect(#[source] sqlx::Error),
}

impl HarnessError {
    pub(crate) fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> HarnessError {
        move |source| HarnessError::Io { what, source }
    }
}
