//! A throwaway PostgreSQL cluster from the machine's binaries.
//!
//! [`Cluster::start`] initialises a private cluster in a temporary directory and starts it on a
//! free loopback port; dropping it (or the end of the owning process, however it ends) stops it
//! and removes the directory. PostgreSQL refuses to run as root, so as root every server program
//! runs as the `postgres` OS user (`runuser -u postgres`), on a directory that user owns.
//!
//! `leaderctl schema prepare` applies an application's migrations to one, and leader-runtime's
//! test kit runs its tests on one. [`process`] holds the helpers both use to run the server's
//! programs (and PgBouncer's) the same way.
//!
//! ```no_run
//! let cluster = leader_throwaway_pg::Cluster::start()?;
//! println!("connect to {}", cluster.url()); // postgres://postgres@127.0.0.1:PORT/postgres
//! # Ok::<(), leader_throwaway_pg::ClusterError>(())
//! ```
//!
//! Why not an existing crate: `pgtemp` runs `initdb` as the current user, which PostgreSQL
//! refuses when that is root (as on CI here).

#![warn(missing_docs)]

mod cluster;
pub mod process;

pub use cluster::Cluster;

/// Why a throwaway cluster could not be started or driven.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// No PostgreSQL server binaries were found.
    #[error(
        "no PostgreSQL server binaries: put initdb and pg_ctl on PATH (or install PostgreSQL so \
         `pg_config --bindir` finds them), or set DATABASE_URL to a server to use"
    )]
    NoBinaries,
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
}

impl ClusterError {
    /// A closure turning an I/O error of step `what` into [`ClusterError::Io`].
    pub fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> ClusterError {
        move |source| ClusterError::Io { what, source }
    }
}
