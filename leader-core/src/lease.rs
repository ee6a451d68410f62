//! The lease statements: ACQUIRE, RENEW, RELEASE, and the operator's PAUSE, UNPAUSE and
//! CLEAR COOLDOWN.
//!
//! | statement | effect | guard in its WHERE |
//! |---|---|---|
//! | ACQUIRE | new token, holder, `expires_at = now() + ttl` | unpaused, unheld or expired, past `not_before`, last completed tick at least one interval ago |
//! | RENEW | `expires_at = now() + ttl` | this token holds the role, unpaused and unexpired |
//! | RELEASE | clears the holder; stamps `last_tick_*` or sets `not_before` by [`ReleaseOutcome`]; with [`release_waking`], also `NOTIFY leader_released` | this token holds the role |
//! | PAUSE | clears the holder, sets `paused_*`, raises `not_before` to the held lease's expiry | the role exists (`leader_pause`) |
//! | UNPAUSE | clears `paused_*` | the role exists (`leader_unpause`) |
//! | CLEAR COOLDOWN | clears `not_before` | the role exists (`leader_clear_cooldown`) |
//!
//! ACQUIRE and RENEW over many roles at once are in [`crate::batch`].
//!
//! Every statement is one autocommit round trip evaluated on the database clock (`now()`), and
//! leaves nothing on the connection: no session `SET`, no advisory lock, no `LISTEN`, and no
//! prepared statement at all: each is sent as one `Query` message with its values inlined (see
//! the `inline` module for why and how that is injection-proof). So they work unchanged behind a
//! transaction-mode pooler such as PgBouncer 1.18 or RDS Proxy.
//!
//! # Statement timeout
//!
//! Each statement is bounded twice. The caller stops waiting after
//! [`Timings::statement_timeout`] (a `tokio::time::timeout`, reported as [`Error::Timeout`]). The
//! server also stops waiting for the lease row's lock, after four fifths of that (so it is the
//! server that reports a lock wait, as a lock timeout): the statement sets
//! `lock_timeout` with `set_config(.., is_local => true)`, which lasts only until the statement's own
//! implicit transaction ends, before it touches the row. A session-level `statement_timeout` would
//! need a session `SET` (which a transaction pooler would leak to the next client), so a statement
//! that is slow for another reason than the row lock runs to completion on the server.
//!
//! That is harmless because every write is conditional on the token. A RENEW or RELEASE that lands
//! late either still finds its token holding the role, and then does what it would have done on
//! time (a late RENEW extends the lease of a holder that gave up by at most one TTL, which only
//! delays the next grant), or finds another token there and changes nothing. Nothing late can hand
//! a lease to a stale holder or take one from a newer holder.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::{PgExecutor, Row};

use crate::guard::{Guard, Guarded};
use crate::inline::{Value, render};

use crate::{Error, Fence, ReleaseOutcome, Role, Statement, Timings};

/// The result of ACQUIRE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquired {
    /// This caller leads the role for one tick.
    Granted(Grant),
    /// The role cannot be claimed now.
    Refused(Refusal),
}

/// A granted lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// The proof of leadership for this tick's claims.
    pub fence: Fence,
    /// The database clock when the lease was granted.
    pub db_now: DateTime<Utc>,
    /// When the lease runs out unless renewed (database clock).
    pub expires_at: DateTime<Utc>,
}

/// Why ACQUIRE refused, and when to try again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Why the role could not be claimed.
    pub reason: RefusalReason,
    /// How long until the role can next be claimed, as far as the statement could see: the holder's
    /// expiry, the cooldown, or the next due time. `None` when paused (no time is known).
    /// A hint, not a promise: a concurrent grant can make the role busy again by then.
    pub retry_after: Option<Duration>,
    /// The current holder's id, if the role is held.
    pub holder_id: Option<String>,
    /// The database clock when the statement ran.
    pub db_now: DateTime<Utc>,
}

/// Why ACQUIRE refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefusalReason {
    /// Another holder's lease is live.
    Held,
    /// An operator paused the role.
    Paused,
    /// `not_before` has not passed: the cooldown a tick that did not complete set, or the floor a
    /// pause of a held role set (the paused lease's expiry).
    CoolingDown,
    /// The last completed tick ended less than one interval ago.
    NotDue,
    /// The role looked free, but a concurrent ACQUIRE won it first.
    Contended,
}

/// The result of RENEW.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// Why a RENEW found the lease gone.
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

/// The result of RELEASE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Released {
    /// False when the token no longer held the role, so nothing changed.
    pub changed: bool,
}

pub(crate) fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The server-side bound on waiting for the lease row's lock: four fifths of the statement
/// timeout, so the server gives up (and says why) just before the caller stops waiting.
pub(crate) fn lock_timeout(timings: &Timings) -> i64 {
    (ms(timings.statement_timeout()) * 4 / 5).max(1)
}

/// Sends one rendered statement, tagged with its name ([`Statement::tag`]), and returns its rows,
/// bounded by `timeout` on the caller's side.
pub(crate) async fn send<'e>(
    db: impl PgExecutor<'e>,
    statement: Statement,
    timeout: Duration,
    sql: String,
) -> Result<Vec<PgRow>, Error> {
    let statement_label = statement.label();
    // AssertSqlSafe: every value in `sql` was rendered by `inline::render`.
    let fut = sqlx::raw_sql(sqlx::AssertSqlSafe(statement.tag(&sql))).fetch_all(db);
    match tokio::time::timeout(timeout, fut).await {
        Ok(result) => result.map_err(Error::db(statement_label)),
        Err(_) => Err(Error::Timeout {
            statement: statement_label,
            timeout,
        }),
    }
}

/// The one row a statement returns.
fn single(statement: &'static str, rows: Vec<PgRow>) -> Result<PgRow, Error> {
    rows.into_iter().next().ok_or(Error::Database {
        statement,
        source: sqlx::Error::RowNotFound,
    })
}

/// Checks an interval for use with [`acquire`] and [`release`].
///
/// # Errors
///
/// [`Error::Interval`] if it is below one millisecond.
pub fn check_interval(role: Role, interval: Duration) -> Result<(), Error> {
    if interval < Duration::from_millis(1) {
        return Err(Error::Interval { role, interval });
    }
    Ok(())
}

// The token is greatest(old + 1, database clock in ms), not old + 1. After a failover to an
// asynchronous standby that missed the last grant, old + 1 would re-issue the very token the old
// leader still holds, and its fence would be true on the new primary. The clock term (the same
// idea as seeding rows with leader_seed_token()) moves past it, since a takeover takes far longer
// than a millisecond and a role is granted at most once per interval (at least 1 ms).
//
// Its guards are listed in ACQUIRE_GUARDS below, which the model (leader-model) evaluates by name.
const ACQUIRE: &str = "
WITH lock_bound AS (SELECT set_config('lock_timeout', :lock_ms::text, true) AS applied),
granted AS (
    UPDATE leader_leases
       SET holder_token = greatest(holder_token + 1, (extract(epoch FROM now()) * 1000)::bigint),
           holder_id = :holder,
           acquired_at = now(),
           expires_at = now() + :ttl_ms * interval '1 millisecond'
     WHERE role = :role
       AND (SELECT applied FROM lock_bound) IS NOT NULL
       AND paused_at IS NULL
       AND (expires_at IS NULL OR expires_at <= now())
       AND (not_before IS NULL OR not_before <= now())
       AND (last_tick_ended_at IS NULL
            OR last_tick_ended_at + :interval_ms * interval '1 millisecond' <= now())
    RETURNING holder_token, expires_at
),
seen AS (
    SELECT l.*, l.last_tick_ended_at + :interval_ms * interval '1 millisecond' AS due_at
      FROM leader_leases l
     WHERE l.role = :role
)
SELECT g.holder_token                AS granted_token,
       g.expires_at                  AS granted_until,
       now()                         AS db_now,
       s.role IS NOT NULL            AS role_exists,
       s.paused_at IS NOT NULL       AS paused,
       coalesce(s.expires_at > now(), false) AS held,
       coalesce(s.not_before > now(), false) AS cooling,
       coalesce(s.due_at > now(), false)     AS not_due,
       s.holder_id                   AS holder_id,
       (extract(epoch FROM greatest(
            CASE WHEN s.expires_at > now() THEN s.expires_at END,
            CASE WHEN s.not_before > now() THEN s.not_before END,
            CASE WHEN s.due_at > now() THEN s.due_at END) - now()) * 1000)::bigint AS wait_ms
  FROM (VALUES (1)) AS one (x)
  LEFT JOIN granted g ON true
  LEFT JOIN seen s ON true
";

/// ACQUIRE's guards, for the protocol model. The model's ACQUIRE (`model/src/guards.rs`) grants
/// iff every guard here holds; its guard tests fail if this list, the SQL above and the model
/// disagree.
#[doc(hidden)]
pub const ACQUIRE_GUARDS: Guarded = Guarded {
    statement: "ACQUIRE",
    sql: ACQUIRE,
    where_after: "granted AS (",
    guards: &[
        Guard {
            name: "unpaused",
            sql: "paused_at IS NULL",
        },
        Guard {
            name: "unheld_or_expired",
            sql: "(expires_at IS NULL OR expires_at <= now())",
        },
        Guard {
            name: "past_not_before",
            sql: "(not_before IS NULL OR not_before <= now())",
        },
        Guard {
            name: "due",
            sql: "(last_tick_ended_at IS NULL OR last_tick_ended_at + :interval_ms * interval '1 millisecond' <= now())",
        },
    ],
    plumbing: &[
        "role = :role",
        "(SELECT applied FROM lock_bound) IS NOT NULL",
    ],
};

/// ACQUIRE: claims `role` for one tick if it is unpaused, unheld (or expired), past any cooldown
/// and due (its last completed tick ended at least `interval` ago).
///
/// Racing callers serialize on the row lock and the losers' WHERE re-evaluates against the
/// winner's row, so at most one caller is granted each tick. A refusal carries, from the same
/// round trip, when the role can next be claimed.
///
/// # Errors
///
/// [`Error::RoleNotSeeded`] if the role has no row, [`Error::Interval`] for an interval below
/// 1 ms, [`Error::Timeout`] or [`Error::Database`] if the statement did not complete.
pub async fn acquire<'e>(
    db: impl PgExecutor<'e>,
    role: Role,
    holder_id: &str,
    interval: Duration,
    timings: &Timings,
) -> Result<Acquired, Error> {
    check_interval(role, interval)?;
    let sql = render(
        ACQUIRE,
        &[
            ("role", Value::Role(role)),
            ("holder", Value::Text(holder_id)),
            ("ttl_ms", Value::Int(ms(timings.ttl()))),
            ("interval_ms", Value::Int(ms(interval))),
            ("lock_ms", Value::Int(lock_timeout(timings))),
        ],
    );
    let rows = send(db, Statement::Acquire, timings.statement_timeout(), sql).await?;
    acquired_from(&single("ACQUIRE", rows)?, role, "ACQUIRE")
}

/// ACQUIRE's answer for `role` from a row with ACQUIRE's columns.
pub(crate) fn acquired_from(
    row: &PgRow,
    role: Role,
    statement: &'static str,
) -> Result<Acquired, Error> {
    let field = |e| Error::Database {
        statement,
        source: e,
    };
    if !row.try_get::<bool, _>("role_exists").map_err(field)? {
        return Err(Error::RoleNotSeeded(role));
    }
    let db_now: DateTime<Utc> = row.try_get("db_now").map_err(field)?;
    if let Some(token) = row
        .try_get::<Option<i64>, _>("granted_token")
        .map_err(field)?
    {
        return Ok(Acquired::Granted(Grant {
            fence: Fence::granted(role, token),
            db_now,
            expires_at: row.try_get("granted_until").map_err(field)?,
        }));
    }
    let flag = |name: &str| row.try_get::<bool, _>(name).map_err(field);
    let reason = if flag("paused")? {
        RefusalReason::Paused
    } else if flag("held")? {
        RefusalReason::Held
    } else if flag("cooling")? {
        RefusalReason::CoolingDown
    } else if flag("not_due")? {
        RefusalReason::NotDue
    } else {
        RefusalReason::Contended
    };
    let wait_ms: Option<i64> = row.try_get("wait_ms").map_err(field)?;
    let retry_after = match reason {
        RefusalReason::Paused => None,
        RefusalReason::Contended => Some(Duration::ZERO),
        _ => Some(Duration::from_millis(wait_ms.unwrap_or(0).max(0) as u64)),
    };
    Ok(Acquired::Refused(Refusal {
        reason,
        retry_after,
        holder_id: row.try_get("holder_id").map_err(field)?,
        db_now,
    }))
}

// Its guards are listed in RENEW_GUARDS below, which the model (leader-model) evaluates by name.
const RENEW: &str = "
WITH lock_bound AS (SELECT set_config('lock_timeout', :lock_ms::text, true) AS applied),
renewed AS (
    UPDATE leader_leases
       SET expires_at = now() + :ttl_ms * interval '1 millisecond'
     WHERE role = :role
       AND holder_token = :token
       AND (SELECT applied FROM lock_bound) IS NOT NULL
       -- A released or paused row has no expiry, so this also refuses those.
       AND expires_at > now()
    RETURNING expires_at
)
SELECT r.expires_at               AS renewed_until,
       now()                      AS db_now,
       l.paused_at IS NOT NULL    AS paused,
       l.holder_token             AS current_token,
       l.holder_id IS NOT NULL    AS held
  FROM (VALUES (1)) AS one (x)
  LEFT JOIN renewed r ON true
  LEFT JOIN leader_leases l ON l.role = :role
";

/// RENEW's guards, for the protocol model (see [`ACQUIRE_GUARDS`]).
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
        "role = :role",
        "(SELECT applied FROM lock_bound) IS NOT NULL",
    ],
};

/// RENEW: extends the lease held by `fence` to `now() + ttl`.
///
/// Only the holder can renew, and only while its lease is live and unpaused: once a lease has
/// run out it stays lost even if nobody took it, so [`Renewed::Lost`] is always definitive.
///
/// # Errors
///
/// [`Error::Timeout`] or [`Error::Database`]: the outcome is unknown, which the caller treats as a
/// missed beat, not a loss.
pub async fn renew<'e>(
    db: impl PgExecutor<'e>,
    fence: Fence,
    timings: &Timings,
) -> Result<Renewed, Error> {
    let sql = render(
        RENEW,
        &[
            ("role", Value::Role(fence.role())),
            ("token", Value::Int(fence.token())),
            ("ttl_ms", Value::Int(ms(timings.ttl()))),
            ("lock_ms", Value::Int(lock_timeout(timings))),
        ],
    );
    let rows = send(db, Statement::Renew, timings.statement_timeout(), sql).await?;
    renewed_from(&single("RENEW", rows)?, fence, "RENEW")
}

/// RENEW's answer for `fence` from a row with RENEW's columns.
pub(crate) fn renewed_from(
    row: &PgRow,
    fence: Fence,
    statement: &'static str,
) -> Result<Renewed, Error> {
    let field = |e| Error::Database {
        statement,
        source: e,
    };
    let db_now: DateTime<Utc> = row.try_get("db_now").map_err(field)?;
    if let Some(expires_at) = row.try_get("renewed_until").map_err(field)? {
        return Ok(Renewed::Extended { expires_at, db_now });
    }
    let paused: Option<bool> = row.try_get("paused").map_err(field)?;
    let current: Option<i64> = row.try_get("current_token").map_err(field)?;
    let held: Option<bool> = row.try_get("held").map_err(field)?;
    let reason = if paused == Some(true) {
        LossReason::Paused
    } else if current != Some(fence.token()) {
        LossReason::TakenOver
    } else if held != Some(true) {
        LossReason::Released
    } else {
        LossReason::Expired
    };
    Ok(Renewed::Lost(reason))
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

/// RELEASE's guards, for the protocol model (see [`ACQUIRE_GUARDS`]).
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
        "(SELECT applied FROM lock_bound) IS NOT NULL",
    ],
};

/// RELEASE: ends the tick held by `fence`, recording `outcome` (see [`ReleaseOutcome`] for what
/// each outcome writes). `interval` is the role's tick interval, which sets the cooldown.
///
/// A no-op ([`Released::changed`] false) when the token no longer holds the role.
///
/// # Errors
///
/// [`Error::Interval`], [`Error::Timeout`] or [`Error::Database`]. An unreleased lease runs out on
/// its own after the TTL.
pub async fn release<'e>(
    db: impl PgExecutor<'e>,
    fence: Fence,
    outcome: ReleaseOutcome,
    interval: Duration,
    timings: &Timings,
) -> Result<Released, Error> {
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
) -> Result<Released, Error> {
    send_release(db, fence, outcome, interval, timings, true).await
}

async fn send_release<'e>(
    db: impl PgExecutor<'e>,
    fence: Fence,
    outcome: ReleaseOutcome,
    interval: Duration,
    timings: &Timings,
    notify: bool,
) -> Result<Released, Error> {
    check_interval(fence.role(), interval)?;
    let sql = render(
        RELEASE,
        &[
            ("role", Value::Role(fence.role())),
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

fn unknown_role(role: &str) -> impl FnOnce(Error) -> Error + '_ {
    move |err| match &err {
        Error::Database {
            source: sqlx::Error::Database(db),
            ..
        } if db.code().as_deref() == Some("22023") && db.message().contains("unknown role") => {
            Error::UnknownRole(role.to_owned())
        }
        _ => err,
    }
}

/// PAUSE: pauses `role` cluster-wide through `leader_pause`: the holder is cleared (its fence is
/// false from this commit on and its next RENEW reports [`LossReason::Paused`]) and ACQUIRE
/// refuses until [`unpause`], and after it until the lease the pause took away would have
/// expired (`not_before` is raised to that expiry): until its next RENEW the paused holder may
/// still work without a claim, and its heartbeat cancels its tick by then. `who` is required and
/// recorded with `why`.
///
/// # Errors
///
/// [`Error::RoleName`] for a malformed name, [`Error::UnknownRole`] for a role the table does not
/// have, [`Error::Database`] otherwise.
pub async fn pause<'e>(
    db: impl PgExecutor<'e>,
    role: &str,
    who: &str,
    why: Option<&str>,
    timings: &Timings,
) -> Result<(), Error> {
    crate::role::validate(role)?;
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
) -> Result<(), Error> {
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
/// comes back as [`Error::UnknownRole`].
async fn call_on_role<'e>(
    db: impl PgExecutor<'e>,
    role: &str,
    timings: &Timings,
    statement: Statement,
    call: &'static str,
) -> Result<(), Error> {
    crate::role::validate(role)?;
    let sql = render(call, &[("role", Value::Text(role))]);
    send(db, statement, timings.statement_timeout(), sql)
        .await
        .map_err(unknown_role(role))?;
    Ok(())
}

/// What [`pause_if_unpaused`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
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
const PAUSE_IF_UNPAUSED: &str = "
WITH current AS (
    SELECT paused_at, paused_by, pause_reason FROM leader_leases WHERE role = :role FOR UPDATE
)
SELECT c.paused_at, c.paused_by, c.pause_reason,
       CASE WHEN c.paused_at IS NULL THEN leader_pause(:role, :who, :why) END AS paused
  FROM (VALUES (1)) AS one (x)
  LEFT JOIN current c ON true
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
) -> Result<PauseOutcome, Error> {
    crate::role::validate(role)?;
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
    let row = single("PAUSE", rows)?;
    let field = |e| Error::Database {
        statement: "PAUSE",
        source: e,
    };
    let since: Option<DateTime<Utc>> = row.try_get("paused_at").map_err(field)?;
    let Some(since) = since else {
        return Ok(PauseOutcome::Paused);
    };
    Ok(PauseOutcome::AlreadyPaused {
        by: row.try_get("paused_by").map_err(field)?,
        reason: row.try_get("pause_reason").map_err(field)?,
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
) -> Result<(), Error> {
    call_on_role(
        db,
        role,
        timings,
        Statement::ClearCooldown,
        "SELECT leader_clear_cooldown(:role)",
    )
    .await
}
