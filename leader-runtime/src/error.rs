//! The runtime's errors, by where they come from: building it ([`BuildError`]) and running it
//! ([`RunError`]). A statement's own failure is a [`StatementError`](crate::StatementError).
//!
//! # What `{:?}` prints
//!
//! Both errors' `Debug` prints their message and the messages of their sources, as anyhow's
//! does, not their fields: `fn main() -> Result<(), Box<dyn Error>>` reports an error with
//! `Debug` (std's `Termination`), and so do `unwrap` and `expect`, so that is the text a user
//! who follows the README sees at start-up, and it must carry the fix (`leaderctl migrate`, the
//! migration to add) rather than `Schema(NotReady(SchemaReport { problems: [..] }))`.
//! `{:#?}` still prints the fields, for a programmer's `dbg!`.
//!
//! The alternatives were weighed: a `main` returning `anyhow::Result` (or a type of ours whose
//! `Debug` prints the chain) fixes only the programs written that way, while a hand-written
//! `Debug` here fixes every way an application can print these errors, `?` in a
//! `Box<dyn Error>` main, `unwrap` and `expect` included, without a dependency.

use std::error::Error;
use std::fmt;
use std::time::Duration;

use leader_core::pooler::{DirectError, PoolError};
use leader_core::{Role, SchemaError};

/// Why [`RuntimeBuilder::build`](crate::RuntimeBuilder::build) refused. It reports every
/// mistake at once: one as its own variant, two or more as [`BuildError::Several`], in the order
/// the roles were added; [`BuildError::errors`] lists them either way.
///
/// `{:?}` prints the message, each mistake with its fix, not the fields (`{:#?}` prints those):
/// `?` in a `main` returning `Result<(), Box<dyn Error>>` prints an error with `Debug`, and so
/// do `unwrap` and `expect`.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A tick interval below one millisecond (`Duration::ZERO`, or nanoseconds meant as
    /// seconds). Fix: give the role an interval of at least 1 ms.
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

    /// A registered job's schedule does not build: a registration `#[leader_role]` did not
    /// write (the macro refuses the same input at compile time), so the fix is in the code that
    /// wrote it. The message quotes the schedule's own error.
    #[error("job `{job}` (role `{role}`): {source}")]
    Schedule {
        /// The job's path.
        job: String,
        /// Its role.
        role: Role,
        /// What the schedule said.
        source: leader_schedule::ScheduleError,
    },

    /// A sharded role's shard count is 0 or above [`MAX_SHARDS`](crate::MAX_SHARDS). Fix: a
    /// count from 1 to `MAX_SHARDS`, the same as the role's rows have (`leaderctl roles
    /// reshard`).
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

    /// Two jobs were registered for the same role (two `#[leader_role]` with one name, or a
    /// builder `.role` for a role a `#[leader_role]` job already leads). Fix: rename one role
    /// (and register it in your roles migration) or remove one job.
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

    /// A `#[leader_role]` job takes a state the builder was not given. Fix: call
    /// `.with_state(..)` with a value of the job's state type before `.registered_jobs()`.
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

    /// [`take_over_when_dead`](crate::RuntimeBuilder::take_over_when_dead) without
    /// [`wake_on_release`](crate::RuntimeBuilder::wake_on_release): the anchor is the wake
    /// connection. Fix: give the builder `.wake_on_release(direct)` with options that connect to
    /// PostgreSQL itself.
    #[error(
        "take_over_when_dead() needs wake_on_release(options): the anchor is that direct \
         connection; add .wake_on_release(..) with options that connect to PostgreSQL itself \
         (not through a transaction-mode pooler)"
    )]
    TakeoverWithoutWake,

    /// Two or more of the mistakes above, each with its own fix; never nested, never fewer
    /// than two.
    #[error("{}", several(errors))]
    Several {
        /// Every mistake, in the order the roles were added.
        errors: Vec<BuildError>,
    },
}

impl BuildError {
    /// Every mistake this error reports: [`BuildError::Several`]'s, or this one alone.
    pub fn errors(&self) -> &[BuildError] {
        match self {
            BuildError::Several { errors } => errors,
            one => std::slice::from_ref(one),
        }
    }

    /// `None` for no mistake, the mistake itself for one, [`BuildError::Several`] for more.
    pub(crate) fn of(mut errors: Vec<BuildError>) -> Option<BuildError> {
        match errors.len() {
            0 => None,
            1 => errors.pop(),
            _ => Some(BuildError::Several { errors }),
        }
    }
}

fn several(errors: &[BuildError]) -> String {
    let mut text = format!("the runtime has {} mistakes:", errors.len());
    for error in errors {
        text.push_str("\n  - ");
        text.push_str(&error.to_string());
    }
    text
}

/// Why [`Runtime::run`](crate::Runtime::run) returned an error.
///
/// `{:?}` prints the message and its sources' (each problem the start-up check found, with its
/// fix), not the fields (`{:#?}` prints those): `?` in a `main` returning
/// `Result<(), Box<dyn Error>>` prints an error with `Debug`, and so do `unwrap` and `expect`.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The start-up check refused the database, and nothing was led: the framework's migrations
    /// have not all run, or a role the code leads is missing from the role CHECK, has no row,
    /// or has another shard count in the database. The message lists every problem found, each
    /// with its fix (`leaderctl migrate`, or the migration to add: `leaderctl roles add`,
    /// `leaderctl roles reshard`). Or the check's read of the catalog failed (the source says
    /// why: the server is unreachable, the login role lacks `SELECT` on `leader_leases`).
    #[error(transparent)]
    Schema(#[from] SchemaError),

    /// The start-up look at the pool found that the application's own queries would fail
    /// behind the pooler in front of it: sqlx's named prepared statements reach a
    /// transaction-mode pooler's shared server sessions as they are. Nothing was led. The
    /// message says what to change (the pool's statement cache, or the pooler's version).
    #[error(transparent)]
    Pool(#[from] PoolError),

    /// The direct connection
    /// ([`wake_on_release`](crate::RuntimeBuilder::wake_on_release)) reaches a pooler, not
    /// PostgreSQL itself: its `LISTEN` and the anchor's session lock would be lent to other
    /// clients. Nothing was led, and no lock was taken. Fix: give it the server's own address.
    #[error(transparent)]
    DirectConnection(#[from] DirectError),

    /// A loop of the runtime died (a bug: a job's own panic is caught and released as
    /// panicked): it panicked, or returned before the shutdown. The runtime then stopped every
    /// other loop as a shutdown does, releasing the ticks it held; the process no longer leads
    /// and should exit non-zero, to be restarted. Please report it, with the log's ERROR line.
    #[error(
        "{what} died ({reason}): the runtime stopped leading every role; exit and let the \
         process be restarted"
    )]
    LoopDied {
        /// Which loop: `the loop of role billing`, `the poller`, `the wake listener`, `the
        /// status publisher`.
        what: String,
        /// Its panic's message, or how else it ended.
        reason: String,
    },
}

/// Writes `error`'s message, then each source's, one a line, as anyhow's `Debug` does. A source
/// whose message already ends `error`'s (thiserror's `{source}` in the message) is not repeated.
fn message_and_sources(error: &dyn Error, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let mut said = error.to_string();
    f.write_str(&said)?;
    let mut heading = "\n\nCaused by:";
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !said.ends_with(&text) {
            write!(f, "{heading}\n    {text}")?;
            heading = "";
        }
        said = text;
        source = cause.source();
    }
    Ok(())
}

impl fmt::Debug for BuildError {
    /// The message, as [`BuildError`] says; `{:#?}` prints the fields.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !f.alternate() {
            return message_and_sources(self, f);
        }
        match self {
            BuildError::TakeoverWithoutWake => f.write_str("TakeoverWithoutWake"),
            BuildError::Interval { role, interval } => f
                .debug_struct("Interval")
                .field("role", role)
                .field("interval", interval)
                .finish(),
            BuildError::Schedule { job, role, source } => f
                .debug_struct("Schedule")
                .field("job", job)
                .field("role", role)
                .field("source", source)
                .finish(),
            BuildError::ShardCount { role, shard_count } => f
                .debug_struct("ShardCount")
                .field("role", role)
                .field("shard_count", shard_count)
                .finish(),
            BuildError::DuplicateRole {
                role,
                first,
                second,
            } => f
                .debug_struct("DuplicateRole")
                .field("role", role)
                .field("first", first)
                .field("second", second)
                .finish(),
            BuildError::StateType {
                job,
                role,
                wanted,
                given,
            } => f
                .debug_struct("StateType")
                .field("job", job)
                .field("role", role)
                .field("wanted", wanted)
                .field("given", given)
                .finish(),
            BuildError::Several { errors } => {
                f.debug_struct("Several").field("errors", errors).finish()
            }
        }
    }
}

impl fmt::Debug for RunError {
    /// The message and its sources, as [`RunError`] says; `{:#?}` prints the fields.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !f.alternate() {
            return message_and_sources(self, f);
        }
        match self {
            RunError::Schema(error) => f.debug_tuple("Schema").field(error).finish(),
            RunError::Pool(error) => f.debug_tuple("Pool").field(error).finish(),
            RunError::DirectConnection(error) => {
                f.debug_tuple("DirectConnection").field(error).finish()
            }
            RunError::LoopDied { what, reason } => f
                .debug_struct("LoopDied")
                .field("what", what)
                .field("reason", reason)
                .finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fmt;
    use std::sync::Arc;
    use std::time::Duration;

    use leader_core::{Role, SchemaError, Statement, StatementError};

    use super::{BuildError, RunError, message_and_sources};

    #[test]
    fn debug_prints_a_failed_check_as_its_message_without_repeating_a_quoted_source() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        let error = RunError::Schema(SchemaError::Statement(StatementError::Database {
            statement: Statement::SchemaCheck,
            source: Arc::new(sqlx::Error::Io(io)),
        }));
        assert_eq!(format!("{error:?}"), error.to_string());
        assert!(
            format!("{error:?}").ends_with(": connection refused"),
            "{error:?}"
        );
        assert!(format!("{error:#?}").starts_with("Schema("), "{error:#?}");
    }

    /// An error whose message does not quote its source.
    #[derive(Debug, thiserror::Error)]
    #[error("the outer step failed")]
    struct Outer(#[source] std::io::Error);

    struct Chain<'a>(&'a Outer);

    impl fmt::Debug for Chain<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            message_and_sources(self.0, f)
        }
    }

    #[test]
    fn a_source_the_message_does_not_quote_is_printed_below_it() {
        let outer = Outer(std::io::Error::other("the inner cause"));
        assert_eq!(
            format!("{:?}", Chain(&outer)),
            "the outer step failed\n\nCaused by:\n    the inner cause"
        );
    }

    #[test]
    fn debug_prints_each_mistake_of_several() {
        let interval = BuildError::Interval {
            role: Role::from_static("alpha"),
            interval: Duration::ZERO,
        };
        let shards = BuildError::ShardCount {
            role: Role::from_static("beta"),
            shard_count: 0,
        };
        let error = BuildError::of(vec![interval.clone(), shards.clone()]).unwrap();
        assert_eq!(error.errors(), [interval.clone(), shards.clone()]);
        assert_eq!(
            format!("{error:?}"),
            format!("the runtime has 2 mistakes:\n  - {interval}\n  - {shards}")
        );
        assert!(format!("{error:#?}").starts_with("Several {"), "{error:#?}");
        assert_eq!(BuildError::of(vec![interval.clone()]), Some(interval));
        assert_eq!(BuildError::of(vec![]), None);
    }
}
