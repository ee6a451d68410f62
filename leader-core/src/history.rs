//! The tick history: the last [`read_slots`] ticks of every lease (each role, each shard), as
//! `leader_tick_history` keeps them, read into typed rows.
//!
//! No statement is added to the protocol to keep it: ACQUIRE's grant writes each tick's slot,
//! RELEASE its outcome and how its lease ended, the early end of a dead holder's lease and a
//! pause theirs, each in its own round trip (the writing half is in the lease statements;
//! docs/architecture.md, "The tick history", has the table). Each lease's ring holds exactly its
//! last ticks: tick number `n` goes to slot `n % slots`, and a lease's grants are serialized by
//! its row lock.
//!
//! A tick's [`TickRecord::ended_by`] says how its lease ended, which tells a takeover from an
//! expiry:
//!
//! ```
//! use leader_core::history::EndedBy;
//! assert_eq!(EndedBy::Takeover.as_str(), "takeover");
//! assert_eq!(EndedBy::parse("expiry"), Some(EndedBy::Expiry));
//! ```

use std::fmt;

use chrono::{DateTime, TimeDelta, Utc};
use sqlx::postgres::PgRow;
use sqlx::{PgExecutor, Row};

use crate::inline::{Value, render};
use crate::send::{send, single};
use crate::{Role, Statement, StatementError, Timings};

/// How a tick's lease ended, as `leader_tick_history.ended_by` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EndedBy {
    /// Its holder released it (RELEASE) before it ran out.
    Release,
    /// It ran out before its holder released it: the holder crashed without an anchor, was cut
    /// off, or stopped renewing. Recorded by the next grant (or by a late RELEASE).
    Expiry,
    /// Another replica's ACQUIRE ended it early because the server no longer had the holder's
    /// anchor session: a dead holder taken over at once, not at its expiry.
    Takeover,
    /// An operator paused the role (or the shard) while the tick held it.
    Pause,
}

impl EndedBy {
    /// Every way a lease ends.
    pub const ALL: [EndedBy; 4] = [
        EndedBy::Release,
        EndedBy::Expiry,
        EndedBy::Takeover,
        EndedBy::Pause,
    ];

    /// The column's word for it: `release`, `expiry`, `takeover` or `pause`.
    pub const fn as_str(self) -> &'static str {
        match self {
            EndedBy::Release => "release",
            EndedBy::Expiry => "expiry",
            EndedBy::Takeover => "takeover",
            EndedBy::Pause => "pause",
        }
    }

    /// The way named `word`, as [`EndedBy::as_str`] writes it.
    pub fn parse(word: &str) -> Option<EndedBy> {
        EndedBy::ALL.into_iter().find(|e| e.as_str() == word)
    }
}

impl fmt::Display for EndedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One tick of a lease's history.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TickRecord {
    /// The role.
    pub role: String,
    /// The shard's index (0 for an unsharded role).
    pub shard_index: i32,
    /// The tick's number on its lease: 1 for the lease's first grant, one more for each grant.
    pub tick_number: i64,
    /// The replica granted the tick.
    pub holder_id: String,
    /// The tick's fencing token.
    pub token: i64,
    /// When it was granted (ACQUIRE's database clock).
    pub acquired_at: DateTime<Utc>,
    /// The scheduled instant it serves, for a calendar role.
    pub tick_instant: Option<DateTime<Utc>>,
    /// Whether the grant named the holder's anchor session.
    pub anchored: bool,
    /// When its lease ended; `None` while nothing has ended it (it runs, or ran out and no
    /// statement has said so yet).
    pub ended_at: Option<DateTime<Utc>>,
    /// How its lease ended; `None` exactly when `ended_at` is.
    pub ended_by: Option<EndedBy>,
    /// How the tick ended, as its holder's RELEASE said ([`ReleaseOutcome::as_str`]: `completed`,
    /// `failed`, ...); `None` when no RELEASE of it arrived while the lease still had its token.
    ///
    /// [`ReleaseOutcome::as_str`]: crate::ReleaseOutcome::as_str
    pub outcome: Option<String>,
}

impl TickRecord {
    /// A tick no read returned: tick `tick_number` of `role`'s shard `shard_index`, granted to
    /// `holder_id` with `token` at `acquired_at`, unanchored, not ended; set the public fields
    /// for the rest. For tests of what renders ticks. Only with the `test-support` feature.
    #[cfg(feature = "test-support")]
    pub fn forge(
        role: impl Into<String>,
        shard_index: i32,
        tick_number: i64,
        holder_id: impl Into<String>,
        token: i64,
        acquired_at: DateTime<Utc>,
    ) -> TickRecord {
        TickRecord {
            role: role.into(),
            shard_index,
            tick_number,
            holder_id: holder_id.into(),
            token,
            acquired_at,
            tick_instant: None,
            anchored: false,
            ended_at: None,
            ended_by: None,
            outcome: None,
        }
    }

    /// How long the lease was held: from its grant to its end; `None` while it has not ended.
    pub fn duration(&self) -> Option<TimeDelta> {
        self.ended_at.map(|end| end - self.acquired_at)
    }
}

/// What [`read`] returns: the ticks, newest first, and the database clock when they were read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct History {
    /// The ticks, newest first (by grant, then by shard).
    pub ticks: Vec<TickRecord>,
    /// The database clock when the read ran.
    pub db_now: DateTime<Utc>,
}

// One row with only the clock when there is no tick: the outer join keeps it.
const READ: &str = "
SELECT now() AS db_now, h.role, h.shard_index, h.tick_number, h.holder_id, h.token,
       h.acquired_at, h.tick_instant, h.anchored, h.ended_at, h.ended_by, h.outcome
  FROM (SELECT 1) AS clock
  LEFT JOIN leader_tick_history h ON :which
 ORDER BY h.acquired_at DESC, h.tick_number DESC, h.shard_index
";

/// Reads the tick history of `role` (every shard), or of every role with `None`, newest first,
/// in one statement. A lease granted before the history's migration has no ticks from then.
///
/// # Errors
///
/// [`StatementError::Timeout`] after the statement timeout, [`StatementError::Database`]
/// otherwise (a missing table included: [`crate::check_schema_ready`] says which migration).
pub async fn read<'e>(
    db: impl PgExecutor<'e>,
    role: Option<Role>,
    timings: &Timings,
) -> Result<History, StatementError> {
    let which = match role {
        Some(role) => render("h.role = :role", &[("role", Value::Role(role))]),
        None => "true".to_owned(),
    };
    let sql = render(READ, &[("which", Value::Sql(&which))]);
    let rows = send(db, Statement::HistoryRead, timings.statement_timeout(), sql).await?;
    let field = StatementError::database(Statement::HistoryRead);
    let db_now = rows
        .first()
        .ok_or_else(|| field(sqlx::Error::RowNotFound))?
        .try_get("db_now")
        .map_err(&field)?;
    let mut ticks = Vec::with_capacity(rows.len());
    for row in &rows {
        if row
            .try_get::<Option<String>, _>("role")
            .map_err(&field)?
            .is_some()
        {
            ticks.push(tick_from(row)?);
        }
    }
    Ok(History { ticks, db_now })
}

/// A lease's latest tick, and its latest tick whose lease ended, from [`read_latest`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LatestTicks {
    /// The lease's latest tick: running, or the last one.
    pub latest: TickRecord,
    /// Its latest tick whose lease ended (the same as `latest` once that one has ended); `None`
    /// while none in the ring has.
    pub last_ended: Option<TickRecord>,
}

// The latest tick of each lease, and the latest ended one, in one statement.
const READ_LATEST: &str = "
SELECT false AS ended_only, *
  FROM (SELECT DISTINCT ON (role, shard_index) *
          FROM leader_tick_history ORDER BY role, shard_index, tick_number DESC) AS latest
UNION ALL
SELECT true AS ended_only, *
  FROM (SELECT DISTINCT ON (role, shard_index) *
          FROM leader_tick_history WHERE ended_at IS NOT NULL
         ORDER BY role, shard_index, tick_number DESC) AS ended
";

/// Each lease's latest tick, and its latest tick whose lease ended, in one statement: what an
/// overview of every lease shows.
///
/// # Errors
///
/// As [`read`].
pub async fn read_latest<'e>(
    db: impl PgExecutor<'e>,
    timings: &Timings,
) -> Result<Vec<LatestTicks>, StatementError> {
    let rows = send(
        db,
        Statement::HistoryRead,
        timings.statement_timeout(),
        READ_LATEST.to_owned(),
    )
    .await?;
    let field = StatementError::database(Statement::HistoryRead);
    let mut latest: Vec<LatestTicks> = Vec::new();
    let mut ended: Vec<TickRecord> = Vec::new();
    for row in &rows {
        let tick = tick_from(row)?;
        if row.try_get::<bool, _>("ended_only").map_err(&field)? {
            ended.push(tick);
        } else {
            latest.push(LatestTicks {
                latest: tick,
                last_ended: None,
            });
        }
    }
    for tick in ended {
        if let Some(lease) = latest
            .iter_mut()
            .find(|l| l.latest.role == tick.role && l.latest.shard_index == tick.shard_index)
        {
            lease.last_ended = Some(tick);
        }
    }
    Ok(latest)
}

/// How many ticks each lease keeps (`leader_tick_history_slots()`, set by the migration).
///
/// # Errors
///
/// As [`read`].
pub async fn read_slots<'e>(
    db: impl PgExecutor<'e>,
    timings: &Timings,
) -> Result<i64, StatementError> {
    let rows = send(
        db,
        Statement::HistoryRead,
        timings.statement_timeout(),
        "SELECT leader_tick_history_slots()::bigint AS slots".to_owned(),
    )
    .await?;
    single(Statement::HistoryRead, rows)?
        .try_get("slots")
        .map_err(StatementError::database(Statement::HistoryRead))
}

fn tick_from(row: &PgRow) -> Result<TickRecord, StatementError> {
    let field = StatementError::database(Statement::HistoryRead);
    let ended_by: Option<String> = row.try_get("ended_by").map_err(&field)?;
    let ended_by = match ended_by {
        None => None,
        Some(word) => Some(EndedBy::parse(&word).ok_or_else(|| {
            field(sqlx::Error::Decode(
                format!(
                    "leader_tick_history.ended_by is `{word}`, which this version does not know"
                )
                .into(),
            ))
        })?),
    };
    Ok(TickRecord {
        role: row.try_get("role").map_err(&field)?,
        shard_index: row.try_get("shard_index").map_err(&field)?,
        tick_number: row.try_get("tick_number").map_err(&field)?,
        holder_id: row.try_get("holder_id").map_err(&field)?,
        token: row.try_get("token").map_err(&field)?,
        acquired_at: row.try_get("acquired_at").map_err(&field)?,
        tick_instant: row.try_get("tick_instant").map_err(&field)?,
        anchored: row.try_get("anchored").map_err(&field)?,
        ended_at: row.try_get("ended_at").map_err(&field)?,
        ended_by,
        outcome: row.try_get("outcome").map_err(&field)?,
    })
}
