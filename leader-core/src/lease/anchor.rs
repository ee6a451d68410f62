//! Anchors: one idle session per replica whose end the server reports, so that ACQUIRE can take
//! over a dead holder's lease at once rather than at its expiry.
//!
//! A replica that opens an anchor ([`Anchor::open`] on a session of its own, connected to
//! PostgreSQL itself and never through a transaction-mode pooler) names it with every ACQUIRE
//! ([`acquire_anchored`](crate::lease::acquire_anchored)); a grant records the anchor's identity,
//! `pg_backend_pid()` and `backend_start`, with the lease. ACQUIRE then grants a lease that has not
//! expired when, in its own statement, the server shows no session with that identity: the
//! holder's process died (the kernel closed its socket and the server ended the idle backend), or
//! the server ended the session (`pg_terminate_backend`, a restart). The grant is an ordinary
//! one, with a new and larger token, so the old holder's fence is false from its commit, exactly
//! as after an expiry.
//!
//! The anchor also holds a session advisory lock of the replica's own key
//! ([`ANCHOR_LOCK_CLASS`], `hashtext(holder_id)`), which the server releases when the session ends:
//! a second process with the same holder id is refused ([`AnchorError::HolderIdInUse`]), and a
//! watcher that waits on that lock hears the death at once.
//!
//! The design, and why each part is needed, is `docs/design/dead-holder-takeover.md`.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor, Row};

use crate::pooler::{DIRECT_SESSION_SETTING, DirectOptions};
use crate::send::{send, single};
use crate::{Statement, StatementError, Timings};

/// The first key of every anchor's session advisory lock (`pg_advisory_lock(class, key)`):
/// `0x6c65_6164`, "lead". The second key is `hashtext(holder_id)`.
pub const ANCHOR_LOCK_CLASS: i32 = 0x6c65_6164;

/// An anchor session's identity, as `pg_stat_activity` shows it: `pid` is given to another session
/// once this one ends, `pid` with `backend_start` never is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Anchor {
    pid: i32,
    backend_start: DateTime<Utc>,
}

/// Why [`Anchor::open`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnchorError {
    /// Another live session already anchors this holder id: two processes run with one holder id,
    /// and one would pass for the other's anchor.
    #[error(
        "another live session already anchors holder id `{holder_id}`: give each replica its own \
         holder id"
    )]
    HolderIdInUse {
        /// The holder id.
        holder_id: String,
    },
    /// The session is not one PostgreSQL started for this connection (a pooler lent it): no
    /// lock was taken. See [`crate::pooler`].
    #[error(
        "the anchor's session is not its own: the connection goes through a pooler, which lends          its server sessions to other clients, so the anchor's lock would outlive this replica;          no lock was taken; give the direct connection the server's own address"
    )]
    NotDirect,
    /// The session's statements failed.
    #[error(transparent)]
    Statement(#[from] StatementError),
}

/// Takes the lock only on a session that answers the connection's own nonce (see
/// [`crate::pooler`]): never on a server session a pooler lent, where it would outlive the
/// replica. No row, and no lock, otherwise.
const OPEN: &str = "
SELECT pg_try_advisory_lock(:class::integer, hashtext(:holder)) AS locked,
       a.pid, a.backend_start
  FROM pg_stat_activity a
 WHERE a.pid = pg_backend_pid()
   AND current_setting(:setting, true) = :nonce
";

impl Anchor {
    /// Makes `session` (one connection, such as a `PgListener`'s, never a pool) the anchor of
    /// `holder_id`: takes the holder's anchor lock on it (held until
    /// the session ends) and reads its identity. The session must stay idle (a backend busy in a
    /// query hears its client's death only when it next writes to it) and must be of the same
    /// database role as the sessions that send ACQUIRE: PostgreSQL shows another role's
    /// `backend_start` as NULL, and ACQUIRE then counts the anchor as alive whatever happens to it.
    /// It must have been connected with `direct`'s options: the lock is taken only if the
    /// session answers their nonce, in the same statement.
    ///
    /// # Errors
    ///
    /// [`AnchorError::HolderIdInUse`] if another live session holds the lock;
    /// [`AnchorError::NotDirect`] if the session is not the connection's own;
    /// [`AnchorError::Statement`] if the statement failed.
    pub async fn open<'e>(
        session: impl PgExecutor<'e>,
        holder_id: &str,
        direct: &DirectOptions,
        timings: &Timings,
    ) -> Result<Anchor, AnchorError> {
        use crate::inline::Value;
        let sql = crate::inline::render(
            OPEN,
            &[
                ("class", Value::Int(i64::from(ANCHOR_LOCK_CLASS))),
                ("holder", Value::Text(holder_id)),
                ("setting", Value::Text(DIRECT_SESSION_SETTING)),
                ("nonce", Value::Text(direct.nonce())),
            ],
        );
        let rows = send(session, Statement::Anchor, timings.statement_timeout(), sql).await?;
        let Some(row) = rows.into_iter().next() else {
            return Err(AnchorError::NotDirect);
        };
        let field = StatementError::database(Statement::Anchor);
        if !row.try_get::<bool, _>("locked").map_err(&field)? {
            return Err(AnchorError::HolderIdInUse {
                holder_id: holder_id.to_owned(),
            });
        }
        Ok(Anchor {
            pid: row.try_get("pid").map_err(&field)?,
            backend_start: row.try_get("backend_start").map_err(&field)?,
        })
    }

    /// `pg_backend_pid()` of the anchor session.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The anchor session's `backend_start`.
    pub fn backend_start(&self) -> DateTime<Utc> {
        self.backend_start
    }

    /// An anchor of the identity `(pid, backend_start)`, which no [`Anchor::open`] read: for tests
    /// of the takeover (a pid with another session's start, an identity that never existed). Only
    /// with the `test-support` feature.
    #[cfg(feature = "test-support")]
    pub fn forge(pid: i32, backend_start: DateTime<Utc>) -> Anchor {
        Anchor { pid, backend_start }
    }
}

/// The channel a watcher notifies when the anchor it watched has ended ([`await_anchor_end`]),
/// and ACQUIRE whenever it ends a lease of an ended anchor early; the payload is that anchor's
/// lock key.
pub const ANCHOR_ENDED_CHANNEL: &str = "leader_anchor_ended";

/// The `application_name` of every watcher session: [`next_in_ring`] finds the watchers it may
/// have to turn by it. Set it on the watcher's connection.
pub const WATCHER_APPLICATION_NAME: &str = "leader-anchor-watcher";

/// The ring of live anchors (the granted anchor locks in `pg_locks`, ordered by key) and the one
/// after `:holder`'s in it (its own when alone), as `next (key)`.
macro_rules! ring {
    () => {
        "
WITH members AS (
    SELECT objid::bigint AS key
      FROM pg_locks
     WHERE locktype = 'advisory' AND classid = :class::oid AND objsubid = 2 AND granted
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
),
me AS (SELECT hashtext(:holder)::oid::bigint AS key),
next AS (
    SELECT coalesce((SELECT min(m.key) FROM members m WHERE m.key > (SELECT key FROM me)),
                    (SELECT min(m.key) FROM members m WHERE m.key <> (SELECT key FROM me)),
                    (SELECT key FROM me)) AS key
)
"
    };
}

/// Reads the ring and picks the anchor after `holder`'s, and turns every other watcher that may
/// be watching the gap the holder now fills: a watcher waiting on that anchor's lock, and a
/// watcher still on its way to a wait (its statement running, no lock requested yet), whose
/// target this replica cannot see. Both are cancelled and read the ring again; a watcher already
/// waiting on another anchor keeps its wait. With [`AWAIT_END`]'s own reading of the ring, no
/// watcher is left on a gap: one that read the ring before this replica joined either waits on it
/// by now (cancelled here) or reads the ring again in its wait's own statement.
const NEXT_IN_RING: &str = concat!(
    ring!(),
    "
SELECT next.key, next.key = (SELECT key FROM me) AS own,
       (SELECT count(*) FROM (
            SELECT pg_cancel_backend(a.pid)
              FROM pg_stat_activity a
             WHERE a.application_name = :watcher AND a.state = 'active'
               AND a.pid <> pg_backend_pid() AND a.datname = current_database()
               AND NOT EXISTS (
                   SELECT 1
                     FROM pg_locks l
                    WHERE l.pid = a.pid AND l.locktype = 'advisory' AND l.classid = :class::oid
                      AND l.objsubid = 2 AND NOT l.granted AND l.objid <> next.key::oid)
        ) AS cancelled) AS cancelled
  FROM next
"
);

/// Blocks until the anchor lock `:key` is free (its session ended) and frees it at once (so that
/// a restarted replica with that holder id can anchor again); answers with the pid of the session
/// that held the lock when the wait began (read before it blocks; NULL if none did). Returns no
/// row, at once, when the ring no longer puts `:key` after `:holder` (a replica joined since the
/// watcher read it).
const AWAIT_END: &str = concat!(
    ring!(),
    "
SELECT (SELECT l.pid
          FROM pg_locks l
         WHERE l.locktype = 'advisory' AND l.classid = :class::oid
           AND l.objid = (:key::integer)::oid AND l.objsubid = 2 AND l.granted
         LIMIT 1) AS holder_pid,
       pg_advisory_lock(:class::integer, :key::integer),
       pg_advisory_unlock(:class::integer, :key::integer)
  FROM next
 WHERE next.key::oid::integer = :key::integer
"
);

/// Whether the session `:pid` is still listed in `pg_stat_activity`, which ACQUIRE reads.
const LISTED: &str = "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = :pid) AS listed";

/// Tells every anchor that the anchor `:key` has ended.
const NOTIFY_ENDED: &str = "SELECT pg_notify(:channel, :key::text)";

/// How often a watcher looks whether an ended anchor's backend has left `pg_stat_activity`.
const EXIT_LOOK_EVERY: Duration = Duration::from_millis(2);

/// The lock key of the anchor a watcher watches: the one after its own in the ring of live
/// anchors, or its own when it is alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RingKey {
    key: i32,
    own: bool,
}

impl RingKey {
    /// Whether this is the watcher's own anchor: it is alone in the ring.
    pub fn is_own(&self) -> bool {
        self.own
    }
}

/// How [`await_anchor_end`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AnchorWait {
    /// The watched anchor's session ended, and every anchor was notified.
    Ended,
    /// A replica that joined the ring cancelled the wait: read the ring again
    /// ([`next_in_ring`]).
    RingChanged,
}

/// The anchor `holder_id`'s watcher should watch now (see [`RingKey`]); also cancels the wait of
/// any other watcher of that anchor, which then reads the ring again. Send it on the watcher's
/// own session, to PostgreSQL itself.
///
/// # Errors
///
/// [`StatementError`] if the statement failed.
pub async fn next_in_ring(
    session: &mut PgConnection,
    holder_id: &str,
    timings: &Timings,
) -> Result<RingKey, StatementError> {
    use crate::inline::Value;
    let sql = crate::inline::render(
        NEXT_IN_RING,
        &[
            ("class", Value::Int(i64::from(ANCHOR_LOCK_CLASS))),
            ("holder", Value::Text(holder_id)),
            ("watcher", Value::Text(WATCHER_APPLICATION_NAME)),
        ],
    );
    // Another replica joining may cancel this very statement (it turns every watcher on its
    // way to a wait): read the ring again.
    let mut cancels = 0;
    let rows = loop {
        match send(
            &mut *session,
            Statement::Anchor,
            timings.statement_timeout(),
            sql.clone(),
        )
        .await
        {
            Err(StatementError::Database { source, .. })
                if is_cancel(&source) && cancels < RING_READ_CANCELS =>
            {
                cancels += 1;
            }
            sent => break sent?,
        }
    };
    let row = single(Statement::Anchor, rows)?;
    let field = StatementError::database(Statement::Anchor);
    let key: i64 = row.try_get("key").map_err(&field)?;
    Ok(RingKey {
        // `pg_locks` shows the lock's int4 key as an oid.
        key: key as u32 as i32,
        own: row.try_get("own").map_err(&field)?,
    })
}

/// Waits, with no timeout, until the anchor `key` ends, then, once the ended session has left
/// `pg_stat_activity` (where ACQUIRE looks for it; a backend that exits releases its locks first)
/// or `exit_wait` has passed, notifies [`ANCHOR_ENDED_CHANNEL`]; returns
/// [`AnchorWait::RingChanged`] at once instead when the ring, read again in the same statement,
/// no longer puts `key` after `holder_id`'s anchor, and when a joining replica cancels the wait. Send it on the watcher's own session, connected with
/// [`WATCHER_APPLICATION_NAME`], which does nothing else meanwhile.
///
/// # Errors
///
/// [`StatementError::Database`] if the session failed.
pub async fn await_anchor_end(
    session: &mut PgConnection,
    holder_id: &str,
    key: RingKey,
    exit_wait: Duration,
) -> Result<AnchorWait, StatementError> {
    use crate::inline::Value;
    let failed = StatementError::database(Statement::Anchor);
    let sql = crate::inline::render(
        AWAIT_END,
        &[
            ("class", Value::Int(i64::from(ANCHOR_LOCK_CLASS))),
            ("holder", Value::Text(holder_id)),
            ("key", Value::Int(i64::from(key.key))),
        ],
    );
    let waited = sqlx::raw_sql(sqlx::AssertSqlSafe(Statement::Anchor.tag(&sql)))
        .fetch_optional(&mut *session)
        .await;
    let holder_pid: Option<i32> = match waited {
        Ok(None) => return Ok(AnchorWait::RingChanged),
        Ok(Some(row)) => row.try_get("holder_pid").map_err(&failed)?,
        Err(error) if is_cancel(&error) => return Ok(AnchorWait::RingChanged),
        Err(error) => return Err(failed(error)),
    };
    // A backend that exits releases its locks before it leaves pg_stat_activity, where ACQUIRE
    // looks for it: told at once, the others' ACQUIRE could still count the anchor as alive and
    // the lease would wait for a later poll.
    if let Some(pid) = holder_pid {
        let listed = crate::inline::render(LISTED, &[("pid", Value::Int(i64::from(pid)))]);
        let deadline = tokio::time::Instant::now() + exit_wait;
        loop {
            let still: bool =
                sqlx::query_scalar(sqlx::AssertSqlSafe(Statement::Anchor.tag(&listed)))
                    .fetch_one(&mut *session)
                    .await
                    .map_err(&failed)?;
            if !still || tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(EXIT_LOOK_EVERY).await;
        }
    }
    let notify = crate::inline::render(
        NOTIFY_ENDED,
        &[
            ("channel", Value::Text(ANCHOR_ENDED_CHANNEL)),
            ("key", Value::Int(i64::from(key.key))),
        ],
    );
    sqlx::raw_sql(sqlx::AssertSqlSafe(Statement::Anchor.tag(&notify)))
        .execute(&mut *session)
        .await
        .map_err(&failed)?;
    Ok(AnchorWait::Ended)
}

/// How many times in a row [`next_in_ring`] reads the ring again after a joining replica
/// cancelled its statement, before it reports the cancellation.
const RING_READ_CANCELS: usize = 8;

/// Whether the server cancelled the statement (`57014`, `query_canceled`).
fn is_cancel(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(e) if e.code().as_deref() == Some("57014"))
}
