//! The error of one protocol statement, saying which statement, and what to do.

use std::sync::Arc;
use std::time::Duration;

use crate::{Role, RoleNameError, Shard, Statement};

/// A protocol statement that did not do its work, and why.
///
/// `Clone`, so a batched statement's failure reaches every caller waiting on it whole: the
/// driver's error (and its SQLSTATE, [`StatementError::sqlstate`]) is shared, not flattened into
/// text.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StatementError {
    /// The statement did not finish within the statement timeout.
    #[error(
        "{statement} did not finish within {timeout:?}: the database is slow or a lock is held; \
         the protocol treats this as a missed beat and retries"
    )]
    Timeout {
        /// The statement.
        statement: Statement,
        /// The bound that was exceeded.
        timeout: Duration,
    },

    /// The statement's timeout fired `late` after it was due: this process's async runtime did
    /// not run the statement (nor its timer) in time, so its time went by in this process, not
    /// in the database. A job blocking the only worker thread of a tokio runtime does that (a
    /// current-thread runtime, or one that tokio sized to a 1-CPU container), and so does a
    /// machine so short of CPU that the process is not scheduled. The runtime treats it as
    /// [`StatementError::Timeout`].
    #[error(
        "{statement} was not run on time: its {timeout:?} timeout fired {late:?} late, so this \
         process did not run it, not the database: its async runtime's threads were blocked (a \
         job blocking the only worker thread: give the tokio runtime at least two, or move \
         blocking work to tick.spawn_blocking) or not scheduled (a machine short of CPU)"
    )]
    Starved {
        /// The statement.
        statement: Statement,
        /// Its timeout.
        timeout: Duration,
        /// How long after its due instant the timeout fired.
        late: Duration,
    },

    /// The database refused or failed the statement.
    #[error("{statement} failed: {source}")]
    Database {
        /// The statement.
        statement: Statement,
        /// The driver's error.
        #[source]
        source: Arc<sqlx::Error>,
    },

    /// ACQUIRE asked for a role that has no row in `leader_leases`.
    #[error(
        "role `{role}` has no row in leader_leases: `leaderctl roles add {role} --dir migrations/` \
         writes the migration that registers it (its row, and the leader_leases_role_registered \
         CHECK entry if that is missing too)"
    )]
    RoleNotSeeded {
        /// The role.
        role: Role,
    },

    /// ACQUIRE asked for a shard of a role that has no row for it: the role has fewer shards in
    /// the database (or none) than the caller was built with.
    #[error(
        "shard {shard} of role `{role}` has no row in leader_leases: the database gives the role \
         another shard count (SELECT shard_index, shard_count FROM leader_status WHERE role = \
         '{role}'); a migration running SELECT leader_reshard('{role}', {count}) gives it {count} \
         shards",
        count = shard.count()
    )]
    ShardNotSeeded {
        /// The role.
        role: Role,
        /// The shard asked for.
        shard: Shard,
    },

    /// An operator's call named a role the table does not have.
    #[error(
        "{statement}: unknown role `{role}`: SELECT role FROM leader_status lists the registered \
         roles"
    )]
    UnknownRole {
        /// The statement.
        statement: Statement,
        /// The name given.
        role: String,
    },

    /// An operator's call named a shard the role does not have (an unsharded role has only
    /// shard 0).
    #[error(
        "{statement}: role `{role}` has no shard {shard_index}: `leaderctl status` lists each \
         role's shards"
    )]
    UnknownShard {
        /// The statement.
        statement: Statement,
        /// The role named.
        role: String,
        /// The shard index named.
        shard_index: u32,
    },

    /// An operator's call named a role that breaks the naming rule.
    #[error("{statement}: {source}")]
    RoleName {
        /// The statement.
        statement: Statement,
        /// The rule it breaks.
        #[source]
        source: RoleNameError,
    },

    /// A tick interval below one millisecond.
    #[error(
        "{statement}: interval for role `{role}` is {interval:?}: it must be at least 1 ms (for \
         example 90s, 5m, 1h)"
    )]
    Interval {
        /// The statement.
        statement: Statement,
        /// The role the interval was given for.
        role: Role,
        /// The rejected interval.
        interval: Duration,
    },

    /// One statement was asked to end the same lease twice.
    #[error(
        "{statement}: role `{role}`{} is listed twice: a statement ends each lease once, \
         with one outcome",
        shard.map(|shard| format!(" shard {shard}")).unwrap_or_default()
    )]
    LeaseListedTwice {
        /// The statement.
        statement: Statement,
        /// The lease's role.
        role: Role,
        /// The lease's shard, for a sharded role.
        shard: Option<Shard>,
    },
}

impl StatementError {
    /// The statement that failed.
    pub fn statement(&self) -> Option<Statement> {
        match self {
            StatementError::Timeout { statement, .. }
            | StatementError::Starved { statement, .. }
            | StatementError::Database { statement, .. }
            | StatementError::UnknownRole { statement, .. }
            | StatementError::UnknownShard { statement, .. }
            | StatementError::RoleName { statement, .. }
            | StatementError::Interval { statement, .. }
            | StatementError::LeaseListedTwice { statement, .. } => Some(*statement),
            StatementError::RoleNotSeeded { .. } | StatementError::ShardNotSeeded { .. } => {
                Some(Statement::Acquire)
            }
        }
    }

    /// The SQLSTATE the server answered with, if it answered with an error.
    ///
    /// ```
    /// use leader_core::{Statement, StatementError};
    /// let timeout = StatementError::Timeout {
    ///     statement: Statement::Renew,
    ///     timeout: std::time::Duration::from_secs(2),
    /// };
    /// assert_eq!(timeout.sqlstate(), None);
    /// ```
    pub fn sqlstate(&self) -> Option<String> {
        match self {
            StatementError::Database { source, .. } => match source.as_ref() {
                sqlx::Error::Database(db) => db.code().map(|code| code.into_owned()),
                _ => None,
            },
            _ => None,
        }
    }

    pub(crate) fn database(statement: Statement) -> impl Fn(sqlx::Error) -> StatementError {
        move |source| StatementError::Database {
            statement,
            source: Arc::new(source),
        }
    }
}
