//! The names of the statements the framework sends, carried in a leading SQL comment.
//!
//! Every statement starts with `/* leader:<name> */`, so an operator reading `pg_stat_activity`
//! or a server log (and a benchmark counting statements in one) can tell which is which without
//! matching the SQL text, which may be reworded in any release.

use std::fmt;

/// One of the statements the framework sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Statement {
    /// [`crate::lease::acquire`].
    Acquire,
    /// [`crate::lease::renew`].
    Renew,
    /// [`crate::lease::release`].
    Release,
    /// [`crate::lease::leave`].
    Leave,
    /// [`crate::operator::pause`].
    Pause,
    /// [`crate::operator::unpause`].
    Unpause,
    /// [`crate::operator::clear_cooldown`].
    ClearCooldown,
    /// [`crate::status::read`]: the operator's read of `leader_status`.
    StatusView,
    /// The runtime's read of `leader_leases` for its status metrics.
    StatusRead,
    /// [`crate::check_schema_ready`]: the start-up check's reads of the catalog.
    SchemaCheck,
    /// [`crate::lease::Anchor::open`]: an anchor session's lock and read of its own identity.
    Anchor,
    /// [`crate::pooler`]: a direct connection's check that it is PostgreSQL's own session, and
    /// the start-up look at what is in front of the pool.
    ConnectionCheck,
    /// [`crate::history::read`]: the operator's read of the tick history.
    HistoryRead,
}

const PREFIX: &str = "/* leader:";

impl Statement {
    /// Every statement.
    pub const ALL: [Statement; 13] = [
        Statement::Acquire,
        Statement::Renew,
        Statement::Release,
        Statement::Leave,
        Statement::Pause,
        Statement::Unpause,
        Statement::ClearCooldown,
        Statement::StatusView,
        Statement::StatusRead,
        Statement::SchemaCheck,
        Statement::Anchor,
        Statement::ConnectionCheck,
        Statement::HistoryRead,
    ];

    /// The name in the statement's leading comment: `acquire`, `renew`, `release`, `leave`,
    /// `pause`, `unpause`, `clear_cooldown`, `status_view`, `status`, `schema_check`, `anchor`,
    /// `connection_check` or `tick_history`.
    pub const fn name(self) -> &'static str {
        match self {
            Statement::Acquire => "acquire",
            Statement::Renew => "renew",
            Statement::Release => "release",
            Statement::Leave => "leave",
            Statement::Pause => "pause",
            Statement::Unpause => "unpause",
            Statement::ClearCooldown => "clear_cooldown",
            Statement::StatusView => "status_view",
            Statement::StatusRead => "status",
            Statement::SchemaCheck => "schema_check",
            Statement::Anchor => "anchor",
            Statement::ConnectionCheck => "connection_check",
            Statement::HistoryRead => "tick_history",
        }
    }

    /// The name in errors and logs: `ACQUIRE`, `RENEW`, `RELEASE`, `LEAVE`, `PAUSE`, `UNPAUSE`,
    /// `CLEAR COOLDOWN`, `STATUS VIEW`, `STATUS`, `SCHEMA CHECK`, `ANCHOR`, `CONNECTION CHECK` or
    /// `TICK HISTORY`.
    pub const fn label(self) -> &'static str {
        match self {
            Statement::Acquire => "ACQUIRE",
            Statement::Renew => "RENEW",
            Statement::Release => "RELEASE",
            Statement::Leave => "LEAVE",
            Statement::Pause => "PAUSE",
            Statement::Unpause => "UNPAUSE",
            Statement::ClearCooldown => "CLEAR COOLDOWN",
            Statement::StatusView => "STATUS VIEW",
            Statement::StatusRead => "STATUS",
            Statement::SchemaCheck => "SCHEMA CHECK",
            Statement::Anchor => "ANCHOR",
            Statement::ConnectionCheck => "CONNECTION CHECK",
            Statement::HistoryRead => "TICK HISTORY",
        }
    }

    /// `sql` with this statement's name comment in front.
    pub fn tag(self, sql: &str) -> String {
        format!("{PREFIX}{} */ {sql}", self.name())
    }

    /// The statement whose name comment `sql` starts with (after any whitespace), as a server log
    /// or `pg_stat_activity.query` shows it.
    ///
    /// ```
    /// use leader_core::Statement;
    ///
    /// let logged = "/* leader:renew */ WITH lock_bound AS (...) ...";
    /// assert_eq!(Statement::of_sql(logged), Some(Statement::Renew));
    /// assert_eq!(Statement::of_sql("SELECT 1"), None);
    /// ```
    pub fn of_sql(sql: &str) -> Option<Statement> {
        let rest = sql.trim_start().strip_prefix(PREFIX)?;
        let name = &rest[..rest.find(" */")?];
        Statement::ALL.into_iter().find(|s| s.name() == name)
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::Statement;

    #[test]
    fn each_tagged_statement_is_recognised_by_its_name_only() {
        for statement in Statement::ALL {
            let sql = statement.tag("SELECT 1");
            assert_eq!(Statement::of_sql(&sql), Some(statement), "{sql}");
            assert_eq!(Statement::of_sql(&format!("\n  {sql}")), Some(statement));
        }
        assert_eq!(Statement::of_sql("/* leader:nope */ SELECT 1"), None);
        assert_eq!(Statement::of_sql("SELECT 1 /* leader:renew */"), None);
    }
}
