//! How every protocol statement is sent: one `Query` message with its values inlined (see
//! `inline`), tagged with its name ([`Statement::tag`]), bounded by the statement timeout on the
//! caller's side and, for the lease row's lock, on the server's.

use std::time::Duration;

use sqlx::postgres::PgRow;
use sqlx::{PgExecutor, Row};

use crate::{Role, Shard, Statement, StatementError, Timings};

/// Whole milliseconds, as the statements count them.
pub(crate) fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The server-side bound on waiting for the lease row's lock: four fifths of the statement
/// timeout, so the server gives up (and says why) just before the caller stops waiting.
pub(crate) fn lock_timeout(timings: &Timings) -> i64 {
    (ms(timings.statement_timeout()) * 4 / 5).max(1)
}

/// Sends one rendered statement and returns its rows, bounded by `timeout` on the caller's side.
pub(crate) async fn send<'e>(
    db: impl PgExecutor<'e>,
    statement: Statement,
    timeout: Duration,
    sql: String,
) -> Result<Vec<PgRow>, StatementError> {
    // AssertSqlSafe: every value in `sql` was rendered by `inline::render`.
    let fut = sqlx::raw_sql(sqlx::AssertSqlSafe(statement.tag(&sql))).fetch_all(db);
    let due = tokio::time::Instant::now() + timeout;
    match tokio::time::timeout_at(due, fut).await {
        Ok(result) => result.map_err(StatementError::database(statement)),
        Err(_) => Err(timed_out(statement, timeout, due.elapsed())),
    }
}

/// The error of a statement whose `timeout` fired `late` after it was due: [`StatementError::Timeout`],
/// or [`StatementError::Starved`] when the timer itself fired so late (half the timeout, and at
/// least 50 ms: a free thread's timers fire within a millisecond or two, a loaded machine's
/// within some tens) that this process did not run it.
pub(crate) fn timed_out(statement: Statement, timeout: Duration, late: Duration) -> StatementError {
    if late >= (timeout / 2).max(Duration::from_millis(50)) {
        StatementError::Starved {
            statement,
            timeout,
            late,
        }
    } else {
        StatementError::Timeout { statement, timeout }
    }
}

/// The one row a statement returns.
pub(crate) fn single(statement: Statement, rows: Vec<PgRow>) -> Result<PgRow, StatementError> {
    rows.into_iter()
        .next()
        .ok_or_else(|| StatementError::database(statement)(sqlx::Error::RowNotFound))
}

/// The answer rows of a statement over many leases, indexed by the lease each names: the
/// statements answer one row per lease asked, in no particular order.
///
/// Built once per answer, so that finding every lease's row is linear in the leases asked: a
/// search of every row for each lease was quadratic, and at 2,000 leases took a poll's worker
/// thread for long enough that the replica's heartbeats missed their beats.
pub(crate) struct RowsByLease<'r> {
    rows: std::collections::HashMap<(&'r str, i64), &'r PgRow>,
    statement: Statement,
}

impl<'r> RowsByLease<'r> {
    /// `rows`, indexed by their `columns` (a role and a shard index); a row without them is left
    /// out (and its lease then has no row).
    pub(crate) fn new(
        rows: &'r [PgRow],
        (role_column, shard_column): (&str, &str),
        statement: Statement,
    ) -> RowsByLease<'r> {
        let rows = rows
            .iter()
            .filter_map(|row| {
                let role = row.try_get::<&str, _>(role_column).ok()?;
                let index = row.try_get::<i64, _>(shard_column).ok()?;
                Some(((role, index), row))
            })
            .collect();
        RowsByLease { rows, statement }
    }

    /// The row of `role` and `shard` (shard 0 when `None`).
    pub(crate) fn get(
        &self,
        role: Role,
        shard: Option<Shard>,
    ) -> Result<&'r PgRow, StatementError> {
        let index = i64::from(shard.map_or(0, Shard::index));
        self.rows
            .get(&(role.as_str(), index))
            .copied()
            .ok_or_else(|| StatementError::database(self.statement)(sqlx::Error::RowNotFound))
    }
}

/// The rendered rows of a `VALUES` list, comma-separated.
pub(crate) fn values_list(rows: impl Iterator<Item = String>) -> String {
    rows.collect::<Vec<_>>().join(", ")
}

/// Checks a tick interval: at least one millisecond.
pub(crate) fn check_interval(
    statement: Statement,
    role: Role,
    interval: Duration,
) -> Result<(), StatementError> {
    if interval < Duration::from_millis(1) {
        return Err(StatementError::Interval {
            statement,
            role,
            interval,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::timed_out;
    use crate::{Statement, StatementError};

    #[test]
    fn a_timer_that_fired_late_blames_the_process_and_one_on_time_the_database() {
        let ms = Duration::from_millis;
        let starved = |timeout, late| {
            matches!(
                timed_out(Statement::Renew, timeout, late),
                StatementError::Starved { .. }
            )
        };
        assert!(!starved(ms(1_000), ms(499)));
        assert!(starved(ms(1_000), ms(500)));
        assert!(!starved(ms(60), ms(49)), "at least 50 ms late");
        assert!(starved(ms(60), ms(50)));
        let message = timed_out(Statement::Acquire, ms(600), ms(2_400)).to_string();
        assert!(message.contains("not the database"), "{message}");
    }
}
