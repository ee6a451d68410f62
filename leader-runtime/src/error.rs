//! The runtime's errors, by where they come from: building it ([`BuildError`]) and running it
//! ([`RunError`]). A statement's own failure is a [`StatementError`](crate::StatementError).

use std::time::Duration;

use leader_core::{Role, SchemaError};

/// Why [`RuntimeBuilder::build`](crate::RuntimeBuilder::build) refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A tick interval below one millisecond.
    #[error(
        "interval for role `{role}` is {interval:?}: it must be at least 1 ms (for example 90s, \
         5m, 1h)"
    )]
    Interval {
        /// The role.
        role: Role,
        /// The rejected interval.
        interval: Duration,
    },

    /// A registered job's schedule does not build (a registration `#[leader_role]` did not
    /// write: the macro refuses the same input at compile time).
    #[error("job `{job}` (role `{role}`): {source}")]
    Schedule {
        /// The job's path.
        job: String,
        /// Its role.
        role: Role,
        /// What the schedule said.
        source: leader_schedule::ScheduleError,
    },

    /// A sharded role's shard count is 0 or above [`MAX_SHARDS`](crate::MAX_SHARDS).
    #[error(
        "role `{role}` has {shard_count} shards: a sharded role has 1 to {max} shards",
        max = leader_core::MAX_SHARDS
    )]
    ShardCount {
        /// The role.
        role: Role,
        /// The rejected count.
        shard_count: u32,
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

    /// A `#[leader_role]` job takes a state the builder was not given.
    #[error(
        "job `{job}` (role `{role}`) takes `State<{wanted}>`, but this runtime's state is \
         `{given}`: call `.with_state(..)` with a `{wanted}` on the builder before \
         `.registered_jobs()`"
    )]
    StateType {
        /// The job's path.
        job: String,
        /// Its role.
        role: Role,
        /// The state type it takes.
        wanted: &'static str,
        /// The builder's state type.
        given: &'static str,
    },
}

/// Why [`Runtime::run`](crate::Runtime::run) returned an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The start-up check refused the database: nothing was led.
    #[error(transparent)]
    Schema(#[from] SchemaError),

    /// A loop of the runtime died (a bug: a job's own panic is caught and released as
    /// panicked). The runtime then stopped every other loop as a shutdown does, releasing the
    /// ticks it held; the process no longer leads and should exit non-zero, to be restarted.
    #[error(
        "{what} died ({reason}): the runtime stopped leading every role; exit and let the \
         process be restarted"
    )]
    LoopDied {
        /// Which loop: `the loop of role billing`, `the poller`, `the wake listener`.
        what: String,
        /// Its panic's message, or why it was cancelled.
        reason: String,
    },
}
