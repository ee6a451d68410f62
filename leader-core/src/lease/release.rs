//! RELEASE: a holder ends its tick, recording how it ended.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgExecutor, Row};

use super::renew::{LossReason, loss_reason};
use crate::guard::{Guard, Guarded};
use crate::inline::{Value, render};
use crate::send::{RowsByLease, check_interval, lock_timeout, ms, send, values_list};
use crate::{Fence, ReleaseOutcome, Shard, Statement, StatementError, Timings};

/// The result of RELEASE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Released {
    /// False when the token no longer held the role, so nothing changed.
    pub changed: bool,
    /// When nothing changed, why the token no longer held the role, read from the row in the
    /// same statement as RENEW reads it: [`LossReason::Paused`] when an operator paused the role
    /// while the tick ran (a pause ends the lease at once, so a tick that ends before its next
    /// RENEW learns of the pause here). `None` when the lease was released.
    pub lost: Option<LossReason>,
}

impl Released {
    /// A RELEASE answer no statement gave, for fakes of the statement layer. Only with the
    /// `test-support` feature.
    #[cfg(feature = "test-support")]
    pub fn forge(lost: Option<LossReason>) -> Released {
        Released {
            changed: lost.is_none(),
            lost,
        }
    }
}

// Its guards are listed in RELEASE_GUARDS below, which the model (leader-model) evaluates by name.
// `:token`, `:outcome` and `:interval_ms` are rendered as the columns `ending_token`,
// `ending_outcome` and `ending_interval_ms`, so the guards read as RELEASE_GUARDS lists them. The
// rows are locked in (role, shard) order before the UPDATE, as RENEW locks them, so two releases
// of several rows never wait on each other in a cycle.
//
// With `:notify` true, the same statement also sends NOTIFY on RELEASED_CHANNEL with the role's
// name for each row it released (delivered at commit, so only for a release that happened).
// NOTIFY leaves nothing on the connection, so this stays pooler-safe; it is the listeners that
// need a session (see the runtime's `wake`).
//
// `:tick_history` is the tick history's CTE (`history::RELEASE_HISTORY`), which records the
// outcome and how the lease ended from `locked`, `ending` and `released`.
const RELEASE: &str = "
WITH lock_bound AS (SELECT set_config('lock_timeout', :lock_ms::text, true) AS applied),
ending (ending_role, ending_shard_index, ending_token, ending_outcome, ending_interval_ms)
    AS (VALUES :ending),
locked AS MATERIALIZED (
    SELECT role, shard_index, expires_at AS locked_expires_at, ticks_granted AS locked_tick
      FROM leader_leases JOIN ending ON role = ending_role AND shard_index = ending_shard_index
     WHERE holder_token = ending_token
       AND (SELECT applied FROM lock_bound) IS NOT NULL
     ORDER BY role, shard_index
       FOR UPDATE OF leader_leases
),
released AS (
UPDATE leader_leases
   SET holder_id = NULL,
       acquired_at = NULL,
       expires_at = NULL,
       holder_anchor_pid = NULL,
       holder_anchor_start = NULL,
       last_tick_ended_at = CASE WHEN :outcome = 'completed' THEN now() ELSE last_tick_ended_at END,
       last_tick_holder = CASE WHEN :outcome = 'completed' THEN holder_id ELSE last_tick_holder END,
       -- A scheduled instant is done only when its tick completed; otherwise it stays due.
       last_completed_instant = CASE WHEN :outcome = 'completed'
           THEN greatest(last_completed_instant, tick_instant) ELSE last_completed_instant END,
       not_before = CASE :outcome
           WHEN 'completed' THEN not_before
           -- A shutdown (a deploy, a scale-down) says nothing about the job or the database, so
           -- it sets no cooldown: the cooldown is there so that a slow database cannot turn an
           -- hourly tick into a partial tick every few seconds, and without this a rolling
           -- deploy would wait up to 60 s where a crash waits one TTL.
           WHEN 'shutdown' THEN not_before
           -- An ended anchor (a server restart, a blip) says nothing about them either.
           WHEN 'anchor_lost' THEN not_before
           WHEN 'panicked' THEN now() + :interval_ms * interval '1 millisecond'
           ELSE now() + least(:interval_ms * interval '1 millisecond', interval '60 seconds')
       END
  FROM ending
 WHERE role = ending_role
   AND shard_index = ending_shard_index
   AND (role, shard_index) IN (SELECT role, shard_index FROM locked)
   AND holder_token = :token
   AND holder_id IS NOT NULL
   AND (SELECT applied FROM lock_bound) IS NOT NULL
RETURNING role AS released_role, shard_index AS released_shard_index, now() AS db_now
),
:tick_history
SELECT e.ending_role         AS ending_role,
       e.ending_shard_index  AS ending_shard_index,
       r.db_now              AS db_now,
       (SELECT count(*) FROM (SELECT pg_notify(:channel, r.released_role)
                               WHERE :notify AND r.released_role IS NOT NULL) AS sent)
                             AS notified,
       -- The row as it was before this statement (a data-modifying CTE's effects are not
       -- visible here): for a lease not released, why it was no longer this token's.
       l.paused_at IS NOT NULL AS paused,
       l.holder_token          AS current_token,
       l.holder_id IS NOT NULL AS held
  FROM ending e
  LEFT JOIN released r
    ON r.released_role = e.ending_role AND r.released_shard_index = e.ending_shard_index
  LEFT JOIN leader_leases l ON l.role = e.ending_role AND l.shard_index = e.ending_shard_index
";

/// The channel RELEASE notifies when asked to wake followers ([`release_waking`]); the payload is
/// the role's name.
pub const RELEASED_CHANNEL: &str = "leader_released";

/// RELEASE's guards, for the protocol model (see
/// [`ACQUIRE_GUARDS`](crate::lease::ACQUIRE_GUARDS)).
#[doc(hidden)]
pub const RELEASE_GUARDS: Guarded = Guarded {
    statement: "RELEASE",
    sql: RELEASE,
    where_after: "released AS (",
    guards: &[
        Guard {
            name: "holds_token",
            sql: "holder_token = :token",
        },
        Guard {
            name: "held",
            sql: "holder_id IS NOT NULL",
        },
    ],
    plumbing: &[
        "role = ending_role",
        "shard_index = ending_shard_index",
        "(role, shard_index) IN (SELECT role, shard_index FROM locked)",
        "(SELECT applied FROM lock_bound) IS NOT NULL",
    ],
};

/// One tick's end, for [`release_many`]: the lease its fence holds, how the tick ended, and the
/// role's tick interval (see [`release`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseEnd {
    /// The lease to release.
    pub fence: Fence,
    /// How the tick ended.
    pub outcome: ReleaseOutcome,
    /// The role's tick interval, which sets the cooldown.
    pub interval: Duration,
}

impl LeaseEnd {
    /// The end of the tick `fence` holds, with `outcome`, for a role ticking every `interval`.
    pub fn new(fence: Fence, outcome: ReleaseOutcome, interval: Duration) -> LeaseEnd {
        LeaseEnd {
            fence,
            outcome,
            interval,
        }
    }
}

/// RELEASE: ends the tick held by `fence`, recording `outcome` (see [`ReleaseOutcome`] for what
/// each outcome writes). `interval` is the role's tick interval, which sets the cooldown (for a
/// calendar role, the time from the instant the tick serves to the next one). A completed tick
/// of a calendar role also records its instant as the last completed one.
///
/// A no-op ([`Released::changed`] false) when the token no longer holds the role. A one-element
/// call of [`release_many`].
///
/// # Errors
///
/// [`StatementError::Interval`], [`StatementError::Timeout`] or [`StatementError::Database`]. An
/// unreleased lease runs out on its own after the TTL.
pub async fn release<'e>(
    db: impl PgExecutor<'e>,
    fence: Fence,
    outcome: ReleaseOutcome,
    interval: Duration,
    timings: &Timings,
) -> Result<Released, StatementError> {
    release_one(db, LeaseEnd::new(fence, outcome, interval), timings, false).await
}

/// [`release`], and in the same statement, when it changed the row, `NOTIFY leader_released`
/// ([`RELEASED_CHANNEL`]) with the role's name, so followers listening there poll at once.
///
/// # Errors
///
/// As [`release`].
pub async fn release_waking<'e>(
    db: impl PgExecutor<'e>,
    fence: Fence,
    outcome: ReleaseOutcome,
    interval: Duration,
    timings: &Timings,
) -> Result<Released, StatementError> {
    release_one(db, LeaseEnd::new(fence, outcome, interval), timings, true).await
}

async fn release_one<'e>(
    db: impl PgExecutor<'e>,
    end: LeaseEnd,
    timings: &Timings,
    notify: bool,
) -> Result<Released, StatementError> {
    let mut answers = send_release(db, &[end], timings, notify).await?;
    Ok(answers.remove(0))
}

/// RELEASE of several leases in one statement, each as [`release`] releases it (the same guards,
/// per row); one [`Released`] per end, in order. With `notify`, as [`release_waking`] for each
/// lease released.
///
/// # Errors
///
/// As [`release`]; an error is every lease's: none of them, or all, may have been released.
/// [`StatementError::LeaseListedTwice`], before anything is sent, if two ends name the same
/// lease.
pub async fn release_many<'e>(
    db: impl PgExecutor<'e>,
    ends: &[LeaseEnd],
    timings: &Timings,
    notify: bool,
) -> Result<Vec<Released>, StatementError> {
    send_release(db, ends, timings, notify).await
}

async fn send_release<'e>(
    db: impl PgExecutor<'e>,
    ends: &[LeaseEnd],
    timings: &Timings,
    notify: bool,
) -> Result<Vec<Released>, StatementError> {
    if ends.is_empty() {
        return Ok(Vec::new());
    }
    for (i, end) in ends.iter().enumerate() {
        check_interval(Statement::Release, end.fence.role(), end.interval)?;
        let lease = |end: &LeaseEnd| (end.fence.role(), end.fence.shard());
        if ends[..i].iter().any(|earlier| lease(earlier) == lease(end)) {
            return Err(StatementError::LeaseListedTwice {
                statement: Statement::Release,
                role: end.fence.role(),
                shard: end.fence.shard(),
            });
        }
    }
    let ending = values_list(ends.iter().map(|end| {
        render(
            "(:role, :shard_index, :token, :outcome, :interval_ms)",
            &[
                ("role", Value::Role(end.fence.role())),
                (
                    "shard_index",
                    Value::Int(i64::from(end.fence.shard().map_or(0, Shard::index))),
                ),
                ("token", Value::Int(end.fence.token())),
                ("outcome", Value::Text(end.outcome.as_str())),
                ("interval_ms", Value::Int(ms(end.interval))),
            ],
        )
    }));
    let sql = render(
        RELEASE,
        &[
            ("ending", Value::Sql(&ending)),
            ("token", Value::Sql("ending_token")),
            ("outcome", Value::Sql("ending_outcome")),
            ("interval_ms", Value::Sql("ending_interval_ms")),
            ("lock_ms", Value::Int(lock_timeout(timings))),
            ("notify", Value::Sql(if notify { "true" } else { "false" })),
            ("channel", Value::Text(RELEASED_CHANNEL)),
            ("tick_history", Value::Sql(super::history::RELEASE_HISTORY)),
        ],
    );
    let rows = send(db, Statement::Release, timings.statement_timeout(), sql).await?;
    let by_lease = RowsByLease::new(
        &rows,
        ("ending_role", "ending_shard_index"),
        Statement::Release,
    );
    let field = StatementError::database(Statement::Release);
    ends.iter()
        .map(|end| {
            let row = by_lease.get(end.fence.role(), end.fence.shard())?;
            let released_at: Option<DateTime<Utc>> = row.try_get("db_now").map_err(&field)?;
            Ok(Released {
                changed: released_at.is_some(),
                lost: match released_at {
                    Some(_) => None,
                    None => Some(loss_reason(row, end.fence, Statement::Release)?),
                },
            })
        })
        .collect()
}
