//! The operator's statements: PAUSE, UNPAUSE and CLEAR COOLDOWN, each a call of the framework's
//! SQL function of the same name (`leader_pause`, `leader_unpause`, `leader_clear_cooldown`),
//! which psql users call directly.
//!
//! | statement | what it does | guarded by, in its own `WHERE` |
//! |---|---|---|
//! | PAUSE (`leader_pause(role, who, why)`) | clears the holder, refuses ACQUIRE until unpaused, and raises `not_before` to the held lease's expiry | the role exists (else an error naming it) |
//! | UNPAUSE (`leader_unpause(role)`) | lifts the pause; `not_before` stays | the role exists (else an error naming it) |
//! | CLEAR COOLDOWN (`leader_clear_cooldown(role)`) | clears `not_before`, e.g. after a fix ships | the role exists (else an error naming it) |

use chrono::{DateTime, Utc};
use sqlx::{PgExecutor, Row};

use crate::inline::{Value, render};
use crate::send::{send, single};
use crate::{Statement, StatementError, Timings};

/// `leader_pause`'s (and the others') unknown-role error, as [`StatementError::UnknownRole`].
fn unknown_role(role: &str) -> impl FnOnce(StatementError) -> StatementError + '_ {
    move |err| match &err {
        StatementError::Database { statement, source } => match source.as_ref() {
            sqlx::Error::Database(db)
                if db.code().as_deref() == Some("22023")
                    && db.message().contains("unknown role") =>
            {
                StatementError::UnknownRole {
                    statement: *statement,
                    role: role.to_owned(),
                }
            }
            _ => err,
        },
        _ => err,
    }
}

/// Checks an operator's role name.
fn valid(statement: Statement, role: &str) -> Result<(), StatementError> {
    crate::role::validate(role).map_err(|source| StatementError::RoleName { statement, source })
}

/// PAUSE: pauses `role` cluster-wide through `leader_pause`: the holder is cleared (its fence is
/// false from this commit on and its next RENEW reports [`LossReason::Paused`](crate::lease::LossReason::Paused)) and ACQUIRE
/// refuses until [`unpause`], and after it until the lease the pause took away would have
/// expired (`not_before` is raised to that expiry): until its next RENEW the paused holder may
/// still work without a claim, and its heartbeat cancels its tick by then. `who` is required and
/// recorded with `why`.
///
/// # Errors
///
/// [`StatementError::RoleName`] for a malformed name, [`StatementError::UnknownRole`] for a role
/// the table does not have, [`StatementError::Timeout`] or [`StatementError::Database`] otherwise.
pub async fn pause<'e>(
    db: impl PgExecutor<'e>,
    role: &str,
    who: &str,
    why: Option<&str>,
    timings: &Timings,
) -> Result<(), StatementError> {
    valid(Statement::Pause, role)?;
    let sql = render(
        "SELECT leader_pause(:role, :who, :why)",
        &[
            ("role", Value::Text(role)),
            ("who", Value::Text(who)),
            ("why", Value::OptText(why)),
        ],
    );
    send(db, Statement::Pause, timings.statement_timeout(), sql)
        .await
        .map_err(unknown_role(role))?;
    Ok(())
}

/// UNPAUSE: lifts a pause through `leader_unpause`. The role is due at the next ACQUIRE, subject
/// to its interval and any cooldown (`not_before`, a pause's floor included, is left alone).
///
/// # Errors
///
/// As [`pause`].
pub async fn unpause<'e>(
    db: impl PgExecutor<'e>,
    role: &str,
    timings: &Timings,
) -> Result<(), StatementError> {
    call_on_role(
        db,
        role,
        timings,
        Statement::Unpause,
        "SELECT leader_unpause(:role)",
    )
    .await
}

/// Sends `call`, a framework function's call on `:role` alone, as `statement`; an unknown role
/// comes back as [`StatementError::UnknownRole`].
async fn call_on_role<'e>(
    db: impl PgExecutor<'e>,
    role: &str,
    timings: &Timings,
    statement: Statement,
    call: &'static str,
) -> Result<(), StatementError> {
    valid(statement, role)?;
    let sql = render(call, &[("role", Value::Text(role))]);
    send(db, statement, timings.statement_timeout(), sql)
        .await
        .map_err(unknown_role(role))?;
    Ok(())
}

/// What [`pause_if_unpaused`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PauseOutcome {
    /// The role was unpaused and is paused now.
    Paused,
    /// The role was already paused; nothing changed (the first pause's author and reason stand).
    AlreadyPaused {
        /// Who paused it.
        by: String,
        /// Why, if they said.
        reason: Option<String>,
        /// When (database clock).
        since: DateTime<Utc>,
    },
}

// The row is locked first, so a concurrent pause cannot slip in between the look and the call;
// `CASE` evaluates `leader_pause` (VOLATILE, so never folded at planning) only when unpaused. A
// role without a row reaches `leader_pause` too, which raises its unknown-role error.
//
// A sharded role has a row per shard: it is already paused only if every shard is, and then the
// earliest pause's author and reason stand; otherwise `leader_pause` pauses every shard. The
// aggregate has one row whatever `current` holds.
const PAUSE_IF_UNPAUSED: &str = "
WITH current AS (
    SELECT paused_at, paused_by, pause_reason FROM leader_leases WHERE role = :role FOR UPDATE
),
whole AS (
    SELECT bool_and(paused_at IS NOT NULL) AS all_paused,
           min(paused_at) AS paused_at,
           (array_agg(paused_by ORDER BY paused_at))[1] AS paused_by,
           (array_agg(pause_reason ORDER BY paused_at))[1] AS pause_reason
      FROM current
)
SELECT CASE WHEN w.all_paused THEN w.paused_at END AS paused_at, w.paused_by, w.pause_reason,
       CASE WHEN w.all_paused IS NOT TRUE THEN leader_pause(:role, :who, :why) END AS paused
  FROM whole w
";

/// PAUSE, refusing a role that is already paused: like [`pause`], except that a paused role is
/// left as it is (who paused it, why and since when are kept) and reported as
/// [`PauseOutcome::AlreadyPaused`]. One statement: the row is locked before it is looked at.
///
/// # Errors
///
/// As [`pause`].
pub async fn pause_if_unpaused<'e>(
    db: impl PgExecutor<'e>,
    role: &str,
    who: &str,
    why: Option<&str>,
    timings: &Timings,
) -> Result<PauseOutcome, StatementError> {
    valid(Statement::Pause, role)?;
    let sql = render(
        PAUSE_IF_UNPAUSED,
        &[
            ("role", Value::Text(role)),
            ("who", Value::Text(who)),
            ("why", Value::OptText(why)),
        ],
    );
    let rows = send(db, Statement::Pause, timings.statement_timeout(), sql)
        .await
        .map_err(unknown_role(role))?;
    let row = single(Statement::Pause, rows)?;
    let field = StatementError::database(Statement::Pause);
    let since: Option<DateTime<Utc>> = row.try_get("paused_at").map_err(&field)?;
    let Some(since) = since else {
        return Ok(PauseOutcome::Paused);
    };
    Ok(PauseOutcome::AlreadyPaused {
        by: row.try_get("paused_by").map_err(&field)?,
        reason: row.try_get("pause_reason").map_err(&field)?,
        since,
    })
}

/// CLEAR COOLDOWN: clears the cooldown (`not_before`) a tick that did not complete set on `role`,
/// or a pause's floor, through `leader_clear_cooldown`, so its next ACQUIRE is not refused for
/// it: for after a fix has shipped, or after an unpause when the paused holder is known to be
/// gone. A pause, a held lease and the interval since the last completed tick still apply.
///
/// # Errors
///
/// As [`pause`].
pub async fn clear_cooldown<'e>(
    db: impl PgExecutor<'e>,
    role: &str,
    timings: &Timings,
) -> Result<(), StatementError> {
    call_on_role(
        db,
        role,
        timings,
        Statement::ClearCooldown,
        "SELECT leader_clear_cooldown(:role)",
    )
    .await
}

/// Maps the shard functions' "has no shard" error (raised for an unknown role too) to
/// [`StatementError::UnknownShard`].
fn unknown_shard(
    role: &str,
    shard_index: u32,
) -> impl FnOnce(StatementError) -> StatementError + '_ {
    move |err| match &err {
        StatementError::Database { statement, source } => match source.as_ref() {
            sqlx::Error::Database(db)
                if db.code().as_deref() == Some("22023")
                    && db.message().contains("has no shard") =>
            {
                StatementError::UnknownShard {
                    statement: *statement,
                    role: role.to_owned(),
                    shard_index,
                }
            }
            _ => err,
        },
        _ => err,
    }
}

/// PAUSE of one shard (`leader_pause_shard(role, shard_index, who, why)`): as [`pause`], for
/// the lease row of shard `shard_index` alone; the role's other shards run on.
///
/// # Errors
///
/// [`StatementError::UnknownShard`] for a role or shard that does not exist,
/// [`StatementError::RoleName`] for a malformed name, [`StatementError::Timeout`] or
/// [`StatementError::Database`].
pub async fn pause_shard<'e>(
    db: impl PgExecutor<'e>,
    role: &str,
    shard_index: u32,
    who: &str,
    why: Option<&str>,
    timings: &Timings,
) -> Result<(), StatementError> {
    valid(Statement::Pause, role)?;
    let sql = render(
        "SELECT leader_pause_shard(:role, CAST(:shard AS integer), :who, :why)",
        &[
            ("role", Value::Text(role)),
            ("shard", Value::Int(i64::from(shard_index))),
            ("who", Value::Text(who)),
            ("why", Value::OptText(why)),
        ],
    );
    send(db, Statement::Pause, timings.statement_timeout(), sql)
        .await
        .map_err(unknown_shard(role, shard_index))?;
    Ok(())
}

/// UNPAUSE of one shard (`leader_unpause_shard(role, shard_index)`); the floor its pause set
/// stays, as for [`unpause`].
///
/// # Errors
///
/// As [`pause_shard`].
pub async fn unpause_shard<'e>(
    db: impl PgExecutor<'e>,
    role: &str,
    shard_index: u32,
    timings: &Timings,
) -> Result<(), StatementError> {
    valid(Statement::Unpause, role)?;
    let sql = render(
        "SELECT leader_unpause_shard(:role, CAST(:shard AS integer))",
        &[
            ("role", Value::Text(role)),
            ("shard", Value::Int(i64::from(shard_index))),
        ],
    );
    send(db, Statement::Unpause, timings.statement_timeout(), sql)
        .await
        .map_err(unknown_shard(role, shard_index))?;
    Ok(())
}
