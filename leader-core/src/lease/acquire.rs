//! ACQUIRE: a grant of a role for one tick, for any number of roles in one statement.
//!
//! # Spreading roles
//!
//! One call grants at most `ceil(due / (other live holders + 1))` unsharded roles (and at most
//! `max_grants` leases in all), where "other live holders" counts the distinct holders of other
//! unexpired leases: with others alive, no replica takes every due role in one poll; alone, it
//! takes them all. The roles left out answer [`RefusalReason::Contended`] with `retry_after` zero.
//!
//! # Spreading shards
//!
//! For a sharded role (one asked for with [`Wanted::in_shard`] and more than one shard), the same
//! statement first records the caller as present for the role (`leader_presence`, for one TTL on
//! the database clock), then grants it at most `ceil(shard_count / live) - held` of the role's
//! shards, where `live` counts the replicas with an unexpired presence row or lease of the role
//! (the caller included) and `held` the shards it holds now. Among the due shards it prefers
//! those whose last completed tick was its own, so that shards stay where they ran. The shards
//! left out answer [`RefusalReason::ShareHeld`]. This decides how shards spread, never who may
//! hold one: the grant's guards are the same for every row.
//!
//! # No deadlock
//!
//! ACQUIRE never waits for a row: it locks the due rows with `FOR UPDATE SKIP LOCKED` and skips
//! any row another statement holds.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::{PgExecutor, Row};

use super::anchor::Anchor;
use super::wanted::{Due, Wanted};
use crate::guard::{Guard, Guarded};
use crate::inline::{Value, render};
use crate::send::{RowsByLease, check_interval, lock_timeout, ms, send, values_list};
use crate::{Fence, Role, Statement, StatementError, Timings};

// The token is greatest(old + 1, database clock in ms), not old + 1, raised to the next value
// congruent to the row's shard_index modulo its shard_count (no change for an unsharded role,
// shard 0 of 1): two shards of a role never hold the same token, so a proof that pairs one
// shard's token with another shard's index holds nothing. After a failover to an
// asynchronous standby that missed the last grant, old + 1 would re-issue the very token the old
// leader still holds, and its fence would be true on the new primary. The clock term (the same
// idea as seeding rows with leader_seed_token()) moves past it, since a takeover takes far longer
// than a millisecond and a role is granted at most once per interval (at least 1 ms).
//
// A role on a calendar schedule (`wanted_calendar`) is granted only for the instant it asks for
// (`wanted_instant`), and only once that instant is due on the database clock and later than the
// last instant completed: each instant completes at most once, and no tick starts before its
// instant. Its interval is 0, so the interval guard always holds for it; an instant of NULL asks
// for nothing and learns the last completed instant from the answer.
//
// With the `each` missed-instant policy (`wanted_each`), the instant must also be the next one
// after the last completed (`last_completed_instant >= wanted_previous`, the schedule's instant
// before it): a replica whose plan is ahead of the row (it saw completions a failover lost) is
// refused rather than skipping the instants between.
//
// A row is one shard of a role (`shard_index`; an unsharded role is its shard 0 of 1), and is
// granted only to a caller that asks with the role's shard count (`shard_count_matches`): after
// `leader_reshard` changes the count, a replica still running with the old count is refused
// rather than granted a row whose keys overlap shards another replica holds under the new count.
//
// ACQUIRE's text is `acquire.sql`, one statement whose CTEs run in three parts:
// - what is asked and what could be granted: `lock_bound` (the lock timeout), `wanted` (one row
//   per role or shard asked for), `due` (the rows the guards would grant now) and `others` (the
//   other live holders);
// - the placement policy, which only narrows which due rows to lock (never who may hold one):
//   `presence` and `gone` (the caller's presence row for each sharded role, and old rows cleared),
//   `share` (how many more of a sharded role's shards the caller may take) and `within_share`
//   (which due rows fall within its share, shards it ran last first);
// - the takeover, the grant and the answer: `ended_early` (a dead holder's lease ended, the
//   guards of TAKEOVER_GUARDS), `picked` (the rows locked, at most `:max_grants`), `granted` (the
//   UPDATE whose WHERE decides each grant, the guards of ACQUIRE_GUARDS), `seen` and the final
//   SELECT (one answer row per wanted row, with the flags `acquired_from` reads);
// - the tick history, spliced in at `:tick_history` (`history::ACQUIRE_HISTORY`): it writes
//   `leader_tick_history` from what `picked`, `ended_early` and `granted` return, and nothing else.
//
// ACQUIRE's work and locks grow with what it grants or ends, not with what it is asked about: the
// answer joins `within_share` rather than reading it once per answer row, and `ended_early` locks
// only the live rows whose holder's anchor the guard `leader_anchor_ended` says ended (its
// UPDATE asks every guard again once they are locked, so a drill that breaks the guard breaks
// both). Issue 44 measured both: read per answer row, 2,000 leases asked for took over a second; locking every live row asked about made each RENEW of them wait for the ACQUIREs of the
// other replicas until its lock timeout, and leases were lost fleet-wide.
//
// A lease whose holder's anchor session the server no longer has (see `anchor`) is ended early by
// `ended_early`, which sets its expiry to the statement's `now()`; it is granted by a later
// ACQUIRE, as any expired lease is, not by this one (`granted` reads the row as the statement
// found it). So a takeover is an early expiry: the old holder's fence is false for every claim
// that starts after `ended_early` commits, and any grant's `now()` is later than that commit,
// so no claim of the old token starts after the new token's `acquired_at`, as after an expiry.
// Granting in the same statement would let a claim that started while the statement ran (and
// so saw the old row) pass the fence after the new grant's `acquired_at`: the drills' checker
// reported exactly that. An early end sends NOTIFY on ANCHOR_ENDED_CHANNEL with the ended
// anchor's lock key, as that anchor's watcher did, so that every listening replica polls again:
// the caller may not be the one to take the lease (a sharded role's caller may hold its share
// already), and a concurrent ACQUIRE skipped the rows this one locked, so without it the lease
// waited for some replica's next scheduled poll. (A release on RELEASED_CHANNEL would not do: a
// replica takes a shard's release for its runner's, and does not poll for it.)
//
// `:interval_ms`, `:calendar`, `:instant`, `:each`, `:previous` and `:shard_count` in the guards
// are rendered as the columns `wanted_interval_ms`, `wanted_calendar`, `wanted_instant`,
// `wanted_each`, `wanted_previous` and `wanted_shard_count`, so the guards read
// as ACQUIRE_GUARDS lists them. `wanted`'s columns are prefixed so that no unqualified column in
// the guards can mean one of them. Its guards are listed in ACQUIRE_GUARDS below, which the model
// (leader-model) evaluates by name.
const ACQUIRE: &str = include_str!("acquire.sql");

// The guards ACQUIRE_GUARDS and TAKEOVER_GUARDS list, each written once.
const SHARD_COUNT_MATCHES: Guard = Guard {
    name: "shard_count_matches",
    sql: "shard_count = :shard_count",
};
const UNPAUSED: Guard = Guard {
    name: "unpaused",
    sql: "paused_at IS NULL",
};
const UNHELD_OR_EXPIRED: Guard = Guard {
    name: "unheld_or_expired",
    sql: "(expires_at IS NULL OR expires_at <= now())",
};
const PAST_NOT_BEFORE: Guard = Guard {
    name: "past_not_before",
    sql: "(not_before IS NULL OR not_before <= now())",
};
const DUE: Guard = Guard {
    name: "due",
    sql: "(last_tick_ended_at IS NULL OR last_tick_ended_at + :interval_ms * interval '1 millisecond' <= now())",
};
const INSTANT_DUE: Guard = Guard {
    name: "instant_due",
    sql: "(NOT :calendar OR :instant <= now())",
};
const INSTANT_NOT_COMPLETED: Guard = Guard {
    name: "instant_not_completed",
    sql: "(NOT :calendar OR last_completed_instant IS NULL OR :instant > last_completed_instant)",
};
const INSTANT_IS_NEXT: Guard = Guard {
    name: "instant_is_next",
    sql: "(NOT :each OR last_completed_instant IS NULL OR last_completed_instant >= :previous)",
};
const CALLER_ANCHOR_LIVES: Guard = Guard {
    name: "caller_anchor_lives",
    sql: "(:anchor_pid IS NULL OR EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = :anchor_pid AND a.backend_start = :anchor_start))",
};
const UNEXPIRED: Guard = Guard {
    name: "unexpired",
    sql: "expires_at > now()",
};
const HOLDER_ANCHOR_ENDED: Guard = Guard {
    name: "holder_anchor_ended",
    sql: "leader_anchor_ended(holder_anchor_pid, holder_anchor_start, acquired_at)",
};

/// ACQUIRE's guards, for the protocol model. The model's ACQUIRE (`tools/leader-model/src/guards.rs`) grants
/// iff every guard here holds; its guard tests fail if this list, `acquire.sql` and the model
/// disagree. The `due` CTE repeats them to choose which rows to lock; the UPDATE's own WHERE is
/// what decides each grant.
#[doc(hidden)]
pub const ACQUIRE_GUARDS: Guarded = Guarded {
    statement: "ACQUIRE",
    sql: ACQUIRE,
    where_after: "granted AS (",
    guards: &[
        SHARD_COUNT_MATCHES,
        UNPAUSED,
        UNHELD_OR_EXPIRED,
        PAST_NOT_BEFORE,
        DUE,
        INSTANT_DUE,
        INSTANT_NOT_COMPLETED,
        INSTANT_IS_NEXT,
        CALLER_ANCHOR_LIVES,
    ],
    plumbing: &[
        "role = wanted_role",
        "shard_index = wanted_shard_index",
        "(role, shard_index) IN (SELECT role, shard_index FROM picked)",
        "(SELECT applied FROM lock_bound) IS NOT NULL",
    ],
};

/// The guards of ACQUIRE's takeover (`ended_early`), for the protocol model: a live lease is
/// ended early (its expiry set to the statement's `now()`) iff every guard here holds. They are
/// ACQUIRE's, with `unheld_or_expired` replaced by `unexpired` and `holder_anchor_ended`: the
/// lease is live, and the server no longer has the anchor session its grant recorded.
#[doc(hidden)]
pub const TAKEOVER_GUARDS: Guarded = Guarded {
    statement: "TAKEOVER",
    sql: ACQUIRE,
    where_after: "ended_early AS (",
    guards: &[
        SHARD_COUNT_MATCHES,
        UNPAUSED,
        UNEXPIRED,
        HOLDER_ANCHOR_ENDED,
        PAST_NOT_BEFORE,
        DUE,
        INSTANT_DUE,
        INSTANT_NOT_COMPLETED,
        INSTANT_IS_NEXT,
        CALLER_ANCHOR_LIVES,
    ],
    plumbing: &[
        "role = wanted_role",
        "shard_index = wanted_shard_index",
        "(role, shard_index) IN (SELECT l.role, l.shard_index FROM leader_leases l JOIN wanted w ON l.role = w.wanted_role AND l.shard_index = w.wanted_shard_index WHERE l.expires_at > now() AND leader_anchor_ended(l.holder_anchor_pid, l.holder_anchor_start, l.acquired_at) FOR UPDATE OF l SKIP LOCKED)",
        "(SELECT applied FROM lock_bound) IS NOT NULL",
    ],
};

/// The result of ACQUIRE.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a grant leads the role until its lease runs out: run the tick and release it"]
pub enum Acquired {
    /// This caller leads the role for one tick.
    Granted(Grant),
    /// The role cannot be claimed now.
    Refused(Refusal),
}

/// A granted lease.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Grant {
    /// The proof of leadership for this tick's claims.
    pub fence: Fence,
    /// When the lease was granted (database clock).
    pub acquired_at: DateTime<Utc>,
    /// When the lease runs out unless renewed (database clock).
    pub expires_at: DateTime<Utc>,
    /// Who completed the role's last tick (`None` if no tick has completed): a grant to
    /// another holder than that is leadership changing hands.
    pub last_tick_holder: Option<String>,
    /// The scheduled instant this tick serves, for a role on a calendar schedule: the row's
    /// `tick_instant` (a job reads it as `TickContext::tick_instant`, in the schedule's zone).
    pub tick_instant: Option<DateTime<Utc>>,
}

impl Grant {
    /// A grant no ACQUIRE made, around `fence` (from `Fence::forge`), for fakes of the statement
    /// layer and a job's unit tests. Only with the `test-support` feature.
    #[cfg(feature = "test-support")]
    pub fn forge(fence: Fence, acquired_at: DateTime<Utc>, expires_at: DateTime<Utc>) -> Grant {
        Grant {
            fence,
            acquired_at,
            expires_at,
            last_tick_holder: None,
            tick_instant: None,
        }
    }

    /// This forged grant, serving the scheduled `instant`. Only with the `test-support` feature.
    #[cfg(feature = "test-support")]
    #[must_use]
    pub fn with_tick_instant(mut self, instant: DateTime<Utc>) -> Grant {
        self.tick_instant = Some(instant);
        self
    }
}

/// Why ACQUIRE refused, and when to try again.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refusal {
    /// Why the role could not be claimed.
    pub reason: RefusalReason,
    /// How long until the role can next be claimed, as far as the statement could see: the holder's
    /// expiry, the cooldown, or the next due time. `None` when paused (no time is known).
    /// A hint, not a promise: a concurrent grant can make the role busy again by then.
    pub retry_after: Option<Duration>,
    /// The current holder's id, if the role is held.
    pub holder_id: Option<String>,
    /// For a shard, the live replica it stays with: the one that ran its last tick, while that
    /// replica is present (its ACQUIREs keep its presence for one TTL, and a clean shutdown's
    /// [`leave`](crate::lease::leave) ends it). ACQUIRE grants a replica the shards it ran
    /// first, so such a shard goes back to that replica; one whose replica left or died is
    /// anyone's. `None` for an unsharded role, a shard whose last tick never completed, and a
    /// shard whose last replica is gone.
    pub kept_by: Option<String>,
    /// The database clock when the statement ran.
    pub db_now: DateTime<Utc>,
    /// The latest scheduled instant completed (`None` if none, or the role has no calendar
    /// schedule).
    pub last_completed_instant: Option<DateTime<Utc>>,
}

impl Refusal {
    /// A refusal no ACQUIRE made, for fakes of the statement layer. Only with the `test-support`
    /// feature.
    #[cfg(feature = "test-support")]
    pub fn forge(
        reason: RefusalReason,
        retry_after: Option<Duration>,
        holder_id: Option<String>,
        db_now: DateTime<Utc>,
    ) -> Refusal {
        Refusal {
            reason,
            retry_after,
            holder_id,
            kept_by: None,
            db_now,
            last_completed_instant: None,
        }
    }

    /// This forged refusal, saying the shard is kept by `holder`. Only with the `test-support`
    /// feature.
    #[cfg(feature = "test-support")]
    #[must_use]
    pub fn with_kept_by(mut self, holder: Option<String>) -> Refusal {
        self.kept_by = holder;
        self
    }

    /// This forged refusal, saying `instant` completed last. Only with the `test-support`
    /// feature.
    #[cfg(feature = "test-support")]
    #[must_use]
    pub fn with_last_completed(mut self, instant: Option<DateTime<Utc>>) -> Refusal {
        self.last_completed_instant = instant;
        self
    }
}

/// Why ACQUIRE refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RefusalReason {
    /// Another holder's lease is live.
    Held,
    /// An operator paused the role.
    Paused,
    /// `not_before` has not passed: the cooldown a tick that did not complete set, or the floor a
    /// pause of a held role set (the paused lease's expiry).
    CoolingDown,
    /// The last completed tick ended less than one interval ago, or the scheduled instant asked
    /// for has not come yet on the database clock.
    NotDue,
    /// The scheduled instant asked for is already completed, or none was asked for:
    /// [`Refusal::last_completed_instant`] says which instant completed last, so the caller can ask
    /// for a later one at once.
    InstantCompleted,
    /// A calendar role with [`Missed::Each`](leader_schedule::Missed::Each): the instant asked for
    /// is not the next one after the last completed instant (an instant between them has not
    /// completed, for example after a failover to a standby that lacks the latest completions);
    /// [`Refusal::last_completed_instant`] says where the schedule stands, so the caller can ask
    /// for the next one at once.
    InstantNotNext,
    /// The role looked free, but a concurrent ACQUIRE won it first.
    Contended,
    /// The role's shard count in the database is not the one asked for: `leader_reshard` changed
    /// it, and this caller still runs with the old count. Granting it would let two holders claim
    /// overlapping keys, so it is refused until the caller restarts with the new count.
    ShardCountChanged,
    /// The shard is due, but this caller already holds its share of the role's shards:
    /// `ceil(shard_count / live replicas)`, where a replica is live while its presence row for
    /// the same count (which every ACQUIRE for a sharded role refreshes for one TTL) or a lease of
    /// the role is unexpired. It is left to a replica with room; no time is known (`retry_after`
    /// is `None`): the caller asks again at its next poll, or at once when one of its own ticks
    /// ends.
    ShareHeld,
    /// The caller named an anchor ([`acquire_anchored`]) that the server no longer has: its
    /// session ended (a restart, `pg_terminate_backend`, a network fault the server noticed).
    /// Nothing is granted under an ended anchor; the caller opens a new one and asks again.
    AnchorEnded,
    /// The holder's anchor session had ended (its process died, or the server ended the
    /// session): this statement ended the lease early, setting its expiry to the statement's
    /// `now()`, and a later ACQUIRE grants it as any expired lease (`retry_after` is zero: ask
    /// again at once). It is not granted in the same statement, so that no claim of the old
    /// holder's token can start after the new grant's `acquired_at`, as after an expiry.
    HolderAnchorEnded,
}

/// ACQUIRE: claims each of `roles` for one tick, as `holder_id`, if it is unpaused, unheld (or
/// expired), past any cooldown and due: an interval role (`(Role, Duration)` or
/// [`Wanted::every`]) when its last completed tick ended at least its interval ago, a calendar
/// role ([`Wanted::instant`]) when the instant it asks for has come on the database clock and is
/// later than the last instant completed. One statement for all of them.
///
/// Answers one [`Acquired`] per role, in the order given. Racing callers serialize on each row's
/// lock and the losers' WHERE re-evaluates against the winner's row, so at most one caller is
/// granted each tick. At most `max_grants` roles (and at most an even share of the due ones, see
/// the module docs) are granted per call; the others answer [`RefusalReason::Contended`]. A
/// refusal carries, from the same round trip, when the role can next be claimed.
///
/// # Errors
///
/// [`StatementError::RoleNotSeeded`] if a role has no row, [`StatementError::Interval`] for an
/// interval below 1 ms, [`StatementError::Timeout`] or [`StatementError::Database`] if the
/// statement did not complete (then nothing was granted, or the grants run out after their TTL
/// unrenewed).
pub async fn acquire<'e, W>(
    db: impl PgExecutor<'e>,
    roles: &[W],
    holder_id: &str,
    max_grants: usize,
    timings: &Timings,
) -> Result<Vec<Acquired>, StatementError>
where
    for<'w> &'w W: Into<Wanted>,
{
    acquire_anchored(db, roles, holder_id, None, max_grants, timings).await
}

/// [`acquire`], naming the caller's `anchor` (see [`Anchor`]): each grant records it, so that once
/// the server no longer has that session another replica's ACQUIRE ends the lease early
/// ([`RefusalReason::HolderAnchorEnded`]) and its next ACQUIRE is granted it, without waiting for
/// the lease's expiry. With `Some(anchor)`, nothing is granted unless the server still has
/// that session when the statement runs ([`RefusalReason::AnchorEnded`]): a grant recording an
/// ended anchor could be taken over at once. With `None`, as [`acquire`]: the grants record no
/// anchor and free only at their expiry.
///
/// Send it as a transaction of its own (as every lease statement is sent): see
/// `leader_anchor_ended` in the anchors migration for why.
///
/// # Errors
///
/// As [`acquire`].
pub async fn acquire_anchored<'e, W>(
    db: impl PgExecutor<'e>,
    roles: &[W],
    holder_id: &str,
    anchor: Option<&Anchor>,
    max_grants: usize,
    timings: &Timings,
) -> Result<Vec<Acquired>, StatementError>
where
    for<'w> &'w W: Into<Wanted>,
{
    if roles.is_empty() {
        return Ok(Vec::new());
    }
    let roles: Vec<Wanted> = roles.iter().map(Into::into).collect();
    let sql = acquire_text(&roles, holder_id, anchor, max_grants, timings)?;
    let rows = send(db, Statement::Acquire, timings.statement_timeout(), sql).await?;
    let by_lease = RowsByLease::new(
        &rows,
        ("wanted_role", "wanted_shard_index"),
        Statement::Acquire,
    );
    roles
        .iter()
        .map(|wanted| {
            let row = by_lease.get(wanted.role, wanted.shard)?;
            acquired_from(row, wanted)
        })
        .collect()
}

/// The text of the ACQUIRE that [`acquire_anchored`] sends for `roles` (non-empty), for tests
/// that ask the server how it runs the statement (its plan's work as the leases asked for grow).
///
/// # Errors
///
/// [`StatementError::Interval`] for an interval under a millisecond, as [`acquire`].
#[doc(hidden)]
pub fn acquire_text(
    roles: &[Wanted],
    holder_id: &str,
    anchor: Option<&Anchor>,
    max_grants: usize,
    timings: &Timings,
) -> Result<String, StatementError> {
    for wanted in roles {
        if let Due::Interval(interval) = wanted.due {
            check_interval(Statement::Acquire, wanted.role, interval)?;
        }
    }
    let wanted = values_list(roles.iter().map(|wanted| {
        let (interval, calendar, instant, following, each, previous) = match wanted.due {
            Due::Interval(interval) => (ms(interval), false, None, None, false, None),
            Due::Instant {
                instant,
                following,
                each,
                previous,
            } => (0, true, instant, following, each, previous),
        };
        let shard = wanted.shard_or_sole();
        render(
            "(:role, :shard_index, :shard_count, :interval_ms, :schedule, :calendar, :instant, \
             :following, :each, :previous)",
            &[
                ("role", Value::Role(wanted.role)),
                ("shard_index", Value::Int(i64::from(shard.index()))),
                ("shard_count", Value::Int(i64::from(shard.count()))),
                ("interval_ms", Value::Int(interval)),
                ("schedule", Value::Text(&wanted.schedule)),
                ("calendar", Value::Bool(calendar)),
                ("instant", Value::OptTime(instant)),
                ("following", Value::OptTime(following)),
                ("each", Value::Bool(each)),
                // No earlier instant: nothing can be skipped.
                (
                    "previous",
                    match previous {
                        Some(_) => Value::OptTime(previous),
                        None => Value::Sql("'-infinity'::timestamptz"),
                    },
                ),
            ],
        )
    }));
    let sql = render(
        ACQUIRE,
        &[
            ("wanted", Value::Sql(&wanted)),
            ("interval_ms", Value::Sql("wanted_interval_ms")),
            ("calendar", Value::Sql("wanted_calendar")),
            ("instant", Value::Sql("wanted_instant")),
            ("each", Value::Sql("wanted_each")),
            ("previous", Value::Sql("wanted_previous")),
            ("shard_count", Value::Sql("wanted_shard_count")),
            ("holder", Value::Text(holder_id)),
            ("ttl_ms", Value::Int(ms(timings.ttl()))),
            (
                "max_grants",
                Value::Int(i64::try_from(max_grants.max(1)).unwrap_or(i64::MAX)),
            ),
            ("lock_ms", Value::Int(lock_timeout(timings))),
            (
                "anchor_ended_channel",
                Value::Text(super::anchor::ANCHOR_ENDED_CHANNEL),
            ),
            (
                "anchor_pid",
                match anchor {
                    Some(anchor) => Value::Int(i64::from(anchor.pid())),
                    None => Value::Sql("NULL::integer"),
                },
            ),
            (
                "anchor_start",
                Value::OptTime(anchor.map(Anchor::backend_start)),
            ),
            ("tick_history", Value::Sql(super::history::ACQUIRE_HISTORY)),
        ],
    );
    Ok(sql)
}

/// [`acquire`] for one role: a one-element call of the same statement.
///
/// # Errors
///
/// As [`acquire`].
pub async fn acquire_one<'e>(
    db: impl PgExecutor<'e>,
    role: Role,
    holder_id: &str,
    interval: Duration,
    timings: &Timings,
) -> Result<Acquired, StatementError> {
    let mut answers = acquire(db, &[Wanted::every(role, interval)], holder_id, 1, timings).await?;
    Ok(answers.remove(0))
}

/// ACQUIRE's answer for `wanted` from a row with ACQUIRE's columns.
fn acquired_from(row: &PgRow, wanted: &Wanted) -> Result<Acquired, StatementError> {
    let role = wanted.role;
    let field = StatementError::database(Statement::Acquire);
    if !row.try_get::<bool, _>("role_exists").map_err(&field)? {
        return Err(match wanted.shard {
            Some(shard) => StatementError::ShardNotSeeded { role, shard },
            None => StatementError::RoleNotSeeded { role },
        });
    }
    let db_now: DateTime<Utc> = row.try_get("db_now").map_err(&field)?;
    if let Some(token) = row
        .try_get::<Option<i64>, _>("granted_token")
        .map_err(&field)?
    {
        return Ok(Acquired::Granted(Grant {
            fence: Fence::granted(role, wanted.shard, token),
            acquired_at: db_now,
            expires_at: row.try_get("granted_until").map_err(&field)?,
            last_tick_holder: row.try_get("last_tick_holder").map_err(&field)?,
            tick_instant: row.try_get("granted_instant").map_err(&field)?,
        }));
    }
    let flag = |name: &str| row.try_get::<bool, _>(name).map_err(&field);
    let reason = if flag("ended_early")? {
        RefusalReason::HolderAnchorEnded
    } else if flag("anchor_ended")? {
        RefusalReason::AnchorEnded
    } else if flag("shard_count_changed")? {
        RefusalReason::ShardCountChanged
    } else if flag("paused")? {
        RefusalReason::Paused
    } else if flag("held")? {
        RefusalReason::Held
    } else if flag("cooling")? {
        RefusalReason::CoolingDown
    } else if flag("instant_completed")? {
        RefusalReason::InstantCompleted
    } else if flag("instant_not_next")? {
        RefusalReason::InstantNotNext
    } else if flag("not_due")? {
        RefusalReason::NotDue
    } else if flag("over_share")? {
        RefusalReason::ShareHeld
    } else {
        RefusalReason::Contended
    };
    let wait_ms: Option<i64> = row.try_get("wait_ms").map_err(&field)?;
    let retry_after = match reason {
        RefusalReason::Paused
        | RefusalReason::ShardCountChanged
        | RefusalReason::ShareHeld
        | RefusalReason::AnchorEnded => None,
        RefusalReason::Contended
        | RefusalReason::InstantCompleted
        | RefusalReason::InstantNotNext
        | RefusalReason::HolderAnchorEnded => Some(Duration::ZERO),
        _ => Some(Duration::from_millis(wait_ms.unwrap_or(0).max(0) as u64)),
    };
    Ok(Acquired::Refused(Refusal {
        reason,
        retry_after,
        holder_id: row.try_get("holder_id").map_err(&field)?,
        kept_by: row.try_get("kept_by").map_err(&field)?,
        db_now,
        last_completed_instant: row.try_get("last_completed_instant").map_err(&field)?,
    }))
}
