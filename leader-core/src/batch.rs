//! ACQUIRE and RENEW over many roles in one statement, so a replica's idle cost grows with the
//! number of replicas, not with roles × replicas.
//!
//! | statement | effect | per-role guard |
//! |---|---|---|
//! | [`acquire_many`] | grants some of the due roles, each as ACQUIRE would | ACQUIRE's, on each role's own row |
//! | [`renew_many`] | extends every lease still held | RENEW's, on each role's own row |
//!
//! Each role's grant stays a compare-and-set on its own row: the UPDATE's WHERE is ACQUIRE's
//! guards word for word (the model checks them by name, see [`ACQUIRE_MANY_GUARDS`]), evaluated
//! against the row's newest version once it is locked.
//!
//! # No deadlock
//!
//! A statement that locks several rows can deadlock with another only if it waits for a row while
//! holding one. [`acquire_many`] never waits: it locks the due rows with `FOR UPDATE SKIP LOCKED`
//! and skips any row another statement holds. [`renew_many`] waits, but locks its rows in role
//! order, as every statement locking more than one row here does, so no two waits form a cycle.
//! Every other lease statement locks a single row.
//!
//! # Spreading roles
//!
//! One call grants at most `ceil(due / (other live holders + 1))` roles (and at most
//! `max_grants`), where "other live holders" counts the distinct holders of other unexpired
//! leases: with others alive, no replica takes every due role in one poll; alone, it takes them
//! all. The roles left out answer [`RefusalReason::Contended`] with `retry_after` zero.
//!
//! Both are one autocommit round trip with inlined values, like the single-role statements (see
//! [`crate::lease`]), so they work behind a transaction-mode pooler.

use std::time::Duration;

use crate::guard::Guarded;
use crate::inline::{Value, render};
#[cfg(doc)]
use crate::lease::RefusalReason;
use crate::lease::{
    ACQUIRE_GUARDS, Acquired, RENEW_GUARDS, Renewed, acquired_from, check_interval, lock_timeout,
    ms, renewed_from, send,
};
use crate::{Error, Fence, Role, Statement, Timings};
use sqlx::postgres::PgRow;
use sqlx::{PgExecutor, Row};

// `:interval_ms` in the guards is rendered as the column `wanted_interval_ms`, so the guards read
// exactly as in ACQUIRE. `wanted`'s columns are prefixed so that no unqualified column in the
// guards can mean one of them.
const ACQUIRE_MANY: &str = "
WITH lock_bound AS (SELECT set_config('lock_timeout', :lock_ms::text, true) AS applied),
wanted (wanted_role, wanted_interval_ms) AS (VALUES :wanted),
due AS MATERIALIZED (
    SELECT role
      FROM leader_leases JOIN wanted ON role = wanted_role
     WHERE paused_at IS NULL
       AND (expires_at IS NULL OR expires_at <= now())
       AND (not_before IS NULL OR not_before <= now())
       AND (last_tick_ended_at IS NULL
            OR last_tick_ended_at + :interval_ms * interval '1 millisecond' <= now())
),
others AS (
    SELECT count(DISTINCT holder_id) AS live
      FROM leader_leases
     WHERE expires_at > now() AND holder_id <> :holder
),
picked AS MATERIALIZED (
    SELECT role
      FROM leader_leases
     WHERE role IN (SELECT role FROM due)
     ORDER BY role
     LIMIT least(:max_grants,
                 ceil((SELECT count(*) FROM due)::numeric / ((SELECT live FROM others) + 1))::bigint)
       FOR UPDATE SKIP LOCKED
),
granted AS (
    UPDATE leader_leases
       SET holder_token = greatest(holder_token + 1, (extract(epoch FROM now()) * 1000)::bigint),
           holder_id = :holder,
           acquired_at = now(),
           expires_at = now() + :ttl_ms * interval '1 millisecond'
      FROM wanted
     WHERE role = wanted_role
       AND role IN (SELECT role FROM picked)
       AND (SELECT applied FROM lock_bound) IS NOT NULL
       AND paused_at IS NULL
       AND (expires_at IS NULL OR expires_at <= now())
       AND (not_before IS NULL OR not_before <= now())
       AND (last_tick_ended_at IS NULL
            OR last_tick_ended_at + :interval_ms * interval '1 millisecond' <= now())
    RETURNING role AS granted_role, holder_token, expires_at
),
seen AS (
    SELECT l.*, w.wanted_role, l.last_tick_ended_at + w.wanted_interval_ms * interval '1 millisecond' AS due_at
      FROM wanted w
      LEFT JOIN leader_leases l ON l.role = w.wanted_role
)
SELECT s.wanted_role                 AS wanted_role,
       g.holder_token                AS granted_token,
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
  FROM seen s
  LEFT JOIN granted g ON g.granted_role = s.wanted_role
";

/// The batched ACQUIRE's guards, for the protocol model: ACQUIRE's own list, so the model's
/// guard tests fail if the batched WHERE drops, adds or rewords one.
#[doc(hidden)]
pub const ACQUIRE_MANY_GUARDS: Guarded = Guarded {
    statement: "ACQUIRE (many roles)",
    sql: ACQUIRE_MANY,
    where_after: "granted AS (",
    guards: ACQUIRE_GUARDS.guards,
    plumbing: &[
        "role = wanted_role",
        "role IN (SELECT role FROM picked)",
        "(SELECT applied FROM lock_bound) IS NOT NULL",
    ],
};

/// ACQUIRE for each of `roles` (each with its tick interval) in one statement, as `holder_id`.
///
/// Answers one [`Acquired`] per role, in the order given. Each grant is exactly what
/// [`crate::lease::acquire`] would have granted for that role; at most `max_grants` roles (and
/// at most an even share of the due ones, see the module docs) are granted per call.
///
/// # Errors
///
/// [`Error::RoleNotSeeded`] if a role has no row, [`Error::Interval`] for an interval below
/// 1 ms, [`Error::Timeout`] or [`Error::Database`] if the statement did not complete (then
/// nothing was granted, or the grants run out after their TTL unrenewed).
pub async fn acquire_many<'e>(
    db: impl PgExecutor<'e>,
    roles: &[(Role, Duration)],
    holder_id: &str,
    max_grants: usize,
    timings: &Timings,
) -> Result<Vec<Acquired>, Error> {
    if roles.is_empty() {
        return Ok(Vec::new());
    }
    for &(role, interval) in roles {
        check_interval(role, interval)?;
    }
    let wanted = values_list(roles.iter().map(|&(role, interval)| {
        render(
            "(:role, :interval_ms)",
            &[
                ("role", Value::Role(role)),
                ("interval_ms", Value::Int(ms(interval))),
            ],
        )
    }));
    let sql = render(
        ACQUIRE_MANY,
        &[
            ("wanted", Value::Sql(&wanted)),
            ("interval_ms", Value::Sql("wanted_interval_ms")),
            ("holder", Value::Text(holder_id)),
            ("ttl_ms", Value::Int(ms(timings.ttl()))),
            (
                "max_grants",
                Value::Int(i64::try_from(max_grants.max(1)).unwrap_or(i64::MAX)),
            ),
            ("lock_ms", Value::Int(lock_timeout(timings))),
        ],
    );
    let rows = send(db, Statement::Acquire, timings.statement_timeout(), sql).await?;
    roles
        .iter()
        .map(|&(role, _)| {
            let row = row_of(&rows, "wanted_role", role, "ACQUIRE")?;
            acquired_from(row, role, "ACQUIRE")
        })
        .collect()
}

// `:token` in the guard is rendered as the column `held_token`, so the guards read exactly as in
// RENEW. The rows are locked in role order before the UPDATE (see the module docs).
const RENEW_MANY: &str = "
WITH lock_bound AS (SELECT set_config('lock_timeout', :lock_ms::text, true) AS applied),
held (held_role, held_token) AS (VALUES :held),
locked AS MATERIALIZED (
    SELECT role
      FROM leader_leases JOIN held ON role = held_role
     WHERE holder_token = held_token
       AND (SELECT applied FROM lock_bound) IS NOT NULL
     ORDER BY role
       FOR UPDATE OF leader_leases
),
renewed AS (
    UPDATE leader_leases
       SET expires_at = now() + :ttl_ms * interval '1 millisecond'
      FROM held
     WHERE role = held_role
       AND role IN (SELECT role FROM locked)
       AND holder_token = :token
       AND (SELECT applied FROM lock_bound) IS NOT NULL
       -- A released or paused row has no expiry, so this also refuses those.
       AND expires_at > now()
    RETURNING role AS renewed_role, expires_at
)
SELECT h.held_role                AS held_role,
       r.expires_at               AS renewed_until,
       now()                      AS db_now,
       l.paused_at IS NOT NULL    AS paused,
       l.holder_token             AS current_token,
       l.holder_id IS NOT NULL    AS held
  FROM held h
  LEFT JOIN renewed r ON r.renewed_role = h.held_role
  LEFT JOIN leader_leases l ON l.role = h.held_role
";

/// The batched RENEW's guards, for the protocol model: RENEW's own list.
#[doc(hidden)]
pub const RENEW_MANY_GUARDS: Guarded = Guarded {
    statement: "RENEW (many roles)",
    sql: RENEW_MANY,
    where_after: "renewed AS (",
    guards: RENEW_GUARDS.guards,
    plumbing: &[
        "role = held_role",
        "role IN (SELECT role FROM locked)",
        "(SELECT applied FROM lock_bound) IS NOT NULL",
    ],
};

/// RENEW of every lease in `fences` in one statement; one [`Renewed`] per fence, in order.
///
/// Each lease is extended exactly when [`crate::lease::renew`] would have extended it, and a
/// [`Renewed::Lost`] is as definitive. A role may appear once only.
///
/// # Errors
///
/// [`Error::Timeout`] or [`Error::Database`]: the outcome is unknown for every fence, which the
/// caller treats as a missed beat.
pub async fn renew_many<'e>(
    db: impl PgExecutor<'e>,
    fences: &[Fence],
    timings: &Timings,
) -> Result<Vec<Renewed>, Error> {
    if fences.is_empty() {
        return Ok(Vec::new());
    }
    let held = values_list(fences.iter().map(|fence| {
        render(
            "(:role, :token)",
            &[
                ("role", Value::Role(fence.role())),
                ("token", Value::Int(fence.token())),
            ],
        )
    }));
    let sql = render(
        RENEW_MANY,
        &[
            ("held", Value::Sql(&held)),
            ("token", Value::Sql("held_token")),
            ("ttl_ms", Value::Int(ms(timings.ttl()))),
            ("lock_ms", Value::Int(lock_timeout(timings))),
        ],
    );
    let rows = send(db, Statement::Renew, timings.statement_timeout(), sql).await?;
    fences
        .iter()
        .map(|&fence| {
            let row = row_of(&rows, "held_role", fence.role(), "RENEW")?;
            renewed_from(row, fence, "RENEW")
        })
        .collect()
}

/// The rendered rows of a `VALUES` list, comma-separated.
fn values_list(rows: impl Iterator<Item = String>) -> String {
    rows.collect::<Vec<_>>().join(", ")
}

/// The answer row whose `column` names `role` (the batched statements answer one row per role
/// asked, in no particular order).
fn row_of<'r>(
    rows: &'r [PgRow],
    column: &str,
    role: Role,
    statement: &'static str,
) -> Result<&'r PgRow, Error> {
    rows.iter()
        .find(|row| {
            row.try_get::<&str, _>(column)
                .is_ok_and(|r| r == role.as_str())
        })
        .ok_or(Error::Database {
            statement,
            source: sqlx::Error::RowNotFound,
        })
}
