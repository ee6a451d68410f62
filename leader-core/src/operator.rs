//! The operator's statements: PAUSE, UNPAUSE and CLEAR COOLDOWN, each a call of the framework's
//! SQL function of the same name (`leader_pause`, `leader_unpause`, `leader_clear_cooldown`,
//! and for one shard of a role `leader_pause_shard`, `leader_unpause_shard`), which psql users
//! call directly. PAUSE and UNPAUSE of a role act on every shard of a sharded role.
//!
//! | statement | what it does | guarded by, in its own `WHERE` |
//! |---|---|---|
//! | PAUSE (`leader_pause(role, who, why)`) | clears the holder, refuses ACQUIRE until unpaused, and raises `not_before` to the held lease's expiry | the role exists (else an error naming it) |
//! | UNPAUSE (`leader_unpause(role)`) | lifts the pause; `not_before` stays | the role exists (else an error naming it) |
//! | CLEAR COOLDOWN (`leader_clear_cooldown(role)`) | clears `not_before`, e.g. after a fix ships | the role exists (else an error naming it) |
//! | PAUSE of a shard (`leader_pause_shard(role, shard_index, who, why)`) | as PAUSE, for one shard's row | the shard exists (else an error naming it) |
//! | UNPAUSE of a shard (`leader_unpause_shard(role, shard_index)`) | as UNPAUSE, for one shard's row | the shard exists (else an error naming it) |

use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::{PgExecutor, Row};

use crate::inline::{Value, render};
use crate::send::{send, single};
use crate::{Statement, StatementError, Timings};

/// The channel `leader_pause` and `leader_pause_shard` notify when they pause a role (or one of
/// its shards); the payload is the role's name. A runtime with a direct connection listens on it
/// and renews that role's running ticks at once, so a pause cancels them within milliseconds
/// rather than at their next heartbeat.
pub const PAUSED_CHANNEL: &str = "leader_paused";

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
/// still work without a claim, and its heartbeat cancels its tick by then. The pause notifies
/// [`PAUSED_CHANNEL`] at its commit: a runtime with a direct connection renews at once, and its
/// tick is cancelled within milliseconds. `who` is required and recorded with `why`.
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
    pause_outcome(&single(Statement::Pause, rows)?)
}

/// The [`PauseOutcome`] of an answer row holding the pause the row had before the statement
/// (`paused_at`, `paused_by`, `pause_reason`), null when it was unpaused.
fn pause_outcome(row: &PgRow) -> Result<PauseOutcome, StatementError> {
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

// The statement of the shard operations: the shard's row is locked first, then `{call}` (a shard
// function, VOLATILE, so never folded at planning) is evaluated only when `{when}` holds of it.
// `found` is null when the shard has no row, and `role_known` then tells an unknown role from an
// unknown shard, so neither reaches the function. One answer row whatever `target` holds.
const SHARD_STATEMENT: &str = "
WITH target AS (
    SELECT true AS found, paused_at, paused_by, pause_reason
      FROM leader_leases
     WHERE role = :role AND shard_index = CAST(:shard AS integer)
       FOR UPDATE
)
SELECT EXISTS (SELECT 1 FROM leader_leases WHERE role = :role) AS role_known,
       t.found, t.paused_at, t.paused_by, t.pause_reason,
       CASE WHEN {when} THEN {call} END AS called
  FROM (VALUES (1)) AS one (x)
  LEFT JOIN target t ON true
";

const PAUSE_SHARD: &str = "leader_pause_shard(:role, CAST(:shard AS integer), :who, :why)";
const UNPAUSE_SHARD: &str = "leader_unpause_shard(:role, CAST(:shard AS integer))";

/// Sends [`SHARD_STATEMENT`] calling `call` when `when` holds of shard `shard_index`'s row, and
/// answers that row (as it was before the call); a role or shard without a row is
/// [`StatementError::UnknownRole`] or [`StatementError::UnknownShard`].
async fn on_shard<'e>(
    db: impl PgExecutor<'e>,
    statement: Statement,
    (role, shard_index): (&str, u32),
    (when, call): (&str, &str),
    mut values: Vec<(&str, Value<'_>)>,
    timings: &Timings,
) -> Result<PgRow, StatementError> {
    valid(statement, role)?;
    let template = SHARD_STATEMENT
        .replace("{when}", when)
        .replace("{call}", call);
    values.push(("role", Value::Text(role)));
    values.push(("shard", Value::Int(i64::from(shard_index))));
    let sql = render(&template, &values);
    let rows = send(db, statement, timings.statement_timeout(), sql).await?;
    let row = single(statement, rows)?;
    let field = StatementError::database(statement);
    let found: Option<bool> = row.try_get("found").map_err(&field)?;
    if found.is_some() {
        return Ok(row);
    }
    let role_known: bool = row.try_get("role_known").map_err(&field)?;
    let role = role.to_owned();
    Err(if role_known {
        StatementError::UnknownShard {
            statement,
            role,
            shard_index,
        }
    } else {
        StatementError::UnknownRole { statement, role }
    })
}

/// PAUSE of one shard (`leader_pause_shard(role, shard_index, who, why)`): as [`pause`], for
/// the lease row of shard `shard_index` alone; the role's other shards run on. A shard already
/// paused gets `who` and `why` as its pause's author and reason (its pause's start stays); see
/// [`pause_shard_if_unpaused`] to keep the first ones. Shard 0 of an unsharded role is its one
/// row.
///
/// # Errors
///
/// [`StatementError::UnknownRole`] for a role the table does not have,
/// [`StatementError::UnknownShard`] for a shard the role does not have,
/// [`StatementError::RoleName`] for a malformed name, [`StatementError::Timeout`] or
/// [`StatementError::Database`] otherwise.
pub async fn pause_shard<'e>(
    db: impl PgExecutor<'e>,
    role: &str,
    shard_index: u32,
    who: &str,
    why: Option<&str>,
    timings: &Timings,
) -> Result<(), StatementError> {
    on_shard(
        db,
        Statement::Pause,
        (role, shard_index),
        ("t.found", PAUSE_SHARD),
        vec![("who", Value::Text(who)), ("why", Value::OptText(why))],
        timings,
    )
    .await?;
    Ok(())
}

/// PAUSE of one shard, refusing a shard that is already paused: like [`pause_shard`], except
/// that a paused shard (by a pause of the shard or of its whole role) is left as it is and
/// reported as [`PauseOutcome::AlreadyPaused`]. One statement: the row is locked before it is
/// looked at.
///
/// # Errors
///
/// As [`pause_shard`].
pub async fn pause_shard_if_unpaused<'e>(
    db: impl PgExecutor<'e>,
    role: &str,
    shard_index: u32,
    who: &str,
    why: Option<&str>,
    timings: &Timings,
) -> Result<PauseOutcome, StatementError> {
    let row = on_shard(
        db,
        Statement::Pause,
        (role, shard_index),
        ("t.found AND t.paused_at IS NULL", PAUSE_SHARD),
        vec![("who", Value::Text(who)), ("why", Value::OptText(why))],
        timings,
    )
    .await?;
    pause_outcome(&row)
}

/// UNPAUSE of one shard (`leader_unpause_shard(role, shard_index)`); the floor its pause set
/// stays, as for [`unpause`]. Unpausing a shard of a role paused whole unpauses that shard alone.
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
    on_shard(
        db,
        Statement::Unpause,
        (role, shard_index),
        ("t.found", UNPAUSE_SHARD),
        Vec::new(),
        timings,
    )
    .await?;
    Ok(())
}
