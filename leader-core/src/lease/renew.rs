//! RENEW: a holder extends its leases, any number in one statement.
//!
//! RENEW waits for each row's lock, but locks its rows in (role, shard) order, as every statement
//! locking more than one row here does, so no two waits form a cycle.

use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::{PgExecutor, Row};

use crate::guard::{Guard, Guarded};
use crate::inline::{Value, render};
use crate::send::{RowsByLease, lock_timeout, ms, send, values_list};
use crate::{Fence, Shard, Statement, StatementError, Timings};

// `:token` in the guard is rendered as the column `held_token`, so the guards read exactly as in
// RENEW. The rows are locked in (role, shard) order before the UPDATE (see the module docs).
const RENEW: &str = "
WITH lock_bound AS (SELECT set_config('lock_timeout', :lock_ms::text, true) AS applied),
held (held_role, held_shard_index, held_token) AS (VALUES :held),
locked AS MATERIALIZED (
    SELECT role, shard_index
      FROM leader_leases JOIN held ON role = held_role AND shard_index = held_shard_index
     WHERE holder_token = held_token
       AND (SELECT applied FROM lock_bound) IS NOT NULL
     ORDER BY role, shard_index
       FOR UPDATE OF leader_leases
),
renewed AS (
    UPDATE leader_leases
       SET expires_at = now() + :ttl_ms * interval '1 millisecond'
      FROM held
     WHERE role = held_role
       AND shard_index = held_shard_index
       AND (role, shard_index) IN (SELECT role, shard_index FROM locked)
       AND holder_token = :token
       AND (SELECT applied FROM lock_bound) IS NOT NULL
       -- A released or paused row has no expiry, so this also refuses those.
       AND expires_at > now()
    RETURNING role AS renewed_role, shard_index AS renewed_shard_index, expires_at
)
SELECT h.held_role                AS held_role,
       h.held_shard_index         AS held_shard_index,
       r.expires_at               AS renewed_until,
       now()                      AS db_now,
       l.paused_at IS NOT NULL    AS paused,
       l.holder_token             AS current_token,
       l.holder_id IS NOT NULL    AS held
  FROM held h
  LEFT JOIN renewed r
    ON r.renewed_role = h.held_role AND r.renewed_shard_index = h.held_shard_index
  LEFT JOIN leader_leases l ON l.role = h.held_role AND l.shard_index = h.held_shard_index
";

/// RENEW's guards, for the protocol model (see
/// [`ACQUIRE_GUARDS`](crate::lease::ACQUIRE_GUARDS)).
#[doc(hidden)]
pub const RENEW_GUARDS: Guarded = Guarded {
    statement: "RENEW",
    sql: RENEW,
    where_after: "renewed AS (",
    guards: &[
        Guard {
            name: "holds_token",
            sql: "holder_token = :token",
        },
        Guard {
            name: "unexpired",
            sql: "expires_at > now()",
        },
    ],
    plumbing: &[
        "role = held_role",
        "shard_index = held_shard_index",
        "(role, shard_index) IN (SELECT role, shard_index FROM locked)",
        "(SELECT applied FROM lock_bound) IS NOT NULL",
    ],
};

/// The result of RENEW.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a lost lease must cancel the tick"]
pub enum Renewed {
    /// The lease was extended.
    Extended {
        /// The new expiry (database clock).
        expires_at: DateTime<Utc>,
        /// The database clock when the statement ran.
        db_now: DateTime<Utc>,
    },
    /// The token no longer holds the role. Definitive: the tick must stop.
    Lost(LossReason),
}

/// Why a RENEW (or a RELEASE) found the lease no longer held by its token.
///
/// The set is closed: a lease row that its token no longer holds is paused, held under another
/// token, released, or past its expiry; there is no fifth state to add.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LossReason {
    /// Another holder was granted the role.
    TakenOver,
    /// An operator paused the role.
    Paused,
    /// The lease was released (by this holder, or by hand).
    Released,
    /// The lease ran out before this RENEW arrived.
    Expired,
}

impl LossReason {
    /// The name used in logs and metric labels.
    pub const fn as_str(self) -> &'static str {
        match self {
            LossReason::TakenOver => "taken_over",
            LossReason::Paused => "paused",
            LossReason::Released => "released",
            LossReason::Expired => "expired",
        }
    }
}

/// RENEW: extends each lease held by `fences` to `now() + ttl`, in one statement; one
/// [`Renewed`] per fence, in order. A role may appear once only.
///
/// Only the holder can renew, and only while its lease is live and unpaused: once a lease has
/// run out it stays lost even if nobody took it, so [`Renewed::Lost`] is always definitive.
///
/// # Errors
///
/// [`StatementError::Timeout`] or [`StatementError::Database`]: the outcome is unknown for every
/// fence, which the caller treats as a missed beat, not a loss.
pub async fn renew<'e>(
    db: impl PgExecutor<'e>,
    fences: &[Fence],
    timings: &Timings,
) -> Result<Vec<Renewed>, StatementError> {
    if fences.is_empty() {
        return Ok(Vec::new());
    }
    let held = values_list(fences.iter().map(|fence| {
        render(
            "(:role, :shard_index, :token)",
            &[
                ("role", Value::Role(fence.role())),
                (
                    "shard_index",
                    Value::Int(i64::from(fence.shard().map_or(0, Shard::index))),
                ),
                ("token", Value::Int(fence.token())),
            ],
        )
    }));
    let sql = render(
        RENEW,
        &[
            ("held", Value::Sql(&held)),
            ("token", Value::Sql("held_token")),
            ("ttl_ms", Value::Int(ms(timings.ttl()))),
            ("lock_ms", Value::Int(lock_timeout(timings))),
        ],
    );
    let rows = send(db, Statement::Renew, timings.statement_timeout(), sql).await?;
    let by_lease = RowsByLease::new(&rows, ("held_role", "held_shard_index"), Statement::Renew);
    fences
        .iter()
        .map(|&fence| {
            let row = by_lease.get(fence.role(), fence.shard())?;
            renewed_from(row, fence)
        })
        .collect()
}

/// [`renew`] for one lease: a one-element call of the same statement.
///
/// # Errors
///
/// As [`renew`].
pub async fn renew_one<'e>(
    db: impl PgExecutor<'e>,
    fence: Fence,
    timings: &Timings,
) -> Result<Renewed, StatementError> {
    let mut answers = renew(db, &[fence], timings).await?;
    Ok(answers.remove(0))
}

/// RENEW's answer for `fence` from a row with RENEW's columns.
fn renewed_from(row: &PgRow, fence: Fence) -> Result<Renewed, StatementError> {
    let field = StatementError::database(Statement::Renew);
    let db_now: DateTime<Utc> = row.try_get("db_now").map_err(&field)?;
    if let Some(expires_at) = row.try_get("renewed_until").map_err(&field)? {
        return Ok(Renewed::Extended { expires_at, db_now });
    }
    Ok(Renewed::Lost(loss_reason(row, fence, Statement::Renew)?))
}

/// Why `fence` no longer holds its lease, from a row's `paused`, `current_token` and `held`
/// columns (the lease row as `statement` found it).
pub(super) fn loss_reason(
    row: &PgRow,
    fence: Fence,
    statement: Statement,
) -> Result<LossReason, StatementError> {
    let field = StatementError::database(statement);
    let paused: Option<bool> = row.try_get("paused").map_err(&field)?;
    let current: Option<i64> = row.try_get("current_token").map_err(&field)?;
    let held: Option<bool> = row.try_get("held").map_err(&field)?;
    Ok(if paused == Some(true) {
        LossReason::Paused
    } else if current != Some(fence.token()) {
        LossReason::TakenOver
    } else if held != Some(true) {
        LossReason::Released
    } else {
        LossReason::Expired
    })
}
