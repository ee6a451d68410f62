//! The protocol's errors; each message says what to do.

use std::time::Duration;

use crate::{Role, RoleNameError, TimingsError};

/// An error from the lease protocol.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A role name breaks the naming rule.
    #[error(transparent)]
    RoleName(#[from] RoleNameError),

    /// A timing combination is unsafe.
    #[error(transparent)]
    Timings(#[from] TimingsError),

    /// A tick interval below one millisecond.
    #[error(
        "interval for role `{role}` is {interval:?}: it must be at least 1 ms (for example 90s, 5m, 1h)"
    )]
    Interval {
        /// The role the interval was given for.
        role: Role,
        /// The rejected interval.
        interval: Duration,
    },

    /// Two jobs were registered for the same role.
    #[error(
        "role `{role}` is led by two jobs, `{first}` and `{second}`: a role has exactly one job; \
         rename one role (and register it in your roles migration) or remove one job"
    )]
    DuplicateRole {
        /// The role claimed twice.
        role: Role,
        /// The first job registered for it.
        first: String,
        /// The second job registered for it.
        second: String,
    },

    /// The role has no row in `leader_leases`.
    #[error(
        "role `{0}` has no row in leader_leases: register it in your roles migration, \
         e.g. INSERT INTO leader_leases (role, holder_token) VALUES ('{0}', leader_seed_token()), \
         and list it in the leader_leases_role_registered CHECK"
    )]
    RoleNotSeeded(Role),

    /// `leader_pause` or `leader_unpause` was called for a role the table does not have.
    #[error("unknown role `{0}`: SELECT role FROM leader_status lists the registered roles")]
    UnknownRole(String),

    /// The schema is missing or incomplete, or roles the code uses are not registered.
    #[error("{0}")]
    SchemaNotReady(crate::schema::SchemaReport),

    /// A statement did not finish within the statement timeout.
    #[error(
        "{statement} did not finish within {timeout:?}: the database is slow or a lock is held; \
         the protocol treats this as a missed beat and retries"
    )]
    Timeout {
        /// The statement's label ([`crate::Statement::label`]).
        statement: &'static str,
        /// The bound that was exceeded.
        timeout: Duration,
    },

    /// The database refused or failed a statement.
    #[error("{statement} failed: {source}")]
    Database {
        /// The statement that failed.
        statement: &'static str,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
}

impl Error {
    pub(crate) fn db(statement: &'static str) -> impl FnOnce(sqlx::Error) -> Error {
        move |source| Error::Database { statement, source }
    }
}
