//! RELEASE: a holder ends its tick, recording how it ended.

use std::time::Duration;

use sqlx::PgExecutor;

use crate::guard::{Guard, Guarded};
use crate::inline::{Value, render};
use crate::send::{check_interval, lock_timeout, ms, send};
use crate::{Fence, ReleaseOutcome, Shard, Statement, StatementError, Timings};

/// The result of RELEASE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Released {
    /// False when the token no longer held the role, so nothing changed.
    pub changed: bool,
}

// Its guards are listed in RELEASE_GUARDS below, which the model (leader-model) evaluates by name.
//
// With `:notify` true, the same statement also sends NOTIFY on RELEASED_CHANNEL with the role's name
// (delivered at commit, so only for a release that happened): the scalar sub-select runs once,
// and only if the UPDATE returned its row. NOTIFY leaves nothing on the connection, so this stays
// pooler-safe; it is the listeners that need a session (see the runtime's `wake`).
const RELEASE: &str = "
WITH lock_bound AS (SELECT set_config('lock_timeout', :lock_ms::text, true) AS applied),
released AS (
UPDATE leader_leases
   SET holder_id = NULL,
       acquired_at = NULL,
       expires_at = NULL,
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
           WHEN 'panicked' THEN now() + :interval_ms * interval '1 millisecond'
           ELSE now() + least(:interval_ms * interval '1 millisecond', interval '60 seconds')
       END
 WHERE role = :role
   AND shard_index = :shard_index
   AND holder_token = :token
   AND holder_id IS NOT NULL
   AND (SELECT applied FROM lock_bound) IS NOT NULL
RETURNING now() AS db_now
)
SELECT db_now,
       (SELECT count(*) FROM (SELECT pg_notify(:channel, :role) WHERE :notify) AS sent)
           AS notified
  FROM released
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
    where_after: "UPDATE leader_leases",
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
        "role = :role",
        "shard_index = :shard_index",
        "(SELECT applied FROM lock_bound) IS NOT NULL",
    ],
};

/// RELEASE: ends the tick held by `fence`, recording `outcome` (see [`ReleaseOutcome`] for what
/// each outcome writes). `interval` is the role's tick interval, which sets the cooldown (for a
/// calendar role, the time from the instant the tick serves to the next one). A completed tick
/// of a calendar role also records its instant as the last completed one.
///
/// A no-op ([`Released::changed`] false) when the token no longer holds the role.
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
    send_release(db, fence, outcome, interval, timings, false).await
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
    send_release(db, fence, outcome, interval, timings, true).await
}

async fn send_release<'e>(
    db: impl PgExecutor<'e>,
    fence: Fence,
    outcome: ReleaseOutcome,
    interval: Duration,
    timings: &Timings,
    notify: bool,
) -> Result<Released, StatementError> {
    check_interval(Statement::Release, fence.role(), interval)?;
    let sql = render(
        RELEASE,
        &[
            ("role", Value::Role(fence.role())),
            (
                "shard_index",
                Value::Int(i64::from(fence.shard().map_or(0, Shard::index))),
            ),
            ("token", Value::Int(fence.token())),
            ("outcome", Value::Text(outcome.as_str())),
            ("interval_ms", Value::Int(ms(interval))),
            ("lock_ms", Value::Int(lock_timeout(timings))),
            ("notify", Value::Sql(if notify { "true" } else { "false" })),
            ("channel", Value::Text(RELEASED_CHANNEL)),
        ],
    );
    let rows = send(db, Statement::Release, timings.statement_timeout(), sql).await?;
    Ok(Released {
        changed: !rows.is_empty(),
    })
}
