//! The operator's view of every role: `leader_status` read in one statement into typed rows.
//! Their presentation, the table `leaderctl status` prints, is `leaderctl::table`.
//!
//! The read is one simple-protocol query with no values in it, tagged
//! [`Statement::StatusView`], so it works through a transaction-mode pooler. Every time in a row
//! is on the database clock, and the row carries that clock's reading ([`RoleStatus::db_now`]), so
//! "expires in" and "ago" never mix the server's clock with the reader's.

use std::fmt;

use chrono::{DateTime, TimeDelta, Utc};
use sqlx::{PgExecutor, Row};

use crate::send::send;
use crate::{Shard, Statement, StatementError, Timings};

/// The state of a lease (a role's, or one shard's), as `leader_status.state` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LeaseState {
    /// Held by a live lease.
    Leading,
    /// Held, but the holder's lease ran out (the holder went silent).
    Expired,
    /// Unheld, before `not_before`: the cooldown a tick that did not complete set, or the floor a
    /// pause of a held role set (until that lease would have expired).
    Cooldown,
    /// Paused by an operator.
    Paused,
    /// Unheld and free to claim when due.
    Idle,
}

impl LeaseState {
    /// The view's word for it: `leading`, `expired`, `cooldown`, `paused` or `idle`.
    pub const fn as_str(self) -> &'static str {
        match self {
            LeaseState::Leading => "leading",
            LeaseState::Expired => "expired",
            LeaseState::Cooldown => "cooldown",
            LeaseState::Paused => "paused",
            LeaseState::Idle => "idle",
        }
    }

    fn parse(word: &str) -> Option<LeaseState> {
        [
            LeaseState::Leading,
            LeaseState::Expired,
            LeaseState::Cooldown,
            LeaseState::Paused,
            LeaseState::Idle,
        ]
        .into_iter()
        .find(|s| s.as_str() == word)
    }
}

impl fmt::Display for LeaseState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row of `leader_status`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RoleStatus {
    /// The role.
    pub role: String,
    /// Its state.
    pub state: LeaseState,
    /// The holder's id while held (also while expired).
    pub holder_id: Option<String>,
    /// The latest token issued (the holder's while held).
    pub token: i64,
    /// When the current holder was granted the lease (ACQUIRE's database clock).
    pub acquired_at: Option<DateTime<Utc>>,
    /// When the current lease runs out unless renewed.
    pub expires_at: Option<DateTime<Utc>>,
    /// When the last completed tick ended.
    pub last_tick_ended_at: Option<DateTime<Utc>>,
    /// Who ran the last completed tick.
    pub last_tick_holder: Option<String>,
    /// No ACQUIRE grants the lease before it: the end of the cooldown a tick that did not
    /// complete set, or the floor a pause of a held lease set; `None` if none was set (it may
    /// have passed).
    pub not_before: Option<DateTime<Utc>>,
    /// When the role was paused.
    pub paused_at: Option<DateTime<Utc>>,
    /// Who paused it.
    pub paused_by: Option<String>,
    /// Why, if they said.
    pub pause_reason: Option<String>,
    /// The schedule the role's last grant ran under (`every 1h`, `cron "0 2 * * *" in
    /// Europe/Berlin`); `None` before its first grant.
    pub schedule: Option<String>,
    /// For a role on a cron schedule, the latest scheduled instant completed.
    pub last_completed_instant: Option<DateTime<Utc>>,
    /// When the lease is next due by its schedule and `not_before`: a cron role's next instant,
    /// an interval role's last completed tick plus its interval (both as its last grant ran
    /// them). `None` while paused, before the first grant, and for an interval role that never
    /// completed a tick and has no `not_before` (it is due whenever a replica asks). Past while
    /// unheld: overdue.
    pub next_due_at: Option<DateTime<Utc>>,
    /// Which shard of a sharded role this row is (`shard_index`, `shard_count`); `None` for an
    /// unsharded role's one row.
    pub shard: Option<Shard>,
    /// The database clock when the row was read.
    pub db_now: DateTime<Utc>,
}

impl RoleStatus {
    /// A row no read returned: `role` in `state` with `token`, read at `db_now`, every other field
    /// `None`; set the public fields for the rest. For tests of what renders rows (leaderctl's
    /// table). Only with the `test-support` feature.
    #[cfg(feature = "test-support")]
    pub fn forge(
        role: impl Into<String>,
        state: LeaseState,
        token: i64,
        db_now: DateTime<Utc>,
    ) -> RoleStatus {
        RoleStatus {
            role: role.into(),
            state,
            holder_id: None,
            token,
            acquired_at: None,
            expires_at: None,
            last_tick_ended_at: None,
            last_tick_holder: None,
            not_before: None,
            paused_at: None,
            paused_by: None,
            pause_reason: None,
            schedule: None,
            last_completed_instant: None,
            next_due_at: None,
            shard: None,
            db_now,
        }
    }

    /// Time left on the lease (negative once expired); `None` when unheld.
    pub fn expires_in(&self) -> Option<TimeDelta> {
        self.expires_at.map(|at| at - self.db_now)
    }

    /// How long ago the last completed tick ended; `None` if none has.
    pub fn last_tick_age(&self) -> Option<TimeDelta> {
        self.last_tick_ended_at.map(|at| self.db_now - at)
    }

    /// Time left until `not_before`; `None` when there is none or it has passed.
    pub fn not_before_in(&self) -> Option<TimeDelta> {
        self.not_before
            .map(|until| until - self.db_now)
            .filter(|left| *left > TimeDelta::zero())
    }
}

const READ: &str = "
SELECT role, state, holder_id, token, acquired_at, expires_at, last_tick_ended_at,
       last_tick_holder, not_before, paused_at, paused_by, pause_reason, schedule,
       last_completed_instant, next_due_at, shard_index, shard_count, now() AS db_now
  FROM leader_status
 ORDER BY role, shard_index
";

/// Reads every row of `leader_status` (one per role, one per shard of a sharded role), ordered by
/// role and shard, in one statement.
///
/// # Errors
///
/// [`StatementError::Timeout`] after the statement timeout, [`StatementError::Database`]
/// otherwise (a missing view included: run [`crate::check_schema_ready`] to say what is missing).
pub async fn read<'e>(
    db: impl PgExecutor<'e>,
    timings: &Timings,
) -> Result<Vec<RoleStatus>, StatementError> {
    let rows = send(
        db,
        Statement::StatusView,
        timings.statement_timeout(),
        READ.to_owned(),
    )
    .await?;
    let field = StatementError::database(Statement::StatusView);
    rows.iter()
        .map(|row| {
            let word: String = row.try_get("state").map_err(&field)?;
            let state = LeaseState::parse(&word).ok_or_else(|| {
                field(sqlx::Error::Decode(
                    format!("leader_status.state is `{word}`, which this version does not know")
                        .into(),
                ))
            })?;
            Ok(RoleStatus {
                role: row.try_get("role").map_err(&field)?,
                state,
                holder_id: row.try_get("holder_id").map_err(&field)?,
                token: row.try_get("token").map_err(&field)?,
                acquired_at: row.try_get("acquired_at").map_err(&field)?,
                expires_at: row.try_get("expires_at").map_err(&field)?,
                last_tick_ended_at: row.try_get("last_tick_ended_at").map_err(&field)?,
                last_tick_holder: row.try_get("last_tick_holder").map_err(&field)?,
                not_before: row.try_get("not_before").map_err(&field)?,
                paused_at: row.try_get("paused_at").map_err(&field)?,
                paused_by: row.try_get("paused_by").map_err(&field)?,
                pause_reason: row.try_get("pause_reason").map_err(&field)?,
                schedule: row.try_get("schedule").map_err(&field)?,
                last_completed_instant: row.try_get("last_completed_instant").map_err(&field)?,
                next_due_at: row.try_get("next_due_at").map_err(&field)?,
                shard: shard_of(
                    row.try_get("shard_index").map_err(&field)?,
                    row.try_get("shard_count").map_err(&field)?,
                ),
                db_now: row.try_get("db_now").map_err(&field)?,
            })
        })
        .collect()
}

/// The shard a row's `shard_index` and `shard_count` name; `None` for an unsharded role (a
/// count of 1) or a pair the table's CHECK would not allow.
fn shard_of(index: i32, count: i32) -> Option<Shard> {
    if count <= 1 {
        return None;
    }
    Shard::new(u32::try_from(index).ok()?, u32::try_from(count).ok()?).ok()
}
