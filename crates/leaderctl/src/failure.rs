//! How a command fails: one line on stderr saying what to do, and the exit code for its kind.

use std::path::Path;
use std::process::ExitCode;

/// A command that did not do what it was asked, and why.
#[derive(Debug)]
pub struct Failure {
    code: u8,
    message: String,
}

/// Exit code 1: the request was refused.
const REFUSED: u8 = 1;
/// Exit code 2: no database to act on, or no framework schema in it.
const UNREACHABLE: u8 = 2;

impl Failure {
    /// Refused: unknown role, malformed name, already paused, a differing file without --force.
    pub fn refused(message: impl Into<String>) -> Failure {
        Failure {
            code: REFUSED,
            message: message.into(),
        }
    }

    /// What the failure says.
    #[cfg(test)]
    pub fn message(&self) -> &str {
        &self.message
    }

    /// A migrations folder that `leader-migrations` could not read: the folder, what in it, and
    /// (for SQL PostgreSQL's scanner cannot split) that the file's SQL needs fixing first.
    pub fn unreadable_folder(dir: &Path, err: &leader_migrations::RoleCheckError) -> Failure {
        let fix = match err {
            leader_migrations::RoleCheckError::Scan { .. } => ": fix the file's SQL first",
            _ => "",
        };
        Failure::refused(format!("{}: {err}{fix}", dir.display()))
    }

    /// The database cannot be reached, or its framework schema is missing.
    pub fn unreachable(message: impl Into<String>) -> Failure {
        Failure {
            code: UNREACHABLE,
            message: message.into(),
        }
    }

    /// A malformed command line: clap's first line, and where to read more.
    pub fn usage(err: &clap::Error) -> Failure {
        let rendered = err.render().to_string();
        let what: Vec<&str> = rendered
            .lines()
            .take_while(|line| !line.starts_with("Usage:"))
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .collect();
        let what = what.join(" ");
        let what = what.trim_start_matches("error: ");
        Failure::refused(format!(
            "{what} (`leaderctl --help` lists the commands and flags)"
        ))
    }

    /// A statement's error from `leader-core`.
    pub fn from_core(err: leader_core::StatementError) -> Failure {
        use leader_core::StatementError;
        match err {
            StatementError::UnknownRole { role, .. } => Failure::refused(format!(
                "unknown role `{role}`: `leaderctl status` lists the registered roles, and \
                 `leaderctl roles add {role} --dir MIGRATIONS` writes the migration registering it"
            )),
            StatementError::UnknownShard {
                role, shard_index, ..
            } => Failure::refused(format!(
                "role `{role}` has no shard {shard_index}: `leaderctl status` lists its shards \
                 (`0/8` is shard 0 of 8; an unsharded role has only shard 0)"
            )),
            StatementError::RoleName { source, .. } => Failure::refused(source.to_string()),
            StatementError::Timeout { statement, timeout } => Failure::unreachable(format!(
                "{statement} got no answer within {timeout:?}: the database is slow, or a lock on \
                 leader_leases is held; try again, and look at pg_stat_activity if it persists"
            )),
            StatementError::Database { statement, source } => {
                Failure::from_sqlx(statement.label(), &source)
            }
            other => Failure::unreachable(other.to_string()),
        }
    }

    /// A driver error from `statement`.
    pub fn from_sqlx(statement: &str, err: &sqlx::Error) -> Failure {
        if let sqlx::Error::Database(db) = err {
            match db.code().as_deref() {
                // undefined_table, undefined_function
                Some("42P01" | "42883") => {
                    return Failure::unreachable(format!(
                        "the framework schema is missing here ({}): apply the framework \
                         migrations (`leaderctl migrate` over a direct connection, or \
                         `leaderctl migrations write DIR` and then your migrations); \
                         `leaderctl check` lists what is missing",
                        db.message()
                    ));
                }
                // undefined_column: a view or table as an earlier framework migration left it.
                Some("42703") => {
                    return Failure::unreachable(format!(
                        "the framework schema here is out of date ({}): apply the framework \
                         migrations (`leaderctl migrate` over a direct connection, or \
                         `leaderctl migrations write DIR` and then your migrations)",
                        db.message()
                    ));
                }
                Some("42501") => {
                    return Failure::refused(format!(
                        "{statement} was refused: {}: connect as a role granted with \
                         SELECT leader_grant_app_role('that_role')",
                        db.message()
                    ));
                }
                _ => {}
            }
        }
        Failure::unreachable(format!(
            "{statement} failed: {}",
            err.to_string().replace('\n', " ")
        ))
    }

    /// Prints the message on stderr and returns the exit code.
    pub fn report(self) -> ExitCode {
        eprintln!("leaderctl: {}", self.message);
        ExitCode::from(self.code)
    }
}
